//! How built-in kinds look on the wire: kube-apiserver decodes them into Go structs, so what it
//! answers (and what its field manager sees) follows Go's JSON rules, not the request's text.
//!
//! Three effects are reproduced here, per kind:
//! - fields without `omitempty` are always present, with their zero value (`eventTime: null`,
//!   `reportingComponent: ""`, a `roleRef` with empty strings): the kind's *skeleton*;
//! - empty maps and lists of `omitempty` fields disappear on decoding (`labels: {}`, `data: {}`,
//!   `finalizers: []`);
//! - empty lists of fields without `omitempty` come back as `null` once stored (`rules: []`).
//!
//! Each kind also has a *schema* for the field manager, in the OpenAPI v3 extension vocabulary
//! CRDs use: maps (`additionalProperties`), keyed lists (`x-kubernetes-list-type: map`), sets, and
//! atomic structs (`x-kubernetes-map-type: atomic`). Lists without a list type are atomic.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The wire shape of one built-in kind.
#[derive(Debug, Clone)]
pub struct Shape {
    /// The Go zero value's fields that are always serialized (without `metadata`).
    pub skeleton: Value,
    /// The field manager's view of the kind (see the module docs).
    pub schema: Value,
}

fn string_map() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}})
}

fn atomic() -> Value {
    json!({"type": "object", "x-kubernetes-map-type": "atomic"})
}

fn conditions() -> Value {
    json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})
}

/// `PodTemplateSpec` as a zero value serializes it.
fn pod_template() -> Value {
    json!({"metadata": {}, "spec": {"containers": null}})
}

fn pod_spec_schema() -> Value {
    let keyed = |key: &str| json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [key]});
    let container = json!({"type": "object", "properties": {
        "env": keyed("name"), "ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["containerPort", "protocol"]},
        "volumeMounts": keyed("mountPath"), "resources": {"type": "object", "properties": {
            "limits": string_map(), "requests": string_map()}}}});
    let containers = |c: &Value| {
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": c})
    };
    json!({"type": "object", "properties": {
        "containers": containers(&container), "initContainers": containers(&container),
        "volumes": keyed("name"), "nodeSelector": string_map(), "imagePullSecrets": keyed("name")}})
}

fn template_schema() -> Value {
    json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": string_map(), "annotations": string_map()}},
        "spec": pod_spec_schema()}})
}

fn workload(extra_spec: Value, status: Value) -> Shape {
    let mut spec = json!({"selector": null, "template": pod_template()});
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
        s.extend(extra.clone());
    }
    Shape {
        skeleton: json!({"spec": spec, "status": status}),
        schema: json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"selector": atomic(), "template": template_schema()}},
            "status": {"type": "object", "properties": {"conditions": conditions()}}}}),
    }
}

fn shapes() -> &'static BTreeMap<String, Shape> {
    static SHAPES: OnceLock<BTreeMap<String, Shape>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let mut m = BTreeMap::new();
        let mut add = |group: &str, resource: &str, skeleton: Value, schema: Value| {
            m.insert(format!("{group}/{resource}"), Shape { skeleton, schema });
        };
        add(
            "",
            "namespaces",
            json!({"spec": {}, "status": {}}),
            json!({"type": "object", "properties": {"status": {"type": "object", "properties": {
                "conditions": conditions()}}}}),
        );
        add(
            "",
            "configmaps",
            json!({}),
            json!({"type": "object", "properties": {"data": string_map(), "binaryData": string_map()}}),
        );
        add(
            "",
            "secrets",
            json!({}),
            json!({"type": "object", "properties": {"data": string_map(), "stringData": string_map()}}),
        );
        add(
            "",
            "serviceaccounts",
            json!({}),
            json!({"type": "object", "properties": {"secrets": {"type": "array",
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}}}),
        );
        add(
            "",
            "events",
            json!({"involvedObject": {}, "source": {}, "firstTimestamp": null, "lastTimestamp": null,
                "eventTime": null, "reportingComponent": "", "reportingInstance": ""}),
            json!({"type": "object", "properties": {"involvedObject": atomic(), "related": atomic()}}),
        );
        add(
            "events.k8s.io",
            "events",
            json!({"eventTime": null, "regarding": {}, "deprecatedSource": {},
                "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null}),
            json!({"type": "object", "properties": {"regarding": atomic(), "related": atomic()}}),
        );
        add(
            "coordination.k8s.io",
            "leases",
            json!({"spec": {}}),
            json!({"type": "object"}),
        );
        for resource in ["roles", "clusterroles"] {
            add(
                "rbac.authorization.k8s.io",
                resource,
                json!({"rules": null}),
                json!({"type": "object", "properties": {"aggregationRule": {"type": "object",
                    "properties": {"clusterRoleSelectors": {"type": "array"}}}}}),
            );
        }
        for resource in ["rolebindings", "clusterrolebindings"] {
            add(
                "rbac.authorization.k8s.io",
                resource,
                json!({"roleRef": {"apiGroup": "", "kind": "", "name": ""}}),
                json!({"type": "object", "properties": {"roleRef": atomic()}}),
            );
        }
        add(
            "certificates.k8s.io",
            "certificatesigningrequests",
            json!({"spec": {"request": null, "signerName": ""}, "status": {}}),
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"extra": {"type": "object",
                    "additionalProperties": {"type": "array"}}}},
                "status": {"type": "object", "properties": {"conditions": conditions()}}}}),
        );
        add(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            json!({"spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null},
                "status": {"conditions": null, "acceptedNames": {"plural": "", "kind": ""},
                    "storedVersions": null}}),
            json!({"type": "object", "properties": {"status": {"type": "object", "properties": {
                "conditions": conditions()}}}}),
        );
        add_workload(&mut add, "deployments", workload(json!({"strategy": {}}), json!({})),
        );
        add_workload(&mut add, "replicasets", workload(json!({}), json!({"replicas": 0})),
        );
        add_workload(&mut add, "daemonsets", workload(
                json!({"updateStrategy": {}}),
                json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                    "desiredNumberScheduled": 0, "numberReady": 0}),
            ),
        );
        add_workload(&mut add, "statefulsets", workload(
                json!({"updateStrategy": {}}),
                json!({"replicas": 0, "availableReplicas": 0}),
            ),
        );
        add(
            "batch",
            "jobs",
            json!({"spec": {"template": pod_template()}, "status": {}}),
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"selector": atomic(), "template": template_schema()}},
                "status": {"type": "object", "properties": {"conditions": conditions()}}}}),
        );
        add(
            "batch",
            "cronjobs",
            json!({"spec": {"schedule": "", "jobTemplate": {"metadata": {},
                "spec": {"template": pod_template()}}}, "status": {}}),
            json!({"type": "object"}),
        );
        add(
            "",
            "pods",
            json!({"spec": {"containers": null}, "status": {}}),
            json!({"type": "object", "properties": {"spec": pod_spec_schema(),
                "status": {"type": "object", "properties": {"conditions": conditions()}}}}),
        );
        add(
            "",
            "services",
            json!({"spec": {}, "status": {"loadBalancer": {}}}),
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "selector": string_map(), "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"]}}}}}),
        );
        add(
            "",
            "nodes",
            json!({"spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                    "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                    "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}}}),
            json!({"type": "object", "properties": {"status": {"type": "object", "properties": {
                "conditions": conditions(), "capacity": string_map(), "allocatable": string_map()}}}}),
        );
        add(
            "",
            "persistentvolumeclaims",
            json!({"spec": {"resources": {}}, "status": {}}),
            json!({"type": "object"}),
        );
        add("", "persistentvolumes", json!({"spec": {}, "status": {}}), json!({"type": "object"}));
        add("", "resourcequotas", json!({"spec": {}, "status": {}}), json!({"type": "object"}));
        add("", "limitranges", json!({"spec": {"limits": null}}), json!({"type": "object"}));
        add(
            "",
            "podtemplates",
            json!({"template": pod_template()}),
            json!({"type": "object", "properties": {"template": template_schema()}}),
        );
        add(
            "",
            "replicationcontrollers",
            json!({"spec": {}, "status": {"replicas": 0}}),
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "selector": string_map(), "template": template_schema()}}}}),
        );
        add("apps", "controllerrevisions", json!({"revision": 0}), json!({"type": "object"}));
        m
    })
}

fn add_workload(add: &mut impl FnMut(&str, &str, Value, Value), resource: &str, shape: Shape) {
    add("apps", resource, shape.skeleton, shape.schema);
}

/// The wire shape of a built-in kind, if this server knows it.
pub fn shape(group: &str, resource: &str) -> Option<&'static Shape> {
    shapes().get(&format!("{group}/{resource}"))
}

/// Fills in the skeleton's fields that `value` lacks (recursively into objects present in both).
fn fill(value: &mut Value, skeleton: &Value) {
    let (Value::Object(map), Value::Object(skeleton)) = (value, skeleton) else {
        return;
    };
    for (key, zero) in skeleton {
        match map.get_mut(key) {
            None => {
                map.insert(key.clone(), zero.clone());
            }
            Some(present) => fill(present, zero),
        }
    }
}

/// Whether the field at this skeleton position is serialized even when empty (no `omitempty`).
fn always_present(skeleton: Option<&Value>) -> bool {
    skeleton.is_some()
}

/// Drops empty maps and lists of `omitempty` fields (maps: where the schema says map; lists:
/// wherever the skeleton does not hold the field).
fn drop_empty(value: &mut Value, schema: Option<&Value>, skeleton: Option<&Value>) {
    let Value::Object(map) = value else { return };
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        let child_schema = schema.and_then(|s| {
            s.get("properties")
                .and_then(|p| p.get(&key))
                .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
        });
        let child_skeleton = skeleton.and_then(|s| s.get(&key));
        let Some(child) = map.get_mut(&key) else { continue };
        let is_map = child_schema.is_some_and(|s| s.get("additionalProperties").is_some());
        let empty = match child {
            Value::Array(items) => items.is_empty() && !always_present(child_skeleton),
            Value::Object(fields) => fields.is_empty() && is_map && !always_present(child_skeleton),
            _ => false,
        };
        if empty {
            map.remove(&key);
            continue;
        }
        if child.is_object() {
            drop_empty(child, child_schema, child_skeleton);
        }
    }
}

/// Empty lists the skeleton holds as `null` become `null` (Go slices lose emptiness in storage).
fn null_empty_lists(value: &mut Value, skeleton: &Value) {
    let (Value::Object(map), Value::Object(skeleton)) = (value, skeleton) else {
        return;
    };
    for (key, zero) in skeleton {
        let Some(present) = map.get_mut(key) else { continue };
        match (&*present, zero) {
            (Value::Array(items), Value::Null) if items.is_empty() => *present = Value::Null,
            (Value::Object(_), Value::Object(_)) => null_empty_lists(present, zero),
            _ => {}
        }
    }
}

/// `metadata` maps and lists (all `omitempty`).
fn drop_empty_metadata(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|key, v| {
            let collection = matches!(
                key.as_str(),
                "labels" | "annotations" | "finalizers" | "ownerReferences" | "managedFields"
            );
            !(collection
                && match v {
                    Value::Object(m) => m.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    _ => false,
                })
        });
    }
}

/// The object as Go decodes it: skeleton filled in, empty `omitempty` collections dropped.
pub fn normalize_decoded(group: &str, resource: &str, object: &mut Value) {
    drop_empty_metadata(object);
    let Some(shape) = shape(group, resource) else {
        return;
    };
    drop_empty(object, Some(&shape.schema), Some(&shape.skeleton));
    fill(object, &shape.skeleton);
}

/// The object as it comes back from storage: additionally, empty non-`omitempty` lists are null.
pub fn normalize_stored(group: &str, resource: &str, object: &mut Value) {
    normalize_decoded(group, resource, object);
    if let Some(shape) = shape(group, resource) {
        null_empty_lists(object, &shape.skeleton);
    }
}

/// Go's field order of `ObjectMeta`.
const OBJECT_META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Go's field order of `ManagedFieldsEntry`.
const MANAGED_FIELDS_ORDER: &[&str] = &[
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// Go's field order of `OwnerReference`.
const OWNER_REFERENCE_ORDER: &[&str] = &[
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];

/// Go's order of a kind's top-level fields after `kind`, `apiVersion` and `metadata`.
fn top_level_order(group: &str, resource: &str) -> &'static [&'static str] {
    match (group, resource) {
        ("", "configmaps") => &["immutable", "data", "binaryData"],
        ("", "secrets") => &["immutable", "data", "stringData", "type"],
        ("", "serviceaccounts") => &["secrets", "imagePullSecrets", "automountServiceAccountToken"],
        ("", "events") => &[
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        ],
        ("events.k8s.io", "events") => &[
            "eventTime",
            "series",
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "regarding",
            "related",
            "note",
            "type",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
        ],
        ("rbac.authorization.k8s.io", "roles") => &["rules"],
        ("rbac.authorization.k8s.io", "clusterroles") => &["rules", "aggregationRule"],
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => &["subjects", "roleRef"],
        ("apps", "controllerrevisions") => &["data", "revision"],
        ("", "podtemplates") => &["template"],
        _ => &["spec", "status"],
    }
}

/// Reorders an object's keys: `order` first, the rest sorted (Go marshals maps sorted).
fn reorder(value: &Value, order: &[&str]) -> Value {
    let Value::Object(map) = value else {
        return value.clone();
    };
    let mut out = serde_json::Map::new();
    for key in order {
        if let Some(v) = map.get(*key) {
            out.insert((*key).to_string(), sorted(v));
        }
    }
    let mut rest: Vec<&String> = map.keys().filter(|k| !order.contains(&k.as_str())).collect();
    rest.sort();
    for key in rest {
        out.insert(key.clone(), sorted(&map[key.as_str()]));
    }
    Value::Object(out)
}

/// A value with every object's keys sorted (Go's order for maps and unstructured content).
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k.as_str()])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// A built-in object with its keys in the order Go's `json.Marshal` writes the typed object
/// (struct fields in declaration order, maps sorted) for `TypeMeta`, `ObjectMeta` and the kind's
/// top level; deeper structs are sorted.
pub fn go_ordered(group: &str, resource: &str, object: &Value) -> Value {
    let mut top = vec!["kind", "apiVersion", "metadata"];
    top.extend_from_slice(top_level_order(group, resource));
    let mut out = reorder(object, &top);
    if let Some(meta) = out.get_mut("metadata") {
        let mut ordered = reorder(meta, OBJECT_META_ORDER);
        if let Some(Value::Array(entries)) = ordered.get_mut("managedFields") {
            for entry in entries.iter_mut() {
                *entry = reorder(entry, MANAGED_FIELDS_ORDER);
            }
        }
        if let Some(Value::Array(owners)) = ordered.get_mut("ownerReferences") {
            for owner in owners.iter_mut() {
                *owner = reorder(owner, OWNER_REFERENCE_ORDER);
            }
        }
        *meta = ordered;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_get_their_zero_fields() {
        let mut e = json!({"metadata": {"name": "e", "labels": {}}, "message": "m"});
        normalize_decoded("", "events", &mut e);
        assert_eq!(e["eventTime"], Value::Null);
        assert_eq!(e["reportingComponent"], "");
        assert_eq!(e["source"], json!({}));
        assert!(e["metadata"].get("labels").is_none());
    }

    #[test]
    fn empty_collections_follow_go() {
        let mut cm = json!({"metadata": {"finalizers": []}, "data": {}});
        normalize_decoded("", "configmaps", &mut cm);
        assert_eq!(cm, json!({"metadata": {}}));
        let mut role = json!({"metadata": {}, "rules": []});
        normalize_decoded("rbac.authorization.k8s.io", "clusterroles", &mut role);
        assert_eq!(role["rules"], json!([]));
        normalize_stored("rbac.authorization.k8s.io", "clusterroles", &mut role);
        assert_eq!(role["rules"], Value::Null);
    }

    #[test]
    fn go_order_of_a_configmap() {
        let cm = json!({"data": {"b": "1", "a": "2"}, "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"uid": "u", "name": "m", "managedFields": [{"time": "t", "manager": "x"}]}});
        assert_eq!(
            go_ordered("", "configmaps", &cm).to_string(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"m","uid":"u","managedFields":[{"manager":"x","time":"t"}]},"data":{"a":"2","b":"1"}}"#
        );
    }

    #[test]
    fn structs_are_filled_recursively() {
        let mut crd = json!({"spec": {"group": "g", "names": {"kind": "K"}}});
        normalize_decoded("apiextensions.k8s.io", "customresourcedefinitions", &mut crd);
        assert_eq!(crd["spec"]["names"], json!({"kind": "K", "plural": ""}));
        assert_eq!(crd["status"]["conditions"], Value::Null);
    }
}
