//! The admission rules through kubectl, on whichever hub [`AdmissionHub`] runs.

use serde_json::{Value, json};

use super::{AdmissionHub, Identity, Run};
use crate::support::unique;

const MUTATOR: &str = "managedclustermutators.admission.cluster.open-cluster-management.io";
const VALIDATOR: &str = "managedclustervalidators.admission.cluster.open-cluster-management.io";
const BINDING_VALIDATOR: &str =
    "managedclustersetbindingvalidators.admission.cluster.open-cluster-management.io";

/// Asserts that `run` failed with kube-apiserver's relay of `webhook`'s refusal: `(Reason)` and
/// `admission webhook "<webhook>" denied the request: <message>`.
fn assert_refused(run: &Run, reason: &str, webhook: &str, message: &str) {
    assert!(!run.ok, "expected a refusal, got: {}", run.stdout);
    let want = format!("admission webhook \"{webhook}\" denied the request: {message}");
    assert!(
        run.stderr.contains(&format!("({reason})")) && run.stderr.contains(&want),
        "expected ({reason}) {want:?}, got: {}",
        run.stderr
    );
}

fn assert_ok(run: &Run, what: &str) {
    assert!(run.ok, "{what} failed: {}", run.stderr);
}

async fn get(hub: &AdmissionHub, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let run = hub.kubectl(None, &all, None).await;
    assert_ok(&run, "kubectl get");
    serde_json::from_str(&run.stdout).unwrap()
}

fn accept_refusal(cluster: &str, user: &str) -> String {
    format!(
        "managedclusters/accept.cluster.open-cluster-management.io \"{cluster}\" is forbidden: user \"{user}\" cannot update the HubAcceptsClient field"
    )
}

fn join_refusal(set: &str, user: &str) -> String {
    format!(
        "managedclustersets/join.cluster.open-cluster-management.io \"{set}\" is forbidden: user \"{user}\" cannot add/remove a ManagedCluster to/from ManagedClusterSet \"{set}\""
    )
}

/// Read, create and update ManagedClusters (what the bootstrap ClusterRole grants too).
fn cluster_writer() -> Value {
    json!({"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"],
        "verbs": ["get", "list", "create", "update", "patch"]})
}

#[tokio::test]
async fn bootstrap_identity_cannot_accept_its_cluster() {
    let hub = AdmissionHub::start().await;
    let bootstrap = Identity::Kubeconfig(hub.bootstrap_kubeconfig().await);
    let whoami = hub
        .kubectl(
            Some(&bootstrap),
            &["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
            None,
        )
        .await;
    assert_ok(&whoami, "kubectl auth whoami");
    let user = whoami.stdout.trim().to_string();
    let name = unique("adm-self");
    hub.created(&["managedcluster", &name]);
    // Created accepted: refused.
    let run = hub
        .kubectl(
            Some(&bootstrap),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, true, None, &[], None)),
        )
        .await;
    assert_refused(&run, "Forbidden", VALIDATOR, &accept_refusal(&name, &user));
    // Created as agents do (not accepted): fine; then accepting it by an update: refused.
    // Upstream's bootstrap ClusterRole grants no update, so RBAC refuses before admission does
    // (older clusteradm roles granted it; admission refuses then, as the next test shows).
    let run = hub
        .kubectl(
            Some(&bootstrap),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, false, None, &[], None)),
        )
        .await;
    assert_ok(&run, "creating the cluster unaccepted");
    let mut object = get(&hub, &["get", "managedcluster", &name]).await;
    object["spec"]["hubAcceptsClient"] = json!(true);
    let run = hub
        .kubectl(
            Some(&bootstrap),
            &["replace", "-f", "-"],
            Some(object.to_string()),
        )
        .await;
    assert!(!run.ok, "expected a refusal, got: {}", run.stdout);
    let by_rbac = format!(
        "User \"{user}\" cannot update resource \"managedclusters\" in API group \"cluster.open-cluster-management.io\""
    );
    let by_admission = accept_refusal(&name, &user);
    assert!(
        run.stderr.contains("(Forbidden)")
            && (run.stderr.contains(&by_rbac) || run.stderr.contains(&by_admission)),
        "expected RBAC's or admission's refusal, got: {}",
        run.stderr
    );
    assert_eq!(
        get(&hub, &["get", "managedcluster", &name]).await["spec"]["hubAcceptsClient"],
        false
    );
    // The administrator may accept it.
    let run = hub
        .kubectl(
            None,
            &[
                "patch",
                "managedcluster",
                &name,
                "--type=merge",
                "-p",
                r#"{"spec":{"hubAcceptsClient":true}}"#,
            ],
            None,
        )
        .await;
    assert_ok(&run, "accepting as the administrator");
    // Turning acceptance off needs no permission beyond updating the cluster.
    let writer = hub.user_with(json!([cluster_writer()])).await;
    let mut object = get(&hub, &["get", "managedcluster", &name]).await;
    object["spec"]["hubAcceptsClient"] = json!(false);
    let run = hub
        .kubectl(Some(&writer), &["replace", "-f", "-"], Some(object.to_string()))
        .await;
    assert_ok(&run, "denying as a user without the accept permission");
    hub.cleanup().await;
}

#[tokio::test]
async fn the_accept_permission_lets_a_user_accept() {
    let hub = AdmissionHub::start().await;
    let accept = json!({"apiGroups": ["register.open-cluster-management.io"],
        "resources": ["managedclusters/accept"], "verbs": ["update"]});
    let join_default = json!({"apiGroups": ["cluster.open-cluster-management.io"],
        "resources": ["managedclustersets/join"], "resourceNames": ["default"], "verbs": ["create"]});
    let acceptor = hub
        .user_with(json!([cluster_writer(), accept, join_default]))
        .await;
    let plain = hub.user_with(json!([cluster_writer(), join_default])).await;
    let a = unique("adm-acc");
    let b = unique("adm-acc");
    hub.created(&["managedcluster", &a]);
    hub.created(&["managedcluster", &b]);
    let run = hub
        .kubectl(
            Some(&acceptor),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&a, true, None, &[], None)),
        )
        .await;
    assert_ok(&run, "creating an accepted cluster with the accept permission");
    let run = hub
        .kubectl(
            Some(&plain),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&b, true, None, &[], None)),
        )
        .await;
    assert_refused(&run, "Forbidden", VALIDATOR, &accept_refusal(&b, plain.name()));
    let run = hub
        .kubectl(
            Some(&plain),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&b, false, None, &[], None)),
        )
        .await;
    assert_ok(&run, "creating an unaccepted cluster");
    // May update clusters, may not accept them: accepting by an update is refused.
    let mut object = get(&hub, &["get", "managedcluster", &b]).await;
    object["spec"]["hubAcceptsClient"] = json!(true);
    let run = hub
        .kubectl(Some(&plain), &["replace", "-f", "-"], Some(object.to_string()))
        .await;
    assert_refused(&run, "Forbidden", VALIDATOR, &accept_refusal(&b, plain.name()));
    let run = hub
        .kubectl(
            Some(&acceptor),
            &[
                "patch",
                "managedcluster",
                &b,
                "--type=merge",
                "-p",
                r#"{"spec":{"hubAcceptsClient":true}}"#,
            ],
            None,
        )
        .await;
    assert_ok(&run, "accepting with the accept permission");
    // The default cluster-set label was added on create (gate DefaultClusterSet).
    let cluster = get(&hub, &["get", "managedcluster", &b]).await;
    assert_eq!(
        cluster["metadata"]["labels"]["cluster.open-cluster-management.io/clusterset"],
        "default"
    );
    assert_eq!(cluster["spec"]["hubAcceptsClient"], true);
    hub.cleanup().await;
}

#[tokio::test]
async fn joining_a_set_needs_the_join_permission_on_old_and_new_set() {
    let hub = AdmissionHub::start().await;
    let allowed = unique("adm-set-ok");
    let other = unique("adm-set-no");
    let join = json!({"apiGroups": ["cluster.open-cluster-management.io"],
        "resources": ["managedclustersets/join"], "resourceNames": [allowed], "verbs": ["create"]});
    let user = hub.user_with(json!([cluster_writer(), join])).await;
    let name = unique("adm-join");
    hub.created(&["managedcluster", &name]);
    // Into a set it may not join: refused; into its set: fine.
    let run = hub
        .kubectl(
            Some(&user),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, false, Some(&other), &[], None)),
        )
        .await;
    assert_refused(&run, "Forbidden", VALIDATOR, &join_refusal(&other, user.name()));
    // Without a label the cluster joins `default`, which it may not join either.
    let run = hub
        .kubectl(
            Some(&user),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, false, None, &[], None)),
        )
        .await;
    assert_refused(
        &run,
        "Forbidden",
        VALIDATOR,
        &join_refusal("default", user.name()),
    );
    let run = hub
        .kubectl(
            Some(&user),
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, false, Some(&allowed), &[], None)),
        )
        .await;
    assert_ok(&run, "creating the cluster in its set");
    // Moving it to another set needs both: refused naming the new set.
    let run = hub
        .kubectl(
            Some(&user),
            &[
                "label",
                "managedcluster",
                &name,
                "--overwrite",
                &format!("cluster.open-cluster-management.io/clusterset={other}"),
            ],
            None,
        )
        .await;
    assert_refused(&run, "Forbidden", VALIDATOR, &join_refusal(&other, user.name()));
    // The administrator moves it; then the user may not take it out of that set.
    let run = hub
        .kubectl(
            None,
            &[
                "label",
                "managedcluster",
                &name,
                "--overwrite",
                &format!("cluster.open-cluster-management.io/clusterset={other}"),
            ],
            None,
        )
        .await;
    assert_ok(&run, "moving the cluster as the administrator");
    let run = hub
        .kubectl(
            Some(&user),
            &[
                "label",
                "managedcluster",
                &name,
                "--overwrite",
                &format!("cluster.open-cluster-management.io/clusterset={allowed}"),
            ],
            None,
        )
        .await;
    assert_refused(&run, "Forbidden", VALIDATOR, &join_refusal(&other, user.name()));
    // Changes that leave the label alone need no join permission.
    let run = hub
        .kubectl(
            Some(&user),
            &["annotate", "managedcluster", &name, "note=x"],
            None,
        )
        .await;
    assert_ok(&run, "annotating the cluster");
    hub.cleanup().await;
}

#[tokio::test]
async fn taints_get_time_added_from_the_hub_only() {
    let hub = AdmissionHub::start().await;
    let name = unique("adm-taint");
    hub.created(&["managedcluster", &name]);
    let given = "2022-02-21T08:11:06Z";
    let taint = json!({"key": "gpu", "value": "true", "effect": "NoSelect", "timeAdded": given});
    let run = hub
        .kubectl(
            None,
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, false, None, &[taint], None)),
        )
        .await;
    assert_ok(&run, "creating a tainted cluster");
    let cluster = get(&hub, &["get", "managedcluster", &name]).await;
    let stamped = cluster["spec"]["taints"][0]["timeAdded"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(stamped, given, "the time given on create is replaced");
    let patch = |taints: Value| json!({"spec": {"taints": taints}}).to_string();
    let kept = json!({"key": "gpu", "value": "true", "effect": "NoSelect", "timeAdded": stamped});
    // A new taint carrying a time, and a kept taint with another time: refused, both named.
    let run = hub
        .kubectl(
            None,
            &[
                "patch",
                "managedcluster",
                &name,
                "--type=merge",
                "-p",
                &patch(json!([
                    {"key": "gpu", "value": "true", "effect": "NoSelect", "timeAdded": given},
                    {"key": "b", "effect": "NoSelect", "timeAdded": given},
                ])),
            ],
            None,
        )
        .await;
    assert_refused(
        &run,
        "BadRequest",
        MUTATOR,
        "It is not allowed to set TimeAdded of Taint \"gpu,b\".",
    );
    // A changed value with a time: refused.
    let run = hub
        .kubectl(
            None,
            &[
                "patch",
                "managedcluster",
                &name,
                "--type=merge",
                "-p",
                &patch(json!([{"key": "gpu", "value": "false", "effect": "NoSelect", "timeAdded": stamped}])),
            ],
            None,
        )
        .await;
    assert_refused(
        &run,
        "BadRequest",
        MUTATOR,
        "It is not allowed to set TimeAdded of Taint \"gpu\".",
    );
    // A new taint without a time next to the kept one: stamped, the kept one untouched.
    let run = hub
        .kubectl(
            None,
            &[
                "patch",
                "managedcluster",
                &name,
                "--type=merge",
                "-p",
                &patch(json!([kept, {"key": "b", "effect": "PreferNoSelect"}])),
            ],
            None,
        )
        .await;
    assert_ok(&run, "adding a taint without timeAdded");
    let taints = get(&hub, &["get", "managedcluster", &name]).await["spec"]["taints"].clone();
    assert_eq!(taints[0]["timeAdded"], stamped);
    assert!(
        taints[1]["timeAdded"].as_str().is_some_and(|t| !t.is_empty()),
        "{taints}"
    );
    hub.cleanup().await;
}

#[tokio::test]
async fn names_and_client_config_urls_are_checked() {
    let hub = AdmissionHub::start().await;
    let name = unique("adm-url");
    hub.created(&["managedcluster", &name]);
    let run = hub
        .kubectl(
            None,
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, false, None, &[], Some("http://10.0.0.1:6443"))),
        )
        .await;
    assert_refused(
        &run,
        "BadRequest",
        VALIDATOR,
        "url \"http://10.0.0.1:6443\" is invalid in client configs",
    );
    let run = hub
        .kubectl(
            None,
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&name, false, None, &[], Some("https://10.0.0.1:6443"))),
        )
        .await;
    assert_ok(&run, "creating with an https URL");
    let dotted = format!("{name}.x");
    hub.created(&["managedcluster", &dotted]);
    let run = hub
        .kubectl(
            None,
            &["create", "-f", "-"],
            Some(hub.cluster_yaml(&dotted, false, None, &[], Some("https://a"))),
        )
        .await;
    assert_refused(
        &run,
        "BadRequest",
        VALIDATOR,
        "metadata.name format is not correct: must not contain dots",
    );
    hub.cleanup().await;
}

#[tokio::test]
async fn cluster_set_bindings_need_their_sets_name_and_the_bind_permission() {
    let hub = AdmissionHub::start().await;
    let namespace = unique("adm-ns");
    let set = unique("adm-bset");
    assert_ok(
        &hub.kubectl(None, &["create", "namespace", &namespace], None)
            .await,
        "creating the namespace",
    );
    hub.created(&["namespace", &namespace]);
    let binding = |name: &str| {
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
            "metadata": {"name": name, "namespace": namespace, "labels": {super::RUN_LABEL: hub.run}},
            "spec": {"clusterSet": set}})
        .to_string()
    };
    let writer = json!({"apiGroups": ["cluster.open-cluster-management.io"],
        "resources": ["managedclustersetbindings"], "verbs": ["get", "list", "create", "update", "patch"]});
    let bind = json!({"apiGroups": ["cluster.open-cluster-management.io"],
        "resources": ["managedclustersets/bind"], "resourceNames": [set], "verbs": ["create"]});
    let binder = hub.user_with(json!([writer, bind])).await;
    let plain = hub.user_with(json!([writer])).await;
    let run = hub
        .kubectl(None, &["create", "-f", "-"], Some(binding("other-name")))
        .await;
    assert_refused(
        &run,
        "BadRequest",
        BINDING_VALIDATOR,
        "The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet",
    );
    let run = hub
        .kubectl(Some(&plain), &["create", "-f", "-"], Some(binding(&set)))
        .await;
    assert_refused(
        &run,
        "Forbidden",
        BINDING_VALIDATOR,
        &format!(
            "managedclustersets/bind.apps \"{set}\" is forbidden: user \"{}\" is not allowed to bind cluster set \"{set}\"",
            plain.name()
        ),
    );
    let run = hub
        .kubectl(Some(&binder), &["create", "-f", "-"], Some(binding(&set)))
        .await;
    assert_ok(&run, "binding with the bind permission");
    // Updates need no bind permission, but the name must still be the set's.
    let run = hub
        .kubectl(
            Some(&plain),
            &[
                "-n",
                &namespace,
                "annotate",
                "managedclustersetbinding",
                &set,
                "note=x",
            ],
            None,
        )
        .await;
    assert_ok(&run, "annotating the binding");
    let run = hub
        .kubectl(
            None,
            &[
                "-n",
                &namespace,
                "patch",
                "managedclustersetbinding",
                &set,
                "--type=merge",
                "-p",
                r#"{"spec":{"clusterSet":"elsewhere"}}"#,
            ],
            None,
        )
        .await;
    assert_refused(
        &run,
        "BadRequest",
        BINDING_VALIDATOR,
        "The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet",
    );
    hub.cleanup().await;
}
