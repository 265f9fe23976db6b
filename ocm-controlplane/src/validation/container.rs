//! Containers of a pod spec as kube-apiserver validates them (`validateContainerCommon` and the
//! regular-container rules): name, image, termination message policy, ports, env and envFrom,
//! volume mounts, pull policy, resources, probes.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::common::{dns_label, dns_subdomain};
use super::field::{self, Errors, Path};
use super::probe::probe;
use super::quantity;
use crate::validation::config_key;

/// `IsValidPortNum` as a message list.
pub fn port_num(n: i64) -> Vec<String> {
    if (1..=65535).contains(&n) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_string()]
    }
}

/// `IsValidPortName` as a message list.
pub fn port_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        || name.is_empty()
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `ValidatePortNumOrName` of an IntOrString port.
pub fn port_num_or_name(port: Option<&Value>, path: &Path) -> Errors {
    match port {
        Some(Value::String(s)) => field::each(path, s, port_name(s)),
        Some(v) => {
            let n = v.as_i64().unwrap_or(0);
            port_num(n)
                .into_iter()
                .map(|m| field::invalid(path, &json!(n), &m))
                .collect()
        }
        None => port_num(0)
            .into_iter()
            .map(|m| field::invalid(path, &json!(0), &m))
            .collect(),
    }
}

fn relaxed_env_name(name: &str) -> Vec<String> {
    if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        vec!["a valid environment variable name must consist only of printable ASCII characters other than '='".into()]
    } else {
        Vec::new()
    }
}

fn ports(ports: &[Value], path: &Path) -> Errors {
    let mut errs = Errors::new();
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = field::s(port, "name");
        if !name.is_empty() {
            let msgs = port_name(name);
            if !msgs.is_empty() {
                errs.extend(field::each(&p.child("name"), name, msgs));
            } else if !names.insert(name) {
                errs.push(field::duplicate(&p.child("name"), &json!(name)));
            }
        }
        match field::int(port, "containerPort").unwrap_or(0) {
            0 => errs.push(field::required(&p.child("containerPort"), "")),
            n => {
                for m in port_num(n) {
                    errs.push(field::invalid(&p.child("containerPort"), &json!(n), &m));
                }
            }
        }
        let host = field::int(port, "hostPort").unwrap_or(0);
        if host != 0 {
            for m in port_num(host) {
                errs.push(field::invalid(&p.child("hostPort"), &json!(host), &m));
            }
        }
        errs.extend(protocol(field::s(port, "protocol"), &p.child("protocol")));
    }
    errs
}

/// A port protocol: required, one of SCTP, TCP, UDP.
pub fn protocol(value: &str, path: &Path) -> Errors {
    match value {
        "" => vec![field::required(path, "")],
        "TCP" | "UDP" | "SCTP" => Vec::new(),
        other => vec![field::not_supported(path, &json!(other), &["SCTP", "TCP", "UDP"])],
    }
}

fn key_selector(sel: &Value, path: &Path) -> Errors {
    let name = field::s(sel, "name");
    let mut errs = if name.is_empty() {
        Errors::new()
    } else {
        dns_subdomain(name, &path.child("name"))
    };
    let key = field::s(sel, "key");
    if key.is_empty() {
        errs.push(field::required(&path.child("key"), ""));
    } else {
        errs.extend(field::each(&path.child("key"), key, config_key(key)));
    }
    errs
}

const DOWNWARD_ENV_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

fn field_ref(fr: &Value, path: &Path) -> Errors {
    if field::s(fr, "apiVersion").is_empty() {
        return vec![field::required(&path.child("apiVersion"), "")];
    }
    let fp = field::s(fr, "fieldPath");
    if fp.is_empty() {
        return vec![field::required(&path.child("fieldPath"), "")];
    }
    // The field labels kube-apiserver's Pod conversion knows (`ConvertDownwardAPIFieldLabel`).
    const CONVERTIBLE: &[&str] = &[
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    ];
    let base_path = fp.split_once('[').map_or(fp, |(b, _)| b);
    if !CONVERTIBLE.contains(&base_path) {
        return vec![field::invalid_str(
            &path.child("fieldPath"),
            fp,
            &format!("error converting fieldPath: field label not supported: {fp}"),
        )];
    }
    if let Some((base, _)) = fp.split_once('[') {
        if base == "metadata.labels" || base == "metadata.annotations" {
            return Errors::new();
        }
        return vec![field::invalid_str(path, base, "does not support subscript")];
    }
    if fp == "metadata.labels" || fp == "metadata.annotations" || DOWNWARD_ENV_PATHS.contains(&fp) {
        return Errors::new();
    }
    vec![field::not_supported(
        &path.child("fieldPath"),
        &json!(fp),
        DOWNWARD_ENV_PATHS,
    )]
}

fn env(vars: &[Value], path: &Path) -> Errors {
    let mut errs = Errors::new();
    for (i, var) in vars.iter().enumerate() {
        let p = path.index(i);
        let name = field::s(var, "name");
        if name.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        } else {
            errs.extend(field::each(&p.child("name"), name, relaxed_env_name(name)));
        }
        let Some(from) = field::opt(var, "valueFrom") else {
            continue;
        };
        let vp = p.child("valueFrom");
        let mut sources = 0;
        if let Some(fr) = field::opt(from, "fieldRef") {
            sources += 1;
            errs.extend(field_ref(fr, &vp.child("fieldRef")));
        }
        if let Some(rf) = field::opt(from, "resourceFieldRef") {
            sources += 1;
            if field::s(rf, "resource").is_empty() {
                errs.push(field::required(
                    &vp.child("resourceFieldRef").child("resource"),
                    "",
                ));
            }
        }
        for key in ["configMapKeyRef", "secretKeyRef"] {
            if let Some(sel) = field::opt(from, key) {
                sources += 1;
                errs.extend(key_selector(sel, &vp.child(key)));
            }
        }
        if field::opt(from, "fileKeyRef").is_some() {
            sources += 1;
        }
        if sources == 0 {
            errs.push(field::invalid_str(
                &vp,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
            ));
        } else if !field::s(var, "value").is_empty() {
            errs.push(field::invalid_str(
                &vp,
                "",
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(field::invalid_str(
                &vp,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn env_from(sources: &[Value], path: &Path) -> Errors {
    let mut errs = Errors::new();
    for (i, src) in sources.iter().enumerate() {
        let p = path.index(i);
        let prefix = field::s(src, "prefix");
        if !prefix.is_empty() {
            errs.extend(field::each(&p.child("prefix"), prefix, relaxed_env_name(prefix)));
        }
        let mut n = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = field::opt(src, key) {
                n += 1;
                let name = field::s(r, "name");
                if name.is_empty() {
                    errs.push(field::required(&p.child(key).child("name"), ""));
                } else {
                    errs.extend(dns_subdomain(name, &p.child(key).child("name")));
                }
            }
        }
        if n == 0 {
            errs.push(field::invalid_str(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if n > 1 {
            errs.push(field::invalid_str(
                path,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn mounts(mounts: &[Value], volumes: &HashSet<String>, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let mut points = HashSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let p = path.index(i);
        let name = field::s(m, "name");
        if name.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(field::not_found(&p.child("name"), &json!(name)));
        }
        let mount_path = field::s(m, "mountPath");
        if mount_path.is_empty() {
            errs.push(field::required(&p.child("mountPath"), ""));
        }
        if !points.insert(mount_path) {
            errs.push(field::invalid_str(
                &p.child("mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        let sub = field::s(m, "subPath");
        let sub_expr = field::s(m, "subPathExpr");
        if !sub.is_empty() {
            errs.extend(local_descending_path(sub, &path.child("subPath")));
        }
        if !sub_expr.is_empty() {
            if !sub.is_empty() {
                errs.push(field::invalid_str(
                    &p.child("subPathExpr"),
                    sub_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(local_descending_path(sub_expr, &path.child("subPathExpr")));
        }
    }
    errs
}

fn local_descending_path(value: &str, path: &Path) -> Errors {
    let mut errs = Errors::new();
    if value.starts_with('/') {
        errs.push(field::invalid_str(path, value, "must be a relative path"));
    }
    if value.split('/').any(|part| part == "..") {
        errs.push(field::invalid_str(path, value, "must not contain '..'"));
    }
    errs
}

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn resource_name(name: &str, path: &Path) -> Errors {
    let errs = field::each(path, name, crate::validation::qualified_name(name));
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('/') {
        let standard = matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_hugepages(name);
        if !matches!(
            name,
            "cpu" | "memory" | "ephemeral-storage" | "pods" | "services" | "secrets" | "configmaps"
        ) && !is_hugepages(name)
            && !name.starts_with("requests.")
            && !name.starts_with("limits.")
        {
            return vec![field::invalid_str(
                path,
                name,
                "must be a standard resource type or fully qualified",
            )];
        }
        if !standard {
            return vec![field::invalid_str(
                path,
                name,
                "must be a standard resource for containers",
            )];
        }
    }
    Errors::new()
}

fn native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `validateResourceRequirements` of a container.
pub fn resources(res: &Value, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let limits = res.get("limits").and_then(Value::as_object);
    let check_value = |name: &str, q: &Value, p: &Path, errs: &mut Errors| {
        let v = quantity::parse_value(q).unwrap_or(0.0);
        if v < 0.0 {
            errs.push(field::invalid_str(
                p,
                &quantity::text(q),
                "must be greater than or equal to 0",
            ));
        }
        if !native(name) && v.fract() != 0.0 {
            errs.push(field::invalid_str(p, &quantity::text(q), "must be an integer"));
        }
    };
    if let Some(limits) = limits {
        for (name, q) in limits {
            let p = lim_path.key(name);
            errs.extend(resource_name(name, &p));
            check_value(name, q, &p, &mut errs);
        }
    }
    if let Some(requests) = res.get("requests").and_then(Value::as_object) {
        for (name, q) in requests {
            let p = req_path.key(name);
            errs.extend(resource_name(name, &p));
            check_value(name, q, &p, &mut errs);
            let overcommit = native(name) && !is_hugepages(name);
            match limits.and_then(|l| l.get(name)) {
                Some(limit) => {
                    let (rv, lv) = (
                        quantity::parse_value(q).unwrap_or(0.0),
                        quantity::parse_value(limit).unwrap_or(0.0),
                    );
                    let limit_text = quantity::text(limit);
                    if rv != lv && !overcommit {
                        errs.push(field::invalid_str(
                            &req_path,
                            &quantity::text(q),
                            &format!("must be equal to {name} limit of {limit_text}"),
                        ));
                    } else if rv > lv {
                        errs.push(field::invalid_str(
                            &req_path,
                            &quantity::text(q),
                            &format!("must be less than or equal to {name} limit of {limit_text}"),
                        ));
                    }
                }
                None if !overcommit => errs.push(field::required(
                    &lim_path,
                    "Limit must be set for non overcommitable resources",
                )),
                None => {}
            }
        }
    }
    errs
}

/// `validateContainerCommon`: what init and regular containers share.
fn common(c: &Value, volumes: &HashSet<String>, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let name = field::s(c, "name");
    if name.is_empty() {
        errs.push(field::required(&path.child("name"), ""));
    } else {
        errs.extend(dns_label(name, &path.child("name")));
    }
    if field::s(c, "image").is_empty() {
        errs.push(field::required(&path.child("image"), ""));
    }
    match field::s(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(field::required(&path.child("terminationMessagePolicy"), "")),
        other => errs.push(field::not_supported(
            &path.child("terminationMessagePolicy"),
            &json!(other),
            &["File", "FallbackToLogsOnError"],
        )),
    }
    errs.extend(ports(field::list(c, "ports"), &path.child("ports")));
    errs.extend(env(field::list(c, "env"), &path.child("env")));
    errs.extend(env_from(field::list(c, "envFrom"), &path.child("envFrom")));
    errs.extend(mounts(
        field::list(c, "volumeMounts"),
        volumes,
        &path.child("volumeMounts"),
    ));
    match field::s(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(field::required(&path.child("imagePullPolicy"), "")),
        other => errs.push(field::not_supported(
            &path.child("imagePullPolicy"),
            &json!(other),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
    if let Some(r) = field::opt(c, "resources") {
        errs.extend(resources(r, &path.child("resources")));
    }
    errs
}

/// `validateContainers`: the regular containers of a pod spec (at least one, unique names).
pub fn containers(list: &[Value], volumes: &HashSet<String>, path: &Path) -> Errors {
    if list.is_empty() {
        return vec![field::required(path, "")];
    }
    let mut errs = Errors::new();
    let mut names = HashSet::new();
    for (i, c) in list.iter().enumerate() {
        let p = path.index(i);
        errs.extend(common(c, volumes, &p));
        let name = field::s(c, "name");
        if !names.insert(name) {
            errs.push(field::duplicate(&p.child("name"), &json!(name)));
        }
        for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
            errs.extend(probe(field::opt(c, kind), kind, &p.child(kind)));
        }
        errs.extend(container_restart_policy(c, &p));
    }
    errs
}

/// A container's own `restartPolicy`, when set: Always, Never or OnFailure.
fn container_restart_policy(c: &Value, path: &Path) -> Errors {
    match field::opt(c, "restartPolicy").and_then(Value::as_str) {
        None | Some("Always" | "Never" | "OnFailure") => Errors::new(),
        Some(other) => vec![field::not_supported(
            &path.child("restartPolicy"),
            &json!(other),
            &["Always", "Never", "OnFailure"],
        )],
    }
}

/// `validateInitContainers`: names unique across regular and init containers; no probes unless
/// restartable (`restartPolicy: Always`).
pub fn init_containers(list: &[Value], regular: &[Value], volumes: &HashSet<String>, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let mut names: HashSet<&str> = regular.iter().map(|c| field::s(c, "name")).collect();
    for (i, c) in list.iter().enumerate() {
        let p = path.index(i);
        errs.extend(common(c, volumes, &p));
        let restart = field::s(c, "restartPolicy");
        errs.extend(container_restart_policy(c, &p));
        let name = field::s(c, "name");
        if names.contains(name) {
            errs.push(field::duplicate(&p.child("name"), &json!(name)));
        } else if !name.is_empty() {
            names.insert(name);
        }
        if restart == "Always" {
            for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
                errs.extend(probe(field::opt(c, kind), kind, &p.child(kind)));
            }
        } else {
            for (kind, what) in [
                (
                    "lifecycle",
                    "may not be set for init containers without restartPolicy=Always",
                ),
                (
                    "livenessProbe",
                    "may not be set for init containers without restartPolicy=Always",
                ),
                (
                    "readinessProbe",
                    "may not be set for init containers without restartPolicy=Always",
                ),
                (
                    "startupProbe",
                    "may not be set for init containers without restartPolicy=Always",
                ),
            ] {
                if field::opt(c, kind).is_some() {
                    errs.push(field::forbidden(&p.child(kind), what));
                }
            }
        }
    }
    errs
}
