//! In-process admission of the OCM hub kinds: ManagedClusters (mutating and validating),
//! ManagedClusterSetBindings and ManifestWorks (validating), with the rules of
//! [`ocm_api::admission`] — what upstream's cluster-manager serves as admission webhooks to
//! kube-apiserver.
//!
//! The control plane admits them when it serves as a hub: when it was started with
//! [`ControlPlaneBuilder::cluster_admission`](crate::ControlPlaneBuilder::cluster_admission) (the
//! `hub --embedded` binary, `serve --cluster-admission`). The rules then apply to
//! the custom resources `managedclusters` and `managedclustersetbindings` of
//! `cluster.open-cluster-management.io` and `manifestworks` of `work.open-cluster-management.io`
//! — present once the OCM CRDs are installed — on create,
//! update, patch and apply of the object itself (not of `/status`), dry runs included. A bare
//! control plane with the CRDs behaves as a kube-apiserver with the CRDs and no webhooks.
//!
//! Where kube-apiserver calls the webhooks, this module runs the same rules in-process:
//! mutation before the schema validation, validation after it and before the commit; the
//! permission checks ask the server's [`Authorizer`] (what a SubjectAccessReview would answer)
//! and read the cluster's namespace from storage. Refusals are the Status kube-apiserver relays
//! from upstream's webhooks, `admission webhook "<name>" denied the request: ...` included.

use std::sync::Arc;

use ocm_api::admission::{
    Answer, CLUSTER_GROUP, CLUSTER_SET_BINDING_VALIDATOR, Check, Denial, MANAGED_CLUSTER_MUTATOR,
    MANAGED_CLUSTER_VALIDATOR, MANIFEST_WORK_VALIDATOR, Operation, WORK_GROUP, Webhook, cluster_set_binding,
    managed_cluster, manifest_work,
};
use serde_json::Value;

use crate::authorization::{Attributes, Authorizer, Target};
use crate::registry::ResourceInfo;
use crate::rest::{Api, RequestContext};
use crate::status::ApiError;

/// How the hub admits its kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClusterAdmission {
    /// The mutating rules' options (the hub's gate DefaultClusterSet).
    pub mutate: managed_cluster::MutateOptions,
    /// The ManifestWork rules' options (manifest limit, gate NilExecutorValidating).
    pub work: manifest_work::ManifestWorkOptions,
}

/// The admission of a running server: its options and its authorizer.
#[derive(Debug, Clone)]
pub struct Admission {
    options: ClusterAdmission,
    authorizer: Arc<Authorizer>,
}

impl Admission {
    /// Admission with `options`, asking `authorizer` for the permission checks.
    pub fn new(options: ClusterAdmission, authorizer: Arc<Authorizer>) -> Self {
        Self { options, authorizer }
    }
}

/// Which admitted kind a request addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ManagedCluster,
    ClusterSetBinding,
    ManifestWork,
}

fn kind_of(info: &ResourceInfo, ctx: &RequestContext) -> Option<Kind> {
    if !info.is_custom() || ctx.subresource.as_deref().is_some_and(|s| !s.is_empty()) {
        return None;
    }
    match (info.group.as_str(), info.resource.as_str()) {
        (CLUSTER_GROUP, "managedclusters") => Some(Kind::ManagedCluster),
        (CLUSTER_GROUP, "managedclustersetbindings") => Some(Kind::ClusterSetBinding),
        (WORK_GROUP, "manifestworks") => Some(Kind::ManifestWork),
        _ => None,
    }
}

fn refused(denial: &Denial, webhook: &Webhook) -> ApiError {
    let status = denial.rejected_by(webhook);
    let mut error = ApiError::new(
        denial.code,
        denial.reason,
        status["message"].as_str().unwrap_or_default(),
    );
    if let Some(details) = status.get("details") {
        error = error.with_details(details.clone());
    }
    error
}

/// The mutating admission of `object` (`old` on update), when the server admits its kind.
///
/// # Errors
/// The refusal, as kube-apiserver relays it from upstream's mutating webhook.
pub(crate) fn mutate(
    api: &Api,
    info: &ResourceInfo,
    ctx: &RequestContext,
    object: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(admission) = &api.admission else {
        return Ok(());
    };
    if kind_of(info, ctx) != Some(Kind::ManagedCluster) {
        return Ok(());
    }
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    managed_cluster::mutate(object, old, &now, admission.options.mutate)
        .map_err(|d| refused(&d, &MANAGED_CLUSTER_MUTATOR))
}

/// The validating admission of `object` (`old` on update), when the server admits its kind.
///
/// # Errors
/// The refusal, as kube-apiserver relays it from upstream's validating webhooks.
pub(crate) async fn validate(
    api: &Api,
    info: &ResourceInfo,
    ctx: &RequestContext,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(admission) = &api.admission else {
        return Ok(());
    };
    let (checks, webhook) = match kind_of(info, ctx) {
        None => return Ok(()),
        Some(Kind::ManifestWork) => (
            manifest_work::validate(object, old, admission.options.work),
            MANIFEST_WORK_VALIDATOR,
        ),
        Some(Kind::ManagedCluster) => (managed_cluster::validate(object, old), MANAGED_CLUSTER_VALIDATOR),
        Some(Kind::ClusterSetBinding) => {
            let operation = if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            };
            (
                cluster_set_binding::validate(object, operation),
                CLUSTER_SET_BINDING_VALIDATOR,
            )
        }
    };
    let checks = checks.map_err(|d| refused(&d, &webhook))?;
    for check in checks {
        let answer = answer(api, admission, ctx, &check).await;
        check
            .judge(&answer, &ctx.user.name)
            .map_err(|d| refused(&d, &webhook))?;
    }
    Ok(())
}

async fn answer(api: &Api, admission: &Admission, ctx: &RequestContext, check: &Check) -> Answer {
    if let Check::ClusterNamespace { cluster } = check {
        let key = crate::storage::object_key("", "namespaces", None, cluster);
        return match api.storage.get(&key).await {
            Ok(Some(ns))
                if ns.object.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") =>
            {
                Answer::No
            }
            Ok(_) => Answer::Yes,
            Err(e) => Answer::Failed(e.to_string()),
        };
    }
    let Some(attributes) = check.attributes() else {
        return Answer::Failed("no attributes to check".into());
    };
    let asked = Attributes {
        verb: attributes.verb.to_string(),
        target: Target::Resource {
            namespace: attributes.namespace,
            group: attributes.group.to_string(),
            resource: attributes.resource.to_string(),
            subresource: attributes.subresource.to_string(),
            name: attributes.name,
        },
    };
    if admission.authorizer.authorize(&ctx.user, &asked).allowed() {
        Answer::Yes
    } else {
        Answer::No
    }
}
