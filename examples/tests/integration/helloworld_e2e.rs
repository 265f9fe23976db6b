//! The OCM blog's helloworld add-on, end to end, as one test (issue 15): a fleet of one managed
//! cluster (`ocm-testkit`: the hub controllers, the registration and work agents), the
//! `helloworld` hub controller, and the helloworld agent run as the managed cluster would run it
//! (the embedded cluster has no kubelet for its Deployment) with the credentials the registration
//! agent obtained:
//!
//! ManagedClusterAddOn `helloworld` → ManifestWork `addon-helloworld-deploy-0` → registrations in
//! its status → CSR `addon-<cluster>-helloworld-…` approved by the add-on's check → secret
//! `helloworld-hub-kubeconfig` in the install namespace → the agent copies a hub ConfigMap →
//! lease → `Available` True with reason `ManagedClusterAddOnLeaseUpdated`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test")]

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::work::v1::ManifestWork;
use ocm_examples::{helloworld, helloworld_agent};
use ocm_testkit::{Fleet, FleetOptions};
use serde_json::json;

/// The install namespace of the agent: upstream's default.
const INSTALL_NAMESPACE: &str = "open-cluster-management-agent-addon";

/// How long each step may take.
const STEP: Duration = Duration::from_secs(90);

async fn wait<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + STEP;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn condition<'a>(addon: &'a ManagedClusterAddOn, type_: &str) -> Option<&'a ocm_api::meta::Condition> {
    addon
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

#[tokio::test]
async fn helloworld_blog_flow_from_addon_to_available() {
    // Logs with RUST_LOG set (e.g. RUST_LOG=ocm_addon_framework=debug,ocm_examples=debug).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let cluster = crate::support::unique("hello");
    let fleet = Fleet::start(FleetOptions::new([cluster.clone()])).await.unwrap();
    let hub = fleet.hub_client();
    let spoke = fleet.cluster(&cluster).unwrap().client();

    // The add-on's hub controller, as `helloworld --kubeconfig HUB` runs it.
    let (stop_controller, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(helloworld::run_until(
        helloworld::HelloworldArgs {
            kubeconfig: Some(fleet.hub_kubeconfig().to_path_buf()),
        },
        async move {
            let _ = stopped.await;
        },
    ));

    // The blog's ClusterManagementAddOn and ManagedClusterAddOn.
    let cmas = Api::<ClusterManagementAddOn>::all(hub.clone());
    let cma: ClusterManagementAddOn = serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ClusterManagementAddOn",
        "metadata": {"name": "helloworld"},
        "spec": {"addOnMeta": {"displayName": "helloworld", "description": "helloworld is an example addon"}}
    }))
    .unwrap();
    match cmas.create(&PostParams::default(), &cma).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("creating the ClusterManagementAddOn: {error}"),
    }
    let addons = Api::<ManagedClusterAddOn>::namespaced(hub.clone(), &cluster);
    let mca: ManagedClusterAddOn = serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": cluster}, "spec": {}
    }))
    .unwrap();
    addons.create(&PostParams::default(), &mca).await.unwrap();

    // The deploy work.
    let works = Api::<ManifestWork>::namespaced(hub.clone(), &cluster);
    let work = wait("ManifestWork addon-helloworld-deploy-0", || async {
        works.get_opt("addon-helloworld-deploy-0").await.unwrap()
    })
    .await;
    let kinds: Vec<String> = work
        .spec
        .workload
        .iter()
        .flat_map(|w| w.manifests.iter().flatten())
        .filter_map(|m| m.0.get("kind").and_then(|k| k.as_str()).map(str::to_string))
        .collect();
    for kind in ["ServiceAccount", "ClusterRoleBinding", "Deployment"] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "{kind} missing from the deploy work: {kinds:?}"
        );
    }

    // Registrations, then the add-on's CSR approved by its own check.
    wait("the add-on's registrations in its status", || async {
        let addon = addons.get("helloworld").await.unwrap();
        addon
            .status
            .as_ref()
            .and_then(|s| s.registrations.as_ref())
            .filter(|r| !r.is_empty())
            .map(|_| ())
    })
    .await;
    let csrs = Api::<CertificateSigningRequest>::all(hub.clone());
    let prefix = format!("addon-{cluster}-helloworld-");
    wait("the add-on's CSR approved", || async {
        let list = csrs
            .list(&ListParams::default().labels(&format!("open-cluster-management.io/addon-name=helloworld,open-cluster-management.io/cluster-name={cluster}")))
            .await
            .unwrap();
        list.items
            .into_iter()
            .filter(|csr| csr.metadata.name.as_deref().is_some_and(|n| n.starts_with(&prefix)))
            .find(|csr| {
                csr.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Approved" && c.status == "True"))
            })
    })
    .await;

    // The hub kubeconfig secret in the install namespace, and the agent on it.
    let secrets = Api::<Secret>::namespaced(spoke.clone(), INSTALL_NAMESPACE);
    wait("secret helloworld-hub-kubeconfig", || async {
        secrets.get_opt("helloworld-hub-kubeconfig").await.unwrap()
    })
    .await;
    let credentials = fleet
        .addon_hub_kubeconfig_dir(&cluster, "helloworld", STEP)
        .await
        .unwrap();
    let (stop_agent, agent_stopped) = tokio::sync::oneshot::channel::<()>();
    let agent = tokio::spawn(helloworld_agent::run_until(
        helloworld_agent::AgentArgs {
            hub_kubeconfig: credentials.join("kubeconfig"),
            cluster_name: None,
            addon_namespace: INSTALL_NAMESPACE.to_string(),
            addon_name: "helloworld".to_string(),
            kubeconfig: Some(fleet.cluster(&cluster).unwrap().kubeconfig().to_path_buf()),
        },
        async move {
            let _ = agent_stopped.await;
        },
    ));

    // A ConfigMap in the cluster namespace on the hub arrives on the managed cluster.
    let hub_config_maps = Api::<ConfigMap>::namespaced(hub.clone(), &cluster);
    let hello: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "hello"}, "data": {"greeting": "hello from the hub"}
    }))
    .unwrap();
    hub_config_maps
        .create(&PostParams::default(), &hello)
        .await
        .unwrap();
    let spoke_config_maps = Api::<ConfigMap>::namespaced(spoke.clone(), INSTALL_NAMESPACE);
    let copy = wait("the hello ConfigMap on the managed cluster", || async {
        spoke_config_maps.get_opt("hello").await.unwrap()
    })
    .await;
    assert_eq!(copy.data.unwrap()["greeting"], "hello from the hub");
    assert!(copy.metadata.labels.unwrap().contains_key("synced-from-hub"));

    // The agent's lease makes the add-on Available.
    let available = wait("the add-on Available from its lease", || async {
        let addon = addons.get("helloworld").await.unwrap();
        condition(&addon, "Available")
            .filter(|c| c.status == "True")
            .cloned()
    })
    .await;
    assert_eq!(available.reason, "ManagedClusterAddOnLeaseUpdated");

    let _ = stop_agent.send(());
    let _ = stop_controller.send(());
    agent.await.unwrap().unwrap();
    controller.await.unwrap().unwrap();
    addons
        .delete("helloworld", &DeleteParams::background())
        .await
        .unwrap();
    hub_config_maps
        .delete("hello", &DeleteParams::background())
        .await
        .unwrap();
    fleet.cleanup().await.unwrap();
}
