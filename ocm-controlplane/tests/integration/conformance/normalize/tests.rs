//! Unit tests of the normalizer.
use serde_json::json;

use super::*;

fn fresh() -> Normalizer {
    Normalizer::new(Some("https://127.0.0.1:6443".into()), &BTreeMap::new())
}

/// A normalizer that has seen these resourceVersions under these numbers.
fn fresh_with(rvs: &[(&str, u32)]) -> Normalizer {
    let mut n = fresh();
    for (value, number) in rvs {
        n.table(Kind::Rv).assign(value, Some(*number));
    }
    n
}

#[test]
fn document_order_with_sorted_keys() {
    let mut n = fresh();
    let body = json!({
        "metadata": {"uid": "8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10", "resourceVersion": "57",
                     "name": "x", "creationTimestamp": "2026-11-22T10:00:00Z"},
        "apiVersion": "v1",
        "details": {"uid": "11111111-2222-3333-4444-555555555555"},
    });
    let out = n.normalize(&body, None, Origin::default());
    assert_eq!(out["details"]["uid"], "<uid:1>", "details sorts before metadata");
    assert_eq!(out["metadata"]["uid"], "<uid:2>");
    assert_eq!(out["metadata"]["resourceVersion"], "<rv:1>");
    assert_eq!(out["metadata"]["creationTimestamp"], "<time>");
    assert_eq!(n.value_of(Kind::Rv, 1), Some("57"));
    assert_eq!(
        n.substitute("/x?rv=<rv:1>&c=<continue:1>").0,
        "/x?rv=57&c=<continue:1>"
    );
    assert_eq!(
        n.substitute("/x?c=<continue:1>").1,
        vec!["<continue:1>".to_string()]
    );
}

#[test]
fn guided_numbering_keeps_recorded_numbers() {
    let mut n = fresh();
    let guide = json!({"metadata": {"resourceVersion": "<rv:6>"}});
    let out = n.normalize(
        &json!({"metadata": {"resourceVersion": "9"}}),
        Some(&guide),
        Origin::default(),
    );
    assert_eq!(out, guide);
    // Another value where the guide expects <rv:6> gets a fresh number above the floor.
    let out = n.normalize(
        &json!({"metadata": {"resourceVersion": "10"}}),
        Some(&guide),
        Origin::default(),
    );
    assert_eq!(out["metadata"]["resourceVersion"], "<rv:7>");
    // A known value where the recording first shows <rv:9>: a difference, but requests
    // using <rv:9> later get that value.
    let guide = json!({"metadata": {"resourceVersion": "<rv:9>"}});
    let out = n.normalize(
        &json!({"metadata": {"resourceVersion": "10"}}),
        Some(&guide),
        Origin::default(),
    );
    assert_eq!(out["metadata"]["resourceVersion"], "<rv:7>");
    assert_eq!(n.value_of(Kind::Rv, 9), Some("10"));
}

#[test]
fn list_resource_version_may_be_newer() {
    let mut n = fresh();
    n.normalize(
        &json!({"metadata": {"resourceVersion": "5"}}),
        None,
        Origin::default(),
    );
    let guide = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "<rv:1>"}});
    let list = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "8"}});
    assert_eq!(n.normalize(&list, Some(&guide), Origin::default()), guide);
    let older = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "4"}});
    assert_ne!(n.normalize(&older, Some(&guide), Origin::default()), guide);
    // The recording's list shows a fresh revision (<rv:2>): the latest value seen is accepted,
    // an older one is not.
    let fresh = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "<rv:2>"}});
    let mut n1 = fresh_with(&[("5", 1), ("8", 3)]);
    assert_eq!(n1.normalize(&list, Some(&fresh), Origin::default()), fresh);
    assert_eq!(n1.value_of(Kind::Rv, 2), Some("8"));
    let mut n2 = fresh_with(&[("7", 1), ("5", 3)]);
    let five = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "5"}});
    assert_ne!(n2.normalize(&five, Some(&fresh), Origin::default()), fresh);
    let object = json!({"kind": "ConfigMap", "metadata": {"resourceVersion": "9"}});
    let object_guide = json!({"kind": "ConfigMap", "metadata": {"resourceVersion": "<rv:1>"}});
    assert_ne!(
        n.normalize(&object, Some(&object_guide), Origin::default()),
        object_guide
    );
}

#[test]
fn strings_embedded_values_and_messages() {
    let mut n = fresh();
    n.set_literal_rvs(vec!["999999999".into()]);
    let text = "Timeout: Too large resource version: 999999999, current: 41";
    assert_eq!(
        n.normalize_text(text, None),
        "Timeout: Too large resource version: 999999999, current: <rv:1>"
    );
    let text = concat!(
        r#"Invalid value: "{\"uid\":\"8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10\","#,
        r#"\"resourceVersion\":\"41\",\"time\":\"2026-11-22T10:00:00Z\"}""#
    );
    assert_eq!(
        n.normalize_text(text, None),
        r#"Invalid value: "{\"uid\":\"<uid:1>\",\"resourceVersion\":\"<rv:1>\",\"time\":\"<time>\"}""#
    );
    let yaml = "metadata:\n  resourceVersion: \"42\"\n  uid: 8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10\n";
    assert_eq!(
        n.normalize_text(yaml, None),
        "metadata:\n  resourceVersion: \"<rv:2>\"\n  uid: <uid:1>\n"
    );
    let text = "precondition (12) does not match the ResourceVersion in record (41)";
    assert_eq!(
        n.normalize_text(&format!("the ResourceVersion in the {text}"), None),
        concat!(
            "the ResourceVersion in the precondition (<rv:3>) does not match ",
            "the ResourceVersion in record (<rv:1>)"
        )
    );
    assert_eq!(
        n.normalize_text("X509SHA256=0a1bff", None),
        "X509SHA256=<fingerprint>"
    );
    assert_eq!(
        n.normalize_text("see https://127.0.0.1:6443/api", None),
        "see <server>/api"
    );
    n.add_generate_name("Bad_");
    assert_eq!(
        n.normalize_text("\"Bad_x7k2p\": a lowercase", None),
        "\"Bad_<gen:1>\": a lowercase"
    );
    assert_eq!(n.normalize_text("Bad_explicit", None), "Bad_explicit");
}

#[test]
fn generated_names_version_fields_and_kind_rules() {
    let mut n = fresh();
    let body = json!({"kind": "ConfigMap", "metadata": {"generateName": "gen-", "name": "gen-x7k2p"},
                      "data": {"ca.crt": "-----BEGIN CERTIFICATE-----"}});
    let out = n.normalize(&body, None, Origin::default());
    assert_eq!(out["metadata"]["name"], "gen-<gen:1>");
    assert_eq!(out["data"]["ca.crt"], "<ca-cert>");
    assert_eq!(n.substitute("/cm/gen-<gen:1>").0, "/cm/gen-x7k2p");
    let version = json!({"major": "1", "gitVersion": "v1.36.0", "emulationMajor": "1"});
    let out = n.normalize(
        &version,
        None,
        Origin {
            path: "/version",
            bookmark: false,
        },
    );
    assert_eq!(
        out,
        json!({"major": "1", "gitVersion": "<gitVersion>", "emulationMajor": "<emulationMajor>"})
    );
    let status = json!({"token": "abc", "expirationTimestamp": "2026-11-22T10:00:00Z"});
    let token = json!({"kind": "TokenRequest", "status": status});
    assert_eq!(
        n.normalize(&token, None, Origin::default())["status"]["token"],
        "<token>"
    );
    assert_eq!(n.substitute("<token>").0, "abc");
}

#[test]
fn table_age_cells() {
    let mut n = fresh();
    let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "columnDefinitions": [{"name": "Name", "type": "string"}, {"name": "Age", "type": "string"}],
        "rows": [{"cells": ["a", "3m"],
                  "object": {"metadata": {"uid": "8d2a1b7e-0c1f-4a57-9a63-5d0e4b3c2a10"}}}]});
    let out = n.normalize(&table, None, Origin::default());
    assert_eq!(out["rows"][0]["cells"], json!(["a", "<age>"]));
    assert_eq!(out["rows"][0]["object"]["metadata"]["uid"], "<uid:1>");
}
