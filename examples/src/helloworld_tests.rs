//! Tests of the helloworld hub side: the templates rendered by the factory with every kind of
//! value, the registration, the CSR approver and the RBAC subjects.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

use ocm_addon_framework::agent::AgentAddon;
use ocm_addon_framework::factory::{Values, ValuesFn};
use ocm_api::addon::v1beta1::{AddOnDeploymentConfig, ManagedClusterAddOnStatus};
use serde_json::json;

use super::*;

fn cluster(name: &str) -> ManagedCluster {
    let mut c = ManagedCluster::default();
    c.metadata.name = Some(name.into());
    c
}

fn addon() -> ManagedClusterAddOn {
    let mut a = ManagedClusterAddOn::default();
    a.metadata.name = Some(ADDON_NAME.into());
    a.metadata.namespace = Some("cluster1".into());
    a
}

/// The ADC values as the AddOnDeploymentConfig `global` of the blog would give them, with
/// everything set, through the factory's own to-values functions.
struct AdcValues(AddOnDeploymentConfig);

#[async_trait]
impl ValuesFn for AdcValues {
    async fn values(&self, _c: &ManagedCluster, _a: &ManagedClusterAddOn) -> Result<Values, AddonError> {
        let mut v = deployment_config_values(&self.0).unwrap();
        ocm_addon_framework::factory::merge_values(
            &mut v,
            image_override_values("Image", DEFAULT_IMAGE)(&self.0).unwrap(),
        );
        Ok(v)
    }
}

fn full_config() -> AddOnDeploymentConfig {
    serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": "global", "namespace": "open-cluster-management"},
        "spec": {
            "nodePlacement": {
                "nodeSelector": {"host": "ssd", "zone": "a"},
                "tolerations": [{"key": "node-role", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}]
            },
            "proxyConfig": {"httpProxy": "http://proxy:3128", "noProxy": "localhost"},
            "registries": [{"source": "quay.io/open-cluster-management", "mirror": "mirror.example.com/ocm"}],
            "resourceRequirements": [
                {"containerID": "*:*:*", "resources": {"requests": {"cpu": "10m"}}},
                {"containerID": "deployments:helloworld-agent:helloworld-agent",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}},
                {"containerID": "deployments:other:*", "resources": {"limits": {"cpu": "1"}}}
            ]
        }
    }))
    .unwrap()
}

async fn render(values: Vec<Arc<dyn ValuesFn>>) -> Vec<ocm_api::work::v1::Manifest> {
    let addon_obj = AgentAddonFactory::new(ADDON_NAME, TEMPLATES)
        .with_values_fns(values)
        .with_agent_registration_option(RegistrationOption::default())
        .build_template_agent_addon()
        .unwrap();
    addon_obj.manifests(&cluster("cluster1"), &addon()).await.unwrap()
}

#[tokio::test]
async fn the_templates_render_the_blogs_three_objects_with_defaults() {
    let manifests = render(vec![Arc::new(DefaultValues {
        image: DEFAULT_IMAGE.into(),
    })])
    .await;
    let kinds: Vec<(&str, &str)> = manifests
        .iter()
        .map(|m| (m.kind().unwrap(), m.name().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ClusterRoleBinding", "helloworld-agent"),
            ("Deployment", "helloworld-agent"),
            ("ServiceAccount", "helloworld-agent-sa"),
        ]
    );
    let ns = "open-cluster-management-agent-addon";
    assert_eq!(manifests[0].as_object()["subjects"][0]["namespace"], json!(ns));
    let deployment = manifests[1].as_object();
    assert_eq!(deployment["metadata"]["namespace"], json!(ns));
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"],
        json!("helloworld-hub-kubeconfig")
    );
    assert!(pod.get("nodeSelector").is_none() && pod.get("tolerations").is_none());
    let container = &pod["containers"][0];
    assert_eq!(container["image"], json!(DEFAULT_IMAGE));
    assert!(container.get("resources").is_none() && container.get("env").is_none());
    assert_eq!(
        container["args"],
        json!([
            "--hub-kubeconfig=/var/run/hub/kubeconfig",
            "--cluster-name=cluster1",
            format!("--addon-namespace={ns}"),
        ])
    );
    assert_eq!(manifests[2].namespace(), Some(ns));
}

#[tokio::test]
async fn the_deployment_takes_node_placement_proxy_image_and_the_last_matching_resources() {
    let manifests = render(vec![
        Arc::new(DefaultValues {
            image: DEFAULT_IMAGE.into(),
        }),
        Arc::new(AdcValues(full_config())),
    ])
    .await;
    let pod = &manifests[1].as_object()["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"], json!({"host": "ssd", "zone": "a"}));
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "node-role", "operator": "Exists", "value": "", "effect": "NoSchedule", "tolerationSeconds": 30}])
    );
    let container = &pod["containers"][0];
    assert_eq!(
        container["image"],
        json!("mirror.example.com/ocm/addon-examples:latest")
    );
    // Both `*:*:*` and the exact ID match; the template keeps the last match.
    assert_eq!(
        container["resources"],
        json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}})
    );
    assert_eq!(
        container["env"],
        json!([{"name": "HTTP_PROXY", "value": "http://proxy:3128"}, {"name": "NO_PROXY", "value": "localhost"}])
    );
}

#[tokio::test]
async fn the_registration_is_one_kube_client_with_the_default_subject() {
    let configs = KubeClientRegistration {
        agent_name: "abcde".into(),
    }
    .configurations(&cluster("cluster1"), &addon())
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&configs).unwrap(),
        json!([{"type": "kubeClient", "kubeClient": {"subject": {
            "user": "system:open-cluster-management:cluster:cluster1:addon:helloworld:agent:abcde",
            "groups": ["system:open-cluster-management:cluster:cluster1:addon:helloworld",
                       "system:open-cluster-management:addon:helloworld"]}}}])
    );
    let name = random_agent_name();
    assert_eq!(name.len(), 5);
    assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
}

fn csr(cn: &str, orgs: &[&str], requester: &str) -> CertificateSigningRequest {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    // rcgen keeps one value per attribute type: the second O goes in under its raw OID.
    for (i, org) in orgs.iter().enumerate() {
        let ty = if i == 0 {
            rcgen::DnType::OrganizationName
        } else {
            rcgen::DnType::CustomDnType(vec![2, 5, 4, 10])
        };
        params.distinguished_name.push(ty, *org);
    }
    let key = rcgen::KeyPair::generate().unwrap();
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    let mut csr = CertificateSigningRequest::default();
    csr.spec.request = k8s_openapi::ByteString(pem.into_bytes());
    csr.spec.username = Some(requester.into());
    csr
}

#[test]
fn the_approver_checks_subject_and_requester_with_an_exact_cluster_match() {
    let approver = DefaultCsrApprover {
        agent_name: "abcde".into(),
    };
    let user = "system:open-cluster-management:cluster:cluster1:addon:helloworld:agent:abcde";
    let groups = [
        "system:open-cluster-management:cluster:cluster1:addon:helloworld",
        "system:open-cluster-management:addon:helloworld",
    ];
    let agent = "system:open-cluster-management:cluster1:agent1";
    let check = |c: &CertificateSigningRequest| approver.approve(&cluster("cluster1"), &addon(), c);
    assert!(check(&csr(user, &groups, agent)));
    // Another cluster whose name starts with this one's is not this cluster.
    assert!(!check(&csr(
        user,
        &groups,
        "system:open-cluster-management:cluster10:agent1"
    )));
    assert!(!check(&csr(user, &groups, "someone-else")));
    // Wrong agent name, a missing group, a wrong group.
    assert!(!check(&csr(&user.replace("abcde", "zzzzz"), &groups, agent)));
    assert!(!check(&csr(user, &groups[..1], agent)));
    assert!(!check(&csr(user, &[groups[0], "other"], agent)));
    // Through the gRPC server the requester is the annotation.
    let mut via_grpc = csr(user, &groups, subjects::GRPC_SERVER_USER);
    assert!(!check(&via_grpc));
    via_grpc.metadata.annotations = Some([(annotations::CSR_USER.to_string(), agent.to_string())].into());
    assert!(check(&via_grpc));
    // Not a CSR at all.
    let mut garbage = csr(user, &groups, agent);
    garbage.spec.request = k8s_openapi::ByteString(b"junk".to_vec());
    assert!(!check(&garbage));
}

#[test]
fn rbac_subjects_come_from_the_kube_client_registration_without_system_authenticated() {
    let mut a = addon();
    assert!(registration_subjects(&a).is_empty());
    a.status = Some(ManagedClusterAddOnStatus {
        registrations: Some(vec![RegistrationConfig {
            type_: RegistrationConfigType::KubeClient,
            kube_client: Some(KubeClientConfig {
                subject: Some(KubeClientSubject {
                    user: Some("u".into()),
                    groups: Some(vec!["g".into(), subjects::AUTHENTICATED_GROUP.into()]),
                }),
                ..KubeClientConfig::default()
            }),
            custom_signer: None,
        }]),
        ..ManagedClusterAddOnStatus::default()
    });
    let names: Vec<(String, String)> = registration_subjects(&a)
        .into_iter()
        .map(|s| (s.kind, s.name))
        .collect();
    assert_eq!(
        names,
        [
            ("User".to_string(), "u".to_string()),
            ("Group".to_string(), "g".to_string())
        ]
    );
}
