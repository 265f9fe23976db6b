//! Whole objects of the create generators, encoded with k8s-pb, against k8s-openapi's JSON.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message as _;
use serde_json::{Value, json};

use super::*;

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
