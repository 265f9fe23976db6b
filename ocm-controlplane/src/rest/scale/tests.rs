//! Unit tests of the scale subresource.

use super::*;

#[test]
fn label_selectors_print_as_kube_prints_them() {
    let selector = json!({
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "dev"]},
            {"key": "c", "operator": "Exists"},
            {"key": "x", "operator": "DoesNotExist"},
            {"key": "tier", "operator": "NotIn", "values": ["web"]},
        ],
    });
    assert_eq!(
        label_selector_string(&selector),
        "a=1,b=2,c,env in (dev,prod),tier notin (web),!x"
    );
    assert_eq!(label_selector_string(&json!({})), "");
    assert_eq!(label_map_string(&json!({"z": "1", "app": "x"})), "app=x,z=1");
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "n", "uid": "u1", "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 2,
            "managedFields": [
                {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}},
            ]},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": 2},
    })
}

#[test]
fn scale_of_a_deployment() {
    let info = crate::registry::Registry::with_builtins();
    let info = info.get("apps", "v1", "deployments").unwrap();
    let paths = ScalePaths::builtin(&info).unwrap();
    let scale = scale_of(&paths, &deployment(), false).unwrap();
    assert_eq!(
        scale,
        json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "d", "namespace": "n", "uid": "u1", "resourceVersion": "7",
                "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}})
    );
}

#[test]
fn managers_move_between_parent_and_scale() {
    let info = crate::registry::Registry::with_builtins();
    let info = info.get("apps", "v1", "deployments").unwrap();
    let paths = ScalePaths::builtin(&info).unwrap();
    let parent = deployment();
    let to_scale = managers_to_scale(&paths, &parent);
    assert_eq!(to_scale.len(), 1);
    assert_eq!(to_scale[0]["apiVersion"], "autoscaling/v1");
    assert_eq!(to_scale[0]["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    // Another manager took spec.replicas through the Scale.
    let scale_entries = vec![json!({"manager": "hpa", "operation": "Update",
        "apiVersion": "autoscaling/v1", "time": "2026-01-02T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"})];
    let back = managers_to_parent(&paths, &parent, "apps/v1", &scale_entries).unwrap();
    assert_eq!(back.len(), 2);
    let kubectl = back.iter().find(|e| e["manager"] == "kubectl").unwrap();
    assert_eq!(kubectl["fieldsV1"], json!({"f:spec": {"f:template": {}}}));
    let hpa = back.iter().find(|e| e["manager"] == "hpa").unwrap();
    assert_eq!(hpa["apiVersion"], "apps/v1");
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn custom_paths_come_from_the_crd_version() {
    let crd = json!({"spec": {"versions": [
        {"name": "v1", "subresources": {"scale": {"specReplicasPath": ".spec.size",
            "statusReplicasPath": ".status.size", "labelSelectorPath": ".status.selector"}}},
        {"name": "v2"},
    ]}});
    let paths = ScalePaths::custom(&crd, "example.com", "v1").unwrap();
    assert_eq!(paths.spec_replicas, vec!["spec", "size"]);
    assert_eq!(paths.mapping("example.com/v2"), Some(&None));
    assert!(ScalePaths::custom(&crd, "example.com", "v2").is_none());
    let cr = json!({"metadata": {"name": "c"}, "spec": {}, "status": {"size": 1, "selector": "a=b"}});
    let scale = scale_of(&paths, &cr, true).unwrap();
    assert_eq!(scale["spec"]["replicas"], MISSING_REPLICAS);
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "a=b"}));
    let mut cr = cr;
    set_nested(&mut cr, &paths.spec_replicas, json!(4));
    assert_eq!(cr["spec"]["size"], 4);
}
