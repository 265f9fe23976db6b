//! `kubectl get` of built-in kinds prints kube-apiserver's printer columns: Events (core/v1 and
//! events.k8s.io/v1, plain and `-o wide`), RoleBindings, ClusterRoles, Leases and Nodes.

use super::{Kubectl, unique};
use ocm_controlplane::TestEnv;

/// The header line's column names (split on runs of two or more spaces).
fn header(output: &str) -> Vec<String> {
    output
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The cells of the row whose text contains `needle`.
fn row<'a>(output: &'a str, needle: &str) -> Vec<&'a str> {
    output
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no row with {needle} in:\n{output}"))
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

#[tokio::test]
async fn kubectl_get_prints_kube_columns_for_built_in_kinds() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_get_prints_kube_columns_for_built_in_kinds").await else {
        return;
    };
    let ns = unique("tables");
    k.ok(&["create", "namespace", &ns]).await;
    let event = format!(
        r#"{{"apiVersion": "v1", "kind": "Event", "metadata": {{"name": "ev", "namespace": "{ns}"}},
        "involvedObject": {{"kind": "ConfigMap", "name": "cm", "namespace": "{ns}", "fieldPath": "data.x"}},
        "reason": "Tested", "message": "something happened", "type": "Warning",
        "source": {{"component": "tester", "host": "h1"}}, "count": 4,
        "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z"}}"#
    );
    k.with_stdin("create", &event, &[]).await;

    let plain = k.ok(&["get", "events", "-n", &ns]).await;
    assert_eq!(
        header(&plain),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{plain}"
    );
    let cells = row(&plain, "Tested");
    assert_eq!(
        cells[1..],
        ["Warning", "Tested", "configmap/cm", "something happened"],
        "{plain}"
    );
    assert!(cells[0].ends_with('y') || cells[0].ends_with('d'), "{plain}");

    let wide = k.ok(&["get", "events", "-n", &ns, "-o", "wide"]).await;
    assert_eq!(
        header(&wide),
        [
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME"
        ],
        "{wide}"
    );
    let cells = row(&wide, "Tested");
    assert_eq!(cells[4..6], ["data.x", "tester, h1"], "{wide}");
    assert_eq!(cells[cells.len() - 2..], ["4", "ev"], "{wide}");

    let new_api = k.ok(&["get", "events.v1.events.k8s.io", "-n", &ns]).await;
    assert_eq!(
        header(&new_api),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{new_api}"
    );
    assert_eq!(row(&new_api, "Tested")[3], "configmap/cm", "{new_api}");

    k.ok(&[
        "create",
        "rolebinding",
        "viewers",
        "-n",
        &ns,
        "--clusterrole=view",
        "--user=u1",
        "--group=g1",
    ])
    .await;
    let bindings = k
        .ok(&["get", "rolebindings", "viewers", "-n", &ns, "-o", "wide"])
        .await;
    assert_eq!(
        header(&bindings),
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"],
        "{bindings}"
    );
    let cells = row(&bindings, "viewers");
    assert_eq!(cells[1], "ClusterRole/view", "{bindings}");
    assert_eq!(cells[3..], ["u1", "g1"], "{bindings}");

    let roles = k.ok(&["get", "clusterroles", "view"]).await;
    assert_eq!(header(&roles), ["NAME", "CREATED AT"], "{roles}");

    let lease = format!(
        r#"{{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {{"name": "lock", "namespace": "{ns}"}}, "spec": {{"holderIdentity": "me"}}}}"#
    );
    k.with_stdin("create", &lease, &[]).await;
    let leases = k.ok(&["get", "leases", "-n", &ns]).await;
    assert_eq!(header(&leases), ["NAME", "HOLDER", "AGE"], "{leases}");
    assert_eq!(row(&leases, "lock")[1], "me", "{leases}");

    let node_name = unique("tables-node");
    let node = format!(
        r#"{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{node_name}",
        "labels": {{"node-role.kubernetes.io/worker": ""}}}},
        "status": {{"conditions": [{{"type": "Ready", "status": "False", "reason": "Test", "message": "m"}}],
            "nodeInfo": {{"kubeletVersion": "v1.36.2", "machineID": "", "systemUUID": "", "bootID": "",
                "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "", "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": "amd64"}}}}}}"#
    );
    k.with_stdin("create", &node, &[]).await;
    let nodes = k.ok(&["get", "node", &node_name]).await;
    assert_eq!(
        header(&nodes),
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
        "{nodes}"
    );
    let cells = row(&nodes, &node_name);
    assert_eq!(cells[1..3], ["NotReady", "worker"], "{nodes}");
    assert_eq!(cells[4], "v1.36.2", "{nodes}");

    k.ok(&["delete", "node", &node_name]).await;
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}
