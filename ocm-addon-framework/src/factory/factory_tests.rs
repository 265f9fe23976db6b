//! Tests of the factory: value precedence, built-ins, skipped files, config GVR validation and
//! CRD description trimming.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use serde_json::json;

use super::*;

fn cluster(name: &str) -> ManagedCluster {
    let mut c = ManagedCluster::default();
    c.metadata.name = Some(name.to_string());
    c
}

fn addon(name: &str, annotations: &[(&str, &str)]) -> ManagedClusterAddOn {
    let mut a = ManagedClusterAddOn::default();
    a.metadata.name = Some(name.to_string());
    a.metadata.namespace = Some("cluster1".to_string());
    if !annotations.is_empty() {
        a.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
        );
    }
    a
}

const VALUES_CM: &str = "kind: ConfigMap
apiVersion: v1
metadata:
  name: values
  namespace: {{ .AddonInstallNamespace }}
data:
  cluster: {{ .ClusterName }}
  mode: {{ .InstallMode }}
  hub: \"{{ .HubKubeConfigSecret }}\"
  managed: {{ .ManagedKubeConfigSecret }}
  image: {{ .Image }}
  nested: {{ .Global.A }}-{{ .Global.B }}
";

fn data(manifest: &Manifest) -> serde_json::Map<String, Value> {
    manifest.as_object()["data"].as_object().unwrap().clone()
}

struct FixedNamespace(&'static str);

#[async_trait]
impl InstallNamespace for FixedNamespace {
    async fn install_namespace(&self, _addon: &ManagedClusterAddOn) -> Result<String, AddonError> {
        Ok(self.0.to_string())
    }
}

#[tokio::test]
async fn values_are_defaults_then_sources_then_builtins_deep_merged() {
    let first = |_: &ManagedCluster, _: &ManagedClusterAddOn| -> Result<Values, AddonError> {
        Ok(
            json!({"Image": "first", "Global": {"A": "a1", "B": "b1"}, "ClusterName": "nope",
                  "ManagedKubeConfigSecret": "custom"})
            .as_object()
            .cloned()
            .unwrap(),
        )
    };
    let second = |_: &ManagedCluster, _: &ManagedClusterAddOn| -> Result<Values, AddonError> {
        Ok(json!({"Image": "second", "Global": {"B": "b2"}})
            .as_object()
            .cloned()
            .unwrap())
    };
    let factory = AgentAddonFactory::new("test", [("cm.yaml", VALUES_CM)])
        .with_values_fns(vec![Arc::new(first), Arc::new(second)]);
    let manifests = factory
        .build_template_agent_addon()
        .unwrap()
        .manifests(&cluster("cluster1"), &addon("test", &[]))
        .await
        .unwrap();
    assert_eq!(manifests.len(), 1);
    assert_eq!(
        Value::Object(data(&manifests[0])),
        json!({
            "cluster": "cluster1",
            "mode": "Default",
            "hub": "",
            "managed": "custom",
            "image": "second",
            "nested": "a1-b2",
        })
    );
    assert_eq!(manifests[0].namespace(), Some(ADDON_DEFAULT_INSTALL_NAMESPACE));
}

#[tokio::test]
async fn install_namespace_annotation_is_overridden_by_a_non_empty_option() {
    let build = |ns: Option<&'static str>| {
        let mut f = AgentAddonFactory::new("test", [("cm.yaml", VALUES_CM)])
            .with_agent_registration_option(RegistrationOption::default());
        if let Some(ns) = ns {
            f = f.with_agent_install_namespace(Arc::new(FixedNamespace(ns)));
        }
        f.build_template_agent_addon().unwrap()
    };
    let a = addon(
        "test",
        &[
            (annotations::V1ALPHA1_INSTALL_NAMESPACE, "from-annotation"),
            (annotations::HOSTING_CLUSTER_NAME, "hosting1"),
        ],
    );
    let values = build(None).values(&cluster("c"), &a).await.unwrap();
    assert_eq!(values["AddonInstallNamespace"], json!("from-annotation"));
    assert_eq!(values["HubKubeConfigSecret"], json!("test-hub-kubeconfig"));
    assert_eq!(values["InstallMode"], json!("Hosted"));
    let values = build(Some("")).values(&cluster("c"), &a).await.unwrap();
    assert_eq!(values["AddonInstallNamespace"], json!("from-annotation"));
    let values = build(Some("from-option"))
        .values(&cluster("c"), &a)
        .await
        .unwrap();
    assert_eq!(values["AddonInstallNamespace"], json!("from-option"));
}

#[tokio::test]
async fn files_without_kind_and_empty_files_are_skipped_in_name_order() {
    let factory = AgentAddonFactory::new(
        "test",
        [
            (
                "b.yaml",
                "kind: ServiceAccount\napiVersion: v1\nmetadata:\n  name: b\n",
            ),
            (
                "a.yaml",
                "kind: ServiceAccount\napiVersion: v1\nmetadata:\n  name: a\n",
            ),
            ("empty.yaml", ""),
            (
                "conditional.yaml",
                "{{ if .Enabled }}kind: ServiceAccount\napiVersion: v1\nmetadata:\n  name: c\n{{ end }}",
            ),
            ("notes.txt", "just: text\n"),
        ],
    );
    let names: Vec<String> = factory
        .build_template_agent_addon()
        .unwrap()
        .manifests(&cluster("c"), &addon("test", &[]))
        .await
        .unwrap()
        .iter()
        .map(|m| m.name().unwrap().to_string())
        .collect();
    assert_eq!(names, ["a", "b"]);
}

#[tokio::test]
async fn a_render_error_names_the_file() {
    let addon_obj = AgentAddonFactory::new(
        "test",
        [("bad.yaml", "kind: X\napiVersion: v1\nn: {{ index .L 5 }}\n")],
    )
    .build_template_agent_addon()
    .unwrap();
    let err = addon_obj
        .manifests(&cluster("c"), &addon("test", &[]))
        .await
        .unwrap_err();
    assert!(matches!(err, AddonError::RenderManifests { .. }), "{err}");
    assert!(err.to_string().contains("bad.yaml"), "{err}");
}

#[test]
fn build_refuses_no_files_bad_templates_and_bad_config_gvrs() {
    let none: [(&str, &str); 0] = [];
    assert!(matches!(
        AgentAddonFactory::new("t", none).build_template_agent_addon(),
        Err(FactoryError::NoTemplateFiles { .. })
    ));
    assert!(matches!(
        AgentAddonFactory::new("t", [("x", "{{ if }}")]).build_template_agent_addon(),
        Err(FactoryError::ParseTemplate { .. })
    ));
    let ok = [("x", "kind: A\n")];
    let gvr = |g: &str, v: &str, r: &str| ConfigGvr {
        group: g.into(),
        version: v.into(),
        resource: r.into(),
    };
    for bad in [
        vec![ConfigGvr::default()],
        vec![gvr("g", "", "r")],
        vec![gvr("g", "v1", "")],
        vec![addon_deployment_config_gvr(), addon_deployment_config_gvr()],
    ] {
        assert!(matches!(
            AgentAddonFactory::new("t", ok)
                .with_config_gvrs(bad)
                .build_template_agent_addon(),
            Err(FactoryError::InvalidConfigGvr { .. })
        ));
    }
    let built = AgentAddonFactory::new("t", ok)
        .with_config_gvrs([gvr("", "v1", "configmaps"), addon_deployment_config_gvr()])
        .with_agent_hosted_mode_enabled(true)
        .with_config_check_enabled(true)
        .with_agent_health_prober(HealthProber::Lease)
        .build_template_agent_addon()
        .unwrap();
    let options = built.options();
    assert_eq!(options.addon_name, "t");
    assert_eq!(options.supported_configs.len(), 2);
    assert!(options.hosted_mode.is_some());
    assert!(options.config_check_enabled);
    assert!(matches!(options.health_prober, Some(HealthProber::Lease)));
}

#[tokio::test]
async fn crd_descriptions_are_trimmed_but_description_properties_stay() {
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        description: top
        type: object
        properties:
          description:
            description: a field called description
            type: string
          list:
            type: array
            items:
              description: item
              type: object
";
    let built = AgentAddonFactory::new("t", [("crd.yaml", crd)])
        .with_trim_crd_description()
        .build_template_agent_addon()
        .unwrap();
    let manifests = built.manifests(&cluster("c"), &addon("t", &[])).await.unwrap();
    let schema = &manifests[0].as_object()["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(
        schema,
        &json!({
            "type": "object",
            "properties": {
                "description": {"type": "string"},
                "list": {"type": "array", "items": {"type": "object"}},
            }
        })
    );
}

#[test]
fn files_in_dir_reads_every_file_relative_and_sorted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("b.yaml"), "b").unwrap();
    std::fs::write(dir.path().join("sub/a.yaml"), "a").unwrap();
    let files = files_in_dir(dir.path()).unwrap();
    assert_eq!(
        files,
        [
            ("b.yaml".to_string(), "b".to_string()),
            ("sub/a.yaml".to_string(), "a".to_string())
        ]
    );
    assert!(files_in_dir(&dir.path().join("missing")).is_err());
}
