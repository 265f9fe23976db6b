//! Go-typed decoding of built-in kinds: a body whose values do not fit the Go types of the kind
//! (a string where kube has an `int32`, an object where it has a list, a malformed quantity) is
//! refused by kube-apiserver's decoder before any validation, with the first error Go's
//! `encoding/json` reports, e.g. `json: cannot unmarshal string into Go struct field
//! DeploymentSpec.spec.replicas of type int32`.
//!
//! The walk follows the built-in OpenAPI definitions (`builtin_schemas.json`) in document order.
//! Go's type names come from the definition names (`v1.<Name>`); named string types (enums) that
//! the definitions do not distinguish are listed in `NAMED_STRINGS`.

use serde_json::Value;

use super::quantity;
use crate::gojson;
use crate::registry::structure::{builtin_definition, builtin_root_name};

/// `(Go struct, JSON field, Go type)` of string fields whose Go type is a named string type.
const NAMED_STRINGS: &[(&str, &str, &str)] = &[
    ("PodSpec", "restartPolicy", "v1.RestartPolicy"),
    ("PodSpec", "dnsPolicy", "v1.DNSPolicy"),
    ("PodSpec", "preemptionPolicy", "v1.PreemptionPolicy"),
    ("Container", "imagePullPolicy", "v1.PullPolicy"),
    (
        "Container",
        "terminationMessagePolicy",
        "v1.TerminationMessagePolicy",
    ),
    ("Container", "restartPolicy", "v1.ContainerRestartPolicy"),
    ("ContainerPort", "protocol", "v1.Protocol"),
    ("ServicePort", "protocol", "v1.Protocol"),
    ("ServiceSpec", "type", "v1.ServiceType"),
    ("ServiceSpec", "sessionAffinity", "v1.ServiceAffinity"),
    (
        "ServiceSpec",
        "externalTrafficPolicy",
        "v1.ServiceExternalTrafficPolicy",
    ),
    (
        "ServiceSpec",
        "internalTrafficPolicy",
        "v1.ServiceInternalTrafficPolicy",
    ),
    ("Secret", "type", "v1.SecretType"),
    ("DeploymentStrategy", "type", "v1.DeploymentStrategyType"),
    (
        "DaemonSetUpdateStrategy",
        "type",
        "v1.DaemonSetUpdateStrategyType",
    ),
    (
        "StatefulSetUpdateStrategy",
        "type",
        "v1.StatefulSetUpdateStrategyType",
    ),
    (
        "StatefulSetSpec",
        "podManagementPolicy",
        "v1.PodManagementPolicyType",
    ),
    ("JobSpec", "completionMode", "v1.CompletionMode"),
    ("JobSpec", "podReplacementPolicy", "v1.PodReplacementPolicy"),
    ("CronJobSpec", "concurrencyPolicy", "v1.ConcurrencyPolicy"),
    ("Toleration", "operator", "v1.TolerationOperator"),
    ("Toleration", "effect", "v1.TaintEffect"),
    ("Taint", "effect", "v1.TaintEffect"),
    ("LabelSelectorRequirement", "operator", "v1.LabelSelectorOperator"),
    ("NamespaceStatus", "phase", "v1.NamespacePhase"),
    ("NamespaceSpec", "finalizers", "[]v1.FinalizerName"),
    ("CertificateSigningRequestSpec", "usages", "[]v1.KeyUsage"),
];

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIMES: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
];
const ANY: &[&str] = &[
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
];

fn short(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The Go type name of a schema (for `of type ...`).
fn go_type(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return match r {
            QUANTITY => "resource.Quantity".into(),
            INT_OR_STRING => "intstr.IntOrString".into(),
            _ => format!("v1.{}", short(r)),
        };
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") if schema.get("format").and_then(Value::as_str) == Some("byte") => "[]uint8".into(),
        Some("string") => "string".into(),
        Some("boolean") => "bool".into(),
        Some("integer") => schema
            .get("format")
            .and_then(Value::as_str)
            .unwrap_or("int64")
            .to_string(),
        Some("number") => "float64".into(),
        Some("array") => format!("[]{}", schema.get("items").map(go_type).unwrap_or_default()),
        Some("object") => match schema.get("additionalProperties") {
            Some(a) if a.get("$ref").and_then(Value::as_str) == Some(QUANTITY) => "v1.ResourceList".into(),
            Some(a) if a.is_object() => format!("map[string]{}", go_type(a)),
            _ => "map[string]interface {}".into(),
        },
        _ => "interface {}".into(),
    }
}

/// Where the decoder is: the innermost Go struct and the JSON field names from the root.
struct Context<'a> {
    strukt: &'a str,
    fields: Vec<String>,
}

impl Context<'_> {
    fn type_error(&self, value: &str, ty: &str) -> String {
        if self.strukt.is_empty() && self.fields.is_empty() {
            format!("json: cannot unmarshal {value} into Go value of type {ty}")
        } else {
            format!(
                "json: cannot unmarshal {value} into Go struct field {}.{} of type {ty}",
                self.strukt,
                self.fields.join(".")
            )
        }
    }
}

/// What Go's decoder does with an error: a type mismatch is saved (the first one is reported
/// once the whole document is decoded); an error of a custom unmarshaler (quantities,
/// int-or-strings, times) stops decoding at once and wins.
struct Errs {
    saved: Option<String>,
}

impl Errs {
    fn save(&mut self, e: String) {
        self.saved.get_or_insert(e);
    }
}

fn number_fits(n: &serde_json::Number, format: &str) -> bool {
    let Some(i) = n.as_i64() else {
        return false;
    };
    if n.to_string().contains(['.', 'e', 'E']) {
        return false;
    }
    match format {
        "int32" => i32::try_from(i).is_ok(),
        _ => true,
    }
}

/// Decodes `value` against `schema`; `Err` is an error that stops decoding.
fn walk(
    value: &Value,
    schema: &Value,
    ty_override: Option<&str>,
    ctx: &Context<'_>,
    errs: &mut Errs,
) -> Result<(), String> {
    if value.is_null() {
        return Ok(());
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        if ANY.contains(&r) {
            return Ok(());
        }
        if r == QUANTITY {
            return quantity::parse_value(value)
                .map(|_| ())
                .map_err(|e| e.message().to_string());
        }
        if r == INT_OR_STRING {
            // intstr's own unmarshaler; its error stops decoding, with the field as context.
            return match value {
                Value::String(_) => Ok(()),
                Value::Number(n) if number_fits(n, "int32") => Ok(()),
                Value::Number(n) => Err(ctx.type_error(&format!("number {n}"), "int32")),
                other => Err(ctx.type_error(gojson::value_kind(other), "int32")),
            };
        }
        if TIMES.contains(&r) {
            return match value {
                Value::String(_) => Ok(()),
                other => Err(ctx.type_error(gojson::value_kind(other), "string")),
            };
        }
        let Some(def) = builtin_definition(r) else {
            return Ok(());
        };
        if def.get("properties").is_some() {
            return walk_struct(value, def, short(r), &format!("v1.{}", short(r)), ctx, errs);
        }
        return walk(value, def, ty_override, ctx, errs);
    }
    let ty = || ty_override.map(str::to_string).unwrap_or_else(|| go_type(schema));
    let kind = gojson::value_kind(value);
    let mismatch = match schema.get("type").and_then(Value::as_str) {
        Some("string") => !value.is_string(),
        Some("boolean") => !value.is_boolean(),
        Some("number") => !value.is_number(),
        Some("integer") => {
            let format = schema.get("format").and_then(Value::as_str).unwrap_or("int64");
            match value {
                Value::Number(n) if number_fits(n, format) => false,
                Value::Number(n) => {
                    errs.save(ctx.type_error(&format!("number {n}"), &ty()));
                    false
                }
                _ => true,
            }
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                errs.save(ctx.type_error(kind, &ty()));
                return Ok(());
            };
            let Some(item_schema) = schema.get("items") else {
                return Ok(());
            };
            let item_ty = ty_override.and_then(|t| t.strip_prefix("[]"));
            for item in items {
                walk(item, item_schema, item_ty, ctx, errs)?;
            }
            false
        }
        Some("object") => {
            if schema.get("properties").is_some() {
                return walk_struct(value, schema, ctx.strukt, &ty(), ctx, errs);
            }
            let Some(map) = value.as_object() else {
                errs.save(ctx.type_error(kind, &ty()));
                return Ok(());
            };
            if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for v in map.values() {
                    walk(v, values, None, ctx, errs)?;
                }
            }
            false
        }
        _ => false,
    };
    if mismatch {
        errs.save(ctx.type_error(kind, &ty()));
    }
    Ok(())
}

fn walk_struct(
    value: &Value,
    def: &Value,
    name: &str,
    ty: &str,
    ctx: &Context<'_>,
    errs: &mut Errs,
) -> Result<(), String> {
    let Some(map) = value.as_object() else {
        errs.save(ctx.type_error(gojson::value_kind(value), ty));
        return Ok(());
    };
    let Some(props) = def.get("properties") else {
        return Ok(());
    };
    for (key, v) in map {
        let Some(schema) = props.get(key) else {
            continue;
        };
        let named = NAMED_STRINGS
            .iter()
            .find(|(s, f, _)| *s == name && f == key)
            .map(|(_, _, t)| *t);
        let mut inner = Context {
            strukt: name,
            fields: ctx.fields.clone(),
        };
        inner.fields.push(key.clone());
        walk(v, schema, named, &inner, errs)?;
    }
    Ok(())
}

/// The Go decoding error of a built-in object of `group`/`resource`, if any.
pub fn decode_error(group: &str, resource: &str, object: &Value) -> Option<String> {
    let root = builtin_root_name(group, resource)?;
    let def = builtin_definition(root)?;
    let ctx = Context {
        strukt: "",
        fields: Vec::new(),
    };
    let mut errs = Errs { saved: None };
    match walk_struct(
        object,
        def,
        short(root),
        &format!("v1.{}", short(root)),
        &ctx,
        &mut errs,
    ) {
        Err(stop) => Some(stop),
        Ok(()) => errs.saved,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reports_gos_first_unmarshal_error() {
        let d = json!({"spec": {"replicas": "x"}});
        assert_eq!(
            decode_error("apps", "deployments", &d).as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
            )
        );
        let d = json!({"spec": {"template": {"spec": {"containers": {"name": "a"}}}}});
        assert_eq!(
            decode_error("apps", "deployments", &d).as_deref(),
            Some(
                "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"
            )
        );
        let d = json!({"spec": {"template": {"spec": {"containers": [{"name": 5}]}}}});
        assert_eq!(
            decode_error("apps", "deployments", &d).as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.name of type string"
            )
        );
        let d = json!({"spec": {"replicas": 1.5}});
        assert_eq!(
            decode_error("apps", "deployments", &d).as_deref(),
            Some(
                "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
            )
        );
        let p = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "lots"}}}]}});
        assert_eq!(
            decode_error("", "pods", &p).as_deref(),
            Some(quantity::FORMAT_WRONG)
        );
        let p = json!({"spec": {"restartPolicy": 1}});
        assert_eq!(
            decode_error("", "pods", &p).as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field PodSpec.spec.restartPolicy of type v1.RestartPolicy"
            )
        );
        let ok = json!({"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {"replicas": 2,
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}});
        assert_eq!(decode_error("apps", "deployments", &ok), None);
        // A quantity error stops decoding and wins over an earlier type error.
        let p =
            json!({"spec": {"restartPolicy": 1, "containers": [{"resources": {"limits": {"cpu": "x"}}}]}});
        assert_eq!(
            decode_error("", "pods", &p).as_deref(),
            Some(quantity::FORMAT_WRONG)
        );
        let d = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": true}}}});
        assert_eq!(
            decode_error("apps", "deployments", &d).as_deref(),
            Some(
                "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32"
            )
        );
        let lease = json!({"spec": {"renewTime": 5}});
        assert_eq!(
            decode_error("coordination.k8s.io", "leases", &lease).as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field LeaseSpec.spec.renewTime of type string"
            )
        );
        let lease = json!({"spec": {"leaseDurationSeconds": true}});
        assert_eq!(
            decode_error("coordination.k8s.io", "leases", &lease).as_deref(),
            Some(
                "json: cannot unmarshal bool into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
            )
        );
    }
}
