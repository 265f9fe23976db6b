//! The quickstart's add-on steps (issue 15, the OCM blog's helloworld add-on): after the join, the
//! helloworld hub controller runs beside the hub, the add-on is installed
//! (ClusterManagementAddOn) and enabled for the cluster (the blog's ManagedClusterAddOn, v1alpha1),
//! its agent gets hub credentials through a CSR the add-on's own check approves, and — run here
//! as the managed cluster would run it, since the embedded cluster has no kubelet for its
//! Deployment — copies a ConfigMap from the hub and renews its lease, which makes the add-on
//! Available.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use ocm_api::addon::{v1alpha1, v1beta1};
use ocm_api::names::{labels, namespaces, secrets};
use ocm_api::work::v1::ManifestWork;
use tokio::task::JoinHandle;

use crate::helloworld::{self, ADDON_NAME, HelloworldArgs};
use crate::helloworld_agent::{self, AgentArgs, SYNCED_LABEL};
use crate::quickstart::{FIELD_MANAGER, QuickstartError, step, wait_for};

/// The hub ConfigMap the demo copies to the managed cluster.
const HELLO_CONFIG_MAP: &str = "hello-from-the-hub";

/// What the add-on steps need of the demo.
pub(crate) struct AddonDemo<'a> {
    /// The hub.
    pub hub: kube::Client,
    /// The hub's admin kubeconfig (for the add-on's hub controller).
    pub hub_kubeconfig: PathBuf,
    /// The managed cluster.
    pub spoke: kube::Client,
    /// The managed cluster's admin kubeconfig (for the add-on agent).
    pub spoke_kubeconfig: PathBuf,
    /// The managed cluster's kubeconfig as shown in the printed commands.
    pub spoke_kubeconfig_shown: &'a str,
    /// The cluster's name.
    pub cluster: &'a str,
    /// Where the agent's credentials are written.
    pub data_dir: &'a Path,
    /// How long each step may take.
    pub timeout: Option<Duration>,
    /// The step number to start at.
    pub first_step: u32,
}

/// The blog's ManagedClusterAddOn enabling helloworld on `cluster`.
fn managed_cluster_addon_yaml(cluster: &str) -> String {
    format!(
        "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata:\n  \
         name: {ADDON_NAME}\n  namespace: {cluster}\nspec:\n  installNamespace: {}\n",
        namespaces::ADDON_AGENT
    )
}

/// The helloworld ClusterManagementAddOn.
fn cluster_management_addon_yaml() -> String {
    format!(
        "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata:\n  \
         name: {ADDON_NAME}\nspec:\n  addOnMeta:\n    displayName: {ADDON_NAME}\n    description: \
         helloworld is an example addon\n"
    )
}

/// Server-side applies `yaml` (one object of kind `K`) as `kubectl apply --server-side` would.
async fn apply<K>(api: &Api<K>, yaml: &str) -> Result<(), QuickstartError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_saphyr::from_str(yaml).map_err(|e| QuickstartError::EnableAddon {
        what: "parsing the manifest".to_string(),
        message: e.to_string(),
    })?;
    let name = object.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&object),
    )
    .await
    .map_err(|e| QuickstartError::EnableAddon {
        what: format!("applying {name}"),
        message: e.to_string(),
    })?;
    Ok(())
}

/// Prints a manifest as the heredoc a user would `kubectl apply`.
fn show_apply(kubeconfig: Option<&str>, yaml: &str) -> String {
    let flag = kubeconfig
        .map(|k| format!("--kubeconfig {k} "))
        .unwrap_or_default();
    let indented: Vec<String> = yaml.lines().map(|l| format!("        {l}")).collect();
    format!(
        "kubectl {flag}apply -f - <<EOF\n{}\n        EOF",
        indented.join("\n")
    )
}

/// Walks the add-on steps; the hub controller and the agent run as `tasks` until the demo stops.
pub(crate) async fn walk(
    demo: AddonDemo<'_>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<u32, QuickstartError> {
    let AddonDemo {
        hub,
        hub_kubeconfig,
        spoke,
        spoke_kubeconfig,
        spoke_kubeconfig_shown,
        cluster,
        data_dir,
        timeout,
        first_step,
    } = demo;
    let mut number = first_step;

    // The add-on's hub controller and its ClusterManagementAddOn.
    tasks.push(tokio::spawn(async move {
        let args = HelloworldArgs {
            kubeconfig: Some(hub_kubeconfig),
        };
        if let Err(error) = helloworld::run_until(args, std::future::pending()).await {
            tracing::error!(%error, "the helloworld hub controller stopped");
        }
    }));
    let cma_yaml = cluster_management_addon_yaml();
    apply(
        &Api::<v1alpha1::ClusterManagementAddOn>::all(hub.clone()),
        &cma_yaml,
    )
    .await?;
    step(
        number,
        "The helloworld add-on's hub controller runs beside the hub (an AddonManager with the \
         add-on built from templates); the add-on is installed:",
        &[
            show_apply(None, &cma_yaml),
            "kubectl get clustermanagementaddons".to_string(),
        ],
    );
    number += 1;

    // Enabled on the cluster: the deploy work.
    let mca_yaml = managed_cluster_addon_yaml(cluster);
    apply(
        &Api::<v1alpha1::ManagedClusterAddOn>::namespaced(hub.clone(), cluster),
        &mca_yaml,
    )
    .await?;
    let works: Api<ManifestWork> = Api::namespaced(hub.clone(), cluster);
    let work_name = format!("addon-{ADDON_NAME}-deploy-0");
    wait_for(&format!("ManifestWork {work_name}"), timeout, || async {
        works.get_opt(&work_name).await.ok().flatten()
    })
    .await?;
    step(
        number,
        format!(
            "helloworld enabled on {cluster} (the blog's ManagedClusterAddOn): the add-on manager \
             deploys its agent — ServiceAccount, ClusterRoleBinding, Deployment — as ManifestWork {work_name}."
        ),
        &[
            show_apply(None, &mca_yaml),
            format!("kubectl get manifestwork {work_name} -n {cluster} -o yaml"),
            format!(
                "kubectl --kubeconfig {spoke_kubeconfig_shown} get deployment helloworld-agent -n {}",
                namespaces::ADDON_AGENT
            ),
        ],
    );
    number += 1;

    // Registration: the agent's CSR approved by the add-on's check, the secret on the cluster.
    let secret_name = secrets::addon_hub_kubeconfig(ADDON_NAME);
    let spoke_secrets: Api<Secret> = Api::namespaced(spoke.clone(), namespaces::ADDON_AGENT);
    let secret = wait_for(&format!("secret {secret_name}"), timeout, || async {
        spoke_secrets
            .get_opt(&secret_name)
            .await
            .ok()
            .flatten()
            .filter(|s| {
                s.data
                    .as_ref()
                    .is_some_and(|d| d.contains_key(secrets::keys::TLS_CERT))
            })
    })
    .await?;
    let csrs: Api<CertificateSigningRequest> = Api::all(hub.clone());
    let selector = format!(
        "{}={ADDON_NAME},{}={cluster}",
        labels::ADDON_NAME,
        labels::CLUSTER_NAME
    );
    let approved = csrs
        .list(&ListParams::default().labels(&selector))
        .await
        .map(|list| list.items.len())
        .unwrap_or_default();
    step(
        number,
        format!(
            "The registration agent on {cluster} asked for the add-on's hub credentials; the \
             add-on's own check approved its CSR ({approved} so far) and the agent keeps them in \
             secret {secret_name}."
        ),
        &[
            format!(
                "kubectl get managedclusteraddon {ADDON_NAME} -n {cluster} -o jsonpath='{{.status.registrations}}'"
            ),
            format!("kubectl get csr -l {selector}"),
            format!(
                "kubectl --kubeconfig {spoke_kubeconfig_shown} get secret {secret_name} -n {}",
                namespaces::ADDON_AGENT
            ),
        ],
    );
    number += 1;

    // The agent, run with the secret's files as the Deployment would mount them.
    let credentials = data_dir.join(cluster).join(&secret_name);
    std::fs::create_dir_all(&credentials).map_err(|source| QuickstartError::WriteAddonCredentials {
        path: credentials.clone(),
        source,
    })?;
    for (key, value) in secret.data.unwrap_or_default() {
        let path = credentials.join(&key);
        std::fs::write(&path, &value.0)
            .map_err(|source| QuickstartError::WriteAddonCredentials { path, source })?;
    }
    let args = AgentArgs {
        hub_kubeconfig: credentials.join(secrets::keys::KUBECONFIG),
        cluster_name: None,
        addon_namespace: namespaces::ADDON_AGENT.to_string(),
        addon_name: ADDON_NAME.to_string(),
        kubeconfig: Some(spoke_kubeconfig),
    };
    tasks.push(tokio::spawn(async move {
        if let Err(error) = helloworld_agent::run_until(args, std::future::pending()).await {
            tracing::error!(%error, "the helloworld agent stopped");
        }
    }));
    let hello = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": HELLO_CONFIG_MAP, "namespace": cluster},
        "data": {"greeting": "hello from the hub"}});
    Api::<ConfigMap>::namespaced(hub.clone(), cluster)
        .patch(
            HELLO_CONFIG_MAP,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&hello),
        )
        .await
        .map_err(|e| QuickstartError::EnableAddon {
            what: format!("creating ConfigMap {HELLO_CONFIG_MAP}"),
            message: e.to_string(),
        })?;
    let copies: Api<ConfigMap> = Api::namespaced(spoke.clone(), namespaces::ADDON_AGENT);
    wait_for(
        &format!("ConfigMap {HELLO_CONFIG_MAP} on {cluster}"),
        timeout,
        || async { copies.get_opt(HELLO_CONFIG_MAP).await.ok().flatten() },
    )
    .await?;
    step(
        number,
        format!(
            "The helloworld agent runs as {cluster}'s Deployment would, on those credentials; \
             ConfigMap {HELLO_CONFIG_MAP} created on the hub in namespace {cluster} arrived on \
             {cluster}, labelled {SYNCED_LABEL}."
        ),
        &[
            format!("kubectl create configmap another --from-literal=key=value -n {cluster}"),
            format!(
                "kubectl --kubeconfig {spoke_kubeconfig_shown} get configmaps -l {SYNCED_LABEL} -n {}",
                namespaces::ADDON_AGENT
            ),
        ],
    );
    number += 1;

    // Health from the agent's lease.
    let addons: Api<v1beta1::ManagedClusterAddOn> = Api::namespaced(hub, cluster);
    wait_for("the add-on Available", timeout, || async {
        let addon = addons.get_opt(ADDON_NAME).await.ok().flatten()?;
        let conditions = addon.status?.conditions?;
        ocm_api::conditions::is_true(&conditions, "Available").then_some(())
    })
    .await?;
    step(
        number,
        format!(
            "The agent renews Lease {ADDON_NAME} on {cluster}; the registration agent reports the \
             add-on Available (ManagedClusterAddOnLeaseUpdated)."
        ),
        &[
            format!("kubectl get managedclusteraddons -n {cluster}"),
            format!(
                "kubectl --kubeconfig {spoke_kubeconfig_shown} get lease {ADDON_NAME} -n {}",
                namespaces::ADDON_AGENT
            ),
        ],
    );
    Ok(number + 1)
}
