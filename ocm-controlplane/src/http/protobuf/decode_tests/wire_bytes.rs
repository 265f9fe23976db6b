//! Hand-built wire bytes: merging, packing, map entries, times, type defaults, malformed input.

use serde_json::{Value, json};

use super::*;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(number << 3 | 2, &mut out);
    varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

fn varint_field(number: u64, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(number << 3, &mut out);
    varint(v, &mut out);
    out
}

fn namespace_with_meta(meta: &[u8]) -> Vec<u8> {
    envelope("v1", "Namespace", field(1, meta))
}

#[test]
fn merges_repeated_messages_and_skips_unknown_fields() {
    let mut meta = field(1, b"first");
    // An unknown length-delimited field, an unknown varint and an unknown fixed64.
    meta.extend(field(99, b"ignored"));
    meta.extend(varint_field(98, 5));
    meta.extend([0x81, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]);
    let mut body = field(1, &meta);
    // metadata again: protobuf merges the two.
    body.extend(field(1, &field(11, &[field(1, b"k"), field(2, b"v")].concat())));
    body.extend(field(1, &field(1, b"second")));
    let decoded = decode_ok("", "v1", "namespaces", &envelope("v1", "Namespace", body));
    assert_eq!(decoded["metadata"]["name"], json!("second"));
    assert_eq!(decoded["metadata"]["labels"], json!({"k": "v"}));
}

#[test]
fn packed_and_unpacked_repeated_numbers() {
    // PodSecurityContext.supplementalGroups (4, int64) packed, then one more unpacked.
    let mut groups = Vec::new();
    varint(1, &mut groups);
    varint(1000, &mut groups);
    let mut security = field(4, &groups);
    security.extend(varint_field(4, 7));
    // PodSpec.securityContext is field 14.
    let pod = [field(2, &field(14, &security))].concat();
    let decoded = decode_ok("", "v1", "pods", &envelope("v1", "Pod", pod));
    assert_eq!(
        decoded["spec"]["securityContext"]["supplementalGroups"],
        json!([1, 1000, 7])
    );
}

#[test]
fn map_entries_without_key_or_value() {
    // Secret.data (2): an entry without a value is a nil []byte (null); ConfigMap.data without a
    // value is "" and without a key is the empty key.
    let secret = [field(2, &field(1, b"k"))].concat();
    let decoded = decode_ok("", "v1", "secrets", &envelope("v1", "Secret", secret));
    assert_eq!(decoded["data"], json!({"k": null}));
    let cm = [field(2, &field(1, b"k")), field(2, &field(2, b"v"))].concat();
    let decoded = decode_ok("", "v1", "configmaps", &envelope("v1", "ConfigMap", cm));
    assert_eq!(decoded["data"], json!({"k": "", "": "v"}));
}

#[test]
fn times_like_go() {
    let ts = |seconds: u64| namespace_with_meta(&field(9, &varint_field(1, seconds)));
    let decoded = decode_ok("", "v1", "namespaces", &ts(0));
    assert_eq!(
        decoded["metadata"]["deletionTimestamp"],
        json!("1970-01-01T00:00:00Z")
    );
    // Go's zero time is null.
    let decoded = decode_ok("", "v1", "namespaces", &ts((-62_135_596_800i64) as u64));
    assert_eq!(decoded["metadata"]["deletionTimestamp"], Value::Null);
    let decoded = decode_ok("", "v1", "namespaces", &ts((-62_135_596_799i64) as u64));
    assert_eq!(
        decoded["metadata"]["deletionTimestamp"],
        json!("0001-01-01T00:00:01Z")
    );
    let e = error_of("", "v1", "namespaces", &ts(400_000_000_000));
    assert_eq!(
        e.message,
        "Namespace in version \"v1\" cannot be handled as a Namespace: Time.MarshalJSON: year outside of range [0,9999]"
    );
}

#[test]
fn embedded_structs_are_named_by_their_type() {
    // Pod.spec (2).volumes (1) with the embedded VolumeSource (2) sent as a varint.
    let volume = [field(1, b"v"), varint_field(2, 1)].concat();
    let body = field(2, &field(1, &volume));
    let e = error_of("", "v1", "pods", &envelope("v1", "Pod", body));
    assert!(
        e.message
            .ends_with(": proto: wrong wireType = 0 for field VolumeSource"),
        "{}",
        e.message
    );
    // Its fields appear in the volume itself.
    let volume = [field(1, b"v"), field(2, &field(2, &[]))].concat();
    let decoded = decode_ok(
        "",
        "v1",
        "pods",
        &envelope("v1", "Pod", field(2, &field(1, &volume))),
    );
    assert_eq!(decoded["spec"]["volumes"], json!([{"name": "v", "emptyDir": {}}]));
}

#[test]
fn int_or_string_of_an_impossible_type() {
    // Service.spec (2).ports (1).targetPort (4) with type 2.
    let port = [varint_field(3, 80), field(4, &varint_field(1, 2))].concat();
    let body = field(2, &field(1, &port));
    let e = error_of("", "v1", "services", &envelope("v1", "Service", body));
    assert!(
        e.message.ends_with(": impossible IntOrString.Type"),
        "{}",
        e.message
    );
}

#[test]
fn type_meta_defaults_and_foreign_kinds() {
    // No typeMeta: the addressed kind.
    let mut body = MAGIC.to_vec();
    body.extend(field(2, &field(1, &field(1, b"x"))));
    let decoded = decode_ok("", "v1", "configmaps", &body);
    assert_eq!(decoded["kind"], json!("ConfigMap"));
    assert_eq!(decoded["apiVersion"], json!("v1"));
    assert_eq!(decoded["metadata"]["name"], json!("x"));
    // A kind without a table: only its type, for the REST layer to refuse.
    let decoded = decode_ok(
        "",
        "v1",
        "configmaps",
        &envelope("v1", "Frobnicator", field(1, b"x")),
    );
    assert_eq!(decoded, json!({"kind": "Frobnicator", "apiVersion": "v1"}));
}

#[test]
fn malformed_bodies_get_kube_apiserver_400s() {
    let e = error_of("", "v1", "namespaces", b"");
    assert_eq!(e.code, 400);
    assert_eq!(e.reason, "BadRequest");
    assert_eq!(
        e.message,
        "the object provided is unrecognized (must be of type Namespace): empty data (<empty>)"
    );
    let e = error_of("", "v1", "namespaces", br#"{"kind":"Namespace"}"#);
    assert_eq!(
        e.message,
        "the object provided is unrecognized (must be of type Namespace): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({\"kind\":\"Namespace\"})"
    );
    let e = error_of("", "v1", "namespaces", b"k8s\0");
    assert_eq!(
        e.message,
        "the object provided is unrecognized (must be of type Namespace): empty body (6b387300)"
    );
    // A truncated envelope.
    let e = error_of("", "v1", "namespaces", b"k8s\0\x0a\x05\x0a");
    assert_eq!(
        e.message,
        "the object provided is unrecognized (must be of type Namespace): unexpected EOF (6b3873000a050a)"
    );
    // The object's bytes: truncated, wrong wire type, field zero, illegal wire type.
    let cases: [(&[u8], &str); 6] = [
        (&[0x0a, 0x05, 0x0a], "unexpected EOF"),
        (&[0x08, 0x01], "proto: wrong wireType = 0 for field ObjectMeta"),
        (&[0x0f], "proto: wrong wireType = 7 for field ObjectMeta"),
        (&[0x00, 0x01], "proto: Namespace: illegal tag 0 (wire type 0)"),
        (&[0x7f], "proto: illegal wireType 7"),
        (&[0x7c], "proto: Namespace: wiretype end group for non-group"),
    ];
    for (raw, message) in cases {
        let e = error_of("", "v1", "namespaces", &envelope("v1", "Namespace", raw.to_vec()));
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            format!("Namespace in version \"v1\" cannot be handled as a Namespace: {message}")
        );
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    // JSONSchemaProps.not (28) nested far beyond the limit.
    let mut props = Vec::new();
    for _ in 0..2000 {
        props = field(28, &props);
    }
    let validation = field(1, &props);
    let version = [field(1, b"v1"), field(4, &validation)].concat();
    let body = field(2, &field(7, &version));
    let e = error_of(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        &envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", body),
    );
    assert!(e.message.contains("nested deeper"), "{}", e.message);
}

#[test]
fn custom_resources_have_no_protobuf_form() {
    let registry = Registry::with_builtins();
    let mut custom = (*registry.get("", "v1", "configmaps").unwrap()).clone();
    custom.group = "example.com".into();
    custom.kind = "Widget".into();
    custom.custom = Some(std::sync::Arc::new(crate::registry::CustomVersion {
        crd_name: "widgets.example.com".into(),
        schema: Value::Null,
        printer_columns: vec![],
        storage_version: "v1".into(),
        cel: None,
        conversion: crate::conversion::Conversion::Relabel,
        schemas: Default::default(),
        terminating: false,
    }));
    let e = object_body_to_json(&custom, &envelope("example.com/v1", "Widget", vec![])).unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "Widget in version \"v1\" cannot be handled as a Widget: Object 'Kind' is missing in 'object has no kind field '"
    );
}

#[test]
fn content_types() {
    assert!(is_protobuf("application/vnd.kubernetes.protobuf"));
    assert!(is_protobuf("Application/Vnd.Kubernetes.Protobuf; charset=utf-8"));
    assert!(!is_protobuf("application/json"));
    assert!(!is_protobuf("application/vnd.kubernetes.protobuf+json"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// Arbitrary bytes after a valid envelope header never panic: a JSON object or a 400.
    #[test]
    fn arbitrary_bytes_decode_or_400(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
        for (group, version, resource, api_version, kind) in [
            ("apps", "v1", "deployments", "apps/v1", "Deployment"),
            ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "apiextensions.k8s.io/v1",
                "CustomResourceDefinition"),
            ("certificates.k8s.io", "v1", "certificatesigningrequests", "certificates.k8s.io/v1",
                "CertificateSigningRequest"),
        ] {
            match decode_as(group, version, resource, &envelope(api_version, kind, raw.clone())) {
                Ok(v) => proptest::prop_assert!(v.is_object()),
                Err(e) => proptest::prop_assert_eq!(e.code, 400),
            }
        }
        let mut body = MAGIC.to_vec();
        body.extend(&raw);
        if let Err(e) = decode_as("", "v1", "namespaces", &body) {
            proptest::prop_assert_eq!(e.code, 400);
        }
    }
}
