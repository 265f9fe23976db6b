//! coordination.k8s.io/v1 Leases as kube-apiserver validates them.

use serde_json::{Value, json};

use super::field::{self, Errors, Path};
use crate::validation::qualified_name;

/// kube-apiserver's Lease strategy with the `CoordinatedLeaderElection` feature off (v1.36's
/// default): `spec.strategy` and `spec.preferredHolder` are dropped on create, and on update unless
/// the stored Lease has them.
pub fn drop_disabled_fields(object: &mut Value, old: Option<&Value>) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["strategy", "preferredHolder"] {
        let kept = old
            .and_then(|o| o.get("spec"))
            .is_some_and(|s| field::opt(s, key).is_some());
        if !kept {
            spec.remove(key);
        }
    }
}

/// A Lease's spec: positive duration, non-negative transitions, a known or qualified strategy,
/// a preferred holder only with a strategy.
pub fn lease(o: &Value) -> Errors {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut errs = Errors::new();
    if let Some(d) = field::int(spec, "leaseDurationSeconds")
        && d <= 0
    {
        errs.push(field::invalid(
            &p.child("leaseDurationSeconds"),
            &json!(d),
            "must be greater than 0",
        ));
    }
    errs.extend(field::nonnegative(
        field::int(spec, "leaseTransitions"),
        &p.child("leaseTransitions"),
    ));
    let strategy = field::opt(spec, "strategy").and_then(Value::as_str);
    if let Some(s) = strategy {
        // kube-apiserver reports the strategy one level deeper than the field.
        let sp = p.child("strategy").child("strategy");
        if !s.contains('/') {
            if s != "OldestEmulationVersion" {
                errs.push(field::not_supported(&sp, &json!(s), &["OldestEmulationVersion"]));
            }
        } else {
            errs.extend(field::each(&sp, s, qualified_name(s)));
        }
    }
    let preferred = field::s(spec, "preferredHolder");
    if !preferred.is_empty() && strategy.is_none_or(str::is_empty) {
        errs.push(field::forbidden(
            &p.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}
