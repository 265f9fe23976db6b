//! Users, groups, certificate subjects and signer names of OCM agents, and the CSRs they create.

/// The prefix of every OCM agent user and group.
pub const SUBJECT_PREFIX: &str = "system:open-cluster-management:";
/// The group every registered cluster agent belongs to.
pub const MANAGED_CLUSTERS_GROUP: &str = "system:open-cluster-management:managed-clusters";
/// The signer of client certificates for the Kubernetes API server.
pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// The signer of CSRs for gRPC authentication, signed by the hub itself.
pub const GRPC_SIGNER: &str = "open-cluster-management.io/grpc";
/// The group of every authenticated user.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of every service account.
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The user the hub's gRPC server creates CSRs as (the real requester is then in the
/// `open-cluster-management.io/csr-user` annotation).
pub const GRPC_SERVER_USER: &str = "system:serviceaccount:open-cluster-management-hub:grpc-server-sa";
/// The executor the work webhook assumes for works without one (gate `NilExecutorValidating`).
pub const DEFAULT_EXECUTOR_USER: &str = "system:serviceaccount::klusterlet-work-sa";

/// The user (certificate CN) of a cluster's registration agent:
/// `system:open-cluster-management:<cluster>:<agent>`.
#[must_use]
pub fn cluster_agent_user(cluster: &str, agent: &str) -> String {
    format!("{SUBJECT_PREFIX}{cluster}:{agent}")
}

/// The group (certificate O) of a cluster's agents: `system:open-cluster-management:<cluster>`.
#[must_use]
pub fn cluster_group(cluster: &str) -> String {
    format!("{SUBJECT_PREFIX}{cluster}")
}

/// The group that drivers without certificates (AWS IRSA, tokens) map a cluster to:
/// `open-cluster-management:<cluster>`.
#[must_use]
pub fn cluster_alternate_group(cluster: &str) -> String {
    format!("open-cluster-management:{cluster}")
}

/// The default user (certificate CN) of an add-on agent:
/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>`.
#[must_use]
pub fn addon_default_user(cluster: &str, addon: &str, agent: &str) -> String {
    format!("{SUBJECT_PREFIX}cluster:{cluster}:addon:{addon}:agent:{agent}")
}

/// The group of one add-on's agent on one cluster:
/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>`.
#[must_use]
pub fn addon_cluster_group(cluster: &str, addon: &str) -> String {
    format!("{SUBJECT_PREFIX}cluster:{cluster}:addon:{addon}")
}

/// The group of one add-on's agents on every cluster: `system:open-cluster-management:addon:<addon>`.
#[must_use]
pub fn addon_group(addon: &str) -> String {
    format!("{SUBJECT_PREFIX}addon:{addon}")
}

/// The default groups (certificate O) of an add-on agent, as the hub framework sets them:
/// [`addon_cluster_group`] then [`addon_group`].
#[must_use]
pub fn addon_default_groups(cluster: &str, addon: &str) -> [String; 2] {
    [addon_cluster_group(cluster, addon), addon_group(addon)]
}

/// The user of a service account: `system:serviceaccount:<namespace>:<name>`.
#[must_use]
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The group of the service accounts of a namespace: `system:serviceaccounts:<namespace>`.
#[must_use]
pub fn service_accounts_group(namespace: &str) -> String {
    format!("system:serviceaccounts:{namespace}")
}

/// The user an add-on agent authenticates as with the token driver:
/// `system:serviceaccount:<cluster>:<addon>-agent`.
#[must_use]
pub fn addon_token_user(cluster: &str, addon: &str) -> String {
    service_account_user(cluster, &super::objects::addon_agent_service_account(addon))
}

/// The `generateName` of a cluster agent's CSRs: `<cluster>-`.
#[must_use]
pub fn cluster_csr_generate_name(cluster: &str) -> String {
    format!("{cluster}-")
}

/// The `generateName` of an add-on agent's CSRs: `addon-<cluster>-<addon>-`.
#[must_use]
pub fn addon_csr_generate_name(cluster: &str, addon: &str) -> String {
    format!("addon-{cluster}-{addon}-")
}

/// The DNS name put into an add-on agent's CSRs: `<addon>.addon.open-cluster-management.io`.
#[must_use]
pub fn addon_csr_dns_name(addon: &str) -> String {
    format!("{addon}.addon.open-cluster-management.io")
}

/// The group bootstrap tokens put joining clusters in (bound to the bootstrap ClusterRole).
pub const BOOTSTRAP_GROUP: &str = "system:bootstrappers:managedcluster";
/// The ServiceAccount (in `open-cluster-management`) whose tokens are bootstrap credentials
/// (upstream's cluster-manager chart and registration importer).
pub const BOOTSTRAP_SERVICE_ACCOUNT: &str = "agent-registration-bootstrap";
/// The bootstrap ServiceAccount as older `clusteradm init` releases name it.
pub const LEGACY_BOOTSTRAP_SERVICE_ACCOUNT: &str = "cluster-bootstrap";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_follow_upstream_formats() {
        assert_eq!(
            cluster_agent_user("c1", "a1"),
            "system:open-cluster-management:c1:a1"
        );
        assert_eq!(cluster_group("c1"), "system:open-cluster-management:c1");
        assert_eq!(cluster_alternate_group("c1"), "open-cluster-management:c1");
        assert_eq!(
            addon_default_user("c1", "helloworld", "helloworld"),
            "system:open-cluster-management:cluster:c1:addon:helloworld:agent:helloworld"
        );
        assert_eq!(
            addon_default_groups("c1", "helloworld"),
            [
                "system:open-cluster-management:cluster:c1:addon:helloworld".to_owned(),
                "system:open-cluster-management:addon:helloworld".to_owned()
            ]
        );
        assert_eq!(addon_token_user("c1", "a"), "system:serviceaccount:c1:a-agent");
        assert_eq!(service_accounts_group("ns"), "system:serviceaccounts:ns");
        assert_eq!(cluster_csr_generate_name("c1"), "c1-");
        assert_eq!(addon_csr_generate_name("c1", "a"), "addon-c1-a-");
        assert_eq!(addon_csr_dns_name("a"), "a.addon.open-cluster-management.io");
        assert_eq!(
            DEFAULT_EXECUTOR_USER,
            service_account_user("", "klusterlet-work-sa")
        );
    }
}
