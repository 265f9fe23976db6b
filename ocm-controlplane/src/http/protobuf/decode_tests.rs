//! Decoder tests: bytes a real kubectl sent, bytes encoded with k8s-pb's prost types compared with
//! the JSON k8s-openapi writes for the same object, hand-built edge cases and malformed input.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::certificates::v1 as certs;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message as _;
use serde_json::{Value, json};

use super::*;
use crate::registry::Registry;

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn quantity(v: &str) -> Quantity {
    Quantity { string: s(v) }
}

fn int_or_string_int(v: i32) -> IntOrString {
    IntOrString {
        r#type: Some(0),
        int_val: Some(v),
        str_val: None,
    }
}

fn int_or_string_str(v: &str) -> IntOrString {
    IntOrString {
        r#type: Some(1),
        int_val: None,
        str_val: s(v),
    }
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(api_version),
            kind: s(kind),
        }),
        raw: Some(raw),
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn info(group: &str, version: &str, resource: &str) -> std::sync::Arc<ResourceInfo> {
    Registry::with_builtins().get(group, version, resource).unwrap()
}

fn decode_as(group: &str, version: &str, resource: &str, body: &[u8]) -> Result<Value, ApiError> {
    let bytes = object_body_to_json(&info(group, version, resource), body)?;
    Ok(serde_json::from_slice(&bytes).unwrap())
}

fn decode_ok(group: &str, version: &str, resource: &str, body: &[u8]) -> Value {
    decode_as(group, version, resource, body).unwrap()
}

fn error_of(group: &str, version: &str, resource: &str, body: &[u8]) -> ApiError {
    decode_as(group, version, resource, body).unwrap_err()
}

/// Drops nulls and empty objects, recursively: the zero structs Go always writes and k8s-openapi
/// leaves out. Zero numbers, `false` and empty strings stay, so pointer semantics are compared.
/// Integral floats compare as integers (k8s-openapi writes `0.0` where Go writes `0`).
fn prune(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Number(n) if n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
            Some(json!(n.as_f64().unwrap_or_default() as i64))
        }
        Value::Object(m) => {
            let pruned: serde_json::Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| prune(v).map(|v| (k.clone(), v)))
                .collect();
            (!pruned.is_empty()).then_some(Value::Object(pruned))
        }
        Value::Array(items) => Some(Value::Array(
            items.iter().map(|i| prune(i).unwrap_or(json!({}))).collect(),
        )),
        other => Some(other.clone()),
    }
}

/// `expected` as k8s-openapi writes it (a round trip through its type), checked to lose nothing.
fn openapi<T: serde::de::DeserializeOwned + serde::Serialize>(expected: Value) -> Value {
    let typed: T = serde_json::from_value(expected.clone()).unwrap();
    let written = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        prune(&written),
        prune(&expected),
        "the expected JSON has fields k8s-openapi does not know"
    );
    written
}

fn assert_same(decoded: &Value, expected: &Value) {
    assert_eq!(
        prune(decoded),
        prune(expected),
        "decoded:\n{}\nexpected:\n{}",
        serde_json::to_string_pretty(decoded).unwrap(),
        serde_json::to_string_pretty(expected).unwrap()
    );
}

#[test]
fn kubectl_create_namespace_bytes() {
    // What kubectl v1.32 sent for `kubectl create namespace a` (every non-pointer field written,
    // zero values included, as Go's generated code does).
    let body = [
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0f, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x09, 0x4e, 0x61, 0x6d, 0x65, 0x73,
        0x70, 0x61, 0x63, 0x65, 0x12, 0x19, 0x0a, 0x11, 0x0a, 0x01, 0x61, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00,
        0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x00, 0x1a, 0x02, 0x0a, 0x00, 0x1a, 0x00, 0x22,
        0x00,
    ];
    let decoded = decode_ok("", "v1", "namespaces", &body);
    // Exactly what kubectl's JSON for the same object is.
    assert_eq!(
        serde_json::to_string(&decoded).unwrap(),
        r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"a","creationTimestamp":null},"spec":{},"status":{}}"#
    );
}

#[test]
fn deployment_matches_k8s_openapi() {
    let d = apps::Deployment {
        metadata: Some(meta::ObjectMeta {
            name: s("web"),
            namespace: s("default"),
            // Go's encoder writes these zero values; JSON leaves them out.
            generate_name: s(""),
            generation: Some(0),
            labels: map(&[("app", "web")]),
            annotations: map(&[("empty", "")]),
            owner_references: vec![meta::OwnerReference {
                api_version: s("v1"),
                kind: s("ConfigMap"),
                name: s("cm"),
                uid: s("u-1"),
                controller: Some(false),
                block_owner_deletion: None,
            }],
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            revision_history_limit: Some(0),
            paused: Some(false),
            min_ready_seconds: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: map(&[("app", "web")]),
                match_expressions: vec![meta::LabelSelectorRequirement {
                    key: s("tier"),
                    operator: s("In"),
                    values: vec!["a".into(), "b".into()],
                }],
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: s("RollingUpdate"),
                rolling_update: Some(apps::RollingUpdateDeployment {
                    max_unavailable: Some(int_or_string_int(0)),
                    max_surge: Some(int_or_string_str("25%")),
                }),
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: map(&[("app", "web")]),
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: s("web"),
                        image: s("nginx"),
                        ports: vec![core::ContainerPort {
                            container_port: Some(80),
                            protocol: s("TCP"),
                            host_port: Some(0),
                            ..Default::default()
                        }],
                        env: vec![core::EnvVar {
                            name: s("A"),
                            value: s(""),
                            value_from: None,
                        }],
                        resources: Some(core::ResourceRequirements {
                            limits: [("cpu".to_string(), quantity("500m"))].into(),
                            requests: [("memory".to_string(), quantity("1Gi"))].into(),
                            claims: vec![],
                        }),
                        readiness_probe: Some(core::Probe {
                            handler: Some(core::ProbeHandler {
                                http_get: Some(core::HttpGetAction {
                                    path: s("/"),
                                    port: Some(int_or_string_str("http")),
                                    ..Default::default()
                                }),
                                ..Default::default()
                            }),
                            initial_delay_seconds: Some(0),
                            ..Default::default()
                        }),
                        security_context: Some(core::SecurityContext {
                            privileged: Some(false),
                            run_as_user: Some(0),
                            ..Default::default()
                        }),
                        stdin: Some(false),
                        ..Default::default()
                    }],
                    volumes: vec![
                        core::Volume {
                            name: s("cfg"),
                            volume_source: Some(core::VolumeSource {
                                config_map: Some(core::ConfigMapVolumeSource {
                                    local_object_reference: Some(core::LocalObjectReference {
                                        name: s("cm"),
                                    }),
                                    default_mode: Some(420),
                                    optional: Some(false),
                                    items: vec![],
                                }),
                                ..Default::default()
                            }),
                        },
                        core::Volume {
                            name: s("scratch"),
                            volume_source: Some(core::VolumeSource {
                                empty_dir: Some(core::EmptyDirVolumeSource {
                                    medium: s(""),
                                    size_limit: Some(quantity("1Gi")),
                                }),
                                ..Default::default()
                            }),
                        },
                    ],
                    node_selector: map(&[("disk", "ssd")]),
                    tolerations: vec![core::Toleration {
                        key: s("k"),
                        operator: s("Exists"),
                        effect: s("NoSchedule"),
                        toleration_seconds: Some(0),
                        value: s(""),
                    }],
                    termination_grace_period_seconds: Some(30),
                    automount_service_account_token: Some(false),
                    host_network: Some(false),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let decoded = decode_ok(
        "apps",
        "v1",
        "deployments",
        &envelope("apps/v1", "Deployment", d.encode_to_vec()),
    );
    let expected = openapi::<k8s_openapi::api::apps::v1::Deployment>(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
            "annotations": {"empty": ""},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u-1",
                "controller": false}]},
        "spec": {
            "replicas": 0, "revisionHistoryLimit": 0,
            "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "web", "image": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "A"}],
                    "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "1Gi"}},
                    "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                    "securityContext": {"privileged": false, "runAsUser": 0}}],
                "volumes": [
                    {"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420, "optional": false}},
                    {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                    "tolerationSeconds": 0}],
                "terminationGracePeriodSeconds": 30,
                "automountServiceAccountToken": false}}
        }
    }));
    assert_same(&decoded, &expected);
    // Go's shape beyond what k8s-openapi writes: zero structs are written, non-pointer zeros with
    // omitempty are not, pointers keep their zero.
    assert_eq!(decoded["metadata"]["creationTimestamp"], Value::Null);
    assert_eq!(decoded["status"], json!({}));
    assert_eq!(
        decoded["spec"]["template"]["metadata"]["creationTimestamp"],
        Value::Null
    );
    assert!(decoded["spec"].get("paused").is_none());
    assert!(decoded["spec"].get("minReadySeconds").is_none());
    assert!(decoded["metadata"].get("generation").is_none());
    assert_eq!(decoded["spec"]["replicas"], json!(0));
    assert_eq!(
        decoded["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"],
        Value::Null
    );
    assert!(decoded["spec"]["template"]["spec"].get("hostNetwork").is_none());
}

#[test]
fn secret_and_configmap_bytes_and_pointers() {
    let secret = core::Secret {
        metadata: Some(meta::ObjectMeta {
            name: s("s"),
            ..Default::default()
        }),
        immutable: Some(false),
        data: [
            ("bin".to_string(), vec![0u8, 0xff, 0x10]),
            ("text".to_string(), b"admin".to_vec()),
        ]
        .into(),
        string_data: map(&[("plain", "x")]),
        r#type: s("Opaque"),
    };
    let decoded = decode_ok(
        "",
        "v1",
        "secrets",
        &envelope("v1", "Secret", secret.encode_to_vec()),
    );
    let expected = openapi::<k8s_openapi::api::core::v1::Secret>(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "immutable": false,
        "data": {"bin": "AP8Q", "text": "YWRtaW4="}, "stringData": {"plain": "x"}, "type": "Opaque"
    }));
    assert_same(&decoded, &expected);

    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: s("c"),
            ..Default::default()
        }),
        immutable: None,
        data: map(&[("k", "v"), ("empty", "")]),
        binary_data: [("b".to_string(), b"\x01".to_vec())].into(),
    };
    let decoded = decode_ok(
        "",
        "v1",
        "configmaps",
        &envelope("v1", "ConfigMap", cm.encode_to_vec()),
    );
    assert_eq!(
        decoded,
        json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "creationTimestamp": null},
            "data": {"empty": "", "k": "v"}, "binaryData": {"b": "AQ=="}})
    );
}

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

#[test]
fn rbac_and_service_generators() {
    let role = k8s_pb::api::rbac::v1::Role {
        metadata: Some(meta::ObjectMeta {
            name: s("r"),
            ..Default::default()
        }),
        rules: vec![k8s_pb::api::rbac::v1::PolicyRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["pods".into()],
            ..Default::default()
        }],
    };
    let decoded = decode_ok(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        &envelope("rbac.authorization.k8s.io/v1", "Role", role.encode_to_vec()),
    );
    let expected = openapi::<k8s_openapi::api::rbac::v1::Role>(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    }));
    assert_same(&decoded, &expected);
    // Lists without omitempty are null when empty, as Go writes nil slices.
    let empty = k8s_pb::api::rbac::v1::ClusterRole::default();
    let decoded = decode_ok(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        &envelope(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            empty.encode_to_vec(),
        ),
    );
    assert_eq!(decoded["rules"], Value::Null);
    assert!(decoded.get("aggregationRule").is_none());

    let service = core::Service {
        metadata: Some(meta::ObjectMeta {
            name: s("svc"),
            ..Default::default()
        }),
        spec: Some(core::ServiceSpec {
            ports: vec![core::ServicePort {
                name: s("80-8080"),
                protocol: s("TCP"),
                port: Some(80),
                target_port: Some(int_or_string_int(8080)),
                node_port: Some(0),
                app_protocol: None,
            }],
            selector: map(&[("app", "svc")]),
            cluster_ip: s(""),
            r#type: s("ClusterIP"),
            ..Default::default()
        }),
        status: None,
    };
    let decoded = decode_ok(
        "",
        "v1",
        "services",
        &envelope("v1", "Service", service.encode_to_vec()),
    );
    let expected = openapi::<k8s_openapi::api::core::v1::Service>(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
            "selector": {"app": "svc"}, "type": "ClusterIP"}
    }));
    assert_same(&decoded, &expected);
    assert_eq!(decoded["status"], json!({"loadBalancer": {}}));
}

#[test]
fn delete_options_body() {
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: s("u"),
            resource_version: None,
        }),
        propagation_policy: s("Background"),
        dry_run: vec!["All".into()],
        ..Default::default()
    };
    let decoded = delete_options(&envelope("v1", "DeleteOptions", opts.encode_to_vec())).unwrap();
    assert_eq!(
        decoded,
        json!({"gracePeriodSeconds": 0, "preconditions": {"uid": "u"}, "propagationPolicy": "Background",
            "dryRun": ["All"]})
    );
    assert_eq!(delete_options(b"{}").unwrap_err().code, 400);
}

// Hand-built wire bytes.

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
        (&[0x08, 0x01], "proto: wrong wireType = 0 for field Metadata"),
        (&[0x0f], "proto: wrong wireType = 7 for field Metadata"),
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
