//! `kubectl version`, `api-resources`, `api-versions` and `explain`: what kubectl learns from discovery
//! and `/openapi/v3`.

use super::*;

#[tokio::test]
async fn kubectl_discovery_version_api_resources() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_discovery_version_api_resources").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();

    let version: Value = serde_json::from_str(&k.ok(&["version", "-o", "json"]).await).unwrap();
    let server = &version["serverVersion"];
    assert_eq!(server["major"], "1", "{version}");
    assert!(
        server["gitVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("v1.")),
        "{version}"
    );

    let table = Table::parse(&k.ok(&["api-resources"]).await);
    assert_eq!(
        table.columns,
        columns(&["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"])
    );
    for (name, short, api_version, namespaced, kind) in [
        ("configmaps", "cm", "v1", "true", "ConfigMap"),
        ("namespaces", "ns", "v1", "false", "Namespace"),
        (
            "customresourcedefinitions",
            "crd,crds",
            "apiextensions.k8s.io/v1",
            "false",
            "CustomResourceDefinition",
        ),
        ("leases", "", "coordination.k8s.io/v1", "true", "Lease"),
        (
            "managedclusters",
            "mcl,mcls",
            "cluster.open-cluster-management.io/v1",
            "false",
            "ManagedCluster",
        ),
        (
            "placements",
            "",
            "cluster.open-cluster-management.io/v1beta1",
            "true",
            "Placement",
        ),
        (
            "manifestworks",
            "",
            "work.open-cluster-management.io/v1",
            "true",
            "ManifestWork",
        ),
        (
            "manifestworkreplicasets",
            "mwrs",
            "work.open-cluster-management.io/v1alpha1",
            "true",
            "ManifestWorkReplicaSet",
        ),
        (
            "managedclusteraddons",
            "mca,mcas",
            "addon.open-cluster-management.io/v1beta1",
            "true",
            "ManagedClusterAddOn",
        ),
    ] {
        let row = table
            .rows
            .iter()
            .find(|r| r[0] == name && r[2] == api_version)
            .unwrap_or_else(|| panic!("no api-resources row for {name} {api_version}: {table:?}"));
        assert_eq!(
            row,
            &columns(&[name, short, api_version, namespaced, kind]),
            "api-resources row of {name}"
        );
    }

    let names = k
        .ok(&[
            "api-resources",
            "--api-group=cluster.open-cluster-management.io",
            "-o",
            "name",
        ])
        .await;
    let names: Vec<&str> = names.lines().collect();
    for want in [
        "managedclusters.cluster.open-cluster-management.io",
        "managedclustersets.cluster.open-cluster-management.io",
        "placements.cluster.open-cluster-management.io",
        "placementdecisions.cluster.open-cluster-management.io",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let namespaced = k.ok(&["api-resources", "--namespaced=false", "-o", "name"]).await;
    assert!(namespaced.lines().any(|l| l == "namespaces"), "{namespaced}");
    assert!(!namespaced.lines().any(|l| l == "configmaps"), "{namespaced}");

    let versions = k.ok(&["api-versions"]).await;
    for want in [
        "v1",
        "apps/v1",
        "cluster.open-cluster-management.io/v1",
        "cluster.open-cluster-management.io/v1beta2",
        "work.open-cluster-management.io/v1",
        "addon.open-cluster-management.io/v1alpha1",
    ] {
        assert!(
            versions.lines().any(|l| l == want),
            "{want} missing from api-versions:\n{versions}"
        );
    }
}

/// `kubectl explain` reads `/openapi/v3` (CRD kinds from their schemas, built-in kinds from
/// `/openapi/v3/api/v1` etc.).
#[tokio::test]
async fn kubectl_explain() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_explain").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    if !k.openapi_v3 {
        // kubectl explain reads /openapi/v3 (and falls back to /openapi/v2); without either it
        // reports the 404 of the document it asked for.
        let err = k.fails(&["explain", "managedclusters.spec"]).await;
        assert!(
            err.contains("the server could not find the requested resource"),
            "{err}"
        );
        eprintln!("note (kubectl_explain): /openapi/v3 is not served yet; only the failure was checked");
        return;
    }
    let out = k.ok(&["explain", "managedclusters.spec"]).await;
    assert!(
        out.contains("GROUP:      cluster.open-cluster-management.io"),
        "{out}"
    );
    assert!(out.contains("KIND:       ManagedCluster"), "{out}");
    assert!(out.contains("hubAcceptsClient\t<boolean>"), "{out}");
    let out = k.ok(&["explain", "placements.spec.numberOfClusters"]).await;
    assert!(out.contains("<integer>"), "{out}");
    // Built-in kinds need their schemas in /openapi/v3/api/v1 (from k8s-openapi).
    let out = k.ok(&["explain", "configmaps.data"]).await;
    assert!(out.contains("KIND:       ConfigMap"), "{out}");
    assert!(out.contains("FIELD: data <map[string]string>"), "{out}");
}
