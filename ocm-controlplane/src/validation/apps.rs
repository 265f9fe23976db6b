//! apps/v1 kinds as kube-apiserver validates them: Deployment, ReplicaSet, StatefulSet, DaemonSet
//! and ControllerRevision (spec on create and update, immutable selectors, the status written
//! through `/status`).

use serde_json::{Value, json};

use super::common::{
    dns_label, int_or_percent_value, label_selector, labels_value, not_more_than_100_percent,
    positive_int_or_percent, selector_is_empty, selector_matches, selector_parses,
};
use super::field::{self, Errors, Path};
use super::pod::{always_restart, pod_template_spec};

fn spec(o: &Value) -> &Value {
    o.get("spec").unwrap_or(&Value::Null)
}

/// The selector checks of a workload spec: required, valid, not empty.
fn selector(spec: &Value, path: &Path, what: &str) -> Errors {
    let p = path.child("selector");
    match field::opt(spec, "selector") {
        None => vec![field::required(&p, "")],
        Some(sel) => {
            let mut errs = label_selector(sel, &p);
            if selector_is_empty(sel) {
                errs.push(field::invalid(
                    &p,
                    sel,
                    &format!("empty selector is invalid for {what}"),
                ));
            }
            errs
        }
    }
}

/// `ValidatePodTemplateSpecForReplicaSet` (and StatefulSet's and DaemonSet's variants): the
/// selector must parse, match the template labels, and the template must be valid.
fn template(spec: &Value, path: &Path, kind: &str, check_restart: bool) -> Errors {
    let sel = field::opt(spec, "selector");
    let tp = path.child("template");
    if let Some(s) = sel
        && !selector_parses(s)
    {
        let detail = if check_restart {
            "invalid label selector"
        } else {
            ""
        };
        return vec![field::invalid(&path.child("selector"), s, detail)];
    }
    let t = spec.get("template").unwrap_or(&Value::Null);
    let template_labels = t.pointer("/metadata/labels");
    let mut errs = Errors::new();
    let empty = sel.is_some_and(selector_is_empty);
    if !empty && !selector_matches(sel, template_labels) {
        errs.push(field::invalid(
            &tp.child("metadata").child("labels"),
            &labels_value(template_labels),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(pod_template_spec(t, &tp));
    if check_restart {
        errs.extend(always_restart(t, &tp, kind));
    }
    errs
}

/// Go's JSON of an internal rolling-update strategy (field names without JSON tags).
fn go_strategy(strategy: &Value, rolling_keys: &[(&str, &str)]) -> Value {
    let rolling = match field::opt(strategy, "rollingUpdate") {
        Some(r) => {
            let mut m = serde_json::Map::new();
            for (go, json_name) in rolling_keys {
                m.insert((*go).into(), r.get(*json_name).cloned().unwrap_or(Value::Null));
            }
            Value::Object(m)
        }
        None => Value::Null,
    };
    json!({"Type": field::s(strategy, "type"), "RollingUpdate": rolling})
}

fn deployment_strategy(strategy: &Value, path: &Path) -> Errors {
    let mut errs = Errors::new();
    match field::s(strategy, "type") {
        "Recreate" => {
            if field::opt(strategy, "rollingUpdate").is_some() {
                errs.push(field::forbidden(
                    &path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match field::opt(strategy, "rollingUpdate") {
            None => errs.push(field::required(
                &path.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )),
            Some(r) => {
                let rp = path.child("rollingUpdate");
                let unavailable = r.get("maxUnavailable").cloned().unwrap_or(json!(0));
                let surge = r.get("maxSurge").cloned().unwrap_or(json!(0));
                errs.extend(positive_int_or_percent(&unavailable, &rp.child("maxUnavailable")));
                errs.extend(positive_int_or_percent(&surge, &rp.child("maxSurge")));
                if int_or_percent_value(&unavailable) == 0 && int_or_percent_value(&surge) == 0 {
                    errs.push(field::invalid(
                        &rp.child("maxUnavailable"),
                        &unavailable,
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                errs.extend(not_more_than_100_percent(
                    &unavailable,
                    &rp.child("maxUnavailable"),
                ));
            }
        },
        _ => errs.push(field::not_supported(
            path,
            &go_strategy(
                strategy,
                &[("MaxUnavailable", "maxUnavailable"), ("MaxSurge", "maxSurge")],
            ),
            &["Recreate", "RollingUpdate"],
        )),
    }
    errs
}

/// A Deployment on create or update.
pub fn deployment(o: &Value, old: Option<&Value>) -> Errors {
    let s = spec(o);
    let p = Path::new("spec");
    let mut errs = field::nonnegative(field::int(s, "replicas"), &p.child("replicas"));
    errs.extend(selector(s, &p, "deployment"));
    errs.extend(template(s, &p, "ReplicaSet", true));
    let strategy = s.get("strategy").unwrap_or(&Value::Null);
    errs.extend(deployment_strategy(strategy, &p.child("strategy")));
    let min_ready = field::int(s, "minReadySeconds");
    errs.extend(field::nonnegative(min_ready, &p.child("minReadySeconds")));
    errs.extend(field::nonnegative(
        field::int(s, "revisionHistoryLimit"),
        &p.child("revisionHistoryLimit"),
    ));
    if let Some(deadline) = field::int(s, "progressDeadlineSeconds") {
        errs.extend(field::nonnegative(
            Some(deadline),
            &p.child("progressDeadlineSeconds"),
        ));
        if deadline <= min_ready.unwrap_or(0) {
            errs.push(field::invalid(
                &p.child("progressDeadlineSeconds"),
                &json!(deadline),
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs.extend(immutable_selector(o, old));
    errs
}

fn immutable_selector(o: &Value, old: Option<&Value>) -> Errors {
    match old {
        Some(old) => field::immutable(
            spec(o).get("selector"),
            spec(old).get("selector"),
            &Path::new("spec").child("selector"),
        ),
        None => Errors::new(),
    }
}

/// A ReplicaSet on create or update.
pub fn replica_set(o: &Value, old: Option<&Value>) -> Errors {
    let s = spec(o);
    let p = Path::new("spec");
    let mut errs = field::nonnegative(field::int(s, "replicas"), &p.child("replicas"));
    errs.extend(field::nonnegative(
        field::int(s, "minReadySeconds"),
        &p.child("minReadySeconds"),
    ));
    errs.extend(selector(s, &p, "deployment"));
    errs.extend(template(s, &p, "ReplicaSet", true));
    errs.extend(immutable_selector(o, old));
    errs
}

fn daemon_set_strategy(strategy: &Value, path: &Path) -> Errors {
    let mut errs = Errors::new();
    match field::s(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(r) = field::opt(strategy, "rollingUpdate") else {
                return vec![field::required(&path.child("rollingUpdate"), "")];
            };
            let rp = path.child("rollingUpdate");
            let unavailable = r.get("maxUnavailable").cloned().unwrap_or(json!(0));
            let surge = r.get("maxSurge").cloned().unwrap_or(json!(0));
            errs.extend(positive_int_or_percent(&unavailable, &rp.child("maxUnavailable")));
            errs.extend(positive_int_or_percent(&surge, &rp.child("maxSurge")));
            errs.extend(not_more_than_100_percent(
                &unavailable,
                &rp.child("maxUnavailable"),
            ));
            errs.extend(not_more_than_100_percent(&surge, &rp.child("maxSurge")));
            let has_unavailable = int_or_percent_value(&unavailable) != 0;
            let has_surge = int_or_percent_value(&surge) != 0;
            if has_unavailable && has_surge {
                errs.push(field::invalid(
                    &rp.child("maxSurge"),
                    &surge,
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errs.push(field::required(
                    &rp.child("maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                ));
            }
        }
        _ => errs.push(field::not_supported(
            path,
            &go_strategy(
                strategy,
                &[("MaxUnavailable", "maxUnavailable"), ("MaxSurge", "maxSurge")],
            ),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    errs
}

/// A DaemonSet on create or update.
pub fn daemon_set(o: &Value, old: Option<&Value>) -> Errors {
    let s = spec(o);
    let p = Path::new("spec");
    let mut errs = immutable_selector(o, old);
    let sel = field::opt(s, "selector");
    if let Some(sel) = sel {
        errs.extend(label_selector(sel, &p.child("selector")));
    }
    let t = s.get("template").unwrap_or(&Value::Null);
    let template_labels = t.pointer("/metadata/labels");
    let parses = sel.is_none_or(selector_parses);
    let matches = sel.is_some_and(selector_is_empty) || selector_matches(sel, template_labels);
    if parses && !matches {
        errs.push(field::invalid(
            &p.child("template").child("metadata").child("labels"),
            &labels_value(template_labels),
            "`selector` does not match template `labels`",
        ));
    }
    if let Some(sel) = sel
        && selector_is_empty(sel)
    {
        errs.push(field::invalid(
            &p.child("selector"),
            sel,
            "empty selector is invalid for daemonset",
        ));
    }
    errs.extend(pod_template_spec(t, &p.child("template")));
    errs.extend(always_restart(t, &p.child("template"), "DaemonSet"));
    errs.extend(field::nonnegative(
        field::int(s, "minReadySeconds"),
        &p.child("minReadySeconds"),
    ));
    let strategy = s.get("updateStrategy").unwrap_or(&Value::Null);
    errs.extend(daemon_set_strategy(strategy, &p.child("updateStrategy")));
    errs.extend(field::nonnegative(
        field::int(s, "revisionHistoryLimit"),
        &p.child("revisionHistoryLimit"),
    ));
    errs
}

fn retention(policy: Option<&Value>, path: &Path) -> Errors {
    let mut errs = Errors::new();
    if let Some(policy) = policy {
        for key in ["whenDeleted", "whenScaled"] {
            let v = field::s(policy, key);
            if v != "Retain" && v != "Delete" {
                errs.push(field::not_supported(
                    &path.child(key),
                    &json!(v),
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    errs
}

/// A StatefulSet on create or update.
pub fn stateful_set(o: &Value, old: Option<&Value>) -> Errors {
    let s = spec(o);
    let p = Path::new("spec");
    let mut errs = Errors::new();
    match field::s(s, "podManagementPolicy") {
        "" => errs.push(field::required(&p.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(field::invalid_str(
            &p.child("podManagementPolicy"),
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = s.get("updateStrategy").unwrap_or(&Value::Null);
    let sp = p.child("updateStrategy");
    let go_rolling = [("Partition", "partition"), ("MaxUnavailable", "maxUnavailable")];
    match field::s(strategy, "type") {
        "" => errs.push(field::required(&sp, "")),
        "OnDelete" => {
            if field::opt(strategy, "rollingUpdate").is_some() {
                let go = go_strategy(strategy, &go_rolling);
                errs.push(field::invalid(
                    &sp.child("rollingUpdate"),
                    &go["RollingUpdate"],
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(r) = field::opt(strategy, "rollingUpdate") {
                let rp = sp.child("rollingUpdate");
                errs.extend(field::nonnegative(
                    field::int(r, "partition"),
                    &rp.child("partition"),
                ));
                if let Some(mu) = field::opt(r, "maxUnavailable") {
                    let mp = rp.child("maxUnavailable");
                    errs.extend(positive_int_or_percent(mu, &mp));
                    if int_or_percent_value(mu) == 0 {
                        errs.push(field::invalid(&mp, mu, "cannot be 0"));
                    }
                    errs.extend(not_more_than_100_percent(mu, &mp));
                }
            }
        }
        _ => errs.push(field::invalid(
            &sp,
            &go_strategy(strategy, &go_rolling),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    errs.extend(retention(
        field::opt(s, "persistentVolumeClaimRetentionPolicy"),
        &p.child("persistentVolumeClaimRetentionPolicy"),
    ));
    errs.extend(field::nonnegative(
        field::int(s, "replicas"),
        &p.child("replicas"),
    ));
    errs.extend(field::nonnegative(
        field::int(s, "minReadySeconds"),
        &p.child("minReadySeconds"),
    ));
    if let Some(ord) = field::opt(s, "ordinals") {
        errs.extend(field::nonnegative(
            field::int(ord, "start"),
            &p.child("ordinals.start"),
        ));
    }
    let service = field::s(s, "serviceName");
    if old.is_none() && !service.is_empty() {
        errs.extend(dns_label(service, &p.child("serviceName")));
    }
    errs.extend(selector(s, &p, "statefulset"));
    // The template's hostname and subdomain are set by the controller; volume claim templates
    // add volumes the containers may mount.
    let mut s2 = s.clone();
    if let Some(spec) = s2.pointer_mut("/template/spec").and_then(Value::as_object_mut) {
        spec.remove("hostname");
        spec.remove("subdomain");
        let claims: Vec<Value> = field::list(s, "volumeClaimTemplates")
            .iter()
            .map(|c| {
                let name = c.pointer("/metadata/name").cloned().unwrap_or(json!(""));
                json!({"name": name, "persistentVolumeClaim": {"claimName": name}})
            })
            .collect();
        if !claims.is_empty() {
            let names: Vec<&Value> = claims.iter().map(|c| &c["name"]).collect();
            let mut volumes = claims.clone();
            for v in field::list(&Value::Object(spec.clone()), "volumes") {
                if !names.contains(&v.get("name").unwrap_or(&Value::Null)) {
                    volumes.push(v.clone());
                }
            }
            spec.insert("volumes".into(), Value::Array(volumes));
        }
    }
    let tmpl_errs = template(&s2, &p, "StatefulSet", false);
    let t = s.get("template").unwrap_or(&Value::Null);
    if sel_parses(s) {
        errs.extend(tmpl_errs);
        // StatefulSet's template check validates the template's labels and annotations again.
        let tp = p.child("template");
        errs.extend(super::common::labels(
            t.pointer("/metadata/labels"),
            &tp.child("labels"),
        ));
        errs.extend(super::common::annotations(
            t.pointer("/metadata/annotations"),
            &tp.child("annotations"),
        ));
    } else {
        errs.extend(tmpl_errs);
    }
    let restart = t
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(field::not_supported(
            &p.child("template").child("spec").child("restartPolicy"),
            &json!(restart),
            &["Always"],
        ));
    }
    if t.pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        errs.push(field::forbidden(
            &p.child("template").child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    if let Some(old) = old {
        let mut a = s.clone();
        let mut b = spec(old).clone();
        for m in [a.as_object_mut(), b.as_object_mut()].into_iter().flatten() {
            for key in [
                "replicas",
                "template",
                "updateStrategy",
                "minReadySeconds",
                "ordinals",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
            ] {
                m.remove(key);
            }
        }
        if a != b {
            errs.push(field::forbidden(
                &p,
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
    errs
}

fn sel_parses(spec: &Value) -> bool {
    field::opt(spec, "selector").is_none_or(selector_parses)
}

/// A ControllerRevision on create or update.
pub fn controller_revision(o: &Value, old: Option<&Value>) -> Errors {
    let mut errs = field::nonnegative(field::int(o, "revision"), &Path::new("revision"));
    match old {
        None => match field::opt(o, "data") {
            None => errs.push(field::required(&Path::new("data"), "data is mandatory")),
            Some(d) if !d.is_object() => {
                errs.push(field::required(
                    &Path::new("data"),
                    "data must be a valid JSON object",
                ));
            }
            Some(_) => {}
        },
        Some(old) => errs.extend(field::immutable(
            o.get("data"),
            old.get("data"),
            &Path::new("data"),
        )),
    }
    errs
}

/// The status of a workload written through `/status`: counts not negative and not above
/// `status.replicas` (Deployment, ReplicaSet, StatefulSet), DaemonSet counts not negative.
pub fn status(resource: &str, o: &Value) -> Errors {
    let st = o.get("status").unwrap_or(&Value::Null);
    let p = Path::new("status");
    let n = |k: &str| field::int(st, k);
    let mut errs = Errors::new();
    let counts: &[&str] = match resource {
        "deployments" => &[
            "observedGeneration",
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "terminatingReplicas",
            "collisionCount",
        ],
        "replicasets" => &[
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
            "observedGeneration",
            "terminatingReplicas",
        ],
        "statefulsets" => &[
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
            "observedGeneration",
            "collisionCount",
        ],
        "daemonsets" => &[
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
            "observedGeneration",
            "updatedNumberScheduled",
            "numberAvailable",
            "numberUnavailable",
            "collisionCount",
        ],
        _ => &[],
    };
    for k in counts {
        errs.extend(field::nonnegative(n(k), &p.child(k)));
    }
    if resource == "daemonsets" || counts.is_empty() {
        return errs;
    }
    let replicas = n("replicas").unwrap_or(0);
    let above: &[&str] = match resource {
        "deployments" => &["updatedReplicas", "readyReplicas", "availableReplicas"],
        "replicasets" => &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"],
        _ => &[
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
        ],
    };
    for k in above {
        if let Some(v) = n(k)
            && v > replicas
        {
            errs.push(field::invalid(
                &p.child(k),
                &json!(v),
                "cannot be greater than status.replicas",
            ));
        }
    }
    let (available, ready) = (
        n("availableReplicas").unwrap_or(0),
        n("readyReplicas").unwrap_or(0),
    );
    if available > ready {
        let msg = if resource == "statefulsets" {
            "cannot be greater than status.readyReplicas"
        } else {
            "cannot be greater than readyReplicas"
        };
        errs.push(field::invalid(
            &p.child("availableReplicas"),
            &json!(available),
            msg,
        ));
    }
    errs
}
