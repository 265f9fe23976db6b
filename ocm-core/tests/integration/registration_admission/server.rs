//! The webhook server on its own, as kube-apiserver calls it: AdmissionReviews posted over HTTPS
//! (trusting only the server's CA), answered with patches and refusals; the SubjectAccessReviews
//! go to the hub (embedded or `OCM_TEST_HUB_KUBECONFIG`).

use base64::Engine;
use ocm_api::admission::managed_cluster::MutateOptions;
use ocm_api::admission::{CLUSTER_SET_BINDING_VALIDATOR, MANAGED_CLUSTER_MUTATOR, MANAGED_CLUSTER_VALIDATOR};
use ocm_controlplane::TestEnv;
use ocm_core::registration::webhook::{Reviewer, WebhookServer};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

/// A client of the webhook server that trusts its CA only.
async fn client_of(server: &WebhookServer) -> kube::Client {
    let mut config = kube::Config::new(server.url().parse().unwrap());
    let der = CertificateDer::from_pem_slice(server.ca_pem().as_bytes()).unwrap();
    config.root_cert = Some(vec![der.to_vec()]);
    kube::Client::try_from(config).unwrap()
}

async fn post(client: &kube::Client, path: &str, review: &Value) -> Value {
    let request = http::Request::post(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(review).unwrap())
        .unwrap();
    client.request::<Value>(request).await.unwrap()
}

fn review(operation: &str, user: Value, object: Value, old: Option<Value>) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u-1", "operation": operation, "userInfo": user, "object": object, "oldObject": old}})
}

#[tokio::test]
async fn webhook_server_answers_admission_reviews() {
    let env = TestEnv::hub().await.unwrap();
    let admin = env.client().await.unwrap();
    let reviewer = Reviewer {
        client: admin,
        mutate: MutateOptions::default(),
        work: Default::default(),
    };
    let server = WebhookServer::start("127.0.0.1:0", &["127.0.0.1".to_string()], reviewer)
        .await
        .unwrap();
    let client = client_of(&server).await;
    let nobody = json!({"username": "nobody", "groups": ["system:authenticated"]});
    let masters = json!({"username": "root", "groups": ["system:masters", "system:authenticated"]});
    let cluster = json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": "c1"},
        "spec": {"hubAcceptsClient": true, "taints": [{"key": "k", "effect": "NoSelect", "timeAdded": "2020-01-01T00:00:00Z"}]}});

    // Mutating: a JSON patch stamping the taint and adding the default set label.
    let answer = post(
        &client,
        MANAGED_CLUSTER_MUTATOR.path,
        &review("CREATE", nobody.clone(), cluster.clone(), None),
    )
    .await;
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(answer["response"]["uid"], "u-1");
    assert_eq!(answer["response"]["allowed"], true);
    assert_eq!(answer["response"]["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(answer["response"]["patch"].as_str().unwrap())
        .unwrap();
    let ops: Vec<Value> = serde_json::from_slice(&patch).unwrap();
    let mut patched = cluster.clone();
    json_patch_apply(&mut patched, &ops);
    assert_eq!(
        patched["metadata"]["labels"]["cluster.open-cluster-management.io/clusterset"],
        "default"
    );
    assert_ne!(patched["spec"]["taints"][0]["timeAdded"], "2020-01-01T00:00:00Z");
    // Mutating refusal on update.
    let mut changed = cluster.clone();
    changed["spec"]["taints"][0]["value"] = json!("v");
    let answer = post(
        &client,
        MANAGED_CLUSTER_MUTATOR.path,
        &review("UPDATE", nobody.clone(), changed, Some(cluster.clone())),
    )
    .await;
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(answer["response"]["status"]["code"], 400);
    assert_eq!(
        answer["response"]["status"]["message"],
        "It is not allowed to set TimeAdded of Taint \"k\"."
    );

    // Validating: accepting needs the accept permission (a SubjectAccessReview at the hub).
    let answer = post(
        &client,
        MANAGED_CLUSTER_VALIDATOR.path,
        &review("CREATE", nobody, cluster.clone(), None),
    )
    .await;
    assert_eq!(answer["response"]["allowed"], false);
    let status = &answer["response"]["status"];
    assert_eq!(status["code"], 403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "managedclusters/accept.cluster.open-cluster-management.io \"c1\" is forbidden: user \"nobody\" cannot update the HubAcceptsClient field"
    );
    assert_eq!(
        status["details"],
        json!({"name": "c1", "group": "cluster.open-cluster-management.io", "kind": "managedclusters/accept"})
    );
    let answer = post(
        &client,
        MANAGED_CLUSTER_VALIDATOR.path,
        &review("CREATE", masters.clone(), cluster, None),
    )
    .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");

    // Bindings: the name must be the set's.
    let binding = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "a", "namespace": "ns"}, "spec": {"clusterSet": "b"}});
    let answer = post(
        &client,
        CLUSTER_SET_BINDING_VALIDATOR.path,
        &review("CREATE", masters, binding, None),
    )
    .await;
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(answer["response"]["status"]["code"], 400);
    assert_eq!(
        answer["response"]["status"]["message"],
        "The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet"
    );
}

/// Applies the `add` operations the mutating webhook answers.
fn json_patch_apply(target: &mut Value, ops: &[Value]) {
    for op in ops {
        assert_eq!(op["op"], "add", "{op}");
        let path = op["path"].as_str().unwrap();
        let (parent, field) = path.rsplit_once('/').unwrap();
        let parent = if parent.is_empty() {
            &mut *target
        } else {
            target.pointer_mut(parent).unwrap()
        };
        parent[field] = op["value"].clone();
    }
}

#[tokio::test]
async fn webhook_server_converts_addon_objects_between_versions() {
    let env = TestEnv::hub().await.unwrap();
    let reviewer = Reviewer {
        client: env.client().await.unwrap(),
        mutate: MutateOptions::default(),
        work: Default::default(),
    };
    let server = WebhookServer::start("127.0.0.1:0", &["127.0.0.1".to_string()], reviewer)
        .await
        .unwrap();
    let client = client_of(&server).await;
    let beta = json!({"apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": "cluster1",
            "annotations": {"addon.open-cluster-management.io/v1alpha1-install-namespace": "agents"}},
        "status": {"registrations": [{"type": "kubeClient", "kubeClient": {"driver": "csr",
            "subject": {"user": "u", "groups": ["g"]}}}]}});
    let answer = post(
        &client,
        ocm_core::registration::webhook::conversion::CONVERSION_PATH,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "c-1", "desiredAPIVersion": "addon.open-cluster-management.io/v1alpha1",
                "objects": [beta]}}),
    )
    .await;
    assert_eq!(answer["kind"], "ConversionReview");
    assert_eq!(answer["response"]["uid"], "c-1");
    assert_eq!(answer["response"]["result"]["status"], "Success", "{answer}");
    let alpha = &answer["response"]["convertedObjects"][0];
    assert_eq!(alpha["apiVersion"], "addon.open-cluster-management.io/v1alpha1");
    assert_eq!(alpha["spec"]["installNamespace"], "agents");
    assert_eq!(
        alpha["status"]["registrations"][0],
        json!({"signerName": "kubernetes.io/kube-apiserver-client", "subject": {"user": "u", "groups": ["g"]}})
    );
    assert_eq!(alpha["status"]["kubeClientDriver"], "csr");
}
