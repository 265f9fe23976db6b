//! Answering one AdmissionReview: the rules of [`ocm_api::admission`], with the permission checks
//! made as SubjectAccessReviews for the requesting user and the cluster's namespace read from the
//! hub — what upstream's registration and work webhooks do.

use base64::Engine;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use ocm_api::admission::{
    Answer, Check, Denial, Operation, cluster_set_binding, managed_cluster, manifest_work,
};
use serde_json::{Value, json};

/// Which rules a path serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// The ManagedCluster mutating rules.
    MutateCluster,
    /// The ManagedCluster validating rules.
    ValidateCluster,
    /// The ManagedClusterSetBinding validating rules.
    ValidateBinding,
    /// The ManifestWork validating rules.
    ValidateWork,
}

/// What the review handler needs: the hub client and the rules' options.
#[derive(Clone)]
pub struct Reviewer {
    /// The hub client making SubjectAccessReviews and reading namespaces.
    pub client: kube::Client,
    /// The mutating rules' options.
    pub mutate: managed_cluster::MutateOptions,
    /// The ManifestWork rules' options.
    pub work: manifest_work::ManifestWorkOptions,
}

impl std::fmt::Debug for Reviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reviewer")
            .field("mutate", &self.mutate)
            .field("work", &self.work)
            .finish_non_exhaustive()
    }
}

/// The requester of a review (`request.userInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Requester {
    username: String,
    uid: Option<String>,
    groups: Vec<String>,
    extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl Requester {
    fn from_review(user: Option<&Value>) -> Self {
        let Some(user) = user else {
            return Self::default();
        };
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default()
        };
        Self {
            username: user
                .get("username")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            uid: user.get("uid").and_then(Value::as_str).map(str::to_string),
            groups: user.get("groups").map(strings).unwrap_or_default(),
            extra: user
                .get("extra")
                .and_then(Value::as_object)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
                .unwrap_or_default(),
        }
    }
}

impl Reviewer {
    /// The AdmissionReview answering `review` (a request of `admission.k8s.io/v1` or `v1beta1`)
    /// under `rules`.
    pub async fn review(&self, rules: Rules, review: &Value) -> Value {
        let api_version = review
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("admission.k8s.io/v1")
            .to_string();
        let request = review.get("request").cloned().unwrap_or(Value::Null);
        let uid = request.get("uid").cloned().unwrap_or(json!(""));
        let response = match self.decide(rules, &request).await {
            Ok(None) => json!({"uid": uid, "allowed": true}),
            Ok(Some(ops)) => {
                let mut r = json!({"uid": uid, "allowed": true});
                if !ops.is_empty() {
                    let patch = serde_json::to_vec(&ops).unwrap_or_default();
                    r["patchType"] = json!("JSONPatch");
                    r["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch));
                }
                r
            }
            Err(denial) => json!({"uid": uid, "allowed": false, "status": denial.status()}),
        };
        json!({"apiVersion": api_version, "kind": "AdmissionReview", "response": response})
    }

    /// `Ok(None)`: allowed as is; `Ok(Some(ops))`: allowed with the patch `ops`.
    async fn decide(&self, rules: Rules, request: &Value) -> Result<Option<Vec<Value>>, Denial> {
        let operation = match request.get("operation").and_then(Value::as_str) {
            Some("CREATE") => Operation::Create,
            Some("UPDATE") => Operation::Update,
            // DELETE and CONNECT need nothing (upstream registers CREATE and UPDATE only).
            _ => return Ok(None),
        };
        let object = match request.get("object") {
            Some(o) if o.is_object() => o.clone(),
            _ => return Err(Denial::bad_request("there is no content to decode")),
        };
        let old = match (operation, request.get("oldObject")) {
            (Operation::Update, Some(o)) if o.is_object() => Some(o.clone()),
            _ => None,
        };
        let requester = Requester::from_review(request.get("userInfo"));
        let checks = match rules {
            Rules::MutateCluster => {
                let mut mutated = object.clone();
                let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
                managed_cluster::mutate(&mut mutated, old.as_ref(), &now, self.mutate)?;
                return Ok(Some(ocm_api::admission::patch_operations(&object, &mutated)));
            }
            Rules::ValidateCluster => managed_cluster::validate(&object, old.as_ref())?,
            Rules::ValidateBinding => cluster_set_binding::validate(&object, operation)?,
            Rules::ValidateWork => manifest_work::validate(&object, old.as_ref(), self.work)?,
        };
        for check in checks {
            let answer = self.answer(&check, &requester).await;
            check.judge(&answer, &requester.username)?;
        }
        Ok(None)
    }

    async fn answer(&self, check: &Check, requester: &Requester) -> Answer {
        if let Check::ClusterNamespace { cluster } = check {
            return match Api::<Namespace>::all(self.client.clone()).get_opt(cluster).await {
                Ok(Some(ns))
                    if ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating") =>
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
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(requester.username.clone()),
                uid: requester.uid.clone(),
                groups: Some(requester.groups.clone()),
                extra: (!requester.extra.is_empty()).then(|| requester.extra.clone()),
                resource_attributes: Some(ResourceAttributes {
                    namespace: attributes.namespace,
                    group: Some(attributes.group.to_string()),
                    resource: Some(attributes.resource.to_string()),
                    subresource: Some(attributes.subresource.to_string()),
                    verb: Some(attributes.verb.to_string()),
                    name: Some(attributes.name),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        match Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
        {
            Ok(answered) if answered.status.as_ref().is_some_and(|s| s.allowed) => Answer::Yes,
            Ok(_) => Answer::No,
            Err(e) => Answer::Failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requester_from_user_info() {
        let user = json!({"username": "u", "uid": "1", "groups": ["g1", "g2"], "extra": {"k": ["v"]}});
        let r = Requester::from_review(Some(&user));
        assert_eq!(r.username, "u");
        assert_eq!(r.uid.as_deref(), Some("1"));
        assert_eq!(r.groups, vec!["g1", "g2"]);
        assert_eq!(r.extra.get("k"), Some(&vec!["v".to_string()]));
        assert_eq!(Requester::from_review(None), Requester::default());
    }
}
