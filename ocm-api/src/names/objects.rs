//! Names and name formats of objects OCM components create or look up: ManifestWorks,
//! AppliedManifestWorks, PlacementDecisions, cluster sets, RBAC objects, agent deployments and
//! service accounts, and the reserved ClusterClaims.

/// The prefix of an add-on's deploy works on its managed cluster: `addon-<addon>-deploy`.
#[must_use]
pub fn addon_deploy_work_prefix(addon: &str) -> String {
    format!("addon-{addon}-deploy")
}

/// The `index`th deploy work of an add-on on its managed cluster: `addon-<addon>-deploy-<index>`.
#[must_use]
pub fn addon_deploy_work_name(addon: &str, index: usize) -> String {
    format!("addon-{addon}-deploy-{index}")
}

/// The prefix of an add-on's deploy works on the hosting cluster of `cluster`:
/// `addon-<addon>-deploy-hosting-<cluster>`.
#[must_use]
pub fn addon_hosting_deploy_work_prefix(addon: &str, cluster: &str) -> String {
    format!("addon-{addon}-deploy-hosting-{cluster}")
}

/// The `index`th deploy work of an add-on on the hosting cluster of `cluster`:
/// `addon-<addon>-deploy-hosting-<cluster>-<index>`.
#[must_use]
pub fn addon_hosting_deploy_work_name(addon: &str, cluster: &str, index: usize) -> String {
    format!("addon-{addon}-deploy-hosting-{cluster}-{index}")
}

/// The work that runs an add-on's pre-delete hooks on its managed cluster: `addon-<addon>-pre-delete`
/// (also the prefix of every hook work of the add-on).
#[must_use]
pub fn addon_pre_delete_work_name(addon: &str) -> String {
    format!("addon-{addon}-pre-delete")
}

/// The work that runs an add-on's pre-delete hooks on the hosting cluster of `cluster`:
/// `addon-<addon>-pre-delete-hosting-<cluster>`.
#[must_use]
pub fn addon_hosting_pre_delete_work_name(addon: &str, cluster: &str) -> String {
    format!("addon-{addon}-pre-delete-hosting-{cluster}")
}

/// The AppliedManifestWork the work agent keeps for a ManifestWork: `<hub hash>-<work>`.
#[must_use]
pub fn applied_manifest_work_name(hub_hash: &str, work: &str) -> String {
    format!("{hub_hash}-{work}")
}

/// The field manager the work agent uses for server-side apply by default.
pub const WORK_FIELD_MANAGER: &str = "work-agent";

/// The `n`th PlacementDecision of a placement (`n` starts at 1): `<placement>-decision-<n>`.
#[must_use]
pub fn placement_decision_name(placement: &str, n: usize) -> String {
    format!("{placement}-decision-{n}")
}

/// The most decisions one PlacementDecision holds.
pub const MAX_DECISIONS_PER_PLACEMENT_DECISION: usize = 100;

/// The cluster set new clusters join when they have no cluster-set label (gate `DefaultClusterSet`).
pub const DEFAULT_CLUSTER_SET: &str = "default";
/// The cluster set that selects every cluster (gate `DefaultClusterSet`).
pub const GLOBAL_CLUSTER_SET: &str = "global";

/// The ClusterRole (and ClusterRoleBinding) of one managed cluster's agents:
/// `open-cluster-management:managedcluster:<cluster>`.
#[must_use]
pub fn managed_cluster_cluster_role(cluster: &str) -> String {
    format!("open-cluster-management:managedcluster:{cluster}")
}

/// The RoleBinding, in the cluster namespace, granting the registration agent its rights:
/// `open-cluster-management:managedcluster:<cluster>:registration`.
#[must_use]
pub fn managed_cluster_registration_role_binding(cluster: &str) -> String {
    format!("open-cluster-management:managedcluster:{cluster}:registration")
}

/// The RoleBinding, in the cluster namespace, granting the work agent its rights:
/// `open-cluster-management:managedcluster:<cluster>:work`.
#[must_use]
pub fn managed_cluster_work_role_binding(cluster: &str) -> String {
    format!("open-cluster-management:managedcluster:{cluster}:work")
}

/// The ClusterRole shared by every cluster's registration RoleBinding.
pub const REGISTRATION_CLUSTER_ROLE: &str = "open-cluster-management:managedcluster:registration";
/// The ClusterRole shared by every cluster's work RoleBinding.
pub const WORK_CLUSTER_ROLE: &str = "open-cluster-management:managedcluster:work";

/// The aggregated ClusterRole of a klusterlet's work agent:
/// `open-cluster-management:<klusterlet>-work:aggregate`.
#[must_use]
pub fn klusterlet_work_aggregate_cluster_role(klusterlet: &str) -> String {
    format!("open-cluster-management:{klusterlet}-work:aggregate")
}

/// The registration agent deployment of a klusterlet: `<klusterlet>-registration-agent`.
#[must_use]
pub fn klusterlet_registration_agent(klusterlet: &str) -> String {
    format!("{klusterlet}-registration-agent")
}

/// The work agent deployment of a klusterlet: `<klusterlet>-work-agent`.
#[must_use]
pub fn klusterlet_work_agent(klusterlet: &str) -> String {
    format!("{klusterlet}-work-agent")
}

/// The single agent deployment of a klusterlet in singleton mode: `<klusterlet>-agent`.
#[must_use]
pub fn klusterlet_singleton_agent(klusterlet: &str) -> String {
    format!("{klusterlet}-agent")
}

/// The service account of a klusterlet's work agent: `<klusterlet>-work-sa`.
#[must_use]
pub fn klusterlet_work_service_account(klusterlet: &str) -> String {
    format!("{klusterlet}-work-sa")
}

/// The work agent's service account of the default klusterlet (`klusterlet`).
pub const KLUSTERLET_WORK_SERVICE_ACCOUNT: &str = "klusterlet-work-sa";

/// The hub service account an add-on agent authenticates as (token driver), in the cluster
/// namespace; also the agent name template add-ons use: `<addon>-agent`.
#[must_use]
pub fn addon_agent_service_account(addon: &str) -> String {
    format!("{addon}-agent")
}

/// The Role and RoleBinding letting an add-on agent request tokens: `<addon>-token-role`.
#[must_use]
pub fn addon_token_role(addon: &str) -> String {
    format!("{addon}-token-role")
}

/// The RoleBinding granting a template add-on's agent its hub permissions:
/// `open-cluster-management:<addon>:<role kind in lower case>:agent`.
#[must_use]
pub fn template_addon_role_binding(addon: &str, role_kind: &str) -> String {
    format!(
        "open-cluster-management:{addon}:{}:agent",
        role_kind.to_lowercase()
    )
}

/// The reserved ClusterClaim with the cluster's unique id.
pub const CLAIM_ID: &str = "id.k8s.io";
/// The reserved ClusterClaim with the cluster's Kubernetes version.
pub const CLAIM_KUBE_VERSION: &str = "kubeversion.open-cluster-management.io";
/// The reserved ClusterClaim with the cluster's platform.
pub const CLAIM_PLATFORM: &str = "platform.open-cluster-management.io";
/// The reserved ClusterClaim with the cluster's product.
pub const CLAIM_PRODUCT: &str = "product.open-cluster-management.io";
/// The reserved ClusterClaims, which are always reported and never truncated.
pub const RESERVED_CLUSTER_CLAIMS: [&str; 4] = [CLAIM_ID, CLAIM_KUBE_VERSION, CLAIM_PLATFORM, CLAIM_PRODUCT];

/// The service of the hub's registration webhooks.
pub const REGISTRATION_WEBHOOK_SERVICE: &str = "cluster-manager-registration-webhook";
/// The service of the hub's work webhooks.
pub const WORK_WEBHOOK_SERVICE: &str = "cluster-manager-work-webhook";
/// The service of the hub's add-on conversion webhook.
pub const ADDON_WEBHOOK_SERVICE: &str = "cluster-manager-addon-webhook";

/// The ClusterRole granting joining clusters what registration needs (upstream's cluster-manager
/// chart; `clusteradm init` names it [`LEGACY_BOOTSTRAP_CLUSTER_ROLE`] in older releases).
pub const BOOTSTRAP_CLUSTER_ROLE: &str = "open-cluster-management:bootstrap";
/// The ClusterRoleBinding of [`BOOTSTRAP_CLUSTER_ROLE`] to the bootstrap-token group.
pub const BOOTSTRAP_CLUSTER_ROLE_BINDING: &str = "open-cluster-management:bootstrap:managedcluster";
/// The ClusterRoleBinding of [`BOOTSTRAP_CLUSTER_ROLE`] to the bootstrap ServiceAccount.
pub const BOOTSTRAP_SERVICE_ACCOUNT_CLUSTER_ROLE_BINDING: &str =
    "open-cluster-management:bootstrap:agent-registration";
/// The bootstrap ClusterRole as older `clusteradm init` releases name it.
pub const LEGACY_BOOTSTRAP_CLUSTER_ROLE: &str = "system:open-cluster-management:bootstrap";
/// The binding of [`LEGACY_BOOTSTRAP_CLUSTER_ROLE`] to the bootstrap-token group (older `clusteradm`).
pub const LEGACY_BOOTSTRAP_CLUSTER_ROLE_BINDING: &str = "cluster-bootstrap";
/// The binding of [`LEGACY_BOOTSTRAP_CLUSTER_ROLE`] to the legacy bootstrap ServiceAccount (older
/// `clusteradm`).
pub const LEGACY_BOOTSTRAP_SERVICE_ACCOUNT_CLUSTER_ROLE_BINDING: &str = "cluster-bootstrap-sa";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_names_follow_upstream_formats() {
        assert_eq!(addon_deploy_work_name("test", 0), "addon-test-deploy-0");
        assert!(addon_deploy_work_name("test", 1).starts_with(&addon_deploy_work_prefix("test")));
        assert_eq!(
            addon_hosting_deploy_work_name("test-hosted", "cluster1", 0),
            "addon-test-hosted-deploy-hosting-cluster1-0"
        );
        assert_eq!(
            addon_hosting_deploy_work_prefix("a", "c"),
            "addon-a-deploy-hosting-c"
        );
        assert_eq!(addon_pre_delete_work_name("test"), "addon-test-pre-delete");
        assert_eq!(
            addon_hosting_pre_delete_work_name("test-hosted", "cluster1"),
            "addon-test-hosted-pre-delete-hosting-cluster1"
        );
        assert_eq!(applied_manifest_work_name("abc", "work1"), "abc-work1");
        assert_eq!(placement_decision_name("p", 1), "p-decision-1");
    }

    #[test]
    fn rbac_and_agent_names_follow_upstream_formats() {
        assert_eq!(
            managed_cluster_cluster_role("c1"),
            "open-cluster-management:managedcluster:c1"
        );
        assert_eq!(
            managed_cluster_registration_role_binding("c1"),
            "open-cluster-management:managedcluster:c1:registration"
        );
        assert_eq!(
            managed_cluster_work_role_binding("c1"),
            "open-cluster-management:managedcluster:c1:work"
        );
        assert_eq!(
            klusterlet_work_aggregate_cluster_role("klusterlet"),
            "open-cluster-management:klusterlet-work:aggregate"
        );
        assert_eq!(
            klusterlet_work_service_account("klusterlet"),
            KLUSTERLET_WORK_SERVICE_ACCOUNT
        );
        assert_eq!(klusterlet_registration_agent("k"), "k-registration-agent");
        assert_eq!(klusterlet_work_agent("k"), "k-work-agent");
        assert_eq!(klusterlet_singleton_agent("k"), "k-agent");
        assert_eq!(addon_agent_service_account("a"), "a-agent");
        assert_eq!(addon_token_role("a"), "a-token-role");
        assert_eq!(
            template_addon_role_binding("a", "ClusterRole"),
            "open-cluster-management:a:clusterrole:agent"
        );
    }
}
