//! TokenRequest (`serviceaccounts/<name>/token`) through kube-rs: a token is issued with kube's
//! claims and expiration, verifies with the server's key, and requests kube refuses are refused
//! the same way.
//!
//! The claims are read from the token itself, so the tests also pass against a real cluster
//! (`OCM_TEST_HUB_KUBECONFIG`); the signature is checked where the embedded server's key is at
//! hand.

use base64::Engine;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, PostParams};
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use crate::garbage_collection::{create_namespace, delete_namespace, unique};

/// The payload of a JWT.
fn payload(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("a JWT has three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// `aud` as a list (one audience is written as a string).
fn audiences(claims: &Value) -> Vec<String> {
    match &claims["aud"] {
        Value::String(one) => vec![one.clone()],
        Value::Array(many) => many.iter().map(|a| a.as_str().unwrap().to_string()).collect(),
        other => panic!("aud: {other}"),
    }
}

async fn request_token(
    accounts: &Api<ServiceAccount>,
    name: &str,
    spec: Value,
) -> Result<Value, kube::Error> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    accounts
        .create_subresource::<Value, Value>("token", name, &PostParams::default(), &body)
        .await
}

async fn service_account(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> (Api<ServiceAccount>, String) {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    let created = accounts.create(&PostParams::default(), &account).await.unwrap();
    (accounts, created.metadata.uid.unwrap())
}

#[tokio::test]
async fn a_token_is_issued_with_kube_claims() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("token");
    create_namespace(&client, &ns).await;
    let (accounts, uid) = service_account(&client, &ns, "agent").await;
    let answer = request_token(
        &accounts,
        "agent",
        json!({"audiences": ["https://example.com/hub"], "expirationSeconds": 3600}),
    )
    .await
    .unwrap();
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["metadata"]["name"], "agent");
    assert_eq!(answer["metadata"]["namespace"], ns.as_str());
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    let token = answer["status"]["token"].as_str().unwrap();
    let claims = payload(token);
    assert_eq!(claims["sub"], format!("system:serviceaccount:{ns}:agent"));
    assert_eq!(audiences(&claims), vec!["https://example.com/hub"]);
    assert!(claims["iss"].as_str().is_some_and(|i| !i.is_empty()));
    let (iat, nbf, exp) = (
        claims["iat"].as_i64().unwrap(),
        claims["nbf"].as_i64().unwrap(),
        claims["exp"].as_i64().unwrap(),
    );
    assert_eq!(exp - iat, 3600);
    assert!(nbf <= iat);
    assert!((iat - chrono::Utc::now().timestamp()).abs() < 60);
    assert_eq!(claims["kubernetes.io"]["namespace"], ns.as_str());
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "agent");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["uid"], uid.as_str());
    assert!(claims["jti"].as_str().is_some_and(|j| !j.is_empty()));
    // status.expirationTimestamp is the token's expiry (to the second).
    let expires =
        chrono::DateTime::parse_from_rfc3339(answer["status"]["expirationTimestamp"].as_str().unwrap())
            .unwrap()
            .timestamp();
    assert!((expires - exp).abs() <= 1, "{expires} vs {exp}");

    if let Some(server) = env.control_plane() {
        let issuer = server.token_issuer();
        let verified = issuer
            .verify(token, &["https://example.com/hub".to_string()])
            .unwrap();
        assert_eq!(verified.kubernetes.serviceaccount.uid, uid);
        assert!(
            issuer
                .verify(token, &["https://other.example.com".to_string()])
                .is_err()
        );
        assert!(issuer.verify(&format!("{token}x"), &[]).is_err());
    }
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn expiration_defaults_and_limits() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("token-exp");
    create_namespace(&client, &ns).await;
    let (accounts, _) = service_account(&client, &ns, "agent").await;

    // Without a lifetime: one hour, for the server's own audience.
    let answer = request_token(&accounts, "agent", json!({})).await.unwrap();
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    let claims = payload(answer["status"]["token"].as_str().unwrap());
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    let default_audiences = answer["spec"]["audiences"].as_array().unwrap().clone();
    assert!(!default_audiences.is_empty());
    assert_eq!(json!(audiences(&claims)), json!(default_audiences));
    if let Some(server) = env.control_plane() {
        server
            .token_issuer()
            .verify(answer["status"]["token"].as_str().unwrap(), &[])
            .unwrap();
    }

    // Less than ten minutes is refused as kube-apiserver refuses it.
    let err = request_token(&accounts, "agent", json!({"expirationSeconds": 60}))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
    );

    // A longer lifetime is honoured.
    let day = request_token(&accounts, "agent", json!({"expirationSeconds": 86400}))
        .await
        .unwrap();
    let claims = payload(day["status"]["token"].as_str().unwrap());
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        86400
    );

    // Unknown accounts are 404.
    let err = request_token(&accounts, "nobody", json!({})).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 404), "{err:?}");
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn a_token_bound_to_a_secret_names_it() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = unique("token-bound");
    create_namespace(&client, &ns).await;
    let (accounts, _) = service_account(&client, &ns, "agent").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "anchor"}})).unwrap();
    let secret_uid = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let answer = request_token(
        &accounts,
        "agent",
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "anchor"}}),
    )
    .await
    .unwrap();
    let claims = payload(answer["status"]["token"].as_str().unwrap());
    assert_eq!(claims["kubernetes.io"]["secret"]["name"], "anchor");
    assert_eq!(claims["kubernetes.io"]["secret"]["uid"], secret_uid.as_str());
    // A uid that is not the Secret's is a conflict.
    let err = request_token(
        &accounts,
        "agent",
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "anchor",
            "uid": uuid::Uuid::new_v4().to_string()}}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 409), "{err:?}");
    delete_namespace(&client, &ns).await;
}
