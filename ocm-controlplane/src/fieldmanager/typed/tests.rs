//! Unit tests of the typed walkers.

use super::*;
use serde_json::json;

fn deployment() -> Schema<'static> {
    Schema::builtin("apps", "deployments")
}

#[test]
fn applied_fields_own_leaves_items_and_map_entries() {
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "b"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "strategy": {},
            "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}}});
    let set = to_field_set(&config, deployment()).unwrap();
    assert_eq!(
        set.to_json(),
        json!({"f:apiVersion": {}, "f:kind": {}, "f:metadata": {"f:name": {}, "f:labels": {"f:a": {}}},
            "f:spec": {"f:replicas": {}, "f:selector": {}, "f:strategy": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}, "f:ports": {
                    "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
    );
}

#[test]
fn comparison_marks_new_containers_and_changed_leaves() {
    let old = json!({"data": {"a": "1", "b": "1"}, "metadata": {"labels": {"x": "y"}}});
    let new = json!({"data": {"a": "2", "c": "1"}, "metadata": {"labels": {"x": "y"}}, "binaryData": {"k": "dg=="}});
    let c = compare(&old, &new, Schema::builtin("", "configmaps")).unwrap();
    assert_eq!(c.modified.to_json(), json!({"f:data": {"f:a": {}}}));
    assert_eq!(
        c.added.to_json(),
        json!({"f:data": {"f:c": {}}, "f:binaryData": {".": {}, "f:k": {}}})
    );
    assert_eq!(c.removed.to_json(), json!({"f:data": {"f:b": {}}}));
}

#[test]
fn keyed_lists_merge_by_key_in_order() {
    let live = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "a", "image": "1"}, {"name": "b", "image": "1"}, {"name": "c", "image": "1"}]}}}});
    let config = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "2"}, {"name": "d", "image": "2"}, {"name": "a", "image": "2"}]}}}});
    let merged = merge(&live, &config, deployment()).unwrap();
    let names: Vec<(&str, &str)> = merged["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("b", "1"), ("c", "2"), ("d", "2"), ("a", "2")]);
    // Atomic lists and structs are replaced.
    let live = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}}});
    let config = json!({"spec": {"selector": {"matchExpressions": []}, "template": {"spec": {"containers": [{"name": "a", "args": ["z"]}]}}}});
    let merged = merge(&live, &config, deployment()).unwrap();
    assert_eq!(merged["spec"]["selector"], json!({"matchExpressions": []}));
    assert_eq!(
        merged["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["z"])
    );
}

#[test]
fn removal_and_named_members() {
    let schema = Schema::builtin("apps", "deployments");
    let obj = json!({"spec": {"paused": true, "template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}},
        "metadata": {"finalizers": ["x", "y"]}});
    let set = FieldSet::from_json(&json!({"f:spec": {"f:paused": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {}}}}},
        "f:metadata": {"f:finalizers": {"v:\"y\"": {}}}}))
    .unwrap();
    assert_eq!(
        remove_items(&obj, &set, schema),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}, "metadata": {"finalizers": ["x"]}})
    );
    let status = FieldSet::from_json(&json!({"f:status": {"f:replicas": {}}})).unwrap();
    assert_eq!(
        ensure_named_members(&status, schema).to_json(),
        json!({"f:status": {".": {}, "f:replicas": {}}})
    );
}

#[test]
fn configurations_are_checked_against_the_schema() {
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": 1}, "bogus": true});
    let errors = validate(&config, Schema::builtin("", "configmaps"));
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            ".data.a: expected string, got 1",
            ".bogus: field not declared in schema"
        ]
    );
    let dup = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
    let errors = validate(&dup, deployment());
    assert_eq!(
        errors[0].to_string(),
        ".spec.template.spec.containers: duplicate entries for key [name=\"a\"]"
    );
    let crd = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    let errors = validate(
        &json!({"spec": {"y": 1}, "status": {"anything": {"goes": 1}}}),
        Schema::custom(&crd),
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].to_string(), ".spec.y: field not declared in schema");
}
