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
    // The value is the internal Go struct, printed with `%#v`.
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let shown = format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        quote(&now[0]),
        quote(&now[1]),
        quote(&now[2])
    );
    vec![Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {shown}: cannot change roleRef"),
        field: "roleRef".into(),
    }]
}
