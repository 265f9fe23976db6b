//! coordination.k8s.io/v1 Leases as kube-apiserver validates them.

use serde_json::{Value, json};

use super::field::{self, Errors, Path};
use crate::validation::qualified_name;

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
