//! CSRApprovingController (ocm-core.md §2.3): which cluster-agent CSRs the hub approves itself.
//!
//! A CSR is a cluster agent's only when [`recognize`] says so: the cluster-name label, the
//! `kubernetes.io/kube-apiserver-client` signer, client usages, a `CERTIFICATE REQUEST` PEM block
//! whose organizations (minus the managed-clusters group) are exactly
//! `system:open-cluster-management:<cluster>` and whose CN is
//! `system:open-cluster-management:<cluster>:<agent>`, `<cluster>` being the label (no prefix
//! matching). Such a CSR is approved when
//! 1. it is a renewal: `spec.username` is the CN and a SubjectAccessReview for the requester on
//!    `register.open-cluster-management.io` `managedclusters/clientcertificates` verb `renew`
//!    allows it (only an accepted cluster's ClusterRole grants that), or
//! 2. its requester is one of the configured auto-approved users (bootstrap); the two bootstrap
//!    ServiceAccounts, upstream's `agent-registration-bootstrap` and older `clusteradm`'s
//!    `cluster-bootstrap`, stand for each other there.
//!
//! Everything else waits for an administrator. Approved or denied CSRs are left alone.

use std::sync::Arc;

use crate::events::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use ocm_api::names::{labels, subjects};
use x509_parser::prelude::FromDer;

use super::{Backoff, HubError, HubOptions, publish, rbac, recorder};
use crate::metrics::ControllerMetrics;

const CONTROLLER: &str = "csrapproving";
/// The reason of the Approved condition the hub writes.
pub const APPROVED_REASON: &str = "AutoApprovedByHubCSRApprovingController";
/// The message of the Approved condition the hub writes.
pub const APPROVED_MESSAGE: &str =
    "Auto approving Managed cluster agent certificate after SubjectAccessReview.";
/// The usages a cluster agent's client certificate may ask for.
const ALLOWED_USAGES: [&str; 3] = ["digital signature", "key encipherment", "client auth"];

/// A recognised cluster-agent CSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCsr {
    /// The cluster (label, O and CN agree on it).
    pub cluster: String,
    /// The agent name (second part of the CN).
    pub agent: String,
    /// The whole CN, `system:open-cluster-management:<cluster>:<agent>`.
    pub common_name: String,
}

/// What failed while handling a CSR.
#[derive(Debug, thiserror::Error)]
pub enum CsrApprovalError {
    /// Creating the SubjectAccessReview failed.
    #[error("reviewing the renewal of CSR {name}: {source}")]
    SubjectAccessReview {
        /// The CSR.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the approval failed.
    #[error("approving CSR {name}: {source}")]
    Approve {
        /// The CSR.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// Whether `csr` is a cluster agent's CSR, and whose (pure; see the module header).
#[must_use]
pub fn recognize(csr: &CertificateSigningRequest) -> Option<AgentCsr> {
    let cluster = csr.labels().get(labels::CLUSTER_NAME)?;
    if cluster.is_empty() || csr.spec.signer_name != subjects::KUBE_APISERVER_CLIENT_SIGNER {
        return None;
    }
    let usages = csr.spec.usages.as_deref().unwrap_or_default();
    if !usages.iter().all(|u| ALLOWED_USAGES.contains(&u.as_str()))
        || !usages.iter().any(|u| u == "client auth")
    {
        return None;
    }
    let (_, pem) = x509_parser::pem::parse_x509_pem(&csr.spec.request.0).ok()?;
    if pem.label != "CERTIFICATE REQUEST" {
        return None;
    }
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents).ok()?;
    let subject = &request.certification_request_info.subject;
    let organizations: Vec<&str> = subject
        .iter_organization()
        .map(|o| o.as_str().ok())
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .filter(|o| *o != subjects::MANAGED_CLUSTERS_GROUP)
        .collect();
    if organizations != [format!("{}{cluster}", subjects::SUBJECT_PREFIX)] {
        return None;
    }
    let mut names = subject.iter_common_name();
    let common_name = names.next()?.as_str().ok()?;
    if names.next().is_some() {
        return None;
    }
    let parts: Vec<&str> = common_name
        .strip_prefix(subjects::SUBJECT_PREFIX)?
        .split(':')
        .collect();
    match parts.as_slice() {
        [named, agent] if named == cluster && !agent.is_empty() => Some(AgentCsr {
            cluster: cluster.clone(),
            agent: (*agent).to_string(),
            common_name: common_name.to_string(),
        }),
        _ => None,
    }
}

/// Whether the CSR already carries an Approved or Denied condition.
#[must_use]
pub fn is_terminal(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|list| list.iter().any(|c| c.type_ == "Approved" || c.type_ == "Denied"))
}

struct Context {
    client: kube::Client,
    options: HubOptions,
    recorder: EventRecorder,
    metrics: ControllerMetrics,
    backoff: Backoff,
}

/// Runs the CSR approving controller until its watch stops.
///
/// # Errors
/// [`HubError::ControllerStopped`] when the controller stream ends.
pub async fn run(
    client: kube::Client,
    options: HubOptions,
    metrics: ControllerMetrics,
) -> Result<(), HubError> {
    let ctx = Arc::new(Context {
        recorder: recorder(&client),
        client: client.clone(),
        options,
        metrics,
        backoff: Backoff::default(),
    });
    // Only CSRs with the cluster-name label can be an agent's ([`recognize`]); they are stored
    // without their managedFields (the approval is written to the subresource, which keeps them).
    let (store, writer) = reflector::store();
    let csrs = watcher(
        Api::<CertificateSigningRequest>::all(client),
        watcher::Config::default().labels(labels::CLUSTER_NAME),
    )
    .default_backoff()
    .modify(|csr| csr.metadata.managed_fields = None)
    .reflect(writer)
    .applied_objects();
    Controller::for_stream(csrs, store)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
    Err(HubError::ControllerStopped(CONTROLLER))
}

fn error_policy(csr: Arc<CertificateSigningRequest>, error: &CsrApprovalError, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconciled(CONTROLLER, false);
    super::log_failure(&csr.name_any(), error, "approving CSR failed");
    Action::requeue(ctx.backoff.failed(&csr.name_any()))
}

#[tracing::instrument(skip_all, fields(csr = %csr.name_any()))]
async fn reconcile(
    csr: Arc<CertificateSigningRequest>,
    ctx: Arc<Context>,
) -> Result<Action, CsrApprovalError> {
    let name = csr.name_any();
    if !is_terminal(&csr)
        && let Some(agent) = recognize(&csr)
    {
        let requester = csr.spec.username.clone().unwrap_or_default();
        if requester == agent.common_name && renewal_allowed(&csr, &ctx).await? {
            approve(&csr, &ctx).await?;
            publish(
                &ctx.recorder,
                csr.as_ref(),
                None,
                false,
                "ManagedClusterCSRAutoApproved",
                format!("managed cluster csr {name} is auto approved by hub csr controller"),
            )
            .await;
        } else if ctx
            .options
            .auto_approved_csr_users
            .iter()
            .any(|user| super::bootstrap::same_bootstrap_identity(user, &requester))
        {
            approve(&csr, &ctx).await?;
            publish(
                &ctx.recorder,
                csr.as_ref(),
                None,
                false,
                "ManagedClusterAutoApproved",
                format!("spoke cluster csr {name} is auto approved for user {requester}"),
            )
            .await;
        }
    }
    ctx.backoff.succeeded(&name);
    ctx.metrics.reconciled(CONTROLLER, true);
    Ok(Action::await_change())
}

async fn renewal_allowed(csr: &CertificateSigningRequest, ctx: &Context) -> Result<bool, CsrApprovalError> {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: csr.spec.username.clone(),
            groups: csr.spec.groups.clone(),
            extra: csr.spec.extra.clone(),
            uid: csr.spec.uid.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some(rbac::REGISTER_GROUP.to_string()),
                resource: Some("managedclusters".to_string()),
                subresource: Some("clientcertificates".to_string()),
                verb: Some("renew".to_string()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(ctx.client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(|source| CsrApprovalError::SubjectAccessReview {
            name: csr.name_any(),
            source,
        })?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

async fn approve(csr: &CertificateSigningRequest, ctx: &Context) -> Result<(), CsrApprovalError> {
    let name = csr.name_any();
    let mut approved = csr.clone();
    let now = super::now();
    let status = approved.status.get_or_insert_with(Default::default);
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(CertificateSigningRequestCondition {
            type_: "Approved".to_string(),
            status: "True".to_string(),
            reason: Some(APPROVED_REASON.to_string()),
            message: Some(APPROVED_MESSAGE.to_string()),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(now),
        });
    Api::<CertificateSigningRequest>::all(ctx.client.clone())
        .replace_subresource("approval", &name, &PostParams::default(), &approved)
        .await
        .map_err(|source| CsrApprovalError::Approve { name, source })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::certificates::v1::CertificateSigningRequestSpec;
    use kube::api::ObjectMeta;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

    fn csr(label: &str, cn: &str, orgs: &[&str], usages: &[&str], signer: &str) -> CertificateSigningRequest {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        // The DN keeps one value per type; the second O goes in under its raw OID (2.5.4.10).
        for (i, o) in orgs.iter().enumerate() {
            let ty = if i == 0 {
                DnType::OrganizationName
            } else {
                DnType::CustomDnType(vec![2, 5, 4, 10])
            };
            dn.push(ty, *o);
        }
        params.distinguished_name = dn;
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        CertificateSigningRequest {
            metadata: ObjectMeta {
                name: Some("x".into()),
                labels: Some([(labels::CLUSTER_NAME.to_string(), label.to_string())].into()),
                ..ObjectMeta::default()
            },
            spec: CertificateSigningRequestSpec {
                request: ByteString(pem.into_bytes()),
                signer_name: signer.to_string(),
                usages: Some(usages.iter().map(|u| (*u).to_string()).collect()),
                ..CertificateSigningRequestSpec::default()
            },
            status: None,
        }
    }

    const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
    const USAGES: &[&str] = &["digital signature", "key encipherment", "client auth"];
    const GROUP: &str = "system:open-cluster-management:managed-clusters";

    #[test]
    fn agent_csr_is_recognised() {
        let c = csr(
            "c1",
            "system:open-cluster-management:c1:agent1",
            &["system:open-cluster-management:c1", GROUP],
            USAGES,
            SIGNER,
        );
        assert_eq!(
            recognize(&c),
            Some(AgentCsr {
                cluster: "c1".into(),
                agent: "agent1".into(),
                common_name: "system:open-cluster-management:c1:agent1".into()
            })
        );
    }

    #[test]
    fn foreign_or_malformed_csrs_are_not_recognised() {
        let orgs = ["system:open-cluster-management:c1", GROUP];
        let cn = "system:open-cluster-management:c1:agent1";
        // Prefix-matched organization.
        assert!(
            recognize(&csr(
                "c1",
                cn,
                &["system:open-cluster-management:c1xyz", GROUP],
                USAGES,
                SIGNER
            ))
            .is_none()
        );
        // CN and O agree on another cluster.
        assert!(
            recognize(&csr(
                "c1",
                "system:open-cluster-management:c1xyz:a",
                &["system:open-cluster-management:c1xyz", GROUP],
                USAGES,
                SIGNER
            ))
            .is_none()
        );
        // CN names another cluster, O is right.
        assert!(
            recognize(&csr(
                "c1",
                "system:open-cluster-management:c2:a",
                &orgs,
                USAGES,
                SIGNER
            ))
            .is_none()
        );
        // Extra organization.
        assert!(
            recognize(&csr(
                "c1",
                cn,
                &["system:open-cluster-management:c1", "system:masters"],
                USAGES,
                SIGNER
            ))
            .is_none()
        );
        // Three CN parts, empty agent, missing prefix.
        assert!(
            recognize(&csr(
                "c1",
                "system:open-cluster-management:c1:a:b",
                &orgs,
                USAGES,
                SIGNER
            ))
            .is_none()
        );
        assert!(
            recognize(&csr(
                "c1",
                "system:open-cluster-management:c1:",
                &orgs,
                USAGES,
                SIGNER
            ))
            .is_none()
        );
        assert!(recognize(&csr("c1", "c1:agent1", &orgs, USAGES, SIGNER)).is_none());
        // Other signer, other usages.
        assert!(recognize(&csr("c1", cn, &orgs, USAGES, "example.com/signer")).is_none());
        assert!(recognize(&csr("c1", cn, &orgs, &["client auth", "server auth"], SIGNER)).is_none());
        // No label.
        let mut unlabelled = csr("c1", cn, &orgs, USAGES, SIGNER);
        unlabelled.metadata.labels = None;
        assert!(recognize(&unlabelled).is_none());
        // Not a PEM CSR.
        let mut garbage = csr("c1", cn, &orgs, USAGES, SIGNER);
        garbage.spec.request =
            ByteString(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec());
        assert!(recognize(&garbage).is_none());
    }

    #[test]
    fn terminal_csrs_are_detected() {
        let mut c = csr("c1", "system:open-cluster-management:c1:a", &[], USAGES, SIGNER);
        assert!(!is_terminal(&c));
        c.status = Some(Default::default());
        c.status.as_mut().unwrap().conditions = Some(vec![CertificateSigningRequestCondition {
            type_: "Denied".into(),
            status: "True".into(),
            ..Default::default()
        }]);
        assert!(is_terminal(&c));
    }
}
