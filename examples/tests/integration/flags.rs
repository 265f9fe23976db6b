//! The binaries' flags: names as upstream's, defaults, feature gates, relative paths.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use ocm_examples::hub::{HubArgs, HubCommand};
use ocm_examples::klusterlet::KlusterletArgs;
use ocm_examples::quickstart::QuickstartArgs;

#[test]
fn hub_auto_approval_users_need_the_auto_approval_gate() {
    let args = HubArgs::try_parse_from([
        "hub",
        "--cluster-auto-approval-users",
        "alice,system:serviceaccount:open-cluster-management:cluster-bootstrap",
        "--feature-gates",
        "ManagedClusterAutoApproval=true",
        "--labels",
        "team=a,env=dev",
    ])
    .unwrap();
    let options = args.hub_options().unwrap();
    assert!(options.auto_accept);
    assert_eq!(
        options.auto_approved_csr_users,
        vec![
            "alice".to_string(),
            "system:serviceaccount:open-cluster-management:cluster-bootstrap".to_string()
        ]
    );
    assert_eq!(options.extra_labels.get("env").map(String::as_str), Some("dev"));

    let args = HubArgs::try_parse_from(["hub", "--cluster-auto-approval-users", "alice"]).unwrap();
    let options = args.hub_options().unwrap();
    assert!(!options.auto_accept);
    assert!(options.auto_approved_csr_users.is_empty());

    // The newer flag approves CSRs without the gate, and accepts nothing by itself.
    let args = HubArgs::try_parse_from(["hub", "--auto-approved-csr-users", "bob,alice"]).unwrap();
    let options = args.hub_options().unwrap();
    assert!(!options.auto_accept);
    assert_eq!(
        options.auto_approved_csr_users,
        vec!["alice".to_string(), "bob".to_string()]
    );
}

#[test]
fn hub_refuses_unknown_gates_and_conflicting_clusters() {
    let args = HubArgs::try_parse_from(["hub", "--feature-gates", "ClusterClaim=true"]).unwrap();
    let error = args.hub_options().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("unknown feature gate \"ClusterClaim\""),
        "{error}"
    );
    assert!(HubArgs::try_parse_from(["hub", "--kubeconfig", "a", "--embedded", "b"]).is_err());
}

#[test]
fn hub_get_token_takes_the_cluster_flags_after_the_subcommand() {
    let args = HubArgs::try_parse_from([
        "hub",
        "get-token",
        "--kubeconfig",
        "hub.kubeconfig",
        "--output",
        "bootstrap.kubeconfig",
        "--bootstrap-token-ttl",
        "30m",
    ])
    .unwrap();
    assert_eq!(args.kubeconfig, Some(PathBuf::from("hub.kubeconfig")));
    assert_eq!(args.bootstrap_token_ttl, Duration::from_secs(1800));
    assert!(matches!(
        args.command,
        Some(HubCommand::GetToken { output: Some(ref path) }) if path == &PathBuf::from("bootstrap.kubeconfig")
    ));
    let defaults = HubArgs::try_parse_from(["hub"]).unwrap();
    assert_eq!(defaults.bootstrap_token_ttl, Duration::from_secs(86_400));
    assert_eq!(defaults.embedded_port, None);
    assert!(defaults.command.is_none());
    assert!(HubArgs::try_parse_from(["hub", "--bootstrap-token-ttl", "1w"]).is_err());
}

#[test]
fn klusterlet_flags_are_named_like_upstream_and_paths_become_absolute() {
    let args = KlusterletArgs::try_parse_from([
        "klusterlet",
        "--cluster-name",
        "cluster1",
        "--agent-name",
        "agent1",
        "--bootstrap-kubeconfig",
        "boot/bootstrap.kubeconfig",
        "--hub-kubeconfig-secret",
        "my-hub-secret",
        "--hub-kubeconfig-dir",
        "hub-kubeconfig",
        "--spoke-kubeconfig",
        "spoke.kubeconfig",
        "--cluster-annotations",
        "agent.open-cluster-management.io/a=1",
        "--spoke-external-server-urls",
        "https://a:6443,https://b:6443",
        "--cluster-healthcheck-period",
        "30s",
    ])
    .unwrap();
    let options = args.agent_options().unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(options.cluster_name.as_deref(), Some("cluster1"));
    assert_eq!(options.agent_name.as_deref(), Some("agent1"));
    assert_eq!(options.hub_kubeconfig_secret, "my-hub-secret");
    assert_eq!(
        options.bootstrap_kubeconfig,
        cwd.join("boot/bootstrap.kubeconfig")
    );
    assert_eq!(options.hub_kubeconfig_dir, cwd.join("hub-kubeconfig"));
    assert!(options.hub_kubeconfig_dir.is_absolute());
    assert_eq!(
        options.external_server_urls,
        vec!["https://a:6443".to_string(), "https://b:6443".to_string()]
    );
    assert_eq!(
        options
            .cluster_annotations
            .get("agent.open-cluster-management.io/a")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(options.cluster_healthcheck_period, Duration::from_secs(30));
    assert_eq!(args.spoke_kubeconfig, Some(PathBuf::from("spoke.kubeconfig")));
}

#[test]
fn klusterlet_gates_default_to_claims_on_properties_off() {
    let args = KlusterletArgs::try_parse_from(["klusterlet", "--bootstrap-kubeconfig", "b"]).unwrap();
    let options = args.agent_options().unwrap();
    assert!(options.cluster_claims);
    assert!(!options.cluster_properties);
    assert_eq!(options.hub_kubeconfig_secret, "hub-kubeconfig-secret");
    assert_eq!(options.component_namespace, "open-cluster-management-agent");

    let args = KlusterletArgs::try_parse_from([
        "klusterlet",
        "--bootstrap-kubeconfig",
        "b",
        "--feature-gates",
        "ClusterClaim=false,ClusterProperty=true",
    ])
    .unwrap();
    let options = args.agent_options().unwrap();
    assert!(!options.cluster_claims);
    assert!(options.cluster_properties);

    let args = KlusterletArgs::try_parse_from([
        "klusterlet",
        "--bootstrap-kubeconfig",
        "b",
        "--feature-gates",
        "NoSuchGate=true",
    ])
    .unwrap();
    let error = args.agent_options().unwrap_err();
    assert!(
        error.to_string().contains("unknown feature gate \"NoSuchGate\""),
        "{error}"
    );
    assert!(error.to_string().contains("ClusterClaim"), "{error}");
}

#[test]
fn klusterlet_needs_a_bootstrap_kubeconfig_unless_unjoining() {
    let error = KlusterletArgs::try_parse_from(["klusterlet", "--cluster-name", "c1"]).unwrap_err();
    assert!(error.to_string().contains("--bootstrap-kubeconfig"), "{error}");
    let args = KlusterletArgs::try_parse_from(["klusterlet", "--unjoin"]).unwrap();
    assert!(args.unjoin);
    assert!(
        KlusterletArgs::try_parse_from([
            "klusterlet",
            "--unjoin",
            "--embedded",
            "d",
            "--spoke-kubeconfig",
            "k"
        ])
        .is_err()
    );
}

#[test]
fn quickstart_defaults_to_an_automatic_run_in_quickstart_data() {
    let args = QuickstartArgs::try_parse_from(["quickstart"]).unwrap();
    assert_eq!(args.data_dir, PathBuf::from("quickstart-data"));
    assert_eq!(args.cluster_name, "cluster1");
    assert!(!args.manual && !args.keep_running);
    let args = QuickstartArgs::try_parse_from(["quickstart", "--manual", "--keep-running"]).unwrap();
    assert!(args.manual && args.keep_running);
}
