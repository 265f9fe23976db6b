//! The executor of a ManifestWork (`spec.executor`): a ServiceAccount of the managed cluster in
//! whose name the agent applies the manifests, so that a work can do no more than that account
//! may.
//!
//! Before applying a manifest the agent asks the managed cluster, with one SubjectAccessReview
//! per verb, whether the account (user `system:serviceaccount:<ns>:<name>`, groups
//! `system:serviceaccounts`, `system:serviceaccounts:<ns>`, `system:authenticated`) may
//! `create`, `update`, `patch` and `get` the object — and `delete` it when the work owns it (a
//! resource the work orphans needs no delete permission). For Roles, ClusterRoles and their
//! bindings it also creates the object with `dryRun=All` while impersonating the account, so
//! that the API server's escalation check (`escalate`/`bind`) decides; `AlreadyExists` counts as
//! allowed. A denial is [`ExecutorError::NotAllowed`]: the apply path reports it in the
//! manifest's `Applied` condition and tries again after [`NOT_ALLOWED_REQUEUE`]. A work without
//! executor is applied with the agent's own identity, unchecked.
//!
//! With the `ExecutorValidatingCaches` feature, SubjectAccessReview answers are remembered per
//! executor and object (and whether delete was asked). [`ExecutorValidator::run_cache_invalidation`]
//! watches the managed cluster's RBAC objects: a change of a (Cluster)RoleBinding forgets the
//! answers of the ServiceAccounts among its subjects, a change of a (Cluster)Role forgets all
//! answers, and every 10 minutes all answers are forgotten. (Upstream re-asks eagerly on those
//! events and drops entries no work needs any more; forgetting gives the same answers, asked
//! again when next needed.) The escalation check is never cached.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, Subject};
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use kube::{Client, Resource};
use ocm_api::work::v1::{ManifestWorkExecutor, ManifestWorkExecutorSubjectType};
use serde_json::Value;

/// How long the apply path waits before trying a manifest the executor may not apply again.
pub const NOT_ALLOWED_REQUEUE: Duration = Duration::from_secs(60);

/// How often the answer cache is emptied when nothing else invalidated it.
const CACHE_RESYNC: Duration = Duration::from_secs(10 * 60);

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Why a manifest may not be applied with its work's executor, or why checking failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The executor may not apply the object: reported in the manifest's `Applied` condition and
    /// tried again after [`NOT_ALLOWED_REQUEUE`] (the message ends like upstream's, `, will try
    /// again in 1m0s`).
    #[error("{message}, will try again in 1m0s")]
    NotAllowed {
        /// What was not allowed.
        message: String,
    },
    /// The executor is not a ServiceAccount.
    #[error("only support ServiceAccount type for the executor")]
    UnsupportedSubject,
    /// The executor names no ServiceAccount.
    #[error("the executor service account is nil")]
    MissingServiceAccount,
    /// Creating a SubjectAccessReview on the managed cluster failed.
    #[error("{source}")]
    SubjectAccessReview {
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The impersonated dry-run create of an RBAC object failed for another reason than a
    /// denial or an existing object.
    #[error("{source}")]
    EscalationCheck {
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Building the impersonated dry-run request failed.
    #[error("failed to build the escalation check request for {path}: {message}")]
    BuildRequest {
        /// The request path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Watching RBAC objects for the answer cache failed.
    #[error("failed to watch {kind} for the executor cache: {source}")]
    WatchRbac {
        /// The watched kind.
        kind: &'static str,
        /// The watch error.
        #[source]
        source: watcher::Error,
    },
}

impl ExecutorError {
    /// Whether this is a denial ([`ExecutorError::NotAllowed`]) rather than a failure.
    #[must_use]
    pub const fn is_not_allowed(&self) -> bool {
        matches!(self, Self::NotAllowed { .. })
    }
}

/// The object a manifest applies, as the executor checks see it.
#[derive(Debug, Clone, Copy)]
pub struct ExecutorTarget<'a> {
    /// API group, `""` for the core group.
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Resource (plural).
    pub resource: &'a str,
    /// Namespace, `""` for cluster-scoped objects.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
    /// The manifest, used for the dry-run create of RBAC objects.
    pub object: &'a Value,
}

/// What one cached answer is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Dimension {
    group: String,
    version: String,
    resource: String,
    namespace: String,
    name: String,
    delete: bool,
}

/// Cached answers: executor key `<ns>/<name>` → object → allowed.
type Answers = HashMap<String, HashMap<Dimension, bool>>;

/// Checks manifests against their work's executor; cheap to clone.
#[derive(Clone)]
pub struct ExecutorValidator {
    spoke: Client,
    cache: Option<Arc<Mutex<Answers>>>,
}

impl std::fmt::Debug for ExecutorValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorValidator")
            .field("cached", &self.cache.is_some())
            .finish_non_exhaustive()
    }
}

/// The username of a ServiceAccount.
fn username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The groups of a ServiceAccount.
fn groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".into(),
        "system:authenticated".into(),
        format!("system:serviceaccounts:{namespace}"),
    ]
}

fn not_allowed(target: &ExecutorTarget<'_>) -> String {
    format!(
        "not allowed to apply the resource {} {}, {} {}",
        target.group, target.resource, target.namespace, target.name
    )
}

impl ExecutorValidator {
    /// A validator asking `spoke`; `caches` turns the answer cache on (`ExecutorValidatingCaches`).
    #[must_use]
    pub fn new(spoke: Client, caches: bool) -> Self {
        Self {
            spoke,
            cache: caches.then(|| Arc::new(Mutex::new(HashMap::new()))),
        }
    }

    /// Checks that `executor` (none: nothing to check) may apply `target`; `owned` tells
    /// whether the work owns it (and so may delete it).
    ///
    /// # Errors
    /// [`ExecutorError::NotAllowed`] when the executor may not; other variants when the
    /// executor is malformed or asking the managed cluster failed.
    pub async fn check(
        &self,
        executor: Option<&ManifestWorkExecutor>,
        target: &ExecutorTarget<'_>,
        owned: bool,
    ) -> Result<(), ExecutorError> {
        let Some(executor) = executor else {
            return Ok(());
        };
        let subject = executor.subject.as_ref();
        if subject.is_some_and(|s| s.type_ != ManifestWorkExecutorSubjectType::ServiceAccount) {
            return Err(ExecutorError::UnsupportedSubject);
        }
        let Some(sa) = subject.and_then(|s| s.service_account.as_ref()) else {
            return Err(ExecutorError::MissingServiceAccount);
        };
        let key = format!("{}/{}", sa.namespace, sa.name);
        let dimension = Dimension {
            group: target.group.into(),
            version: target.version.into(),
            resource: target.resource.into(),
            namespace: target.namespace.into(),
            name: target.name.into(),
            delete: owned,
        };
        match self.cached(&key, &dimension) {
            Some(true) => {}
            Some(false) => {
                return Err(ExecutorError::NotAllowed {
                    message: not_allowed(target),
                });
            }
            None => {
                let allowed = self
                    .subject_access_reviews(&sa.namespace, &sa.name, target, owned)
                    .await?;
                self.remember(key, dimension, allowed);
                if !allowed {
                    return Err(ExecutorError::NotAllowed {
                        message: not_allowed(target),
                    });
                }
            }
        }
        self.escalation(&sa.namespace, &sa.name, target).await
    }

    fn cached(&self, key: &str, dimension: &Dimension) -> Option<bool> {
        let cache = self.cache.as_ref()?;
        let answers = cache.lock().unwrap_or_else(PoisonError::into_inner);
        answers.get(key)?.get(dimension).copied()
    }

    fn remember(&self, key: String, dimension: Dimension, allowed: bool) {
        if let Some(cache) = &self.cache {
            cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key)
                .or_default()
                .insert(dimension, allowed);
        }
    }

    /// Whether every verb is allowed, asking one review per verb and stopping at the first
    /// denial.
    async fn subject_access_reviews(
        &self,
        sa_namespace: &str,
        sa_name: &str,
        target: &ExecutorTarget<'_>,
        owned: bool,
    ) -> Result<bool, ExecutorError> {
        let api: Api<SubjectAccessReview> = Api::all(self.spoke.clone());
        let verbs: &[&str] = if owned {
            &["create", "update", "patch", "get", "delete"]
        } else {
            &["create", "update", "patch", "get"]
        };
        for verb in verbs {
            let review = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(username(sa_namespace, sa_name)),
                    groups: Some(groups(sa_namespace)),
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(target.group.into()),
                        version: Some(target.version.into()),
                        resource: Some(target.resource.into()),
                        namespace: Some(target.namespace.into()),
                        name: Some(target.name.into()),
                        verb: Some((*verb).into()),
                        ..ResourceAttributes::default()
                    }),
                    ..SubjectAccessReviewSpec::default()
                },
                ..SubjectAccessReview::default()
            };
            let answered = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|source| ExecutorError::SubjectAccessReview { source })?;
            if !answered.status.is_some_and(|s| s.allowed) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// For RBAC objects: a dry-run create as the executor, so the API server's escalation
    /// check decides.
    async fn escalation(
        &self,
        sa_namespace: &str,
        sa_name: &str,
        target: &ExecutorTarget<'_>,
    ) -> Result<(), ExecutorError> {
        if target.group != RBAC_GROUP
            || !matches!(
                target.resource,
                "roles" | "rolebindings" | "clusterroles" | "clusterrolebindings"
            )
        {
            return Ok(());
        }
        let namespace = if target.namespace.is_empty() {
            String::new()
        } else {
            format!("/namespaces/{}", target.namespace)
        };
        let path = format!(
            "/apis/{}/{}{namespace}/{}?dryRun=All",
            target.group, target.version, target.resource
        );
        let build = |message: String| ExecutorError::BuildRequest {
            path: path.clone(),
            message,
        };
        let body = serde_json::to_vec(target.object).map_err(|e| build(e.to_string()))?;
        let request = http::Request::post(&path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header("Impersonate-User", username(sa_namespace, sa_name))
            .body(body)
            .map_err(|e| build(e.to_string()))?;
        match self.spoke.request::<Value>(request).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 403 => Err(ExecutorError::NotAllowed {
                message: format!("{}, error: permission escalation", not_allowed(target)),
            }),
            Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => Ok(()),
            Err(source) => Err(ExecutorError::EscalationCheck { source }),
        }
    }

    /// Forgets the answers of the given executors (`<ns>/<name>`), or all of them.
    fn forget(&self, executors: Option<&HashSet<String>>) {
        let Some(cache) = &self.cache else { return };
        let mut answers = cache.lock().unwrap_or_else(PoisonError::into_inner);
        match executors {
            Some(keys) => answers.retain(|k, _| !keys.contains(k)),
            None => answers.clear(),
        }
    }

    /// Keeps the answer cache true to the managed cluster's RBAC until an RBAC watch fails;
    /// returns at once when caching is off.
    ///
    /// # Errors
    /// [`ExecutorError::WatchRbac`] when a watch fails for good.
    pub async fn run_cache_invalidation(&self) -> Result<(), ExecutorError> {
        if self.cache.is_none() {
            return Ok(());
        }
        let bindings = self.watch_bindings::<RoleBinding>("RoleBinding", |b| b.subjects.as_deref());
        let cluster_bindings =
            self.watch_bindings::<ClusterRoleBinding>("ClusterRoleBinding", |b| b.subjects.as_deref());
        let roles = self.watch_roles::<Role>("Role");
        let cluster_roles = self.watch_roles::<ClusterRole>("ClusterRole");
        let resync = async {
            let mut ticker = tokio::time::interval(CACHE_RESYNC);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                self.forget(None);
            }
        };
        tokio::select! {
            r = bindings => r,
            r = cluster_bindings => r,
            r = roles => r,
            r = cluster_roles => r,
            () = resync => Ok(()),
        }
    }

    async fn watch_bindings<K>(
        &self,
        kind: &'static str,
        subjects: impl Fn(&K) -> Option<&[Subject]>,
    ) -> Result<(), ExecutorError>
    where
        K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        K: Send + Sync + 'static,
    {
        let api: Api<K> = Api::all(self.spoke.clone());
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = events
            .try_next()
            .await
            .map_err(|source| ExecutorError::WatchRbac { kind, source })?
        {
            if let watcher::Event::Apply(binding) | watcher::Event::Delete(binding) = event {
                let executors: HashSet<String> = subjects(&binding)
                    .unwrap_or_default()
                    .iter()
                    .filter(|s| s.kind == "ServiceAccount")
                    .map(|s| format!("{}/{}", s.namespace.as_deref().unwrap_or_default(), s.name))
                    .collect();
                if !executors.is_empty() {
                    self.forget(Some(&executors));
                }
            }
        }
        Ok(())
    }

    async fn watch_roles<K>(&self, kind: &'static str) -> Result<(), ExecutorError>
    where
        K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        K: Send + Sync + 'static,
    {
        let api: Api<K> = Api::all(self.spoke.clone());
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = events
            .try_next()
            .await
            .map_err(|source| ExecutorError::WatchRbac { kind, source })?
        {
            if matches!(event, watcher::Event::Apply(_) | watcher::Event::Delete(_)) {
                self.forget(None);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_of_a_service_account() {
        assert_eq!(username("ns", "sa"), "system:serviceaccount:ns:sa");
        assert_eq!(
            groups("ns"),
            vec![
                "system:serviceaccounts",
                "system:authenticated",
                "system:serviceaccounts:ns"
            ]
        );
    }

    #[test]
    fn not_allowed_messages_match_upstream() {
        let object = Value::Null;
        let target = ExecutorTarget {
            group: "",
            version: "v1",
            resource: "configmaps",
            namespace: "ns",
            name: "cm1",
            object: &object,
        };
        let error = ExecutorError::NotAllowed {
            message: not_allowed(&target),
        };
        assert!(error.is_not_allowed());
        assert_eq!(
            error.to_string(),
            "not allowed to apply the resource  configmaps, ns cm1, will try again in 1m0s"
        );
        assert!(!ExecutorError::MissingServiceAccount.is_not_allowed());
    }
}
