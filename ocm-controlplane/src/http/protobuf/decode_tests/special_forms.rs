//! The types with their own JSON forms (times, quantities, raw JSON, CRD schemas) and Go's zero values.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::certificates::v1 as certs;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use prost::Message as _;
use serde_json::{Value, json};

use super::*;

#[test]
fn csr_with_extra_times_and_conditions() {
    let csr = certs::CertificateSigningRequest {
        metadata: Some(meta::ObjectMeta {
            name: s("csr"),
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: s("kubectl"),
                operation: s("Update"),
                api_version: s("certificates.k8s.io/v1"),
                time: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: Some(0),
                }),
                fields_type: s("FieldsV1"),
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(br#"{"f:spec":{"f:request":{}}}"#.to_vec()),
                }),
                subresource: s(""),
            }],
            ..Default::default()
        }),
        spec: Some(certs::CertificateSigningRequestSpec {
            request: Some(b"-----BEGIN CERTIFICATE REQUEST-----\n".to_vec()),
            signer_name: s("kubernetes.io/kube-apiserver-client"),
            expiration_seconds: Some(3600),
            usages: vec!["client auth".into()],
            username: s("admin"),
            groups: vec!["system:masters".into()],
            extra: [(
                "authentication.kubernetes.io/credential-id".to_string(),
                certs::ExtraValue {
                    items: vec!["X509SHA256=ab".into(), "second".into()],
                },
            )]
            .into(),
            uid: s(""),
        }),
        status: Some(certs::CertificateSigningRequestStatus {
            conditions: vec![certs::CertificateSigningRequestCondition {
                r#type: s("Approved"),
                status: s("True"),
                reason: s("KubectlApprove"),
                message: s("This CSR was approved by kubectl certificate approve."),
                last_update_time: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: Some(999),
                }),
                // Go writes a zero time as an empty message.
                last_transition_time: Some(meta::Time::default()),
            }],
            certificate: None,
        }),
    };
    let decoded = decode_ok(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        &envelope(
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
            csr.encode_to_vec(),
        ),
    );
    let expected = openapi::<k8s_openapi::api::certificates::v1::CertificateSigningRequest>(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr", "managedFields": [{"manager": "kubectl", "operation": "Update",
            "apiVersion": "certificates.k8s.io/v1", "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:request": {}}}}]},
        "spec": {"request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
            "signerName": "kubernetes.io/kube-apiserver-client", "expirationSeconds": 3600,
            "usages": ["client auth"], "username": "admin", "groups": ["system:masters"],
            "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab", "second"]}},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove",
            "message": "This CSR was approved by kubectl certificate approve.",
            "lastUpdateTime": "2023-11-14T22:13:20Z"}]}
    }));
    assert_same(&decoded, &expected);
    let condition = &decoded["status"]["conditions"][0];
    assert_eq!(condition["lastTransitionTime"], Value::Null);
    assert!(
        decoded["metadata"]["managedFields"][0]
            .get("subresource")
            .is_none()
    );
}

#[test]
fn micro_times_of_events_and_leases() {
    let event = events::Event {
        metadata: Some(meta::ObjectMeta {
            name: s("e"),
            ..Default::default()
        }),
        event_time: Some(meta::MicroTime {
            seconds: Some(1_700_000_000),
            nanos: Some(123_456_789),
        }),
        reporting_controller: s("c"),
        reporting_instance: s("i"),
        action: s("Do"),
        reason: s("Because"),
        regarding: Some(core::ObjectReference {
            kind: s("Pod"),
            name: s("p"),
            ..Default::default()
        }),
        deprecated_count: Some(0),
        r#type: s("Normal"),
        ..Default::default()
    };
    let decoded = decode_ok(
        "events.k8s.io",
        "v1",
        "events",
        &envelope("events.k8s.io/v1", "Event", event.encode_to_vec()),
    );
    let expected = openapi::<k8s_openapi::api::events::v1::Event>(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
        "eventTime": "2023-11-14T22:13:20.123456Z", "reportingController": "c", "reportingInstance": "i",
        "action": "Do", "reason": "Because", "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal"
    }));
    assert_same(&decoded, &expected);
    // A non-pointer zero time without omitempty: null.
    assert_eq!(decoded["deprecatedFirstTimestamp"], Value::Null);

    let lease = coordination::Lease {
        metadata: Some(meta::ObjectMeta {
            name: s("l"),
            ..Default::default()
        }),
        spec: Some(coordination::LeaseSpec {
            holder_identity: s("me"),
            lease_duration_seconds: Some(0),
            renew_time: Some(meta::MicroTime {
                seconds: Some(0),
                nanos: Some(1_500),
            }),
            lease_transitions: Some(2),
            ..Default::default()
        }),
    };
    let decoded = decode_ok(
        "coordination.k8s.io",
        "v1",
        "leases",
        &envelope("coordination.k8s.io/v1", "Lease", lease.encode_to_vec()),
    );
    let expected = openapi::<k8s_openapi::api::coordination::v1::Lease>(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 0,
            "renewTime": "1970-01-01T00:00:00.000001Z", "leaseTransitions": 2}
    }));
    assert_same(&decoded, &expected);
}

#[test]
fn crd_schemas_with_their_own_json_forms() {
    let string = || apiext::JsonSchemaProps {
        r#type: s("string"),
        ..Default::default()
    };
    let spec_schema = apiext::JsonSchemaProps {
        r#type: s("object"),
        properties: [
            (
                "replicas".to_string(),
                apiext::JsonSchemaProps {
                    r#type: s("integer"),
                    minimum: Some(0.0),
                    maximum: Some(10.5),
                    default: Some(apiext::Json {
                        raw: Some(b"1".to_vec()),
                    }),
                    ..Default::default()
                },
            ),
            (
                "mode".to_string(),
                apiext::JsonSchemaProps {
                    r#type: s("string"),
                    r#enum: vec![
                        apiext::Json {
                            raw: Some(br#""a""#.to_vec()),
                        },
                        apiext::Json {
                            raw: Some(br#""b""#.to_vec()),
                        },
                    ],
                    ..Default::default()
                },
            ),
            (
                "port".to_string(),
                apiext::JsonSchemaProps {
                    x_kubernetes_int_or_string: Some(true),
                    ..Default::default()
                },
            ),
            (
                "tags".to_string(),
                apiext::JsonSchemaProps {
                    r#type: s("array"),
                    items: Some(Box::new(apiext::JsonSchemaPropsOrArray {
                        schema: Some(Box::new(string())),
                        j_son_schemas: vec![],
                    })),
                    x_kubernetes_list_type: s("set"),
                    ..Default::default()
                },
            ),
            (
                "labels".to_string(),
                apiext::JsonSchemaProps {
                    r#type: s("object"),
                    additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
                        allows: Some(true),
                        schema: Some(Box::new(string())),
                    })),
                    ..Default::default()
                },
            ),
            (
                "closed".to_string(),
                apiext::JsonSchemaProps {
                    r#type: s("object"),
                    additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
                        allows: Some(false),
                        schema: None,
                    })),
                    ..Default::default()
                },
            ),
        ]
        .into(),
        required: vec!["mode".into()],
        x_kubernetes_validations: vec![apiext::ValidationRule {
            rule: s("self.replicas >= 0"),
            message: s(""),
            ..Default::default()
        }],
        ..Default::default()
    };
    let crd = apiext::CustomResourceDefinition {
        metadata: Some(meta::ObjectMeta {
            name: s("widgets.example.com"),
            ..Default::default()
        }),
        spec: Some(apiext::CustomResourceDefinitionSpec {
            group: s("example.com"),
            names: Some(apiext::CustomResourceDefinitionNames {
                plural: s("widgets"),
                singular: s("widget"),
                kind: s("Widget"),
                list_kind: s("WidgetList"),
                ..Default::default()
            }),
            scope: s("Namespaced"),
            versions: vec![apiext::CustomResourceDefinitionVersion {
                name: s("v1"),
                served: Some(true),
                storage: Some(true),
                deprecated: Some(false),
                schema: Some(apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(apiext::JsonSchemaProps {
                        r#type: s("object"),
                        properties: [("spec".to_string(), spec_schema)].into(),
                        x_kubernetes_preserve_unknown_fields: Some(false),
                        ..Default::default()
                    }),
                }),
                subresources: Some(apiext::CustomResourceSubresources {
                    status: Some(apiext::CustomResourceSubresourceStatus {}),
                    scale: None,
                }),
                ..Default::default()
            }],
            preserve_unknown_fields: Some(false),
            ..Default::default()
        }),
        status: None,
    };
    let decoded = decode_ok(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        &envelope(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            crd.encode_to_vec(),
        ),
    );
    let expected = openapi::<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": false,
                    "properties": {"spec": {"type": "object", "required": ["mode"],
                        "x-kubernetes-validations": [{"rule": "self.replicas >= 0"}],
                        "properties": {
                            "replicas": {"type": "integer", "minimum": 0, "maximum": 10.5, "default": 1},
                            "mode": {"type": "string", "enum": ["a", "b"]},
                            "port": {"x-kubernetes-int-or-string": true},
                            "tags": {"type": "array", "items": {"type": "string"},
                                "x-kubernetes-list-type": "set"},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "closed": {"type": "object", "additionalProperties": false}}}}}}}]}
    }));
    // The status Go writes for a zero CustomResourceDefinitionStatus (fields without omitempty).
    let mut decoded = decoded;
    let status = decoded.as_object_mut().unwrap().remove("status").unwrap();
    assert_eq!(
        status,
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null})
    );
    assert_same(&decoded, &expected);
    // Go writes integral doubles without a fraction, as kubectl's JSON would.
    let replicas = &decoded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["replicas"];
    assert_eq!(serde_json::to_string(&replicas["minimum"]).unwrap(), "0");
}

#[test]
fn raw_extensions_and_non_omitempty_zeros() {
    let revision = apps::ControllerRevision {
        metadata: Some(meta::ObjectMeta {
            name: s("r"),
            ..Default::default()
        }),
        data: Some(RawExtension {
            raw: Some(br#"{"spec":{"a":1}}"#.to_vec()),
        }),
        revision: None,
    };
    let decoded = decode_ok(
        "apps",
        "v1",
        "controllerrevisions",
        &envelope("apps/v1", "ControllerRevision", revision.encode_to_vec()),
    );
    // `revision` has no omitempty: its zero value is written.
    assert_eq!(decoded["revision"], json!(0));
    assert_eq!(decoded["data"], json!({"spec": {"a": 1}}));

    let broken = apps::ControllerRevision {
        data: Some(RawExtension {
            raw: Some(b"{nope".to_vec()),
        }),
        ..Default::default()
    };
    let e = error_of(
        "apps",
        "v1",
        "controllerrevisions",
        &envelope("apps/v1", "ControllerRevision", broken.encode_to_vec()),
    );
    assert_eq!(e.code, 400);
    assert!(e.message.contains("embedded JSON"), "{}", e.message);
}
