//! Mutating requests beyond what the server serves at once (kube-apiserver's
//! `--max-mutating-requests-inflight`, 200) wait for a place rather than fail, and reads are not
//! held behind them.
//!
//! The test uses its own namespace and cleans up, so it also passes against a real cluster
//! (`OCM_TEST_HUB_KUBECONFIG`; the admin user there is exempt from priority and fairness).

use futures::future::join_all;
use ocm_controlplane::TestEnv;
use serde_json::json;

use crate::garbage_collection::{create_namespace, delete_namespace, unique};
use crate::scale::send;

/// More than twice the limit, sent at once over the client's one connection.
const WRITES: usize = 450;

#[tokio::test]
async fn writes_beyond_the_in_flight_limit_wait_their_turn_and_reads_go_on() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("inflight");
    create_namespace(&client, &ns).await;
    let collection = format!("/api/v1/namespaces/{ns}/configmaps");

    let creates = join_all((0..WRITES).map(|i| {
        let (client, collection) = (client.clone(), collection.clone());
        async move {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}")}, "data": {"i": i.to_string()}});
            send(&client, "POST", &collection, "application/json", Some(&body)).await
        }
    }));
    // A read sent while the writes are queued is answered too (reads are not limited with them).
    let namespace_path = format!("/api/v1/namespaces/{ns}");
    let read = send(&client, "GET", &namespace_path, "application/json", None);
    let (created, (read_code, namespace)) = tokio::join!(creates, read);
    assert_eq!(read_code, 200, "{namespace}");
    for (code, body) in &created {
        assert_eq!(*code, 201, "{body}");
    }

    let patches = join_all((0..WRITES).map(|i| {
        let (client, collection) = (client.clone(), collection.clone());
        async move {
            let patch = json!({"data": {"patched": "yes"}});
            send(
                &client,
                "PATCH",
                &format!("{collection}/cm-{i}"),
                "application/merge-patch+json",
                Some(&patch),
            )
            .await
        }
    }))
    .await;
    for (code, body) in &patches {
        assert_eq!(*code, 200, "{body}");
        assert_eq!(body["data"]["patched"], "yes", "{body}");
    }

    let (code, list) = send(&client, "GET", &collection, "application/json", None).await;
    assert_eq!(code, 200);
    let patched = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|cm| cm["data"]["patched"] == "yes")
        .count();
    assert_eq!(patched, WRITES);
    delete_namespace(&client, &ns).await;
}
