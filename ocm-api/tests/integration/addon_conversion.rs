//! Add-on conversion against the upstream examples: every v1alpha1 example survives a trip
//! through v1beta1 unchanged, and every v1beta1 example a trip through v1alpha1; plus a v1beta1
//! object that uses every field conversion touches.

use ocm_api::addon::{conversion::convert_object, v1alpha1, v1beta1};
use serde_json::{Value, json};

use crate::shared;

const V1ALPHA1: &str = "addon.open-cluster-management.io/v1alpha1";
const V1BETA1: &str = "addon.open-cluster-management.io/v1beta1";

/// Converts `object` to the other add-on version and back; `Err` names what differs.
fn round_trip(object: &Value) -> Result<Value, String> {
    let (there, back) = if object["apiVersion"] == V1ALPHA1 {
        (V1BETA1, V1ALPHA1)
    } else {
        (V1ALPHA1, V1BETA1)
    };
    let converted = convert_object(object, there).map_err(|e| format!("to {there}: {e}"))?;
    if converted["apiVersion"] != there {
        return Err(format!("to {there}: apiVersion is {}", converted["apiVersion"]));
    }
    convert_object(&converted, back).map_err(|e| format!("back to {back}: {e}"))
}

#[test]
fn every_addon_example_survives_the_other_version() {
    let Some(shared) = shared::dir("every_addon_example_survives_the_other_version") else {
        return;
    };
    let mut failures = Vec::new();
    let mut count = 0;
    for path in shared::yaml_files(&shared.join("ocm-examples")) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for input in shared::read_yaml_documents(&path) {
            let api_version = input["apiVersion"].as_str().unwrap_or_default();
            if api_version != V1ALPHA1 && api_version != V1BETA1 {
                continue;
            }
            count += 1;
            match round_trip(&input) {
                Ok(output) if output == input => {}
                Ok(output) => failures.push(format!("{name}: changed:\n  in:  {input}\n  out: {output}")),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    println!("converted {count} add-on examples there and back");
    assert!(count >= 16, "only {count} add-on examples found");
    assert!(
        failures.is_empty(),
        "{} examples changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn examples_convert_as_upstream_does() {
    let Some(shared) = shared::dir("examples_convert_as_upstream_does") else {
        return;
    };
    let examples = shared.join("ocm-examples");
    let cma =
        shared::read_yaml(&examples.join("clustermanagementaddon-installstrategy-placements-configs.yaml"));
    let beta = convert_object(&cma, V1BETA1).unwrap();
    assert_eq!(
        beta["spec"]["defaultConfigs"],
        json!([{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
            "name": "__reserved_no_default__"}])
    );
    assert_eq!(beta["spec"]["installStrategy"], cma["spec"]["installStrategy"]);
    assert!(beta["spec"].get("supportedConfigs").is_none());

    let mca = shared::read_yaml(&examples.join("managedclusteraddon-basic.yaml"));
    let beta = convert_object(&mca, V1BETA1).unwrap();
    assert_eq!(
        beta["metadata"]["annotations"],
        json!({"addon.open-cluster-management.io/v1alpha1-install-namespace": "open-cluster-management-agent-addon"})
    );
    assert_eq!(beta["spec"], json!({}));
}

/// A v1beta1 ManagedClusterAddOn with every field that conversion rewrites.
fn full_v1beta1_managed_cluster_addon() -> Value {
    json!({
        "apiVersion": V1BETA1,
        "kind": "ManagedClusterAddOn",
        "metadata": {
            "name": "helloworld",
            "namespace": "cluster1",
            "annotations": {
                "addon.open-cluster-management.io/v1alpha1-install-namespace": "hello-agent",
                "addon.open-cluster-management.io/hosting-cluster-name": "hosting1"
            }
        },
        "spec": {"configs": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
            "name": "deploy-config", "namespace": "cluster1"}]},
        "status": {
            "addOnMeta": {"displayName": "helloworld", "description": "an example"},
            "conditions": [{"type": "Available", "status": "True", "reason": "ProbeAvailable", "message": "ok",
                "lastTransitionTime": "2024-05-01T10:00:00Z", "observedGeneration": 3}],
            "configReferences": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                "lastObservedGeneration": 2,
                "desiredConfig": {"name": "deploy-config", "namespace": "cluster1", "specHash": "abc"},
                "lastAppliedConfig": {"name": "deploy-config", "namespace": "cluster1", "specHash": "abc"}}],
            "healthCheck": {"mode": "Customized"},
            "namespace": "hello-agent",
            "registrations": [
                {"type": "kubeClient", "kubeClient": {"driver": "token",
                    "subject": {"user": "system:open-cluster-management:cluster:cluster1:addon:helloworld:agent:a",
                        "groups": ["system:open-cluster-management:addon:helloworld"]}}},
                {"type": "customSigner", "customSigner": {"signerName": "example.com/signer-name",
                    "subject": {"user": "u1", "groups": ["g1"], "organizationUnits": ["o1"]}}},
                {"type": "kubeClient", "kubeClient": {"driver": "token"}}
            ],
            "relatedObjects": [{"group": "addon.open-cluster-management.io", "resource": "clustermanagementaddons",
                "name": "helloworld"}],
            "supportedConfigs": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}]
        }
    })
}

#[test]
fn full_v1beta1_managed_cluster_addon_survives_v1alpha1() {
    let beta = full_v1beta1_managed_cluster_addon();
    let typed: v1beta1::ManagedClusterAddOn = serde_json::from_value(beta.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        beta,
        "the fixture is not in canonical form"
    );

    let alpha = v1alpha1::ManagedClusterAddOn::try_from(typed.clone()).unwrap();
    let alpha_json = serde_json::to_value(&alpha).unwrap();
    assert_eq!(alpha_json["spec"]["installNamespace"], "hello-agent");
    assert_eq!(
        alpha_json["metadata"]["annotations"],
        json!({"addon.open-cluster-management.io/hosting-cluster-name": "hosting1"})
    );
    assert_eq!(alpha_json["status"]["kubeClientDriver"], "token");
    assert_eq!(
        alpha_json["status"]["registrations"],
        json!([
            {"signerName": "kubernetes.io/kube-apiserver-client",
                "subject": {"user": "system:open-cluster-management:cluster:cluster1:addon:helloworld:agent:a",
                    "groups": ["system:open-cluster-management:addon:helloworld"]}},
            {"signerName": "example.com/signer-name", "subject": {"user": "u1", "groups": ["g1"], "organizationUnit": ["o1"]}},
            {"signerName": "kubernetes.io/kube-apiserver-client"}
        ])
    );
    assert_eq!(
        alpha_json["status"]["configReferences"][0]["name"],
        "deploy-config"
    );
    assert_eq!(
        alpha_json["status"]["configReferences"][0]["namespace"],
        "cluster1"
    );

    assert_eq!(v1beta1::ManagedClusterAddOn::from(alpha), typed);
    assert_eq!(round_trip(&beta).unwrap(), beta);
}

#[test]
fn full_v1beta1_cluster_management_addon_survives_v1alpha1() {
    let beta = json!({
        "apiVersion": V1BETA1,
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": "helloworld", "annotations": {"addon.open-cluster-management.io/lifecycle": "addon-manager"}},
        "spec": {
            "addOnMeta": {"displayName": "helloworld", "description": "an example"},
            "defaultConfigs": [
                {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                    "name": "global", "namespace": "open-cluster-management"},
                {"group": "addon.open-cluster-management.io", "resource": "addontemplates", "name": "__reserved_no_default__"},
                {"resource": "configmaps", "name": "cluster-scoped-default"}
            ],
            "installStrategy": {"type": "Placements", "placements": [{
                "name": "global", "namespace": "open-cluster-management",
                "configs": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs", "name": "other"}],
                "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": "25%",
                    "mandatoryDecisionGroups": [{"groupName": "canary"}]}}
            }]}
        },
        "status": {
            "defaultConfigReferences": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                "desiredConfig": {"name": "global", "namespace": "open-cluster-management", "specHash": "h1"}}],
            "installProgressions": [{"name": "global", "namespace": "open-cluster-management",
                "conditions": [{"type": "Progressing", "status": "False", "reason": "Completed", "message": "done",
                    "lastTransitionTime": "2024-05-01T10:00:00Z"}],
                "configReferences": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                    "desiredConfig": {"name": "other", "specHash": "h2"},
                    "lastAppliedConfig": {"name": "other", "specHash": "h2"},
                    "lastKnownGoodConfig": {"name": "other", "specHash": "h2"}}]}]
        }
    });
    let typed: v1beta1::ClusterManagementAddOn = serde_json::from_value(beta.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        beta,
        "the fixture is not in canonical form"
    );

    let alpha = serde_json::to_value(v1alpha1::ClusterManagementAddOn::from(typed)).unwrap();
    assert_eq!(
        alpha["spec"]["supportedConfigs"],
        json!([
            {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                "defaultConfig": {"name": "global", "namespace": "open-cluster-management"}},
            {"group": "addon.open-cluster-management.io", "resource": "addontemplates"},
            {"resource": "configmaps", "defaultConfig": {"name": "cluster-scoped-default"}}
        ])
    );
    assert_eq!(
        alpha["status"]["defaultconfigReferences"],
        beta["status"]["defaultConfigReferences"]
    );
    assert_eq!(round_trip(&beta).unwrap(), beta);
}
