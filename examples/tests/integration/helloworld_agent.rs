//! The helloworld agent against a hub and a managed cluster (two `TestEnv`s, or the clusters of
//! `OCM_TEST_HUB_KUBECONFIG` / `OCM_TEST_SPOKE_KUBECONFIG`): the ConfigMap copy, the lease it
//! renews, the lease's hub fallback and the lease health checks.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ocm_addon_framework::lease::{AddonPodRunning, HealthCheck, LeaseUpdater, ManagedClusterHealth, Renewal};
use ocm_api::addon::v1alpha1::ManagedClusterAddOn;
use ocm_controlplane::TestEnv;
use ocm_examples::helloworld_agent::{AgentArgs, ConfigMapSync, SYNCED_LABEL, SyncOutcome, run_until};
use serde_json::json;

use crate::support::{eventually, unique};

async fn namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

async fn delete_namespace(client: &Client, name: &str) {
    let _ = Api::<Namespace>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await;
}

async fn hub_configmap(client: &Client, namespace: &str, name: &str, data: serde_json::Value) {
    let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap();
    api.patch(name, &PatchParams::apply("test").force(), &Patch::Apply(&cm))
        .await
        .unwrap();
}

fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

#[tokio::test]
async fn helloworld_agent_copies_hub_configmaps_and_renews_its_lease() {
    let hub_env = TestEnv::hub().await.unwrap();
    hub_env.install_ocm_crds().await.unwrap();
    let spoke_env = TestEnv::spoke().await.unwrap();
    let (hub, spoke) = (hub_env.client().await.unwrap(), spoke_env.client().await.unwrap());
    let cluster = unique("hw-cluster");
    let install_ns = unique("hw-addon");
    namespace(&hub, &cluster).await;
    namespace(&spoke, &install_ns).await;
    let addons = Api::<ManagedClusterAddOn>::namespaced(hub.clone(), &cluster);
    let mca: ManagedClusterAddOn = serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": cluster, "finalizers": ["test.ocm.io/hold"]},
        "spec": {},
    }))
    .unwrap();
    addons.create(&PostParams::default(), &mca).await.unwrap();
    hub_configmap(&hub, &cluster, "hello", json!({"greeting": "hello"})).await;

    let args = AgentArgs {
        hub_kubeconfig: hub_env.kubeconfig_path().to_path_buf(),
        cluster_name: Some(cluster.clone()),
        addon_namespace: install_ns.clone(),
        addon_name: "helloworld".into(),
        kubeconfig: Some(spoke_env.kubeconfig_path().to_path_buf()),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let agent = tokio::spawn(run_until(args, async {
        let _ = stopped.await;
    }));

    let copies = Api::<ConfigMap>::namespaced(spoke.clone(), &install_ns);
    let copy = eventually("the hub ConfigMap on the managed cluster", || async {
        copies.get_opt("hello").await.unwrap()
    })
    .await;
    assert_eq!(copy.data, Some(data(&[("greeting", "hello")])));
    assert_eq!(
        copy.metadata
            .labels
            .unwrap()
            .get(SYNCED_LABEL)
            .map(String::as_str),
        Some("")
    );

    let lease = eventually("the add-on lease", || async {
        Api::<Lease>::namespaced(spoke.clone(), &install_ns)
            .get_opt("helloworld")
            .await
            .unwrap()
    })
    .await;
    let spec = lease.spec.unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(60));
    assert!(spec.renew_time.is_some());

    // Changed data is copied.
    hub_configmap(&hub, &cluster, "hello", json!({"greeting": "bonjour"})).await;
    eventually("the changed data on the managed cluster", || async {
        let cm = copies.get("hello").await.unwrap();
        (cm.data == Some(data(&[("greeting", "bonjour")]))).then_some(())
    })
    .await;

    // Deleting on the hub deletes nothing on the managed cluster: once a later ConfigMap is
    // copied, the first is still there.
    Api::<ConfigMap>::namespaced(hub.clone(), &cluster)
        .delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    hub_configmap(&hub, &cluster, "second", json!({"n": "2"})).await;
    eventually("the second ConfigMap", || async {
        copies.get_opt("second").await.unwrap()
    })
    .await;
    assert!(copies.get_opt("hello").await.unwrap().is_some());

    // While the ManagedClusterAddOn is being deleted nothing is copied.
    addons
        .delete("helloworld", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the add-on marked for deletion", || async {
        addons
            .get("helloworld")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .map(|_| ())
    })
    .await;
    let sync = ConfigMapSync {
        hub: hub.clone(),
        managed: spoke.clone(),
        cluster_name: cluster.clone(),
        addon_name: "helloworld".into(),
        addon_namespace: install_ns.clone(),
    };
    let third: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "third"}, "data": {"n": "3"}})).unwrap();
    assert_eq!(sync.sync(&third).await.unwrap(), SyncOutcome::AddonDeleting);
    assert!(copies.get_opt("third").await.unwrap().is_none());

    stop.send(()).unwrap();
    agent.await.unwrap().unwrap();
    addons
        .patch(
            "helloworld",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    delete_namespace(&hub, &cluster).await;
    delete_namespace(&spoke, &install_ns).await;
}

#[tokio::test]
async fn config_map_sync_updates_only_changed_data() {
    let hub_env = TestEnv::hub().await.unwrap();
    hub_env.install_ocm_crds().await.unwrap();
    let spoke_env = TestEnv::spoke().await.unwrap();
    let (hub, spoke) = (hub_env.client().await.unwrap(), spoke_env.client().await.unwrap());
    let cluster = unique("hw-cluster");
    let install_ns = unique("hw-addon");
    namespace(&hub, &cluster).await;
    namespace(&spoke, &install_ns).await;
    let mca: ManagedClusterAddOn = serde_json::from_value(json!({
        "metadata": {"name": "helloworld", "namespace": cluster}, "spec": {},
    }))
    .unwrap();
    let sync = ConfigMapSync {
        hub: hub.clone(),
        managed: spoke.clone(),
        cluster_name: cluster.clone(),
        addon_name: "helloworld".into(),
        addon_namespace: install_ns.clone(),
    };
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "v"}})).unwrap();
    // Without the ManagedClusterAddOn the sync fails (and is retried later).
    assert!(sync.sync(&cm).await.is_err());
    Api::<ManagedClusterAddOn>::namespaced(hub.clone(), &cluster)
        .create(&PostParams::default(), &mca)
        .await
        .unwrap();
    assert_eq!(sync.sync(&cm).await.unwrap(), SyncOutcome::Created);
    assert_eq!(sync.sync(&cm).await.unwrap(), SyncOutcome::Unchanged);
    let changed: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "w"}})).unwrap();
    assert_eq!(sync.sync(&changed).await.unwrap(), SyncOutcome::Updated);
    let copy = Api::<ConfigMap>::namespaced(spoke.clone(), &install_ns)
        .get("c")
        .await
        .unwrap();
    assert_eq!(copy.data, Some(data(&[("k", "w")])));
    delete_namespace(&hub, &cluster).await;
    delete_namespace(&spoke, &install_ns).await;
}

#[tokio::test]
async fn lease_is_renewed_on_the_hub_when_the_managed_namespace_is_missing() {
    let hub_env = TestEnv::hub().await.unwrap();
    let spoke_env = TestEnv::spoke().await.unwrap();
    let (hub, spoke) = (hub_env.client().await.unwrap(), spoke_env.client().await.unwrap());
    let cluster = unique("lease-cluster");
    let missing = unique("lease-missing");
    namespace(&hub, &cluster).await;

    let alone = LeaseUpdater::new(spoke.clone(), "helloworld", &missing);
    assert!(alone.renew_once().await.unwrap_err().is_not_found());

    let updater = alone.with_hub_lease_config(hub.clone(), &cluster);
    assert_eq!(updater.renew_once().await.unwrap(), Renewal::RenewedOnHub);
    let hub_leases = Api::<Lease>::namespaced(hub.clone(), &cluster);
    let first = hub_leases.get("helloworld").await.unwrap();
    assert_eq!(first.spec.as_ref().unwrap().lease_duration_seconds, Some(60));
    assert_eq!(updater.renew_once().await.unwrap(), Renewal::RenewedOnHub);
    let second = hub_leases.get("helloworld").await.unwrap();
    assert_ne!(first.metadata.resource_version, second.metadata.resource_version);
    assert!(second.spec.unwrap().renew_time.unwrap().0 >= first.spec.unwrap().renew_time.unwrap().0);
    delete_namespace(&hub, &cluster).await;
}

#[tokio::test]
async fn lease_health_checks_skip_rounds_until_the_agent_pod_runs() {
    let spoke_env = TestEnv::spoke().await.unwrap();
    let spoke = spoke_env.client().await.unwrap();
    let ns = unique("lease-health");
    namespace(&spoke, &ns).await;

    assert!(ManagedClusterHealth::new(spoke.clone()).healthy().await);
    let pod_running: Arc<dyn HealthCheck> =
        Arc::new(AddonPodRunning::new(spoke.clone(), &ns, "app=helloworld-agent"));
    let updater = LeaseUpdater::new(spoke.clone(), "helloworld", &ns).with_health_checks([pod_running]);
    assert_eq!(updater.renew_once().await.unwrap(), Renewal::Skipped);
    let leases = Api::<Lease>::namespaced(spoke.clone(), &ns);
    assert!(leases.get_opt("helloworld").await.unwrap().is_none());

    // A pod of the agent, Running (nothing runs pods here: the test writes the status).
    let pods = Api::<Pod>::namespaced(spoke.clone(), &ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "agent", "labels": {"app": "helloworld-agent"}},
        "spec": {"containers": [{"name": "agent", "image": "example.com/agent:1"}]},
    }))
    .unwrap();
    eventually(
        "the pod created (the namespace's default ServiceAccount may come later)",
        || async { pods.create(&PostParams::default(), &pod).await.ok() },
    )
    .await;
    assert_eq!(updater.renew_once().await.unwrap(), Renewal::Skipped);
    pods.patch_status(
        "agent",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
    assert_eq!(updater.renew_once().await.unwrap(), Renewal::Renewed);
    assert_eq!(
        leases
            .get("helloworld")
            .await
            .unwrap()
            .spec
            .unwrap()
            .lease_duration_seconds,
        Some(60)
    );
    delete_namespace(&spoke, &ns).await;
}

const HELLOWORLD: &str = env!("CARGO_BIN_EXE_helloworld");
const HELLOWORLD_AGENT: &str = env!("CARGO_BIN_EXE_helloworld-agent");

#[tokio::test]
async fn helloworld_binaries_run_against_a_hub_and_a_managed_cluster_and_stop_on_sigterm() {
    use crate::support::Process;
    let hub_env = TestEnv::hub().await.unwrap();
    hub_env.install_ocm_crds().await.unwrap();
    let spoke_env = TestEnv::spoke().await.unwrap();
    let (hub, spoke) = (hub_env.client().await.unwrap(), spoke_env.client().await.unwrap());
    let cluster = unique("hw-bin");
    let install_ns = unique("hw-bin-addon");
    namespace(&hub, &cluster).await;
    namespace(&spoke, &install_ns).await;
    let mca: ManagedClusterAddOn =
        serde_json::from_value(json!({"metadata": {"name": "helloworld", "namespace": cluster}, "spec": {}}))
            .unwrap();
    Api::<ManagedClusterAddOn>::namespaced(hub.clone(), &cluster)
        .create(&PostParams::default(), &mca)
        .await
        .unwrap();
    hub_configmap(&hub, &cluster, "from-hub", json!({"k": "v"})).await;
    let dir = tempfile::tempdir().unwrap();

    let controller = Process::start(
        HELLOWORLD,
        &[format!("--kubeconfig={}", hub_env.kubeconfig_path().display())],
        &dir.path().join("helloworld.log"),
    );
    eventually("the hub controller started", || async {
        controller.assert_running();
        controller
            .output()
            .contains("helloworld hub controller started")
            .then_some(())
    })
    .await;

    let agent = Process::start(
        HELLOWORLD_AGENT,
        &[
            format!("--hub-kubeconfig={}", hub_env.kubeconfig_path().display()),
            format!("--cluster-name={cluster}"),
            format!("--addon-namespace={install_ns}"),
            format!("--kubeconfig={}", spoke_env.kubeconfig_path().display()),
        ],
        &dir.path().join("helloworld-agent.log"),
    );
    let copies = Api::<ConfigMap>::namespaced(spoke.clone(), &install_ns);
    eventually("the agent's copy of the hub ConfigMap", || async {
        agent.assert_running();
        copies.get_opt("from-hub").await.unwrap()
    })
    .await;
    controller.assert_running();
    assert!(agent.terminate().await.success());
    assert!(controller.terminate().await.success());
    delete_namespace(&hub, &cluster).await;
    delete_namespace(&spoke, &install_ns).await;
}
