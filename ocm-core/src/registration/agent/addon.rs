//! Add-on registration on the managed cluster (ocm-core.md §1.10, addon-framework.md §3.1): hub
//! credentials for each `status.registrations[]` of the cluster's ManagedClusterAddOns, and the
//! add-on lease checker that sets their `Available` condition.
//!
//! One loop: every [`AgentOptions::addon_sync_period`](super::AgentOptions::addon_sync_period) it
//! lists the add-ons in the cluster namespace, keeps one pending CSR (and its in-memory key) per
//! secret, writes the secret once the CSR is issued, deletes secrets of registrations or add-ons
//! that went away, then checks the add-ons' leases.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    ByteString,
    api::{certificates::v1::CertificateSigningRequest, coordination::v1::Lease, core::v1::Secret},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use ocm_api::{
    addon::v1alpha1::HealthCheckMode,
    addon::v1beta1::{ManagedClusterAddOn, RegistrationConfig, RegistrationConfigType},
    conditions::{ConditionList, Status},
    meta::Condition,
    names::{
        annotations,
        conditions::{addon::managed_cluster_addon, cluster::managed_cluster},
        labels, leases, namespaces, secrets, subjects,
    },
};

use super::{Agent, AgentError, csr, kubeconfig};

/// The controller name in metrics and logs.
const CONTROLLER: &str = "addon-registration";

/// The namespace the add-on's credentials and lease live in.
pub fn install_namespace(addon: &ManagedClusterAddOn) -> String {
    addon
        .status
        .as_ref()
        .and_then(|s| s.namespace.clone())
        .filter(|n| !n.is_empty())
        .or_else(|| {
            addon
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(annotations::V1ALPHA1_INSTALL_NAMESPACE).cloned())
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| namespaces::ADDON_AGENT.to_string())
}

/// What one registration needs: secret name, signer, subject, and whether it carries a kubeconfig.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The secret in the install namespace.
    pub secret: String,
    /// The CSR signer.
    pub signer: String,
    /// The certificate CN.
    pub user: String,
    /// The certificate O values.
    pub groups: Vec<String>,
    /// The certificate OU values (custom signers).
    pub organization_units: Vec<String>,
    /// Whether the secret gets a `kubeconfig` (kubeClient registrations).
    pub kubeconfig: bool,
}

/// The registration of `config` for `addon` on `cluster`, with upstream's default subject
/// (CN `…:addon:<addon>:agent:<addon>`, O `…:cluster:<cluster>:addon:<addon>`); `None` when the
/// config lacks what its type needs.
pub fn registration(cluster: &str, addon: &str, config: &RegistrationConfig) -> Option<Registration> {
    let default_user = subjects::addon_default_user(cluster, addon, addon);
    let default_groups = vec![subjects::addon_cluster_group(cluster, addon)];
    match config.type_ {
        RegistrationConfigType::KubeClient => {
            let subject = config.kube_client.as_ref()?.subject.clone().unwrap_or_default();
            Some(Registration {
                secret: secrets::addon_hub_kubeconfig(addon),
                signer: subjects::KUBE_APISERVER_CLIENT_SIGNER.to_string(),
                user: subject.user.filter(|u| !u.is_empty()).unwrap_or(default_user),
                groups: subject.groups.filter(|g| !g.is_empty()).unwrap_or(default_groups),
                organization_units: Vec::new(),
                kubeconfig: true,
            })
        }
        RegistrationConfigType::CustomSigner => {
            let signer = config.custom_signer.as_ref()?;
            if signer.signer_name.is_empty() {
                return None;
            }
            let subject = signer.subject.clone().unwrap_or_default();
            Some(Registration {
                secret: secrets::addon_custom_signer_client_cert(addon, &signer.signer_name),
                signer: signer.signer_name.clone(),
                user: subject.user.filter(|u| !u.is_empty()).unwrap_or(default_user),
                groups: subject.groups.filter(|g| !g.is_empty()).unwrap_or(default_groups),
                organization_units: subject.organization_units.unwrap_or_default(),
                kubeconfig: false,
            })
        }
    }
}

/// The add-on's `Available` condition from its lease (Lease health-check mode), at `now` (Unix
/// seconds): `lease` is the renew time of the lease, `None` when it does not exist.
pub fn lease_condition(
    addon: &str,
    renew_time: Option<Option<i64>>,
    now: i64,
) -> (Status, &'static str, String) {
    let grace = i64::from(leases::GRACE_PERIOD_MULTIPLIER) * i64::from(leases::DEFAULT_DURATION_SECONDS);
    match renew_time {
        None => (
            Status::Unknown,
            managed_cluster_addon::reasons::AVAILABLE_LEASE_NOT_FOUND,
            format!("The status of {addon} add-on is unknown."),
        ),
        Some(Some(renew)) if now < renew + grace => (
            Status::True,
            managed_cluster_addon::reasons::AVAILABLE_LEASE_UPDATED,
            format!("{addon} add-on is available."),
        ),
        Some(_) => (
            Status::False,
            managed_cluster_addon::reasons::AVAILABLE_LEASE_UPDATE_STOPPED,
            format!("{addon} add-on is not available."),
        ),
    }
}

/// A CSR the loop waits for, with the key it was made with.
struct Pending {
    csr: String,
    key: rcgen::KeyPair,
}

/// What the loop remembers between rounds.
#[derive(Default)]
pub(crate) struct AddonState {
    /// Secrets the loop wrote, by add-on: (namespace, name).
    owned: BTreeMap<String, BTreeSet<(String, String)>>,
    /// Pending CSRs by (namespace, secret).
    pending: BTreeMap<(String, String), Pending>,
}

/// Sets one condition on the add-on's status (merge patch, only when it changed), through
/// v1beta1 as upstream's agent writes it: a hub converting to the stored v1alpha1 (upstream's
/// webhook, or the embedded control plane) and a hub storing v1beta1 both take it.
async fn set_condition(
    api: &Api<ManagedClusterAddOn>,
    addon: &ManagedClusterAddOn,
    condition: Condition,
) -> Result<(), AgentError> {
    let name = addon.metadata.name.clone().unwrap_or_default();
    // Read again: an earlier patch in this round may have moved the resourceVersion.
    let Some(current) = api
        .get_opt(&name)
        .await
        .map_err(|source| AgentError::PatchAddonStatus {
            name: name.clone(),
            source,
        })?
    else {
        return Ok(());
    };
    let mut conditions = current.status.as_ref().and_then(|s| s.conditions.clone());
    if !conditions.set_condition(condition) {
        return Ok(());
    }
    let patch = serde_json::json!({
        "metadata": {"uid": current.metadata.uid, "resourceVersion": current.metadata.resource_version},
        "status": {"conditions": conditions},
    });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| AgentError::PatchAddonStatus { name, source })?;
    Ok(())
}

/// Whether the secret holds a certificate for `reg` — issued to its subject, as upstream checks —
/// that is not due for rotation.
fn secret_current(secret: &Secret, reg: &Registration, threshold: f64) -> bool {
    let Some(data) = &secret.data else { return false };
    let (Some(cert), Some(_)) = (
        data.get(secrets::keys::TLS_CERT),
        data.get(secrets::keys::TLS_KEY),
    ) else {
        return false;
    };
    if reg.kubeconfig && !data.contains_key(secrets::keys::KUBECONFIG) {
        return false;
    }
    if !csr::matches_subject(&cert.0, &reg.user, &reg.groups) {
        return false;
    }
    match csr::validity(&cert.0) {
        Some((nb, na)) => !csr::needs_rotation(nb, na, chrono::Utc::now().timestamp(), threshold),
        None => false,
    }
}

/// Ensures the secret of one registration; returns the condition to record, if any.
async fn ensure(
    agent: &Agent,
    hub: &kube::Client,
    state: &mut AddonState,
    addon: &str,
    namespace: &str,
    reg: &Registration,
) -> Result<Option<Condition>, AgentError> {
    let secrets_api: Api<Secret> = Api::namespaced(agent.spoke.clone(), namespace);
    let werr = |source| AgentError::WriteSecret {
        namespace: namespace.to_string(),
        name: reg.secret.clone(),
        source,
    };
    let existing = match secrets_api.get_opt(&reg.secret).await {
        Ok(s) => s,
        // The install namespace may not exist yet: try again next round.
        Err(kube::Error::Api(s)) if s.code == 404 => None,
        Err(e) => return Err(werr(e)),
    };
    let threshold = agent
        .options
        .rotation_threshold
        .unwrap_or_else(csr::rotation_threshold);
    let key = (namespace.to_string(), reg.secret.clone());
    if let Some(secret) = existing
        .as_ref()
        .filter(|s| secret_current(s, reg, threshold) && !state.pending.contains_key(&key))
    {
        let wanted = secret_labels(agent, addon);
        if wanted.iter().any(|(k, v)| secret.labels().get(k) != Some(v)) {
            // Written before secrets were labelled: label it, so that unjoin finds it.
            let patch = serde_json::json!({"metadata": {"labels": wanted}});
            secrets_api
                .patch(&reg.secret, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(werr)?;
        }
        return Ok(None);
    }
    let csrs: Api<CertificateSigningRequest> = Api::all(hub.clone());
    let Some(pending) = state.pending.remove(&key) else {
        let selector = format!(
            "{}={},{}={addon}",
            labels::CLUSTER_NAME,
            agent.cluster,
            labels::ADDON_NAME
        );
        let count = csrs
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(AgentError::ListCsrs)?
            .items
            .len();
        if count >= csr::MAX_CSRS {
            return Ok(Some(Condition::new(
                managed_cluster_addon::CLUSTER_CERTIFICATE_ROTATED,
                Status::False,
                managed_cluster::reasons::CERTIFICATE_UPDATE_FAILED,
                "Stop creating csr since there are too many csr created already on hub",
                Time(Timestamp::now()),
            )));
        }
        let kr = csr::new_request(
            &reg.user,
            &reg.groups,
            &reg.organization_units,
            &[subjects::addon_csr_dns_name(addon)],
        )?;
        let labels = BTreeMap::from([
            (labels::CLUSTER_NAME.to_string(), agent.cluster.clone()),
            (labels::ADDON_NAME.to_string(), addon.to_string()),
        ]);
        let object = csr::csr_object(
            subjects::addon_csr_generate_name(&agent.cluster, addon),
            labels,
            &kr.request_pem,
            &reg.signer,
            None,
        );
        let created = csrs
            .create(&PostParams::default(), &object)
            .await
            .map_err(AgentError::CreateCsr)?;
        let name = created.metadata.name.unwrap_or_default();
        tracing::info!(addon, csr = %name, "CSRCreated");
        state.pending.insert(
            key,
            Pending {
                csr: name,
                key: kr.key,
            },
        );
        return Ok(None);
    };
    let Some(current) = csrs
        .get_opt(&pending.csr)
        .await
        .map_err(|source| AgentError::GetCsr {
            name: pending.csr.clone(),
            source,
        })?
    else {
        return Ok(None);
    };
    let Some(cert) = csr::issued_certificate(&current) else {
        let denied = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Denied" || c.type_ == "Failed"));
        if !denied {
            state.pending.insert(key, pending);
        }
        return Ok(None);
    };
    if !csr::certificate_matches_key(&cert, &pending.key) {
        return Ok(None);
    }
    let window = csr::validity(&cert);
    let mut data = BTreeMap::from([
        (secrets::keys::TLS_CERT.to_string(), ByteString(cert)),
        (
            secrets::keys::TLS_KEY.to_string(),
            ByteString(csr::key_pem(&pending.key)?.into_bytes()),
        ),
        (
            secrets::keys::CLUSTER_NAME.to_string(),
            ByteString(agent.cluster.clone().into_bytes()),
        ),
    ]);
    if reg.kubeconfig {
        data.insert(
            secrets::keys::KUBECONFIG.to_string(),
            ByteString(kubeconfig::hub_kubeconfig(&agent.bootstrap)?.into_bytes()),
        );
    }
    match existing {
        Some(mut secret) => {
            secret.data = Some(data);
            secret.labels_mut().extend(secret_labels(agent, addon));
            secrets_api
                .replace(&reg.secret, &PostParams::default(), &secret)
                .await
                .map_err(werr)?;
        }
        None => {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(reg.secret.clone()),
                    namespace: Some(namespace.to_string()),
                    labels: Some(secret_labels(agent, addon)),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            secrets_api
                .create(&PostParams::default(), &secret)
                .await
                .map_err(werr)?;
        }
    }
    state
        .owned
        .entry(addon.to_string())
        .or_default()
        .insert((namespace.to_string(), reg.secret.clone()));
    let message = window.map_or_else(String::new, |(nb, na)| {
        let f = |s: i64| {
            chrono::DateTime::from_timestamp(s, 0)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_default()
        };
        format!("client certificate rotated starting from {} to {}", f(nb), f(na))
    });
    Ok(Some(Condition::new(
        managed_cluster_addon::CLUSTER_CERTIFICATE_ROTATED,
        Status::True,
        managed_cluster::reasons::CERTIFICATE_UPDATED,
        &message,
        Time(Timestamp::now()),
    )))
}

/// The labels of an add-on's secret: the cluster and add-on names, so that unjoin finds it.
fn secret_labels(agent: &Agent, addon: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::CLUSTER_NAME.to_string(), agent.cluster.clone()),
        (labels::ADDON_NAME.to_string(), addon.to_string()),
    ])
}

async fn delete_secret(agent: &Agent, namespace: &str, name: &str) -> Result<(), AgentError> {
    let api: Api<Secret> = Api::namespaced(agent.spoke.clone(), namespace);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(AgentError::WriteSecret {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source,
        }),
    }
}

/// One round over the cluster's add-ons.
pub(crate) async fn sync(
    agent: &Agent,
    hub: &kube::Client,
    state: &mut AddonState,
) -> Result<(), AgentError> {
    let api: Api<ManagedClusterAddOn> = Api::namespaced(hub.clone(), &agent.cluster);
    let addons = api
        .list(&ListParams::default())
        .await
        .map_err(|source| AgentError::PatchAddonStatus {
            name: "*".into(),
            source,
        })?
        .items;
    let mut seen = BTreeSet::new();
    for addon in &addons {
        let Some(name) = addon.metadata.name.clone() else {
            continue;
        };
        seen.insert(name.clone());
        // While deleting, credentials stay as they are for the add-on's cleanup.
        if addon.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let namespace = agent
            .options
            .addon_namespace
            .clone()
            .unwrap_or_else(|| install_namespace(addon));
        let mut wanted = BTreeSet::new();
        for config in addon
            .status
            .as_ref()
            .and_then(|s| s.registrations.clone())
            .unwrap_or_default()
        {
            let Some(reg) = registration(&agent.cluster, &name, &config) else {
                continue;
            };
            wanted.insert((namespace.clone(), reg.secret.clone()));
            match ensure(agent, hub, state, &name, &namespace, &reg).await {
                Ok(Some(condition)) => set_condition(&api, addon, condition).await?,
                Ok(None) => {}
                Err(e) => tracing::warn!(addon = %name, error = %e, "add-on registration failed"),
            }
        }
        let owned = state.owned.entry(name.clone()).or_default();
        let stale: Vec<_> = owned.difference(&wanted).cloned().collect();
        for (ns, secret) in stale {
            delete_secret(agent, &ns, &secret).await?;
            owned.remove(&(ns.clone(), secret.clone()));
            state.pending.remove(&(ns, secret));
        }
        check_lease(agent, &api, addon, &name, &namespace).await?;
    }
    let gone: Vec<String> = state
        .owned
        .keys()
        .filter(|a| !seen.contains(*a))
        .cloned()
        .collect();
    for addon in gone {
        for (ns, secret) in state.owned.remove(&addon).unwrap_or_default() {
            delete_secret(agent, &ns, &secret).await?;
            state.pending.remove(&(ns, secret));
        }
    }
    Ok(())
}

/// Sets `Available` from the add-on's lease unless its health is checked another way.
async fn check_lease(
    agent: &Agent,
    api: &Api<ManagedClusterAddOn>,
    addon: &ManagedClusterAddOn,
    name: &str,
    namespace: &str,
) -> Result<(), AgentError> {
    let mode = addon
        .status
        .as_ref()
        .and_then(|s| s.health_check.as_ref())
        .and_then(|h| h.mode)
        .unwrap_or_default();
    if mode == HealthCheckMode::Customized {
        return Ok(());
    }
    let leases_api: Api<Lease> = Api::namespaced(agent.spoke.clone(), namespace);
    let renew = match leases_api.get_opt(name).await {
        Ok(lease) => lease.map(|l| l.spec.and_then(|s| s.renew_time).map(|t| t.0.as_second())),
        Err(kube::Error::Api(s)) if s.code == 404 => None,
        Err(e) => return Err(AgentError::ReadSpoke(e)),
    };
    let (status, reason, message) = lease_condition(name, renew, chrono::Utc::now().timestamp());
    set_condition(
        api,
        addon,
        Condition::new(
            managed_cluster_addon::AVAILABLE,
            status,
            reason,
            &message,
            Time(Timestamp::now()),
        ),
    )
    .await
}

/// Runs the add-on loop. Returns only when the hub kubeconfig becomes invalid.
pub(crate) async fn run(agent: &Agent) -> Result<(), AgentError> {
    let mut state = AddonState::default();
    loop {
        let hub = agent.hub_client().await?;
        let result = sync(agent, &hub, &mut state).await;
        agent.metrics.reconciled(CONTROLLER, result.is_ok());
        if let Err(e) = result {
            tracing::warn!(cluster = %agent.cluster, error = %e, "add-on sync failed");
        }
        tokio::time::sleep(agent.options.addon_sync_period).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_condition_follows_upstream_table() {
        assert_eq!(lease_condition("a", None, 1000).0, Status::Unknown);
        assert_eq!(
            lease_condition("a", None, 1000).2,
            "The status of a add-on is unknown."
        );
        let fresh = lease_condition("a", Some(Some(1000)), 1299);
        assert_eq!(
            (fresh.0, fresh.1),
            (Status::True, "ManagedClusterAddOnLeaseUpdated")
        );
        assert_eq!(fresh.2, "a add-on is available.");
        let stale = lease_condition("a", Some(Some(1000)), 1300);
        assert_eq!(
            (stale.0, stale.1),
            (Status::False, "ManagedClusterAddOnLeaseUpdateStopped")
        );
        assert_eq!(stale.2, "a add-on is not available.");
    }

    #[test]
    fn registration_secret_names_and_default_subject() {
        let config: RegistrationConfig =
            serde_json::from_value(serde_json::json!({"type": "kubeClient", "kubeClient": {}})).unwrap();
        let reg = registration("c1", "helloworld", &config).unwrap();
        assert_eq!(reg.secret, "helloworld-hub-kubeconfig");
        assert_eq!(
            reg.user,
            "system:open-cluster-management:cluster:c1:addon:helloworld:agent:helloworld"
        );
        assert_eq!(
            reg.groups,
            ["system:open-cluster-management:cluster:c1:addon:helloworld"]
        );
        let config: RegistrationConfig = serde_json::from_value(serde_json::json!({
            "type": "customSigner", "customSigner": {"signerName": "example.com/signer-name"}}))
        .unwrap();
        let reg = registration("c1", "myaddon", &config).unwrap();
        assert_eq!(reg.secret, "myaddon-example.com-signer-name-client-cert");
        assert!(!reg.kubeconfig);
    }
}
