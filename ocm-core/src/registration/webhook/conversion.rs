//! The add-on conversion webhook (addon-framework.md §0: real hubs store the add-on kinds as
//! v1alpha1 and convert them to v1beta1 through a webhook): ConversionReviews answered with
//! [`ocm_api::addon::conversion::convert_object`] — the rules the embedded control plane runs
//! in-process — at upstream's path `/convert`, and the CRD settings that point kube-apiserver at
//! it.
//!
//! Upstream's hub serves it from the `cluster-manager-addon-webhook` Service; `hub
//! --webhook-bind-address` serves it beside the admission webhooks and switches the add-on CRDs
//! to strategy `Webhook` (by URL or by Service, with the server's CA).

use base64::Engine;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use ocm_api::addon::conversion::convert_object;
use serde_json::{Value, json};

use super::{Endpoint, WebhookError};

/// The path kube-apiserver posts ConversionReviews to (upstream's).
pub const CONVERSION_PATH: &str = "/convert";

/// The add-on CRDs served at two versions, which the webhook converts.
pub const CONVERTED_CRDS: [&str; 4] = [
    "clustermanagementaddons.addon.open-cluster-management.io",
    "managedclusteraddons.addon.open-cluster-management.io",
    "addondeploymentconfigs.addon.open-cluster-management.io",
    "addontemplates.addon.open-cluster-management.io",
];

/// The answer to one ConversionReview (`apiextensions.k8s.io/v1` or `v1beta1`): every object
/// converted to `desiredAPIVersion`, or a `Failure` naming the first object that could not be.
pub fn review(review: &Value) -> Value {
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("apiextensions.k8s.io/v1");
    let request = review.get("request").cloned().unwrap_or(Value::Null);
    let uid = request
        .get("uid")
        .cloned()
        .unwrap_or(Value::String(String::new()));
    let desired = request
        .get("desiredAPIVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let objects = request
        .get("objects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut converted = Vec::with_capacity(objects.len());
    let mut failure = None;
    for (index, object) in objects.iter().enumerate() {
        match convert_object(object, desired) {
            Ok(object) => converted.push(object),
            Err(error) => {
                let name = object
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                failure = Some(format!("converting object {index} ({name}): {error}"));
                break;
            }
        }
    }
    let response = match failure {
        None => json!({"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}}),
        Some(message) => {
            tracing::warn!(%message, desired, "add-on conversion failed");
            json!({"uid": uid, "convertedObjects": [], "result": {"status": "Failure", "message": message}})
        }
    };
    json!({"apiVersion": api_version, "kind": "ConversionReview", "response": response})
}

/// The `spec.conversion` of a converted CRD that sends ConversionReviews to `endpoint`.
pub fn webhook_conversion(endpoint: &Endpoint, ca_pem: &str) -> Value {
    let mut client_config = match endpoint {
        Endpoint::Url(base) => json!({"url": format!("{}{CONVERSION_PATH}", base.trim_end_matches('/'))}),
        Endpoint::Service {
            namespace,
            name,
            port,
        } => {
            json!({"service": {"namespace": namespace, "name": name, "path": CONVERSION_PATH, "port": port}})
        }
    };
    client_config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(ca_pem));
    json!({"strategy": "Webhook", "webhook": {
        "clientConfig": client_config, "conversionReviewVersions": ["v1", "v1beta1"]}})
}

/// Points every installed CRD of [`CONVERTED_CRDS`] at `endpoint` (a JSON merge patch of
/// `spec.conversion`); CRDs not installed are skipped. Returns the CRDs changed.
///
/// # Errors
/// [`WebhookError::Register`] when the hub refuses a patch.
pub async fn register(
    client: &kube::Client,
    endpoint: &Endpoint,
    ca_pem: &str,
) -> Result<Vec<String>, WebhookError> {
    patch_crds(
        client,
        json!({"spec": {"conversion": webhook_conversion(endpoint, ca_pem)}}),
    )
    .await
}

/// Sets the converted CRDs back to strategy `None` (when the server stops for good and nothing
/// else would answer kube-apiserver's conversions).
///
/// # Errors
/// [`WebhookError::Unregister`] when the hub refuses a patch.
pub async fn unregister(client: &kube::Client) -> Result<Vec<String>, WebhookError> {
    patch_crds(
        client,
        json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}}),
    )
    .await
    .map_err(|error| match error {
        WebhookError::Register { name, source } => WebhookError::Unregister { name, source },
        other => other,
    })
}

async fn patch_crds(client: &kube::Client, patch: Value) -> Result<Vec<String>, WebhookError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut changed = Vec::new();
    for name in CONVERTED_CRDS {
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => changed.push(name.to_string()),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(WebhookError::Register {
                    name: name.to_string(),
                    source,
                });
            }
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alpha_addon() -> Value {
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn",
            "metadata": {"name": "helloworld", "namespace": "cluster1"},
            "spec": {"installNamespace": "default"},
            "status": {"registrations": [{"signerName": "kubernetes.io/kube-apiserver-client",
                "subject": {"user": "u", "groups": ["g"]}}]}})
    }

    #[test]
    fn converts_every_object_to_the_desired_version() {
        let answer = review(
            &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": "addon.open-cluster-management.io/v1beta1",
                "objects": [alpha_addon()]}}),
        );
        assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(answer["response"]["uid"], "u-1");
        assert_eq!(answer["response"]["result"]["status"], "Success");
        let converted = &answer["response"]["convertedObjects"][0];
        assert_eq!(
            converted["apiVersion"],
            "addon.open-cluster-management.io/v1beta1"
        );
        assert_eq!(
            converted["metadata"]["annotations"]["addon.open-cluster-management.io/v1alpha1-install-namespace"],
            "default"
        );
        assert_eq!(converted["status"]["registrations"][0]["type"], "kubeClient");
        assert_eq!(
            converted["status"]["registrations"][0]["kubeClient"]["subject"]["user"],
            "u"
        );
    }

    #[test]
    fn an_object_that_cannot_be_converted_fails_the_review_with_its_name() {
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
        let answer = review(
            &json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
            "request": {"uid": "u-2", "desiredAPIVersion": "addon.open-cluster-management.io/v1beta1",
                "objects": [alpha_addon(), other]}}),
        );
        assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1beta1");
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        let message = answer["response"]["result"]["message"].as_str().unwrap();
        assert!(message.contains("object 1 (cm)"), "{message}");
        assert_eq!(answer["response"]["convertedObjects"], json!([]));
    }

    #[test]
    fn conversion_settings_by_url_and_by_service() {
        let by_url = webhook_conversion(&Endpoint::Url("https://127.0.0.1:9443/".into()), "CA");
        assert_eq!(by_url["strategy"], "Webhook");
        assert_eq!(
            by_url["webhook"]["clientConfig"]["url"],
            "https://127.0.0.1:9443/convert"
        );
        assert_eq!(by_url["webhook"]["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(
            by_url["webhook"]["conversionReviewVersions"],
            json!(["v1", "v1beta1"])
        );
        let by_service = webhook_conversion(
            &Endpoint::Service {
                namespace: "open-cluster-management-hub".into(),
                name: "cluster-manager-addon-webhook".into(),
                port: 9443,
            },
            "CA",
        );
        assert_eq!(
            by_service["webhook"]["clientConfig"]["service"],
            json!({"namespace": "open-cluster-management-hub", "name": "cluster-manager-addon-webhook",
                "path": "/convert", "port": 9443})
        );
    }
}
