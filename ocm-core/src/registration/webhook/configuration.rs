//! The MutatingWebhookConfiguration and ValidatingWebhookConfigurations that point kube-apiserver
//! at the webhook server, as upstream's cluster-manager registers them (CREATE and UPDATE,
//! failure policy Fail, 10 s timeout, no side effects), by URL or by Service, with the server's
//! CA as `caBundle`.

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use ocm_api::admission::{
    CLUSTER_SET_BINDING_VALIDATOR, MANAGED_CLUSTER_MUTATOR, MANAGED_CLUSTER_VALIDATOR,
    MANIFEST_WORK_VALIDATOR, Webhook,
};
use serde_json::{Value, json};

use super::WebhookError;

/// The field manager of the configurations.
const FIELD_MANAGER: &str = "registration-webhook";

/// How kube-apiserver reaches the webhook server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// By URL: `https://HOST:PORT` (e.g. the loopback address the server listens on).
    Url(String),
    /// By Service, when the server runs in the cluster (upstream:
    /// `open-cluster-management-hub/cluster-manager-registration-webhook`).
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: i32,
    },
}

/// What to register.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    /// Where the server is.
    pub endpoint: Endpoint,
    /// The server's CA (PEM), the configurations' `caBundle`.
    pub ca_pem: String,
    /// Appended to the configurations' names (`<webhook name>-<suffix>`); `None` registers
    /// upstream's names. The webhooks inside keep upstream's names, which kube-apiserver quotes
    /// in refusals.
    pub name_suffix: Option<String>,
    /// Only objects whose labels match this label selector (`metav1.LabelSelector` JSON) are sent
    /// to the server; `None` sends every object.
    pub object_selector: Option<Value>,
}

impl Registration {
    fn configuration_name(&self, webhook: &Webhook) -> String {
        match &self.name_suffix {
            Some(suffix) => format!("{}-{suffix}", webhook.name),
            None => webhook.name.to_string(),
        }
    }

    fn webhook(&self, webhook: &Webhook) -> Value {
        let mut client_config = match &self.endpoint {
            Endpoint::Url(base) => json!({"url": format!("{}{}", base.trim_end_matches('/'), webhook.path)}),
            Endpoint::Service {
                namespace,
                name,
                port,
            } => json!({"service": {
                "namespace": namespace, "name": name, "path": webhook.path, "port": port}}),
        };
        client_config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(&self.ca_pem));
        let mut hook = json!({
            "name": webhook.name,
            "failurePolicy": "Fail",
            "clientConfig": client_config,
            "rules": [{
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [webhook.group],
                "apiVersions": webhook.versions,
                "resources": [webhook.resource],
            }],
            "admissionReviewVersions": ["v1beta1", "v1"],
            "sideEffects": "None",
            "timeoutSeconds": 10,
        });
        if let Some(selector) = &self.object_selector {
            hook["objectSelector"] = selector.clone();
        }
        hook
    }

    /// The MutatingWebhookConfiguration of ManagedClusters.
    pub fn mutating(&self) -> Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": self.configuration_name(&MANAGED_CLUSTER_MUTATOR)},
            "webhooks": [self.webhook(&MANAGED_CLUSTER_MUTATOR)],
        })
    }

    /// The ValidatingWebhookConfigurations of ManagedClusters, ManagedClusterSetBindings and
    /// ManifestWorks.
    pub fn validating(&self) -> [Value; 3] {
        [
            MANAGED_CLUSTER_VALIDATOR,
            CLUSTER_SET_BINDING_VALIDATOR,
            MANIFEST_WORK_VALIDATOR,
        ]
        .map(|w| {
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": self.configuration_name(&w)},
                "webhooks": [self.webhook(&w)],
            })
        })
    }

    /// Creates or updates the four configurations (server-side apply).
    ///
    /// # Errors
    /// [`WebhookError::Register`] when the hub refuses one.
    pub async fn apply(&self, client: &kube::Client) -> Result<(), WebhookError> {
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let mutating = self.mutating();
        let name = meta_name(&mutating);
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .patch(&name, &params, &Patch::Apply(&mutating))
            .await
            .map_err(|source| WebhookError::Register { name, source })?;
        for validating in self.validating() {
            let name = meta_name(&validating);
            Api::<ValidatingWebhookConfiguration>::all(client.clone())
                .patch(&name, &params, &Patch::Apply(&validating))
                .await
                .map_err(|source| WebhookError::Register { name, source })?;
        }
        Ok(())
    }

    /// Deletes the four configurations (those already gone are skipped).
    ///
    /// # Errors
    /// [`WebhookError::Unregister`] when the hub refuses a deletion.
    pub async fn remove(&self, client: &kube::Client) -> Result<(), WebhookError> {
        let gone = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 404);
        let name = self.configuration_name(&MANAGED_CLUSTER_MUTATOR);
        match Api::<MutatingWebhookConfiguration>::all(client.clone())
            .delete(&name, &DeleteParams::default())
            .await
        {
            Err(e) if !gone(&e) => return Err(WebhookError::Unregister { name, source: e }),
            _ => {}
        }
        for w in [
            MANAGED_CLUSTER_VALIDATOR,
            CLUSTER_SET_BINDING_VALIDATOR,
            MANIFEST_WORK_VALIDATOR,
        ] {
            let name = self.configuration_name(&w);
            match Api::<ValidatingWebhookConfiguration>::all(client.clone())
                .delete(&name, &DeleteParams::default())
                .await
            {
                Err(e) if !gone(&e) => return Err(WebhookError::Unregister { name, source: e }),
                _ => {}
            }
        }
        Ok(())
    }
}

fn meta_name(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_as_upstream_registers_them() {
        let r = Registration {
            endpoint: Endpoint::Url("https://127.0.0.1:9443/".into()),
            ca_pem: "CA".into(),
            name_suffix: None,
            object_selector: None,
        };
        let m = r.mutating();
        assert_eq!(m["metadata"]["name"], MANAGED_CLUSTER_MUTATOR.name);
        let hook = &m["webhooks"][0];
        assert_eq!(hook["name"], MANAGED_CLUSTER_MUTATOR.name);
        assert_eq!(
            hook["clientConfig"]["url"],
            "https://127.0.0.1:9443/mutate-cluster-open-cluster-management-io-v1-managedcluster"
        );
        assert_eq!(hook["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["rules"][0]["apiVersions"], json!(["*"]));
        let [cluster, binding, work] = r.validating();
        assert_eq!(
            cluster["webhooks"][0]["rules"][0]["resources"],
            json!(["managedclusters"])
        );
        assert_eq!(
            work["webhooks"][0]["rules"][0],
            json!({"operations": ["CREATE", "UPDATE"], "apiGroups": ["work.open-cluster-management.io"],
                "apiVersions": ["*"], "resources": ["manifestworks"]})
        );
        assert_eq!(
            work["webhooks"][0]["clientConfig"]["url"],
            "https://127.0.0.1:9443/validate-work-open-cluster-management-io-v1-manifestwork"
        );
        assert_eq!(
            binding["webhooks"][0]["rules"][0]["apiVersions"],
            json!(["v1beta2"])
        );
        let r = Registration {
            endpoint: Endpoint::Service {
                namespace: "ns".into(),
                name: "svc".into(),
                port: 9443,
            },
            name_suffix: Some("t1".into()),
            object_selector: Some(json!({"matchLabels": {"a": "b"}})),
            ..r
        };
        let [cluster, _, _] = r.validating();
        assert_eq!(
            cluster["metadata"]["name"],
            format!("{}-t1", MANAGED_CLUSTER_VALIDATOR.name)
        );
        assert_eq!(cluster["webhooks"][0]["name"], MANAGED_CLUSTER_VALIDATOR.name);
        assert_eq!(
            cluster["webhooks"][0]["clientConfig"]["service"],
            json!({"namespace": "ns", "name": "svc", "path": MANAGED_CLUSTER_VALIDATOR.path, "port": 9443})
        );
        assert_eq!(
            cluster["webhooks"][0]["objectSelector"],
            json!({"matchLabels": {"a": "b"}})
        );
    }
}
