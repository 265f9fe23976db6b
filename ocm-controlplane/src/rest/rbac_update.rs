//! The update rule of RBAC bindings that kube-apiserver's RBAC validation adds to the kinds'
//! own: a RoleBinding's or ClusterRoleBinding's `roleRef` never changes (a binding to another
//! role is a new binding), refused with 422 "cannot change roleRef".

use serde_json::Value;

use crate::registry::ResourceInfo;
use crate::status::Cause;

/// The `roleRef` cause of an update of a binding from `old` to `new` (stored representations).
pub fn role_ref_causes(info: &ResourceInfo, new: &Value, old: &Value) -> Vec<Cause> {
    if info.group != "rbac.authorization.k8s.io"
        || !matches!(info.resource.as_str(), "rolebindings" | "clusterrolebindings")
    {
        return Vec::new();
    }
    let field = |object: &Value, name: &str| {
        object
            .get("roleRef")
            .and_then(|r| r.get(name))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let parts = |object: &Value| {
        [
            field(object, "apiGroup"),
            field(object, "kind"),
            field(object, "name"),
        ]
    };
    let now = parts(new);
    if now == parts(old) {
        return Vec::new();
    }
    // The value is the internal Go struct, which kube's field errors print as JSON (its fields
    // have no JSON tags).
    let shown = serde_json::json!({"APIGroup": now[0], "Kind": now[1], "Name": now[2]}).to_string();
    vec![Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {shown}: cannot change roleRef"),
        field: "roleRef".into(),
    }]
}
