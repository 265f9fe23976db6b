//! The Table columns of more built-in kinds, as kube-apiserver's printers make them: Events
//! (core/v1 and events.k8s.io/v1 share one printer), RBAC roles and bindings, Leases and Nodes.
//!
//! kube-apiserver always prints the wide form (every column, `priority: 1` ones included);
//! kubectl hides the priority-1 columns unless `-o wide`. Kinds without a printer (Roles and
//! ClusterRoles) get its default table: `Name` and `Created At`.

use serde_json::{Value, json};

use super::table::{AGE_DESC, Column, NAME_DESC, col};
use crate::registry::ResourceInfo;

const EVENT_LAST_SEEN: &str = "The time at which the most recent occurrence of this event was recorded.";
const EVENT_TYPE: &str = "Type of this event (Normal, Warning), new types could be added in the future";
const EVENT_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
const EVENT_OBJECT: &str = "The object that this event is about.";
const EVENT_SUBOBJECT: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
const EVENT_SOURCE: &str =
    "The component reporting this event. Should be a short machine understandable string.";
const EVENT_MESSAGE: &str = "A human-readable description of the status of this operation.";
const EVENT_FIRST_SEEN: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
const EVENT_COUNT: &str = "The number of times this event has occurred.";
const ROLE_BINDING_ROLE: &str = "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.";
const CLUSTER_ROLE_BINDING_ROLE: &str = "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.";
const LEASE_HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";
const NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

fn text(o: &Value, pointer: &str) -> String {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The age of a timestamp as kube's printers write it, `<unknown>` when it is not set.
fn since(ts: &str) -> String {
    if ts.is_empty() {
        return "<unknown>".into();
    }
    super::table::age(ts)
}

fn cell(f: impl Fn(&Value) -> Value + 'static) -> Box<dyn Fn(&Value) -> Value> {
    Box::new(f)
}

fn name_column() -> Column {
    (
        col("Name", "string", "name", NAME_DESC, 0),
        cell(|o| json!(text(o, "/metadata/name"))),
    )
}

fn age_column() -> Column {
    (
        col("Age", "string", "", AGE_DESC, 0),
        cell(|o| json!(since(&text(o, "/metadata/creationTimestamp")))),
    )
}

/// The columns of `info`'s kind, if this module prints it.
pub(super) fn columns(info: &ResourceInfo) -> Option<Vec<Column>> {
    if info.is_custom() {
        return None;
    }
    match (info.group.as_str(), info.resource.as_str()) {
        ("", "events") => Some(event_columns(false)),
        ("events.k8s.io", "events") => Some(event_columns(true)),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => Some(vec![
            name_column(),
            (col("Created At", "date", "", AGE_DESC, 0), cell(created_at)),
        ]),
        ("rbac.authorization.k8s.io", "rolebindings") => {
            Some(binding_columns(ROLE_BINDING_ROLE, "roleBinding"))
        }
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            Some(binding_columns(CLUSTER_ROLE_BINDING_ROLE, "clusterRoleBinding"))
        }
        ("coordination.k8s.io", "leases") => Some(vec![
            name_column(),
            (
                col("Holder", "string", "", LEASE_HOLDER, 0),
                cell(|o| json!(text(o, "/spec/holderIdentity"))),
            ),
            age_column(),
        ]),
        ("", "nodes") => Some(node_columns()),
        _ => None,
    }
}

/// The creation time itself (kube-apiserver's default table convertor).
pub(super) fn created_at(o: &Value) -> Value {
    o.pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| {
            json!(
                t.with_timezone(&chrono::Utc)
                    .format("%Y-%m-%dT%H:%M:%SZ")
                    .to_string()
            )
        })
        .unwrap_or(Value::Null)
}

/// The fields the Event printer reads, from either API version.
struct EventView {
    first: String,
    last: String,
    event_time: String,
    series: Option<(i64, String)>,
    count: i64,
    kind: String,
    name: String,
    field_path: String,
    component: String,
    host: String,
    controller: String,
    instance: String,
    kind_of_event: String,
    reason: String,
    message: String,
    object_name: String,
}

impl EventView {
    fn of(o: &Value, events_api: bool) -> Self {
        let series = o.get("series").filter(|s| s.is_object()).map(|s| {
            (
                s.get("count").and_then(Value::as_i64).unwrap_or(0),
                text(s, "/lastObservedTime"),
            )
        });
        if events_api {
            Self {
                first: text(o, "/deprecatedFirstTimestamp"),
                last: text(o, "/deprecatedLastTimestamp"),
                event_time: text(o, "/eventTime"),
                series,
                count: o.get("deprecatedCount").and_then(Value::as_i64).unwrap_or(0),
                kind: text(o, "/regarding/kind"),
                name: text(o, "/regarding/name"),
                field_path: text(o, "/regarding/fieldPath"),
                component: text(o, "/deprecatedSource/component"),
                host: text(o, "/deprecatedSource/host"),
                controller: text(o, "/reportingController"),
                instance: text(o, "/reportingInstance"),
                kind_of_event: text(o, "/type"),
                reason: text(o, "/reason"),
                message: text(o, "/note"),
                object_name: text(o, "/metadata/name"),
            }
        } else {
            Self {
                first: text(o, "/firstTimestamp"),
                last: text(o, "/lastTimestamp"),
                event_time: text(o, "/eventTime"),
                series,
                count: o.get("count").and_then(Value::as_i64).unwrap_or(0),
                kind: text(o, "/involvedObject/kind"),
                name: text(o, "/involvedObject/name"),
                field_path: text(o, "/involvedObject/fieldPath"),
                component: text(o, "/source/component"),
                host: text(o, "/source/host"),
                controller: text(o, "/reportingComponent"),
                instance: text(o, "/reportingInstance"),
                kind_of_event: text(o, "/type"),
                reason: text(o, "/reason"),
                message: text(o, "/message"),
                object_name: text(o, "/metadata/name"),
            }
        }
    }

    fn first_seen(&self) -> String {
        if self.first.is_empty() {
            since(&self.event_time)
        } else {
            since(&self.first)
        }
    }

    fn last_seen(&self) -> String {
        match &self.series {
            Some((_, last_observed)) => since(last_observed),
            None if self.last.is_empty() => self.first_seen(),
            None => since(&self.last),
        }
    }

    fn count(&self) -> i64 {
        match &self.series {
            Some((count, _)) => *count,
            None if self.count == 0 => 1,
            None => self.count,
        }
    }

    fn object(&self) -> String {
        if self.name.is_empty() {
            self.kind.to_lowercase()
        } else {
            format!("{}/{}", self.kind.to_lowercase(), self.name)
        }
    }

    fn source(&self) -> String {
        let pick = |a: &str, b: &str| {
            if a.is_empty() {
                b.to_string()
            } else {
                a.to_string()
            }
        };
        let component = pick(&self.component, &self.controller);
        let instance = pick(&self.host, &self.instance);
        if instance.is_empty() {
            component
        } else {
            format!("{component}, {instance}")
        }
    }
}

fn event_columns(events_api: bool) -> Vec<Column> {
    let view = move |o: &Value| EventView::of(o, events_api);
    vec![
        (
            col("Last Seen", "string", "", EVENT_LAST_SEEN, 0),
            cell(move |o| json!(view(o).last_seen())),
        ),
        (
            col("Type", "string", "", EVENT_TYPE, 0),
            cell(move |o| json!(view(o).kind_of_event)),
        ),
        (
            col("Reason", "string", "", EVENT_REASON, 0),
            cell(move |o| json!(view(o).reason)),
        ),
        (
            col("Object", "string", "", EVENT_OBJECT, 0),
            cell(move |o| json!(view(o).object())),
        ),
        (
            col("Subobject", "string", "", EVENT_SUBOBJECT, 1),
            cell(move |o| json!(view(o).field_path)),
        ),
        (
            col("Source", "string", "", EVENT_SOURCE, 1),
            cell(move |o| json!(view(o).source())),
        ),
        (
            col("Message", "string", "", EVENT_MESSAGE, 0),
            cell(move |o| json!(view(o).message.trim())),
        ),
        (
            col("First Seen", "string", "", EVENT_FIRST_SEEN, 1),
            cell(move |o| json!(view(o).first_seen())),
        ),
        (
            col("Count", "string", "", EVENT_COUNT, 1),
            cell(move |o| json!(view(o).count())),
        ),
        (
            col("Name", "string", "name", NAME_DESC, 1),
            cell(move |o| json!(view(o).object_name)),
        ),
    ]
}

fn subjects(o: &Value, kind: &'static str) -> String {
    let items = o
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
        .map(|s| {
            if kind == "ServiceAccount" {
                format!("{}/{}", text(s, "/namespace"), text(s, "/name"))
            } else {
                text(s, "/name")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn binding_columns(role_desc: &str, what: &str) -> Vec<Column> {
    vec![
        name_column(),
        (
            col("Role", "string", "", role_desc, 0),
            cell(|o| {
                json!(format!(
                    "{}/{}",
                    text(o, "/roleRef/kind"),
                    text(o, "/roleRef/name")
                ))
            }),
        ),
        age_column(),
        (
            col("Users", "string", "", &format!("Users in the {what}"), 1),
            cell(|o| json!(subjects(o, "User"))),
        ),
        (
            col("Groups", "string", "", &format!("Groups in the {what}"), 1),
            cell(|o| json!(subjects(o, "Group"))),
        ),
        (
            col(
                "ServiceAccounts",
                "string",
                "",
                &format!("ServiceAccounts in the {what}"),
                1,
            ),
            cell(|o| json!(subjects(o, "ServiceAccount"))),
        ),
    ]
}

fn node_status(o: &Value) -> String {
    let ready = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .rev()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        });
    let mut status = vec![match ready {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    }];
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    status.join(",")
}

fn node_roles(o: &Value) -> String {
    let mut roles = std::collections::BTreeSet::new();
    if let Some(labels) = o.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v.to_string());
            }
        }
    }
    if roles.is_empty() {
        "<none>".into()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    }
}

fn node_address(o: &Value, kind: &str) -> String {
    o.pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|x| x.get("type").and_then(Value::as_str) == Some(kind))
        })
        .map(|x| text(x, "/address"))
        .unwrap_or_else(|| "<none>".into())
}

fn or_unknown(s: String) -> String {
    if s.is_empty() { "<unknown>".into() } else { s }
}

fn node_columns() -> Vec<Column> {
    vec![
        name_column(),
        (
            col("Status", "string", "", "The status of the node", 0),
            cell(|o| json!(node_status(o))),
        ),
        (
            col("Roles", "string", "", "The roles of the node", 0),
            cell(|o| json!(node_roles(o))),
        ),
        age_column(),
        (
            col(
                "Version",
                "string",
                "",
                "Kubelet Version reported by the node.",
                0,
            ),
            cell(|o| json!(text(o, "/status/nodeInfo/kubeletVersion"))),
        ),
        (
            col("Internal-IP", "string", "", NODE_ADDRESSES, 1),
            cell(|o| json!(node_address(o, "InternalIP"))),
        ),
        (
            col("External-IP", "string", "", NODE_ADDRESSES, 1),
            cell(|o| json!(node_address(o, "ExternalIP"))),
        ),
        (
            col(
                "OS-Image",
                "string",
                "",
                "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
                1,
            ),
            cell(|o| json!(or_unknown(text(o, "/status/nodeInfo/osImage")))),
        ),
        (
            col(
                "Kernel-Version",
                "string",
                "",
                "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
                1,
            ),
            cell(|o| {
                let mut kernel = or_unknown(text(o, "/status/nodeInfo/kernelVersion"));
                let arch = text(o, "/status/nodeInfo/architecture");
                if !arch.is_empty() {
                    kernel = format!("{kernel} ({arch})");
                }
                json!(kernel)
            }),
        ),
        (
            col(
                "Container-Runtime",
                "string",
                "",
                "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
                1,
            ),
            cell(|o| json!(or_unknown(text(o, "/status/nodeInfo/containerRuntimeVersion")))),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::table::human_duration;
    use super::*;

    #[test]
    fn event_cells_follow_kube_printer() {
        let now = chrono::Utc::now();
        let ts = |secs: i64| (now - chrono::Duration::seconds(secs)).to_rfc3339();
        let core = json!({"metadata": {"name": "e1"}, "type": "Warning", "reason": "Failed",
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
            "source": {"component": "kubelet", "host": "n1"}, "message": " boom \n",
            "firstTimestamp": ts(300), "lastTimestamp": ts(30), "count": 3});
        let cols = event_columns(false);
        let cells: Vec<Value> = cols.iter().map(|(_, f)| f(&core)).collect();
        assert_eq!(
            cells,
            vec![
                json!("30s"),
                json!("Warning"),
                json!("Failed"),
                json!("pod/p"),
                json!("spec.containers{c}"),
                json!("kubelet, n1"),
                json!("boom"),
                json!("5m"),
                json!(3),
                json!("e1")
            ]
        );
        // A new-API singleton: times from eventTime, count 1, source from the reporter.
        let new = json!({"metadata": {"name": "e2"}, "eventTime": ts(10), "reportingController": "ctl",
            "regarding": {"kind": "Node"}, "note": "n", "type": "Normal", "reason": "R"});
        let cells: Vec<Value> = event_columns(true).iter().map(|(_, f)| f(&new)).collect();
        assert_eq!(cells[0], json!("10s"));
        assert_eq!(cells[3], json!("node"));
        assert_eq!(cells[5], json!("ctl"));
        assert_eq!(cells[8], json!(1));
        assert_eq!(human_duration(300), "5m");
        assert_eq!(human_duration(330), "5m30s");
        assert_eq!(human_duration(3 * 3600), "3h");
        assert_eq!(human_duration(3 * 3600 + 600), "3h10m");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration((6 * 365 + 331) * 86400 + 5), "6y331d");
        assert_eq!(human_duration(9 * 365 * 86400), "9y");
    }

    #[test]
    fn binding_and_node_cells() {
        let b = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "u1"}, {"kind": "User", "name": "u2"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]});
        let cells: Vec<Value> = binding_columns(ROLE_BINDING_ROLE, "roleBinding")
            .iter()
            .map(|(_, f)| f(&b))
            .collect();
        assert_eq!(cells[1], json!("ClusterRole/view"));
        assert_eq!(cells[2], json!("<unknown>"));
        assert_eq!(cells[3], json!("u1, u2"));
        assert_eq!(cells[4], json!(""));
        assert_eq!(cells[5], json!("ns/sa"));
        let n = json!({"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/worker": "",
            "kubernetes.io/role": "edge"}}, "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}],
                "nodeInfo": {"kubeletVersion": "v1.36.2", "architecture": "amd64"}}});
        let cells: Vec<Value> = node_columns().iter().map(|(_, f)| f(&n)).collect();
        assert_eq!(cells[1], json!("NotReady,SchedulingDisabled"));
        assert_eq!(cells[2], json!("edge,worker"));
        assert_eq!(cells[4], json!("v1.36.2"));
        assert_eq!(cells[5], json!("<none>"));
        assert_eq!(cells[8], json!("<unknown> (amd64)"));
    }
}
