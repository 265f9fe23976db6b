//! Probes of containers as kube-apiserver validates them: exactly one handler (exec, HTTP GET,
//! TCP socket, gRPC, sleep) with its required fields, non-negative timings, and the
//! liveness/startup `successThreshold` of 1.

use serde_json::{Value, json};

use super::container::port_num_or_name;
use super::field::{self, Errors, Path};

/// `validateHandler`: exactly one handler type and its fields.
fn handler(h: &Value, path: &Path) -> Errors {
    let mut errs = Errors::new();
    let mut n = 0;
    for kind in ["exec", "httpGet", "tcpSocket", "grpc", "sleep"] {
        let Some(action) = field::opt(h, kind) else {
            continue;
        };
        let p = path.child(kind);
        if n > 0 {
            errs.push(field::forbidden(&p, "may not specify more than 1 handler type"));
            continue;
        }
        n += 1;
        match kind {
            "exec" if field::list(action, "command").is_empty() => {
                errs.push(field::required(&p.child("command"), ""));
            }
            "httpGet" => {
                if field::s(action, "path").is_empty() {
                    errs.push(field::required(&p.child("path"), ""));
                }
                errs.extend(port_num_or_name(action.get("port"), &p.child("port")));
                let scheme = field::s(action, "scheme");
                if scheme != "HTTP" && scheme != "HTTPS" {
                    errs.push(field::not_supported(
                        &p.child("scheme"),
                        &json!(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
            }
            "tcpSocket" => errs.extend(port_num_or_name(action.get("port"), &p.child("port"))),
            "grpc" => {
                let port = field::int(action, "port").unwrap_or(0);
                errs.extend(port_num_or_name(Some(&json!(port)), &p.child("port")));
            }
            _ => {}
        }
    }
    if n == 0 {
        errs.push(field::required(path, "must specify a handler type"));
    }
    errs
}

/// `validateProbe` and the rules of its kind (`livenessProbe`, `readinessProbe`, `startupProbe`).
pub fn probe(probe: Option<&Value>, kind: &str, path: &Path) -> Errors {
    let Some(pr) = probe else {
        return Errors::new();
    };
    let mut errs = handler(pr, path);
    for f in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        errs.extend(field::nonnegative(field::int(pr, f), &path.child(f)));
    }
    let grace = field::opt(pr, "terminationGracePeriodSeconds");
    if let Some(g) = grace.and_then(Value::as_i64)
        && g <= 0
    {
        errs.push(field::invalid(
            &path.child("terminationGracePeriodSeconds"),
            &json!(g),
            "must be greater than 0",
        ));
    }
    let success = field::int(pr, "successThreshold").unwrap_or(0);
    match kind {
        "readinessProbe" => {
            if let Some(g) = grace {
                errs.push(field::invalid(
                    &path.child("terminationGracePeriodSeconds"),
                    g,
                    "must not be set for readinessProbes",
                ));
            }
        }
        _ if success != 1 => {
            errs.push(field::invalid(
                &path.child("successThreshold"),
                &json!(success),
                "must be 1",
            ));
        }
        _ => {}
    }
    errs
}
