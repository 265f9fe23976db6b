//! Acting as the hub admin for an accepted cluster (the hub controllers are not part of these
//! tests): approve the cluster's CSRs, create its namespace, RBAC (ocm-core.md §2.2) and lease,
//! and set `HubAcceptedManagedCluster` True.
//!
//! Every test gets a unique cluster name and its own agent namespace on the spoke, and removes
//! both with [`Setup::finish`], so that the tests can share real clusters.

// Test helpers outside #[test] functions: failing loudly is what a test wants.
#![allow(clippy::unwrap_used)]

use std::{path::PathBuf, time::Duration};

use k8s_openapi::api::{
    certificates::v1::CertificateSigningRequest,
    coordination::v1::{Lease, LeaseSpec},
    core::v1::{Namespace, Secret},
};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_controlplane::TestEnv;
use ocm_core::registration::agent::AgentOptions;

pub use crate::support::{eventually_within as eventually, unique};

/// A hub (with the OCM CRDs), a spoke (with the agent namespace), a bootstrap kubeconfig file and
/// a hub-kubeconfig directory.
pub struct Setup {
    pub hub: TestEnv,
    /// Kept alive for the test's duration.
    pub spoke: TestEnv,
    pub hub_client: kube::Client,
    pub spoke_client: kube::Client,
    pub dir: tempfile::TempDir,
    /// The cluster's name: the test's prefix and a unique suffix.
    pub cluster: String,
    /// The agent's namespace on the spoke (unique per test).
    pub agent_namespace: String,
}

/// Why the add-on tests skip on a hub that cannot convert add-ons between versions.
pub const NO_ADDON_CONVERSION: &str = "SKIP: the hub does not convert ManagedClusterAddOns between \
    v1alpha1 and v1beta1 (its CRD has conversion None: created by the tests on a plain cluster, not \
    by OCM's cluster-manager with its conversion webhook); the registration agent needs both";

impl Setup {
    /// Hub and spoke for a cluster named `prefix` plus a unique suffix; the bootstrap
    /// kubeconfig is minted by `ocm_core`'s hub bootstrap helper (a ServiceAccount token, as
    /// `clusteradm get token` does), which works on embedded and real hubs alike.
    pub async fn new(prefix: &str) -> Self {
        let hub = TestEnv::hub().await.unwrap();
        hub.install_ocm_crds().await.unwrap();
        let spoke = TestEnv::spoke().await.unwrap();
        let hub_client = hub.client().await.unwrap();
        let spoke_client = spoke.client().await.unwrap();
        let cluster = unique(prefix);
        let agent_namespace = format!("agent-{cluster}");
        let ns = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(agent_namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(spoke_client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (server, ca) = crate::support::server_and_ca(hub.kubeconfig_path());
        let bootstrap = ocm_core::registration::hub::bootstrap::bootstrap_kubeconfig(
            &hub_client,
            &server,
            &ca,
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
        std::fs::write(dir.path().join("bootstrap.kubeconfig"), bootstrap).unwrap();
        Self {
            hub,
            spoke,
            hub_client,
            spoke_client,
            dir,
            cluster,
            agent_namespace,
        }
    }

    /// Whether the spoke is a real cluster (named by `OCM_TEST_SPOKE_KUBECONFIG`).
    pub fn real_spoke(&self) -> bool {
        self.spoke.control_plane().is_none()
    }

    /// Removes what the test made on both clusters: the ManagedCluster, its CSRs, namespace and
    /// per-cluster RBAC on the hub, the agent namespace on the spoke. Stop the agent first.
    pub async fn finish(self) {
        use kube::api::DeleteParams;
        let c = &self.cluster;
        let delete = DeleteParams::default();
        let _ = Api::<ManagedCluster>::all(self.hub_client.clone())
            .delete(c, &delete)
            .await;
        let _ = Api::<CertificateSigningRequest>::all(self.hub_client.clone())
            .delete_collection(
                &delete,
                &ListParams::default().labels(&format!("open-cluster-management.io/cluster-name={c}")),
            )
            .await;
        let name = format!("open-cluster-management:managedcluster:{c}");
        let _ = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(self.hub_client.clone())
            .delete(&name, &delete)
            .await;
        let _ = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(self.hub_client.clone())
            .delete(&name, &delete)
            .await;
        let _ = Api::<Namespace>::all(self.hub_client.clone())
            .delete(c, &delete)
            .await;
        let _ = Api::<Namespace>::all(self.spoke_client.clone())
            .delete(&self.agent_namespace, &delete)
            .await;
    }

    /// Agent options with short periods for this setup.
    pub fn options(&self) -> AgentOptions {
        let mut o = AgentOptions::new(self.dir.path().join("bootstrap.kubeconfig"), self.hub_dir());
        o.cluster_name = Some(self.cluster.clone());
        o.agent_name = Some("agent1".into());
        o.component_namespace = self.agent_namespace.clone();
        o.cluster_healthcheck_period = Duration::from_secs(1);
        o.poll_period = Duration::from_millis(200);
        o
    }

    pub fn hub_dir(&self) -> PathBuf {
        self.dir.path().join("hub-kubeconfig")
    }

    /// The cluster's CSRs on the hub.
    pub async fn csrs(&self) -> Vec<CertificateSigningRequest> {
        crate::support::cluster_csrs(&self.hub_client, &self.cluster).await
    }

    /// The cluster's CSRs with neither Approved nor Denied.
    pub async fn pending_csrs(&self) -> Vec<CertificateSigningRequest> {
        let csrs = self.csrs().await;
        csrs.into_iter().filter(crate::support::is_pending).collect()
    }

    /// Approves every pending CSR of the cluster, as `kubectl certificate approve` does.
    pub async fn approve_pending(&self) -> usize {
        crate::support::approve_pending(&self.hub_client, &self.cluster).await
    }

    /// What the hub does on accepting the cluster: namespace, RBAC, lease, spec and condition.
    pub async fn accept(&self, lease_seconds: i32) {
        let c = &self.cluster;
        let apply = PatchParams::apply("registration-test").force();
        let label = serde_json::json!({"open-cluster-management.io/cluster-name": c});
        let ns: Api<Namespace> = Api::all(self.hub_client.clone());
        ns.patch(
            c,
            &apply,
            &Patch::Apply(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": c, "labels": label}})),
        )
        .await
        .unwrap();
        let rbac = |kind: &str| {
            kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "rbac.authorization.k8s.io",
                "v1",
                kind,
            ))
        };
        let cr: Api<kube::api::DynamicObject> = Api::all_with(self.hub_client.clone(), &rbac("ClusterRole"));
        let crb: Api<kube::api::DynamicObject> =
            Api::all_with(self.hub_client.clone(), &rbac("ClusterRoleBinding"));
        let rb: Api<kube::api::DynamicObject> =
            Api::namespaced_with(self.hub_client.clone(), c, &rbac("RoleBinding"));
        let name = format!("open-cluster-management:managedcluster:{c}");
        let groups = serde_json::json!([
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("system:open-cluster-management:{c}")},
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("open-cluster-management:{c}")},
        ]);
        cr.patch(&name, &apply, &Patch::Apply(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": label},
            "rules": [
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]},
                {"apiGroups": ["register.open-cluster-management.io"], "resources": ["managedclusters/clientcertificates"], "verbs": ["renew"]},
                {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"], "resourceNames": [c], "verbs": ["get", "list", "update", "watch"]},
                {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters/status"], "resourceNames": [c], "verbs": ["patch", "update"]},
            ]}))).await.unwrap();
        crb.patch(
            &name,
            &apply,
            &Patch::Apply(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": label},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": groups})),
        )
        .await
        .unwrap();
        let shared = "open-cluster-management:managedcluster:registration";
        cr.patch(shared, &apply, &Patch::Apply(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": shared, "labels": {"open-cluster-management.io/cluster-name": ""}},
            "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch", "update"]},
                {"apiGroups": ["addon.open-cluster-management.io"], "resources": ["managedclusteraddons"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["addon.open-cluster-management.io"], "resources": ["managedclusteraddons/status"], "verbs": ["patch", "update"]},
                {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
            ]}))).await.unwrap();
        let rb_name = format!("{name}:registration");
        rb.patch(
            &rb_name,
            &apply,
            &Patch::Apply(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": rb_name, "namespace": c, "labels": label},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": shared},
            "subjects": groups})),
        )
        .await
        .unwrap();
        let leases: Api<Lease> = Api::namespaced(self.hub_client.clone(), c);
        let lease = Lease {
            metadata: kube::api::ObjectMeta {
                name: Some("managed-cluster-lease".into()),
                labels: Some([("open-cluster-management.io/cluster-name".to_string(), c.clone())].into()),
                ..Default::default()
            },
            spec: Some(LeaseSpec::default()),
        };
        let _ = leases.create(&PostParams::default(), &lease).await;
        let clusters: Api<ManagedCluster> = Api::all(self.hub_client.clone());
        clusters
            .patch(
                c,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({
                "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": lease_seconds}})),
            )
            .await
            .unwrap();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        clusters
            .patch_status(
                c,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"status": {"conditions": [{
                "type": "HubAcceptedManagedCluster", "status": "True", "reason": "HubClusterAdminAccepted",
                "message": "Accepted by hub cluster admin", "lastTransitionTime": now}]}})),
            )
            .await
            .unwrap();
    }

    /// The hub-kubeconfig secret on the spoke, if any.
    pub async fn secret(&self) -> Option<Secret> {
        Api::<Secret>::namespaced(self.spoke_client.clone(), &self.agent_namespace)
            .get_opt("hub-kubeconfig-secret")
            .await
            .unwrap()
    }

    /// The ManagedCluster on the hub, if any.
    pub async fn cluster(&self) -> Option<ManagedCluster> {
        Api::<ManagedCluster>::all(self.hub_client.clone())
            .get_opt(&self.cluster)
            .await
            .unwrap()
    }

    /// Whether the ManagedCluster's condition `type_` is True.
    pub async fn condition_true(&self, type_: &str) -> bool {
        self.cluster().await.is_some_and(|c| {
            c.status
                .and_then(|s| s.conditions)
                .is_some_and(|cs| cs.iter().any(|x| x.type_ == type_ && x.status == "True"))
        })
    }
}

/// A certificate for `cluster`'s agent that expired in 2021.
pub fn expired_certificate(cluster: &str) -> Vec<u8> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("system:open-cluster-management:{cluster}:agent1"),
    );
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem().into_bytes()
}

/// Issues the certificate of a CSR of a custom signer (no cluster signs those): a certificate for
/// the request's key and subject from a throwaway CA, written into `status.certificate`.
pub async fn issue_custom(hub: &kube::Client, csr: &CertificateSigningRequest) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let request = std::str::from_utf8(&csr.spec.request.0).unwrap();
    let cert = rcgen::CertificateSigningRequestParams::from_pem(request)
        .unwrap()
        .signed_by(&issuer)
        .unwrap();
    let name = csr.metadata.name.clone().unwrap();
    let api = Api::<CertificateSigningRequest>::all(hub.clone());
    let mut current = api.get(&name).await.unwrap();
    current.status.get_or_insert_with(Default::default).certificate =
        Some(k8s_openapi::ByteString(cert.pem().into_bytes()));
    api.replace_status(&name, &PostParams::default(), &current)
        .await
        .unwrap();
}
