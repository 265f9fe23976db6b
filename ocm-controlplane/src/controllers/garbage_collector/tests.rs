//! Unit tests of the garbage collector.

use super::*;
use std::sync::Arc;

#[test]
fn owner_references_are_edited_in_place() {
    let mut o = json!({"metadata": {"ownerReferences": [
        {"uid": "a", "blockOwnerDeletion": true}, {"uid": "b"}]}});
    unblock_owner_refs(&mut o);
    assert_eq!(o["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], false);
    retain_owner_refs(&mut o, |r| r["uid"] != "a");
    assert_eq!(o["metadata"]["ownerReferences"], json!([{"uid": "b"}]));
    retain_owner_refs(&mut o, |_| false);
    assert!(o["metadata"].get("ownerReferences").is_none());
}

#[test]
fn api_versions_split_like_kube() {
    assert_eq!(split_api_version("v1"), ("", "v1"));
    assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
}

#[test]
fn queue_keeps_order_without_duplicates() {
    let mut q = Queue::default();
    q.push("a");
    q.push("b");
    q.push("a");
    assert_eq!(q.pop().as_deref(), Some("a"));
    q.push("a");
    assert_eq!(q.pop().as_deref(), Some("b"));
    assert_eq!(q.pop().as_deref(), Some("a"));
    assert_eq!(q.pop(), None);
}

#[tokio::test]
async fn a_dependent_of_a_deleted_owner_is_collected() {
    use crate::registry::Registry;
    use crate::storage::MemoryStorage;
    let api = Api::new(
        Arc::new(MemoryStorage::in_memory()),
        Arc::new(Registry::with_builtins()),
    );
    super::super::bootstrap(&api).await.unwrap();
    let cm = api.registry.get("", "v1", "configmaps").unwrap();
    let ctx = controller_context("test", Some("default"));
    let owner = api
        .create_object(&cm, &ctx, br#"{"metadata":{"name":"owner"}}"#)
        .await
        .unwrap();
    let uid = owner.body["metadata"]["uid"].as_str().unwrap().to_string();
    let dependent = json!({"metadata": {"name": "dep", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}});
    api.create_object(&cm, &ctx, dependent.to_string().as_bytes())
        .await
        .unwrap();
    let task = tokio::spawn(run(api.clone()));
    let delete_ctx = RequestContext {
        name: Some("owner".into()),
        ..ctx.clone()
    };
    api.delete(&cm, &delete_ctx, &json!({})).await.unwrap();
    let key = storage::object_key("", "configmaps", Some("default"), "dep");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while api.storage.get(&key).await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the dependent was not collected"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
}
