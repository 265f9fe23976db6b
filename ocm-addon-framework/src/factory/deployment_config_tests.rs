//! Tests of the AddOnDeploymentConfig values, image override and install namespace.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Mutex;

use ocm_api::addon::v1beta1::{
    AddOnDeploymentConfigSpec, ConfigReference, ConfigSpecHash, CustomizedVariable,
    ManagedClusterAddOnStatus, NodePlacement, ProxyConfig,
};

use super::*;

fn mirror(source: Option<&str>, mirror: &str) -> ImageMirror {
    ImageMirror {
        mirror: mirror.to_string(),
        source: source.map(str::to_string),
    }
}

#[test]
fn override_image_follows_upstreams_rules() {
    let image = "quay.io/open-cluster-management/addon-examples:latest";
    assert_eq!(override_image(&[], image), image);
    // Source prefix replaced by the mirror, trailing slashes trimmed.
    assert_eq!(
        override_image(
            &[mirror(
                Some("quay.io/open-cluster-management/"),
                "example.io/ocm/"
            )],
            image
        ),
        "example.io/ocm/addon-examples:latest"
    );
    // Empty source: the last segment under the mirror; empty mirror too: the segment alone.
    assert_eq!(
        override_image(&[mirror(None, "mirror.io/x")], image),
        "mirror.io/x/addon-examples:latest"
    );
    assert_eq!(
        override_image(&[mirror(Some(""), "")], image),
        "addon-examples:latest"
    );
    // Not matching: unchanged.
    assert_eq!(override_image(&[mirror(Some("docker.io"), "m.io")], image), image);
    // Each rule is applied to the original image; the last one that changes it wins.
    assert_eq!(
        override_image(
            &[
                mirror(Some("quay.io"), "first.io"),
                mirror(Some("quay.io/open-cluster-management"), "second.io"),
                mirror(Some("docker.io"), "third.io"),
            ],
            image
        ),
        "second.io/addon-examples:latest"
    );
}

fn requirement(id: &str, cpu: Option<&str>) -> ContainerResourceRequirements {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    ContainerResourceRequirements {
        container_id: id.to_string(),
        resources: ocm_api::meta::ResourceRequirements {
            requests: cpu.map(|c| [("cpu".to_string(), Quantity(c.to_string()))].into()),
            limits: Some([("memory".to_string(), Quantity("1Gi".to_string()))].into()),
            claims: None,
        },
    }
}

#[test]
fn container_ids_become_anchored_regexes_with_stars_as_dot_plus() {
    let r = regex_resource_requirements(&[
        requirement("deployments:helloworld-agent:helloworld-agent", Some("100m")),
        requirement("*:*:*", None),
    ])
    .unwrap();
    assert_eq!(
        r[0].container_id_regex,
        "^deployments:helloworld-agent:helloworld-agent$"
    );
    assert_eq!(r[0].requests["cpu"], "100m");
    assert_eq!(r[0].limits["memory"], "1Gi");
    assert_eq!(r[1].container_id_regex, "^.+:.+:.+$");
    assert!(r[1].requests.is_empty());
    assert!(matches!(
        regex_resource_requirements(&[requirement("deployments:x", None)]),
        Err(FactoryError::InvalidContainerId { .. })
    ));
}

fn adc(spec: AddOnDeploymentConfigSpec) -> AddOnDeploymentConfig {
    AddOnDeploymentConfig::new("global", spec)
}

fn full_spec() -> AddOnDeploymentConfigSpec {
    AddOnDeploymentConfigSpec {
        agent_install_namespace: Some("from-adc".into()),
        customized_variables: Some(vec![
            CustomizedVariable {
                name: "LOG_LEVEL".into(),
                value: Some("4".into()),
            },
            CustomizedVariable {
                name: "EMPTY".into(),
                value: None,
            },
        ]),
        node_placement: Some(NodePlacement {
            node_selector: Some([("host".to_string(), "ssd".to_string())].into()),
            tolerations: Some(vec![ocm_api::meta::Toleration {
                key: Some("node-role".into()),
                operator: Some("Exists".into()),
                effect: Some("NoSchedule".into()),
                toleration_seconds: None,
                value: None,
            }]),
        }),
        proxy_config: Some(ProxyConfig {
            ca_bundle: Some(k8s_openapi::ByteString(b"CA".to_vec())),
            http_proxy: Some("http://proxy".into()),
            https_proxy: None,
            no_proxy: Some("localhost".into()),
        }),
        registries: Some(vec![mirror(
            Some("quay.io/open-cluster-management"),
            "example.io",
        )]),
        resource_requirements: Some(vec![requirement("deployments:a:b", Some("1"))]),
    }
}

#[test]
fn template_style_values_use_go_field_names() {
    let values = deployment_config_values(&adc(full_spec())).unwrap();
    assert_eq!(
        Value::Object(values),
        json!({
            "LOG_LEVEL": "4",
            "EMPTY": "",
            "NodeSelector": {"host": "ssd"},
            "Tolerations": [{"Key": "node-role", "Operator": "Exists", "Value": "", "Effect": "NoSchedule",
                             "TolerationSeconds": null}],
            "HTTPProxy": "http://proxy",
            "NoProxy": "localhost",
            "ProxyCABundle": "CA",
            "ResourceRequirements": [{"ContainerIDRegex": "^deployments:a:b$",
                                      "Resources": {"Requests": {"cpu": "1"}, "Limits": {"memory": "1Gi"}}}],
        })
    );
    assert!(
        deployment_config_values(&adc(AddOnDeploymentConfigSpec::default()))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn helm_style_values_are_nested_under_global() {
    let config = adc(full_spec());
    assert_eq!(
        Value::Object(node_placement_values(&config).unwrap()),
        json!({"tolerations": [{"key": "node-role", "operator": "Exists", "effect": "NoSchedule"}],
               "global": {"nodeSelector": {"host": "ssd"}}})
    );
    assert_eq!(
        Value::Object(proxy_config_values(&config).unwrap()),
        json!({"global": {"proxyConfig": {"HTTP_PROXY": "http://proxy", "NO_PROXY": "localhost", "PROXY_CA_BUNDLE": "CA"}}})
    );
    let res = resource_requirements_values(&config).unwrap();
    assert_eq!(
        res["global"]["resourceRequirements"][0]["containerIDRegex"],
        json!("^deployments:a:b$")
    );
    assert_eq!(
        res["global"]["resourceRequirements"][0]["resources"],
        json!({"limits": {"memory": "1Gi"}, "requests": {"cpu": "1"}})
    );
    // Only a no-proxy setting: no proxy values at all.
    let mut spec = full_spec();
    spec.proxy_config = Some(ProxyConfig {
        no_proxy: Some("x".into()),
        ..ProxyConfig::default()
    });
    assert!(proxy_config_values(&adc(spec)).unwrap().is_empty());
    assert!(
        node_placement_values(&adc(AddOnDeploymentConfigSpec::default()))
            .unwrap()
            .is_empty()
    );
}

/// A getter answering from a list, recording what was asked.
#[derive(Default)]
struct FakeGetter {
    configs: Vec<(String, String, AddOnDeploymentConfig)>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl DeploymentConfigGetter for FakeGetter {
    async fn get(&self, namespace: &str, name: &str) -> Result<AddOnDeploymentConfig, kube::Error> {
        self.asked.lock().unwrap().push(format!("{namespace}/{name}"));
        self.configs
            .iter()
            .find(|(ns, n, _)| ns == namespace && n == name)
            .map(|(_, _, c)| c.clone())
            .ok_or_else(|| {
                kube::Error::Api(
                    kube::core::Status::failure("not found", "NotFound")
                        .with_code(404)
                        .boxed(),
                )
            })
    }
}

fn addon_with_reference(spec_hash: Option<&str>) -> ManagedClusterAddOn {
    let mut addon = ManagedClusterAddOn::default();
    addon.metadata.name = Some("helloworld".into());
    addon.status = Some(ManagedClusterAddOnStatus {
        config_references: Some(vec![
            ConfigReference {
                group: Some("".into()),
                resource: "configmaps".into(),
                desired_config: Some(ConfigSpecHash {
                    name: "cm".into(),
                    namespace: Some("ns".into()),
                    spec_hash: Some("h".into()),
                }),
                ..ConfigReference::default()
            },
            ConfigReference {
                group: Some(ADDON_GROUP.into()),
                resource: ADC_RESOURCE.into(),
                desired_config: Some(ConfigSpecHash {
                    name: "global".into(),
                    namespace: Some("open-cluster-management".into()),
                    spec_hash: spec_hash.map(str::to_string),
                }),
                ..ConfigReference::default()
            },
        ]),
        ..ManagedClusterAddOnStatus::default()
    });
    addon
}

fn getter() -> Arc<FakeGetter> {
    Arc::new(FakeGetter {
        configs: vec![(
            "open-cluster-management".into(),
            "global".into(),
            adc(full_spec()),
        )],
        ..FakeGetter::default()
    })
}

#[tokio::test]
async fn the_desired_config_is_read_only_once_its_hash_is_known() {
    let g = getter();
    assert!(
        desired_deployment_config(&ManagedClusterAddOn::default(), g.as_ref())
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        desired_deployment_config(&addon_with_reference(Some("")), g.as_ref()).await,
        Err(FactoryError::DesiredSpecHashEmpty { .. })
    ));
    assert!(g.asked.lock().unwrap().is_empty());
    let config = desired_deployment_config(&addon_with_reference(Some("abc")), g.as_ref())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(config.spec.agent_install_namespace.as_deref(), Some("from-adc"));
    assert_eq!(*g.asked.lock().unwrap(), ["open-cluster-management/global"]);
    let missing = Arc::new(FakeGetter::default());
    assert!(matches!(
        desired_deployment_config(&addon_with_reference(Some("abc")), missing.as_ref()).await,
        Err(FactoryError::GetDeploymentConfig { .. })
    ));
}

#[tokio::test]
async fn deployment_config_values_merge_the_to_values_functions_in_order() {
    let source = DeploymentConfigValues::new(
        getter(),
        vec![
            Arc::new(deployment_config_values),
            image_override_values("Image", "quay.io/open-cluster-management/addon-examples:latest"),
        ],
    );
    let cluster = ManagedCluster::default();
    let values = source
        .values(&cluster, &addon_with_reference(Some("h")))
        .await
        .unwrap();
    assert_eq!(values["Image"], json!("example.io/addon-examples:latest"));
    assert_eq!(values["LOG_LEVEL"], json!("4"));
    assert!(
        source
            .values(&cluster, &ManagedClusterAddOn::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        source
            .values(&cluster, &addon_with_reference(None))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn agent_image_prefers_the_config_registries_then_the_cluster_annotation() {
    let image = "quay.io/open-cluster-management/addon-examples:latest";
    let source = AgentImageValues::new(getter(), "global.imageOverrides.helloWorld", image);
    let mut cluster = ManagedCluster::default();
    cluster.metadata.annotations = Some(
        [(
            annotations::IMAGE_REGISTRIES.to_string(),
            r#"{"registries":[{"mirror":"cluster.io/m","source":"quay.io"}]}"#.to_string(),
        )]
        .into(),
    );
    let from_adc = source
        .values(&cluster, &addon_with_reference(Some("h")))
        .await
        .unwrap();
    assert_eq!(
        from_adc["global"]["imageOverrides"]["helloWorld"],
        json!("example.io/addon-examples:latest")
    );
    let from_cluster = source
        .values(&cluster, &ManagedClusterAddOn::default())
        .await
        .unwrap();
    assert_eq!(
        from_cluster["global"]["imageOverrides"]["helloWorld"],
        json!("cluster.io/m/open-cluster-management/addon-examples:latest")
    );
    let plain = source
        .values(&ManagedCluster::default(), &ManagedClusterAddOn::default())
        .await
        .unwrap();
    assert_eq!(plain["global"]["imageOverrides"]["helloWorld"], json!(image));
}

#[tokio::test]
async fn install_namespace_comes_from_the_desired_config() {
    let option = InstallNamespaceFromDeploymentConfig::new(getter());
    assert_eq!(
        option
            .install_namespace(&addon_with_reference(Some("h")))
            .await
            .unwrap(),
        "from-adc"
    );
    assert_eq!(
        option
            .install_namespace(&ManagedClusterAddOn::default())
            .await
            .unwrap(),
        ""
    );
    assert!(
        option
            .install_namespace(&addon_with_reference(None))
            .await
            .is_err()
    );
}
