//! Pod specs, pod templates and Pods as kube-apiserver validates them (`ValidatePodSpec`,
//! `ValidatePodTemplateSpec`, `ValidatePodCreate`/`ValidatePodUpdate`): volumes, containers (see
//! [`super::container`]), restart and DNS policies, node selector, pull secrets, tolerations,
//! names of referenced objects.
//!
//! Not reproduced: affinity, topology spread, security contexts, host networking, resource claims,
//! ephemeral containers, Windows/Linux-specific rules and pod-level resources.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::common::{annotations, dns_label, dns_subdomain, label_name, labels};
use super::container;
use super::field::{self, Errors, Path};
use crate::validation::label_value;

/// `(JSON name, name used in kube's "more than 1 volume type" path)` of the volume sources.
const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

fn file_mode(v: &Value, key: &str, path: &Path) -> Errors {
    match field::int(v, key) {
        Some(m) if !(0..=0o777).contains(&m) => vec![field::invalid(&path.child(key), &json!(m), FILE_MODE)],
        _ => Errors::new(),
    }
}

fn key_to_paths(items: &[Value], path: &Path) -> Errors {
    let mut errs = Errors::new();
    for (i, item) in items.iter().enumerate() {
        let p = path.index(i);
        if field::s(item, "key").is_empty() {
            errs.push(field::required(&p.child("key"), ""));
        }
        let target = field::s(item, "path");
        if target.is_empty() {
            errs.push(field::required(&p.child("path"), ""));
        } else {
            if target.starts_with('/') {
                errs.push(field::invalid_str(
                    &p.child("path"),
                    target,
                    "must be a relative path",
                ));
            }
            if target.split('/').any(|s| s == "..") {
                errs.push(field::invalid_str(
                    &p.child("path"),
                    target,
                    "must not contain '..'",
                ));
            }
            if target.starts_with("..") && !target.starts_with("../") && target != ".." {
                errs.push(field::invalid_str(
                    &p.child("path"),
                    target,
                    "must not start with '..'",
                ));
            }
        }
        errs.extend(file_mode(item, "mode", &p));
    }
    errs
}

fn volume_source(vol: &Value, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let mut n = 0;
    for (key, forbidden_name) in VOLUME_SOURCES {
        let Some(src) = field::opt(vol, key) else {
            continue;
        };
        if n > 0 {
            errs.push(field::forbidden(
                &path.child(forbidden_name),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        n += 1;
        let p = path.child(key);
        match *key {
            "hostPath" if field::s(src, "path").is_empty() => {
                errs.push(field::required(&p.child("path"), ""));
            }
            "secret" => {
                if field::s(src, "secretName").is_empty() {
                    errs.push(field::required(&p.child("secretName"), ""));
                }
                errs.extend(file_mode(src, "defaultMode", &p));
                errs.extend(key_to_paths(field::list(src, "items"), &p.child("items")));
            }
            "configMap" => {
                if field::s(src, "name").is_empty() {
                    errs.push(field::required(&p.child("name"), ""));
                }
                errs.extend(file_mode(src, "defaultMode", &p));
                errs.extend(key_to_paths(field::list(src, "items"), &p.child("items")));
            }
            "persistentVolumeClaim" if field::s(src, "claimName").is_empty() => {
                errs.push(field::required(&p.child("claimName"), ""));
            }
            "nfs" => {
                if field::s(src, "server").is_empty() {
                    errs.push(field::required(&p.child("server"), ""));
                }
                let nfs_path = field::s(src, "path");
                if nfs_path.is_empty() {
                    errs.push(field::required(&p.child("path"), ""));
                } else if !nfs_path.starts_with('/') {
                    errs.push(field::invalid_str(
                        &p.child("path"),
                        nfs_path,
                        "must be an absolute path",
                    ));
                }
            }
            "csi" if field::s(src, "driver").is_empty() => {
                errs.push(field::required(&p.child("driver"), ""));
            }
            _ => {}
        }
    }
    if n == 0 {
        errs.push(field::required(path, "must specify a volume type"));
    }
    errs
}

/// `ValidateVolumes`: the names of the valid volumes and the errors.
fn volumes(list: &[Value], path: &Path) -> (HashSet<String>, Errors) {
    let mut errs = Errors::new();
    let mut names = HashSet::new();
    for (i, vol) in list.iter().enumerate() {
        let p = path.index(i);
        let name = field::s(vol, "name");
        let mut el = volume_source(vol, &p);
        if name.is_empty() {
            el.push(field::required(&p.child("name"), ""));
        } else {
            el.extend(dns_label(name, &p.child("name")));
        }
        if names.contains(name) {
            el.push(field::duplicate(&p.child("name"), &json!(name)));
        }
        if el.is_empty() {
            names.insert(name.to_string());
        } else {
            errs.extend(el);
        }
    }
    (names, errs)
}

fn enum_required(value: &str, allowed: &[&str], path: &Path) -> Errors {
    if value.is_empty() {
        vec![field::required(path, "")]
    } else if allowed.contains(&value) {
        Errors::new()
    } else {
        vec![field::not_supported(path, &json!(value), allowed)]
    }
}

fn tolerations(list: &[Value], path: &Path) -> Errors {
    let mut errs = Errors::new();
    for (i, t) in list.iter().enumerate() {
        let p = path.index(i);
        let key = field::s(t, "key");
        let op = field::s(t, "operator");
        let effect = field::s(t, "effect");
        let value = field::s(t, "value");
        if !key.is_empty() {
            errs.extend(label_name(key, &p.child("key")));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(field::invalid_str(
                &p.child("operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if field::opt(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
            errs.push(field::invalid_str(
                &p.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "Equal" | "" => {
                let msgs = label_value(value);
                if !msgs.is_empty() {
                    errs.push(field::invalid_str(&p.child("operator"), value, &msgs.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(field::invalid_str(
                        &p.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            "Lt" | "Gt" => {}
            other => errs.push(field::not_supported(
                &p.child("operator"),
                &json!(other),
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            errs.push(field::not_supported(
                &p.child("effect"),
                &json!(effect),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

/// `ValidatePodSpec` at `path`.
pub fn pod_spec(spec: &Value, path: &Path) -> Errors {
    let mut errs = Errors::new();
    if field::opt(spec, "terminationGracePeriodSeconds").is_none() {
        errs.push(field::required(&path.child("terminationGracePeriodSeconds"), ""));
    }
    let (vols, vol_errs) = volumes(field::list(spec, "volumes"), &path.child("volumes"));
    errs.extend(vol_errs);
    let regular = field::list(spec, "containers");
    errs.extend(container::containers(regular, &vols, &path.child("containers")));
    errs.extend(container::init_containers(
        field::list(spec, "initContainers"),
        regular,
        &vols,
        &path.child("initContainers"),
    ));
    errs.extend(enum_required(
        field::s(spec, "restartPolicy"),
        &["Always", "OnFailure", "Never"],
        &path.child("restartPolicy"),
    ));
    errs.extend(enum_required(
        field::s(spec, "dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &path.child("dnsPolicy"),
    ));
    errs.extend(labels(spec.get("nodeSelector"), &path.child("nodeSelector")));
    for (i, secret) in field::list(spec, "imagePullSecrets").iter().enumerate() {
        let only_name = secret.as_object().is_none_or(|m| m.keys().all(|k| k == "name"));
        if !only_name {
            errs.push(field::invalid(
                &path.child("imagePullSecrets").index(i),
                secret,
                "only name may be set",
            ));
        }
    }
    if field::s(spec, "dnsPolicy") == "None" && field::opt(spec, "dnsConfig").is_none() {
        errs.push(field::required(
            &path.child("dnsConfig"),
            "must provide `dnsConfig` when `dnsPolicy` is None",
        ));
    }
    for (i, gate) in field::list(spec, "readinessGates").iter().enumerate() {
        let p = path.child("readinessGates").index(i).child("conditionType");
        errs.extend(label_name(field::s(gate, "conditionType"), &p));
    }
    let mut gates = HashSet::new();
    for (i, gate) in field::list(spec, "schedulingGates").iter().enumerate() {
        let p = path.child("schedulingGates").index(i);
        let name = field::s(gate, "name");
        errs.extend(label_name(name, &p));
        if !gates.insert(name) {
            errs.push(field::duplicate(&p, &json!(name)));
        }
    }
    for key in ["serviceAccountName", "nodeName"] {
        let v = field::s(spec, key);
        if !v.is_empty() {
            errs.extend(dns_subdomain(v, &path.child(key)));
        }
    }
    if let Some(d) = field::int(spec, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&d)
    {
        errs.push(field::invalid(
            &path.child("activeDeadlineSeconds"),
            &json!(d),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for key in ["hostname", "subdomain"] {
        let v = field::s(spec, key);
        if !v.is_empty() {
            errs.extend(dns_label(v, &path.child(key)));
        }
    }
    errs.extend(tolerations(
        field::list(spec, "tolerations"),
        &path.child("tolerations"),
    ));
    let pc = field::s(spec, "priorityClassName");
    if !pc.is_empty() {
        errs.extend(dns_subdomain(pc, &path.child("priorityClassName")));
    }
    if let Some(p) = field::opt(spec, "preemptionPolicy").and_then(Value::as_str) {
        errs.extend(enum_required(
            p,
            &["PreemptLowerPriority", "Never"],
            &path.child("preemptionPolicy"),
        ));
    }
    errs
}

/// `ValidatePodTemplateSpec` at `path` (labels and annotations of the template, then its spec).
pub fn pod_template_spec(template: &Value, path: &Path) -> Errors {
    let meta = template.get("metadata").unwrap_or(&Value::Null);
    let mut errs = labels(meta.get("labels"), &path.child("labels"));
    errs.extend(annotations(meta.get("annotations"), &path.child("annotations")));
    let spec = template.get("spec").unwrap_or(&Value::Null);
    errs.extend(pod_spec(spec, &path.child("spec")));
    if !field::list(spec, "ephemeralContainers").is_empty() {
        errs.push(field::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// A workload's template rules shared by ReplicaSet, Deployment, DaemonSet, StatefulSet and
/// ReplicationController: restart policy `Always`, no `activeDeadlineSeconds`.
pub fn always_restart(template: &Value, path: &Path, kind: &str) -> Errors {
    let mut errs = Errors::new();
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let restart = field::s(spec, "restartPolicy");
    if restart != "Always" {
        errs.push(field::not_supported(
            &path.child("spec").child("restartPolicy"),
            &json!(restart),
            &["Always"],
        ));
    }
    if field::opt(spec, "activeDeadlineSeconds").is_some() {
        errs.push(field::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// A Pod on create.
pub fn pod(pod: &Value) -> Errors {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = pod_spec(spec, &path);
    for list in ["containers", "initContainers"] {
        for (i, c) in field::list(spec, list).iter().enumerate() {
            let image = field::s(c, "image");
            if image.trim() != image {
                errs.push(field::invalid_str(
                    &path.child(list).index(i).child("image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    errs
}

const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// A Pod on update: the create rules, then only images, `activeDeadlineSeconds` (lowered),
/// added tolerations and removed scheduling gates may change.
pub fn pod_update(new: &Value, old: &Value) -> Errors {
    let mut errs = pod(new);
    let path = Path::new("spec");
    let empty = Value::Null;
    let (ns, os) = (
        new.get("spec").unwrap_or(&empty),
        old.get("spec").unwrap_or(&empty),
    );
    for list in ["containers", "initContainers"] {
        if field::list(ns, list).len() != field::list(os, list).len() {
            errs.push(field::forbidden(
                &path.child(list),
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
    }
    let mut munged = ns.clone();
    for list in ["containers", "initContainers"] {
        if let Some(cs) = munged.get_mut(list).and_then(Value::as_array_mut) {
            for (i, c) in cs.iter_mut().enumerate() {
                if let Some(m) = c.as_object_mut() {
                    match field::list(os, list)[i].get("image") {
                        Some(img) => m.insert("image".into(), img.clone()),
                        None => m.remove("image"),
                    };
                }
            }
        }
    }
    if let Some(m) = munged.as_object_mut() {
        for key in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
            match os.get(key) {
                Some(v) => m.insert(key.into(), v.clone()),
                None => m.remove(key),
            };
        }
    }
    if munged != *os {
        errs.push(field::forbidden(
            &path,
            &format!("pod updates may not change fields other than {UPDATABLE}"),
        ));
    }
    errs
}
