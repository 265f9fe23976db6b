//! Secrets and config maps OCM components agree on, their data keys, and the paths they are
//! mounted at.

/// In the agent namespace: the bootstrap kubeconfig that lets an agent register with the hub.
pub const BOOTSTRAP_HUB_KUBECONFIG: &str = "bootstrap-hub-kubeconfig";
/// In the agent namespace: the credentials the registration agent obtained from the hub.
pub const HUB_KUBECONFIG: &str = "hub-kubeconfig-secret";
/// In hosted mode: the kubeconfig of the managed cluster, on the management cluster.
pub const EXTERNAL_MANAGED_KUBECONFIG: &str = "external-managed-kubeconfig";
/// [`EXTERNAL_MANAGED_KUBECONFIG`] for the registration agent.
pub const EXTERNAL_MANAGED_KUBECONFIG_REGISTRATION: &str = "external-managed-kubeconfig-registration";
/// [`EXTERNAL_MANAGED_KUBECONFIG`] for the work agent.
pub const EXTERNAL_MANAGED_KUBECONFIG_WORK: &str = "external-managed-kubeconfig-work";
/// [`EXTERNAL_MANAGED_KUBECONFIG`] for the single (singleton) agent.
pub const EXTERNAL_MANAGED_KUBECONFIG_AGENT: &str = "external-managed-kubeconfig-agent";
/// The image pull secret the klusterlet copies into add-on namespaces.
pub const IMAGE_PULL_CREDENTIALS: &str = "open-cluster-management-image-pull-credentials";
/// The config map with the TLS settings components watch (and restart on change).
pub const TLS_PROFILE_CONFIG_MAP: &str = "ocm-tls-profile";

/// Data keys of credential secrets.
pub mod keys {
    /// A kubeconfig that refers to the other keys as files in the same directory.
    pub const KUBECONFIG: &str = "kubeconfig";
    /// The client certificate (PEM).
    pub const TLS_CERT: &str = "tls.crt";
    /// The client private key (PEM).
    pub const TLS_KEY: &str = "tls.key";
    /// The managed cluster's name.
    pub const CLUSTER_NAME: &str = "cluster-name";
    /// The registration agent's name (cluster credentials only).
    pub const AGENT_NAME: &str = "agent-name";
    /// A bearer token (token driver).
    pub const TOKEN: &str = "token";
    /// The CA bundle of an add-on's proxy config map.
    pub const PROXY_CA_BUNDLE: &str = "ca-bundle.crt";
}

/// Names inside the kubeconfigs written into credential secrets.
pub mod kubeconfig {
    /// The one context of the kubeconfig.
    pub const CONTEXT: &str = "default-context";
    /// The one user of the kubeconfig.
    pub const USER: &str = "default-auth";
    /// The namespace of the context.
    pub const NAMESPACE: &str = "configuration";
}

/// Mount paths of credential secrets.
pub mod paths {
    /// Where the registration agent mounts its hub credentials.
    pub const AGENT_HUB_KUBECONFIG_DIR: &str = "/spoke/hub-kubeconfig";
    /// Where the operator mounts the bootstrap kubeconfig for the registration agent.
    pub const AGENT_BOOTSTRAP_KUBECONFIG: &str = "/spoke/bootstrap/kubeconfig";
    /// Where template add-on agents get their hub credentials mounted.
    pub const ADDON_HUB_KUBECONFIG_DIR: &str = "/managed/hub-kubeconfig";
    /// The kubeconfig file under [`ADDON_HUB_KUBECONFIG_DIR`].
    pub const ADDON_HUB_KUBECONFIG: &str = "/managed/hub-kubeconfig/kubeconfig";
    /// Where template add-on agents get their proxy CA bundle mounted.
    pub const ADDON_PROXY_CA_DIR: &str = "/managed/proxy-ca";
    /// The CA bundle file under [`ADDON_PROXY_CA_DIR`].
    pub const ADDON_PROXY_CA_BUNDLE: &str = "/managed/proxy-ca/ca-bundle.crt";

    /// Where a template add-on agent gets the client certificate of `signer` mounted:
    /// `/managed/<signer with "/" replaced by "-">`.
    #[must_use]
    pub fn addon_custom_signer_dir(signer: &str) -> String {
        format!("/managed/{}", signer.replace('/', "-"))
    }
}

/// The secret holding an add-on's hub kubeconfig (kubeClient registration): `<addon>-hub-kubeconfig`.
#[must_use]
pub fn addon_hub_kubeconfig(addon: &str) -> String {
    format!("{addon}-hub-kubeconfig")
}

/// The secret holding a hosted add-on's managed-cluster kubeconfig: `<addon>-managed-kubeconfig`.
#[must_use]
pub fn addon_managed_kubeconfig(addon: &str) -> String {
    format!("{addon}-managed-kubeconfig")
}

/// The secret holding an add-on's client certificate for a custom signer:
/// `<addon>-<signer with "/" replaced by "-">-client-cert`.
#[must_use]
pub fn addon_custom_signer_client_cert(addon: &str, signer: &str) -> String {
    format!("{addon}-{}-client-cert", signer.replace('/', "-"))
}

/// The pod volume of a template add-on that carries the custom-signer certificate:
/// `cert-<signer with "/" and "." replaced by "-">`.
#[must_use]
pub fn addon_custom_signer_volume(signer: &str) -> String {
    format!("cert-{}", signer.replace(['/', '.'], "-"))
}

/// The config map with the proxy CA bundle of a template add-on: `<addon>-proxy-ca`.
#[must_use]
pub fn addon_proxy_ca_config_map(addon: &str) -> String {
    format!("{addon}-proxy-ca")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addon_secret_names_follow_upstream_formats() {
        assert_eq!(addon_hub_kubeconfig("helloworld"), "helloworld-hub-kubeconfig");
        assert_eq!(
            addon_managed_kubeconfig("helloworld"),
            "helloworld-managed-kubeconfig"
        );
        assert_eq!(
            addon_custom_signer_client_cert("myaddon", "example.com/signer-name"),
            "myaddon-example.com-signer-name-client-cert"
        );
        assert_eq!(
            addon_custom_signer_volume("example.com/signer-name"),
            "cert-example-com-signer-name"
        );
        assert_eq!(
            paths::addon_custom_signer_dir("example.com/signer-name"),
            "/managed/example.com-signer-name"
        );
        assert_eq!(addon_proxy_ca_config_map("a"), "a-proxy-ca");
    }
}
