//! In-process controllers: the parts of kube-controller-manager (and kube-apiserver's own
//! controllers) that clients of a Kubernetes API expect to run.
//!
//! | what | where |
//! |---|---|
//! | built-in namespaces from the first start | [`bootstrap`] |
//! | `kube-root-ca.crt` and the `default` ServiceAccount in every namespace | [`namespace_defaults`] |
//! | the `kube-controller-manager` leader-election Lease, renewed every 2 s | [`leader_lease`] |
//! | owner references: background, foreground and orphan deletion | [`garbage_collector`] |
//! | namespace deletion: content removal, conditions, the `kubernetes` finalizer | [`namespace_lifecycle`] |
//! | ClusterRoles with an `aggregationRule` | [`clusterrole_aggregation`] |
//! | `kube-system/extension-apiserver-authentication` (the client CA) | [`authentication_trust`] |
//! | CRD deletion: the `customresourcecleanup` finalizer, custom resources deleted first | [`crd_deletion`] |
//!
//! They work on the server's [`Api`] and follow the storage's watch directly.

pub mod authentication_trust;
pub mod clusterrole_aggregation;
pub mod crd_deletion;
pub mod csr_signing;
pub mod garbage_collector;
pub mod leader_lease;
pub mod namespace_defaults;
pub mod namespace_lifecycle;

use std::sync::Arc;

use serde_json::Value;

use crate::registry::ResourceInfo;

use crate::auth::UserInfo;
use crate::rest::{Api, RequestContext};
use crate::status::ApiError;

/// The parts of a storage key (`/<group>/<resource>[/<namespace>]/<name>`, see
/// [`crate::storage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyParts<'a> {
    /// The storage group (`core` for the core group).
    pub group: &'a str,
    /// The storage resource.
    pub resource: &'a str,
    /// The namespace of a namespaced object.
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
}

impl<'a> KeyParts<'a> {
    /// Splits a storage key; `None` for anything else.
    pub fn parse(key: &'a str) -> Option<Self> {
        let mut parts = key.strip_prefix('/')?.split('/');
        let group = parts.next()?;
        let resource = parts.next()?;
        let third = parts.next()?;
        let (namespace, name) = match parts.next() {
            Some(name) => (Some(third), name),
            None => (None, third),
        };
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            group,
            resource,
            namespace,
            name,
        })
    }

    /// The API group ("" for core).
    pub fn api_group(&self) -> &'a str {
        if self.group == "core" { "" } else { self.group }
    }
}

/// One served type per stored resource: the version objects are read and written through (for
/// custom resources the storage version when it is served, else the preferred one).
pub(crate) fn stored_types(api: &Api) -> Vec<Arc<ResourceInfo>> {
    let mut out: Vec<Arc<ResourceInfo>> = Vec::new();
    for info in api.registry.all() {
        if info.behavior.is_none()
            || info.group != info.storage_group
            || info.resource != info.storage_resource
        {
            continue;
        }
        let rank = |i: &ResourceInfo| {
            let storage = i.custom.as_ref().is_some_and(|c| c.storage_version == i.version);
            let order = api.registry.versions(&i.group);
            let position = order.iter().position(|v| *v == i.version).unwrap_or(usize::MAX);
            (!storage, position)
        };
        match out
            .iter_mut()
            .find(|o| o.group == info.group && o.resource == info.resource)
        {
            Some(existing) if rank(&info) < rank(existing) => *existing = info,
            Some(_) => {}
            None => out.push(info),
        }
    }
    out
}

/// The served type a stored object is read and written through: the version it names when that
/// is served, else the one [`stored_types`] picks.
pub(crate) fn type_of(api: &Api, parts: &KeyParts<'_>, object: &Value) -> Option<Arc<ResourceInfo>> {
    let group = parts.api_group();
    let own_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(|v| v.rsplit('/').next().unwrap_or(v));
    if let Some(version) = own_version
        && let Some(info) = api.registry.get(group, version, parts.resource)
        && info.behavior.is_some()
        && info.storage_group == group
    {
        return Some(info);
    }
    stored_types(api)
        .into_iter()
        .find(|i| i.group == group && i.resource == parts.resource)
}

/// The identity in-process controllers write as (their manager is the User-Agent prefix).
pub(crate) fn controller_context(user_agent: &str, namespace: Option<&str>) -> RequestContext {
    RequestContext {
        namespace: namespace.map(str::to_string),
        user_agent: Some(user_agent.into()),
        user: UserInfo {
            name: "system:kube-controller-manager".into(),
            groups: vec!["system:authenticated".into()],
        },
        ..Default::default()
    }
}

/// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease` if missing.
///
/// # Errors
/// The first failure to create one of them, other than its already existing.
pub async fn bootstrap(api: &Api) -> Result<(), ApiError> {
    let Some(info) = api.registry.get("", "v1", "namespaces") else {
        return Err(ApiError::new(
            500,
            "InternalError",
            "the namespaces resource is not registered",
        ));
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ctx = RequestContext {
            user_agent: Some("kube-apiserver".into()),
            user: UserInfo {
                name: "system:apiserver".into(),
                groups: vec!["system:masters".into()],
            },
            ..Default::default()
        };
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match api.create(&info, &ctx, body.to_string().as_bytes()).await {
            Ok(_) => {}
            Err(error) if error.code == 409 => namespace_defaults::publish(api, ns).await,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
