//! Tests of the helloworld hub side: the templates rendered by the factory with every kind of
//! value, the registration and the hub Role (the approver and the RBAC builder are tested in
//! `ocm_addon_framework::registration`).

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

use ocm_addon_framework::agent::{AgentAddon, RegistrationConfigurations};
use ocm_addon_framework::factory::{Values, ValuesFn};
use ocm_api::addon::v1beta1::AddOnDeploymentConfig;
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
    let configs = KubeClientSignerConfigurations::new(ADDON_NAME, "abcde")
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

#[test]
fn the_hub_role_reads_config_maps_and_the_addon() {
    let role = hub_role();
    assert_eq!(role.metadata.name.as_deref(), Some(HUB_ROLE));
    assert_eq!(
        serde_json::to_value(&role.rules).unwrap(),
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["addon.open-cluster-management.io"], "resources": ["managedclusteraddons"],
             "verbs": ["get", "list", "watch"]}
        ])
    );
}
