//! core/v1 kinds as kube-apiserver validates them (besides what [`crate::rest::kinds`] checks for
//! ConfigMaps, Secrets, Events): Namespace finalizers, Node taints and resources, Service ports,
//! types and session affinity, PodTemplate, ReplicationController, and the size and type rules of
//! Secrets and ConfigMaps.
//!
//! Not reproduced: cluster IP and IP family rules (this server allocates no cluster IPs and does not
//! default `clusterIPs`/`ipFamilies`), load balancer source ranges, traffic policies that rely on
//! defaults this server does not apply, Node config sources and pod CIDRs.

use std::collections::HashSet;

use base64::Engine;
use serde_json::{Value, json};

use super::common::{dns_label, dns_subdomain, label_name, labels, labels_value, selector_matches};
use super::container::{port_num, port_num_or_name, protocol};
use super::field::{self, Errors, Path};
use super::pod::{always_restart, pod_template_spec};
use super::quantity;
use crate::validation::{label_value, qualified_name};

/// A Namespace's `spec.finalizers`: qualified names, `kubernetes` when not prefixed.
pub fn namespace(o: &Value) -> Errors {
    let mut errs = Errors::new();
    let p = Path::new("spec").child("finalizers");
    for f in field::list(o.get("spec").unwrap_or(&Value::Null), "finalizers") {
        let f = f.as_str().unwrap_or_default();
        errs.extend(field::each(&p, f, qualified_name(f)));
        if !f.contains('/') && f != "kubernetes" {
            errs.push(field::invalid_str(
                &p,
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

fn taints(list: &[Value], path: &Path) -> Errors {
    let mut errs = Errors::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (i, t) in list.iter().enumerate() {
        let p = path.index(i);
        let key = field::s(t, "key");
        errs.extend(label_name(key, &p.child("key")));
        let value = field::s(t, "value");
        let msgs = label_value(value);
        if !msgs.is_empty() {
            errs.push(field::invalid_str(&p.child("value"), value, &msgs.join(";")));
        }
        let effect = field::s(t, "effect");
        match effect {
            "" => errs.push(field::required(&p.child("effect"), "")),
            "NoSchedule" | "PreferNoSchedule" | "NoExecute" => {}
            other => errs.push(field::not_supported(
                &p.child("effect"),
                &json!(other),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            )),
        }
        if !seen.insert((effect, key)) {
            // kube-apiserver shows the internal Taint with Go field names.
            let go = json!({"Key": key, "Value": value, "Effect": effect,
                "TimeAdded": t.get("timeAdded").cloned().unwrap_or(Value::Null)});
            let mut c = field::duplicate(&p, &go);
            c.message
                .push_str(": taints must be unique by key and effect pair");
            errs.push(c);
        }
    }
    errs
}

fn node_resources(o: &Value) -> Errors {
    let mut errs = Errors::new();
    for key in ["capacity", "allocatable"] {
        let Some(m) = o.pointer(&format!("/status/{key}")).and_then(Value::as_object) else {
            continue;
        };
        for (name, q) in m {
            let p = Path::new("status").child(key).child(name);
            let v = quantity::parse_value(q).unwrap_or(0.0);
            if v < 0.0 {
                errs.push(field::invalid_str(
                    &p,
                    &quantity::text(q),
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    errs
}

/// A Node on create or update.
pub fn node(o: &Value, old: Option<&Value>) -> Errors {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let mut errs = Errors::new();
    let taint_path = Path::new("metadata").child("taints");
    // kube-apiserver runs the create rules on updates too, then the update rules.
    errs.extend(taints(field::list(spec, "taints"), &taint_path));
    errs.extend(node_resources(o));
    if old.is_none() {
        return errs;
    }
    errs.extend(node_resources(o));
    let mut addresses = HashSet::new();
    let addrs = o.pointer("/status/addresses").and_then(Value::as_array);
    for (i, a) in addrs.map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        if !addresses.insert(a.to_string()) {
            errs.push(field::duplicate(
                &Path::new("status").child("addresses").index(i),
                a,
            ));
        }
    }
    if let Some(old) = old {
        let old_spec = old.get("spec").unwrap_or(&Value::Null);
        let old_cidrs = field::list(old_spec, "podCIDRs");
        if !old_cidrs.is_empty() {
            let new_cidrs = field::list(spec, "podCIDRs");
            let msg = "node updates may not change podCIDR except from \"\" to valid";
            if old_cidrs.len() != new_cidrs.len() {
                errs.push(field::forbidden(&Path::new("spec").child("podCIDRs"), msg));
            } else {
                for (a, b) in old_cidrs.iter().zip(new_cidrs) {
                    if a != b {
                        errs.push(field::forbidden(&Path::new("spec").child("podCIDRs"), msg));
                    }
                }
            }
        }
        let old_provider = field::s(old_spec, "providerID");
        if !old_provider.is_empty() && old_provider != field::s(spec, "providerID") {
            errs.push(field::forbidden(
                &Path::new("spec").child("providerID"),
                "node updates may not change providerID except from \"\" to valid",
            ));
        }
        errs.extend(taints(field::list(spec, "taints"), &taint_path));
        if field::s(spec, "externalID") != field::s(old_spec, "externalID") {
            errs.push(field::forbidden(
                &Path::new("spec").child("externalID"),
                "may not be updated",
            ));
        }
    }
    errs
}

fn is_headless(spec: &Value) -> bool {
    let first = field::list(spec, "clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or_else(|| field::s(spec, "clusterIP"));
    first == "None"
}

fn service_port(sp: &Value, require_name: bool, names: &mut HashSet<String>, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let name = field::s(sp, "name");
    if require_name && name.is_empty() {
        errs.push(field::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        errs.extend(dns_label(name, &path.child("name")));
        if !names.insert(name.to_string()) {
            errs.push(field::duplicate(&path.child("name"), &json!(name)));
        }
    }
    let port = field::int(sp, "port").unwrap_or(0);
    for m in port_num(port) {
        errs.push(field::invalid(&path.child("port"), &json!(port), &m));
    }
    errs.extend(protocol(field::s(sp, "protocol"), &path.child("protocol")));
    errs.extend(port_num_or_name(sp.get("targetPort"), &path.child("targetPort")));
    if let Some(app) = field::opt(sp, "appProtocol").and_then(Value::as_str) {
        errs.extend(field::each(&path.child("appProtocol"), app, qualified_name(app)));
    }
    errs
}

/// A Service on create or update.
pub fn service(o: &Value, old: Option<&Value>) -> Errors {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let sp = Path::new("spec");
    let mut errs = Errors::new();
    let ty = field::s(spec, "type");
    let ports = field::list(spec, "ports");
    let headless = is_headless(spec);
    if ports.is_empty() && !headless && ty != "ExternalName" {
        errs.push(field::required(&sp.child("ports"), ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless => errs.push(field::invalid_str(
            &sp.child("clusterIPs").index(0),
            "None",
            &format!("may not be set to 'None' for {ty} services"),
        )),
        "ExternalName" => {
            let cluster_ips = field::list(spec, "clusterIPs");
            if !cluster_ips.is_empty() {
                errs.push(field::forbidden(
                    &sp.child("clusterIPs"),
                    "may not be set for ExternalName services",
                ));
            }
            if !field::list(spec, "ipFamilies").is_empty() {
                errs.push(field::forbidden(
                    &sp.child("ipFamilies"),
                    "may not be set for ExternalName services",
                ));
            }
            if field::opt(spec, "ipFamilyPolicy").is_some() {
                errs.push(field::forbidden(
                    &sp.child("ipFamilyPolicy"),
                    "may not be set for ExternalName services",
                ));
            }
            let cname = field::s(spec, "externalName").trim_end_matches('.');
            if cname.is_empty() {
                errs.push(field::required(&sp.child("externalName"), ""));
            } else {
                errs.extend(dns_subdomain(cname, &sp.child("externalName")));
            }
        }
        _ => {}
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        errs.extend(service_port(
            port,
            ports.len() > 1,
            &mut names,
            &sp.child("ports").index(i),
        ));
    }
    if field::opt(spec, "selector").is_some() {
        errs.extend(labels(spec.get("selector"), &sp.child("selector")));
    }
    let affinity = field::s(spec, "sessionAffinity");
    match affinity {
        "" => errs.push(field::required(&sp.child("sessionAffinity"), "")),
        "ClientIP" | "None" => {}
        other => errs.push(field::not_supported(
            &sp.child("sessionAffinity"),
            &json!(other),
            &["ClientIP", "None"],
        )),
    }
    match ty {
        "" => errs.push(field::required(&sp.child("type"), "")),
        "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName" => {}
        other => errs.push(field::not_supported(
            &sp.child("type"),
            &json!(other),
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        )),
    }
    if ty == "ClusterIP" {
        for (i, port) in ports.iter().enumerate() {
            if field::int(port, "nodePort").unwrap_or(0) != 0 {
                errs.push(field::forbidden(
                    &sp.child("ports").index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let np = field::int(port, "nodePort").unwrap_or(0);
        if np != 0 && !node_ports.insert((field::s(port, "protocol"), np)) {
            errs.push(field::duplicate(
                &sp.child("ports").index(i).child("nodePort"),
                &json!(np),
            ));
        }
    }
    let mut seen = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let (proto, num) = (field::s(port, "protocol"), field::int(port, "port").unwrap_or(0));
        if !seen.insert((proto, num)) {
            // kube-apiserver shows the internal ServicePort key with Go field names.
            let key = json!({"Name": "", "Protocol": proto, "AppProtocol": null, "Port": num,
                "TargetPort": 0, "NodePort": 0});
            errs.push(field::duplicate(&sp.child("ports").index(i), &key));
        }
    }
    if !field::list(spec, "loadBalancerSourceRanges").is_empty() && ty != "LoadBalancer" {
        errs.push(field::forbidden(
            &sp.child("LoadBalancerSourceRanges"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if field::opt(spec, "allocateLoadBalancerNodePorts").is_some() && ty != "LoadBalancer" {
        errs.push(field::forbidden(
            &sp.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if let Some(old) = old {
        let old_spec = old.get("spec").unwrap_or(&Value::Null);
        let old_ip = field::s(old_spec, "clusterIP");
        let new_ip = field::s(spec, "clusterIP");
        if !old_ip.is_empty()
            && old_ip != new_ip
            && ty != "ExternalName"
            && field::s(old_spec, "type") != "ExternalName"
        {
            errs.push(field::invalid_str(
                &sp.child("clusterIP"),
                new_ip,
                "field is immutable",
            ));
        }
    }
    errs
}

/// A PodTemplate.
pub fn pod_template(o: &Value) -> Errors {
    pod_template_spec(o.get("template").unwrap_or(&Value::Null), &Path::new("template"))
}

/// A ReplicationController.
pub fn replication_controller(o: &Value) -> Errors {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut errs = field::nonnegative(field::int(spec, "minReadySeconds"), &p.child("minReadySeconds"));
    let selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty());
    if selector.is_none() {
        errs.push(field::required(&p.child("selector"), ""));
    }
    match field::int(spec, "replicas") {
        None => errs.push(field::required(&p.child("replicas"), "")),
        Some(n) => errs.extend(field::nonnegative(Some(n), &p.child("replicas"))),
    }
    let Some(template) = field::opt(spec, "template") else {
        errs.push(field::required(&p.child("template"), ""));
        return errs;
    };
    let tp = p.child("template");
    if let Some(sel) = selector {
        let as_selector = json!({"matchLabels": sel});
        let template_labels = template.pointer("/metadata/labels");
        if !selector_matches(Some(&as_selector), template_labels) {
            errs.push(field::invalid(
                &tp.child("metadata").child("labels"),
                &labels_value(template_labels),
                "`selector` does not match template `labels`",
            ));
        }
    }
    errs.extend(pod_template_spec(template, &tp));
    errs.extend(always_restart(template, &tp, "ReplicationController"));
    errs
}

/// Secret rules besides keys and required data: total size, service-account token annotation,
/// basic-auth keys, Docker config JSON.
pub fn secret(o: &Value) -> Errors {
    let mut errs = Errors::new();
    let data = o.get("data").and_then(Value::as_object);
    let decoded = |k: &str| {
        data.and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
    };
    let total: usize = data
        .map(|d| {
            d.values()
                .filter_map(Value::as_str)
                .filter_map(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
                .map(|b| b.len())
                .sum()
        })
        .unwrap_or(0);
    let dp = Path::new("data");
    if total > 1024 * 1024 {
        errs.push(field::too_long(&dp, 1024 * 1024));
    }
    match field::s(o, "type") {
        "kubernetes.io/service-account-token" => {
            let name = o
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name.is_empty() {
                errs.push(field::required(
                    &Path::new("metadata")
                        .child("annotations")
                        .key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/basic-auth" => {
            let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
            if !has("username") && !has("password") {
                errs.push(field::required(&dp.key("username"), ""));
                errs.push(field::required(&dp.key("password"), ""));
            }
        }
        ty @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if ty == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            if let Some(bytes) = decoded(key)
                && serde_json::from_slice::<serde_json::Map<String, Value>>(&bytes).is_err()
            {
                let why = crate::gojson::syntax_error(&bytes).unwrap_or_else(|| {
                    "json: cannot unmarshal into Go value of type map[string]interface {}".into()
                });
                errs.push(field::invalid_str(
                    &dp.key(key),
                    "<secret contents redacted>",
                    &why,
                ));
            }
        }
        _ => {}
    }
    errs
}

/// ConfigMap rules besides keys: a key in both `data` and `binaryData`, the total size.
pub fn config_map(o: &Value) -> Errors {
    let mut errs = Errors::new();
    let data = o.get("data").and_then(Value::as_object);
    let binary = o.get("binaryData").and_then(Value::as_object);
    let mut total = 0;
    if let Some(d) = data {
        for (k, v) in d {
            if binary.is_some_and(|b| b.contains_key(k)) {
                errs.push(field::invalid_str(
                    &Path::new("data").key(k),
                    k,
                    "duplicate of key present in binaryData",
                ));
            }
            total += v.as_str().map(str::len).unwrap_or(0);
        }
    }
    if let Some(b) = binary {
        total += b
            .values()
            .filter_map(Value::as_str)
            .filter_map(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .map(|b| b.len())
            .sum::<usize>();
    }
    if total > 1024 * 1024 {
        errs.push(field::too_long(&Path::new(""), 1024 * 1024));
    }
    errs
}
