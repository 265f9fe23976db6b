//! Bad input: a property test sends random and malformed requests — methods, paths, query strings,
//! content types and bodies — and checks that every error is answered with a `metav1.Status`
//! (or kube-apiserver's plain `404 page not found` for paths outside the API), that no connection is
//! dropped, and that the server keeps serving.

use std::time::Duration;

use hyper::http::{Method, Request};
use kube::client::Body;
use ocm_controlplane::TestEnv;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

/// One generated request.
#[derive(Debug, Clone)]
struct Probe {
    method: &'static str,
    path: String,
    query: String,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

/// Percent-encodes everything but unreserved characters, so that any text makes a valid URI.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9][a-z0-9.-]{0,12}",
        2 => "\\PC{0,16}".prop_map(|s| encode(&s)),
        1 => "[A-Za-z0-9!$&'()*+,;=:@._~-]{1,70}",
        1 => Just("..".to_string()),
        1 => Just("%zz".to_string()),
        1 => Just("%00".to_string()),
        1 => Just("a".repeat(300)),
    ]
}

fn path() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec![
        "/api/v1",
        "/apis/apps/v1",
        "/apis/coordination.k8s.io/v1",
        "/apis/apiextensions.k8s.io/v1",
        "/apis/certificates.k8s.io/v1",
        "/apis/rbac.authorization.k8s.io/v1",
        "/apis/events.k8s.io/v1",
        "/apis/nope.example.com/v1",
        "/api/v2",
        "/api",
        "/apis",
        "",
    ]);
    let namespace = prop::option::of(prop_oneof![
        Just("default".to_string()),
        Just("kube-system".to_string()),
        segment()
    ]);
    let resource = prop_oneof![
        prop::sample::select(vec![
            "configmaps",
            "secrets",
            "namespaces",
            "serviceaccounts",
            "events",
            "pods",
            "nodes",
            "deployments",
            "leases",
            "customresourcedefinitions",
            "certificatesigningrequests",
            "roles",
            "clusterrolebindings",
        ])
        .prop_map(str::to_string),
        segment(),
    ];
    let name = prop::option::of(prop_oneof![
        Just("x".to_string()),
        Just("default".to_string()),
        segment()
    ]);
    let sub = prop::option::of(prop_oneof![
        prop::sample::select(vec!["status", "approval", "scale", "finalize"]).prop_map(str::to_string),
        segment(),
    ]);
    let extra = prop::option::of(segment());
    (prefix, namespace, resource, name, sub, extra).prop_map(|(prefix, ns, resource, name, sub, extra)| {
        let mut p = prefix.to_string();
        if let Some(ns) = ns {
            p.push_str(&format!("/namespaces/{ns}"));
        }
        p.push('/');
        p.push_str(&resource);
        for s in [name, sub, extra].into_iter().flatten() {
            p.push('/');
            p.push_str(&s);
        }
        p
    })
}

fn query() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        8 => prop::sample::select(vec![
            "labelSelector",
            "fieldSelector",
            "limit",
            "continue",
            "resourceVersion",
            "resourceVersionMatch",
            "timeoutSeconds",
            "watch",
            "allowWatchBookmarks",
            "sendInitialEvents",
            "dryRun",
            "fieldManager",
            "fieldValidation",
            "propagationPolicy",
            "gracePeriodSeconds",
            "includeObject",
            "pretty",
        ])
        .prop_map(str::to_string),
        1 => segment(),
    ];
    let value = prop_oneof![
        prop::sample::select(vec![
            "",
            "true",
            "false",
            "0",
            "1",
            "-1",
            "abc",
            "99999999999999999999999",
            "All",
            "Strict",
            "Exact",
            "NotOlderThan",
            "Foreground",
            "a=b,c!=d",
            "app in (a,b),!x",
            "metadata.name=x",
            "spec.nodeName==n",
            "===",
            "a in (",
        ])
        .prop_map(str::to_string),
        "\\PC{0,24}",
    ];
    prop::collection::vec((key, value), 0..4).prop_map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z./-]{0,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Objects that look like Kubernetes objects, with wrong types and odd names mixed in.
fn object() -> impl Strategy<Value = Value> {
    let api_version = prop_oneof![
        prop::sample::select(vec!["v1", "apps/v1", "apiextensions.k8s.io/v1", "bogus/v9", ""])
            .prop_map(Value::from),
        json_value(),
    ];
    let kind = prop_oneof![
        prop::sample::select(vec![
            "ConfigMap",
            "Secret",
            "Namespace",
            "Deployment",
            "CustomResourceDefinition",
            "Status",
            "",
        ])
        .prop_map(Value::from),
        json_value(),
    ];
    let name = prop_oneof![
        segment().prop_map(Value::from),
        "[a-z]{1,8}".prop_map(Value::from),
        json_value()
    ];
    (api_version, kind, name, json_value(), json_value(), json_value()).prop_map(
        |(api_version, kind, name, labels, data, spec)| {
            json!({
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "labels": labels, "resourceVersion": data.clone()},
                "data": data,
                "spec": spec,
            })
        },
    )
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => Just(Vec::new()),
        2 => prop::collection::vec(any::<u8>(), 0..200),
        3 => object().prop_map(|v| v.to_string().into_bytes()),
        2 => (object(), any::<prop::sample::Index>()).prop_map(|(v, cut)| {
            let text = v.to_string().into_bytes();
            let at = cut.index(text.len().max(1));
            text[..at.min(text.len())].to_vec()
        }),
        2 => json_value().prop_map(|v| v.to_string().into_bytes()),
        2 => prop::collection::vec(
            (
                prop::sample::select(vec!["add", "remove", "replace", "move", "copy", "test", "bogus"]),
                "(/[a-z~0-9]{0,8}){0,4}",
                json_value(),
            ),
            0..3,
        )
        .prop_map(|ops| {
            let ops: Vec<Value> =
                ops.into_iter().map(|(op, path, value)| json!({"op": op, "path": path, "value": value, "from": path})).collect();
            Value::from(ops).to_string().into_bytes()
        }),
        1 => "\\PC{0,60}".prop_map(String::into_bytes),
    ]
}

fn probe() -> impl Strategy<Value = Probe> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);
    let content_type = prop::option::of(prop::sample::select(vec![
        "application/json",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "text/plain",
        "garbage/;;",
    ]));
    (method, path(), query(), content_type, body()).prop_map(|(method, path, query, content_type, body)| {
        Probe {
            method,
            path,
            query,
            content_type,
            body,
        }
    })
}

const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// Sends one request; an error status must come with a Status body (or the plain 404 text).
async fn check(client: &kube::Client, probe: &Probe) -> Result<(), TestCaseError> {
    let uri = if probe.query.is_empty() {
        probe.path.clone()
    } else {
        format!("{}?{}", probe.path, probe.query)
    };
    let mut builder = Request::builder()
        .method(Method::from_bytes(probe.method.as_bytes()).unwrap())
        .uri(&uri);
    if let Some(ct) = probe.content_type {
        builder = builder.header("content-type", ct);
    }
    let Ok(request) = builder.body(Body::from(probe.body.clone())) else {
        // Not a URI an HTTP client can send; nothing reaches the server.
        return Ok(());
    };
    let response = tokio::time::timeout(ANSWER_WITHIN, client.send(request))
        .await
        .map_err(|_| TestCaseError::fail(format!("no answer within {ANSWER_WITHIN:?}")))?
        .map_err(|e| TestCaseError::fail(format!("request failed (connection dropped?): {e}")))?;
    let status = response.status();
    if status.as_u16() < 400 {
        // Successes (and watch streams) are not the subject here; dropping ends a stream.
        return Ok(());
    }
    let bytes = tokio::time::timeout(ANSWER_WITHIN, response.into_body().collect_bytes())
        .await
        .map_err(|_| TestCaseError::fail("error body not complete in time"))?
        .map_err(|e| TestCaseError::fail(format!("reading the error body: {e}")))?;
    if probe.method == "HEAD" && bytes.is_empty() {
        return Ok(());
    }
    if status.as_u16() == 404 && bytes.as_ref() == b"404 page not found\n" {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&bytes);
    let parsed: Value = serde_json::from_slice(&bytes)
        .map_err(|e| TestCaseError::fail(format!("{status} answered without a Status ({e}): {text}")))?;
    prop_assert_eq!(&parsed["kind"], "Status", "{}: {}", status, text);
    prop_assert_eq!(&parsed["apiVersion"], "v1", "{}", text);
    prop_assert_eq!(&parsed["status"], "Failure", "{}", text);
    prop_assert_eq!(
        parsed["code"].as_u64(),
        Some(u64::from(status.as_u16())),
        "{}",
        text
    );
    prop_assert!(parsed["message"].is_string(), "{}", text);
    Ok(())
}

async fn ready(client: &kube::Client) -> Result<(), TestCaseError> {
    let request = Request::builder().uri("/readyz").body(Body::empty()).unwrap();
    let response = tokio::time::timeout(ANSWER_WITHIN, client.send(request))
        .await
        .map_err(|_| TestCaseError::fail("/readyz did not answer"))?
        .map_err(|e| TestCaseError::fail(format!("/readyz: {e}")))?;
    prop_assert_eq!(response.status().as_u16(), 200);
    Ok(())
}

/// Random requests: every error is a Status, no connection drops, the server keeps serving.
#[test]
fn random_requests_are_answered_with_status() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let env = runtime.block_on(TestEnv::start()).unwrap();
    let client = runtime.block_on(env.client()).unwrap();
    let cases = std::env::var("OCM_BAD_INPUT_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(600);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&probe(), |probe| {
        runtime.block_on(async {
            check(&client, &probe).await?;
            ready(&client).await
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Bodies past 3 MiB are refused with 413 and a Status; the server keeps serving.
#[tokio::test]
async fn oversized_bodies_get_413_status() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    for (method, path) in [
        ("POST", "/api/v1/namespaces/default/configmaps"),
        ("PUT", "/api/v1/namespaces/default/configmaps/big"),
        ("PATCH", "/api/v1/namespaces/default/configmaps/big"),
    ] {
        let big = format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"a\":\"{}\"}}}}",
            "x".repeat(3 * 1024 * 1024)
        );
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/merge-patch+json")
            .body(Body::from(big.into_bytes()))
            .unwrap();
        let response = client.send(request).await.unwrap();
        assert_eq!(response.status().as_u16(), 413, "{method} {path}");
        let status: Value =
            serde_json::from_slice(&response.into_body().collect_bytes().await.unwrap()).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "RequestEntityTooLarge");
        assert_eq!(status["code"], 413);
    }
    ready(&client).await.unwrap();
}
