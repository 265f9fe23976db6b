//! Security: users with client certificates issued through the CSR API are authorized by RBAC
//! (a Role in namespace a allows ConfigMaps there, 403 with kube-apiserver's body elsewhere), a
//! Denied CSR is never signed, and bootstrap tokens authenticate until their Secret is deleted.

use std::time::Duration;

use base64::Engine;
use kube::config::{KubeConfigOptions, Kubeconfig};
use ocm_controlplane::TestEnv;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

async fn send(client: &kube::Client, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let request = hyper::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(
            body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        ))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn send_patch(client: &kube::Client, path: &str, body: &Value) -> (u16, Value) {
    let request = hyper::http::Request::builder()
        .method("PATCH")
        .uri(path)
        .header("content-type", "application/merge-patch+json")
        .body(kube::client::Body::from(body.to_string().into_bytes()))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn config(env: &TestEnv) -> kube::Config {
    let kubeconfig = Kubeconfig::read_from(env.kubeconfig_path()).unwrap();
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap()
}

fn csr_for(user: &str, groups: &[&str]) -> (String, String) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, user);
    // rcgen keeps one value per attribute type: a second organization goes in under its OID.
    for (i, o) in groups.iter().enumerate() {
        let ty = if i == 0 {
            rcgen::DnType::OrganizationName
        } else {
            rcgen::DnType::CustomDnType(vec![2, 5, 4, 10])
        };
        params.distinguished_name.push(ty, *o);
    }
    let key = rcgen::KeyPair::generate().unwrap();
    (
        params.serialize_request(&key).unwrap().pem().unwrap(),
        key.serialize_pem(),
    )
}

/// Creates a CSR for `user` as admin, approves (or denies) it and returns it after the signer's turn.
async fn issue(
    admin: &kube::Client,
    name: &str,
    user: &str,
    groups: &[&str],
    approve: bool,
) -> (Value, String) {
    let (request, key) = csr_for(user, groups);
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name}, "spec": {"request": base64::engine::general_purpose::STANDARD.encode(request),
        "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"], "expirationSeconds": 3600}});
    let (code, mut created) = send(admin, "POST", CSRS, Some(&csr)).await;
    assert_eq!(code, 201, "{created}");
    let kind = if approve { "Approved" } else { "Denied" };
    created["status"] =
        json!({"conditions": [{"type": kind, "status": "True", "reason": "Test", "message": "test"}]});
    let (code, body) = send(admin, "PUT", &format!("{CSRS}/{name}/approval"), Some(&created)).await;
    assert_eq!(code, 200, "{body}");
    let wait = if approve { 20 } else { 2 };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);
    loop {
        let (_, current) = send(admin, "GET", &format!("{CSRS}/{name}"), None).await;
        if current.pointer("/status/certificate").is_some() || tokio::time::Instant::now() > deadline {
            return (current, key);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn client_with_cert(env: &TestEnv, cert_b64: &str, key: &str) -> kube::Client {
    let mut config = config(env).await;
    config.auth_info = serde_json::from_value(json!({
        "client-certificate-data": cert_b64,
        "client-key-data": base64::engine::general_purpose::STANDARD.encode(key),
    }))
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Polls until `path` answers `want` (RBAC changes take effect moments after they are written).
async fn eventually(client: &kube::Client, path: &str, want: u16) -> (u16, Value) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = send(client, "GET", path, None).await;
        if answer.0 == want || tokio::time::Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_role_in_one_namespace_allows_configmaps_there_only() {
    let env = TestEnv::start().await.unwrap();
    let admin = env.client().await.unwrap();
    let id = std::process::id();
    let (a, b, user) = (
        format!("sec-a-{id}"),
        format!("sec-b-{id}"),
        format!("alice-{id}"),
    );
    for ns in [&a, &b] {
        let (code, _) = send(
            &admin,
            "POST",
            "/api/v1/namespaces",
            Some(&json!({"metadata": {"name": ns}})),
        )
        .await;
        assert_eq!(code, 201);
        let cm = json!({"metadata": {"name": "data"}, "data": {"k": "v"}});
        assert_eq!(
            send(
                &admin,
                "POST",
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                Some(&cm)
            )
            .await
            .0,
            201
        );
    }
    let role = json!({"metadata": {"name": "cm-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["get", "patch"]}]});
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{a}/roles"),
            Some(&role)
        )
        .await
        .0,
        201
    );
    let binding = json!({"metadata": {"name": "reads"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{a}/rolebindings"),
            Some(&binding)
        )
        .await
        .0,
        201
    );

    let (csr, key) = issue(&admin, &format!("sec-csr-{id}"), &user, &["devs", "ops"], true).await;
    let cert = csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .expect("signed");
    let alice = client_with_cert(&env, cert, &key).await;
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, me) = send(
        &alice,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(&review),
    )
    .await;
    assert_eq!(code, 201, "{me}");
    assert_eq!(me.pointer("/status/userInfo/username"), Some(&json!(user)));
    assert_eq!(
        me.pointer("/status/userInfo/groups"),
        Some(&json!(["devs", "ops", "system:authenticated"]))
    );
    let (code, body) = eventually(&alice, &format!("/api/v1/namespaces/{a}/configmaps/data"), 200).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = send(
        &alice,
        "GET",
        &format!("/api/v1/namespaces/{b}/configmaps/data"),
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("configmaps \"data\" is forbidden: User \"{user}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"{b}\""),
        "reason": "Forbidden", "details": {"name": "data", "kind": "configmaps"}, "code": 403})
    );
    // alice may not impersonate anyone.
    let mut config = config(&env).await;
    config.auth_info = serde_json::from_value(json!({
        "client-certificate-data": cert,
        "client-key-data": base64::engine::general_purpose::STANDARD.encode(&key),
        "as": "admin",
    }))
    .unwrap();
    let impersonating = kube::Client::try_from(config).unwrap();
    let (code, body) = send(
        &impersonating,
        "GET",
        &format!("/api/v1/namespaces/{a}/configmaps"),
        None,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        format!(
            "configmaps is forbidden: User \"{user}\" cannot impersonate-on:user-info:list resource \"configmaps\" in API group \"\" in the namespace \"{a}\""
        )
    );
    // Escalation through a patch of her own Role: refused; a patch within her rights is not.
    let role_path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{a}/roles/cm-reader");
    let grow = json!({"rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["get", "patch"]}]});
    let (code, body) = send_patch(&alice, &role_path, &grow).await;
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("is attempting to grant RBAC permissions not currently held"),
        "{message}"
    );
    assert!(
        message.contains(r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#),
        "{message}"
    );
    let (code, body) = send_patch(
        &alice,
        &role_path,
        &json!({"metadata": {"labels": {"team": "devs"}}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // Escalation: alice may not bind herself to cluster-admin.
    let escalate = json!({"metadata": {"name": "mine"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
    let (code, _) = send(
        &alice,
        "POST",
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{a}/rolebindings"),
        Some(&escalate),
    )
    .await;
    assert_eq!(code, 403);
    // Nor approve CSRs.
    let (denied, _) = issue(&admin, &format!("sec-denied-{id}"), "mallory", &[], false).await;
    assert!(
        denied.pointer("/status/certificate").is_none(),
        "a Denied CSR is never signed"
    );

    for ns in [&a, &b] {
        send(&admin, "DELETE", &format!("/api/v1/namespaces/{ns}"), None).await;
    }
    for name in [format!("sec-csr-{id}"), format!("sec-denied-{id}")] {
        send(&admin, "DELETE", &format!("{CSRS}/{name}"), None).await;
    }
}

#[tokio::test]
async fn bootstrap_tokens_authenticate_until_their_secret_is_deleted() {
    let env = TestEnv::start().await.unwrap();
    let admin = env.client().await.unwrap();
    let id: String = format!("{:06x}", std::process::id() % 0xffffff)
        .chars()
        .take(6)
        .collect();
    let secret = json!({"metadata": {"name": format!("bootstrap-token-{id}")}, "type": "bootstrap.kubernetes.io/token",
        "stringData": {"token-id": id, "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
        "expiration": "2099-01-01T00:00:00Z"}});
    assert_eq!(
        send(
            &admin,
            "POST",
            "/api/v1/namespaces/kube-system/secrets",
            Some(&secret)
        )
        .await
        .0,
        201
    );
    let mut config = config(&env).await;
    config.auth_info = serde_json::from_value(json!({"token": format!("{id}.0123456789abcdef")})).unwrap();
    let bootstrap = kube::Client::try_from(config).unwrap();
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, body) = send(
        &bootstrap,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(&review),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body.pointer("/status/userInfo/username"),
        Some(&json!(format!("system:bootstrap:{id}")))
    );
    assert_eq!(
        send(&bootstrap, "GET", "/api/v1/namespaces/default/configmaps", None)
            .await
            .0,
        403
    );
    send(
        &admin,
        "DELETE",
        &format!("/api/v1/namespaces/kube-system/secrets/bootstrap-token-{id}"),
        None,
    )
    .await;
    let (code, body) = send(
        &bootstrap,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(&review),
    )
    .await;
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["message"], "Unauthorized");
}

#[tokio::test]
async fn expired_certificates_are_rejected_with_401() {
    let env = TestEnv::start().await.unwrap();
    let Some(control_plane) = env.control_plane() else {
        eprintln!("skipping expired_certificates_are_rejected_with_401: needs the embedded client CA");
        return;
    };
    let credentials = control_plane.credentials();
    let (request, key) = csr_for("expired-user", &["devs"]);
    let der = rustls::pki_types::CertificateSigningRequestDer::from_pem_slice(request.as_bytes()).unwrap();
    let now = chrono::Utc::now().timestamp();
    let usages = vec!["client auth".to_string()];
    let issue = |not_before: i64, not_after: i64| {
        ocm_controlplane::controllers::csr_signing::certificate::issue(
            &ocm_controlplane::controllers::csr_signing::certificate::Issue {
                request_der: der.as_ref(),
                ca_cert_pem: &credentials.client_ca_pem,
                ca_key_pem: &credentials.client_ca_key_pem,
                not_before,
                not_after,
                usages: &usages,
            },
        )
        .unwrap()
    };
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let b64 = |pem: String| base64::engine::general_purpose::STANDARD.encode(pem);
    let valid = client_with_cert(&env, &b64(issue(now - 60, now + 3600)), &key).await;
    let (code, body) = send(&valid, "POST", path, Some(&review)).await;
    assert_eq!(
        (code, body.pointer("/status/userInfo/username")),
        (201, Some(&json!("expired-user")))
    );
    for (label, not_before, not_after) in [
        ("expired", now - 7200, now - 3600),
        ("not yet valid", now + 3600, now + 7200),
    ] {
        let client = client_with_cert(&env, &b64(issue(not_before, not_after)), &key).await;
        let (code, body) = send(&client, "POST", path, Some(&review)).await;
        assert_eq!(code, 401, "{label}: {body}");
        assert_eq!(
            body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        );
    }
}

#[tokio::test]
async fn anonymous_requests_get_public_info_only_or_401_when_disabled() {
    let env = TestEnv::start().await.unwrap();
    let mut open_config = config(&env).await;
    open_config.auth_info = kube::config::AuthInfo::default();
    let anonymous = kube::Client::try_from(open_config).unwrap();
    let version = anonymous
        .send(
            hyper::http::Request::get("/version")
                .body(kube::client::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(version.status().as_u16(), 200);
    let (code, body) = send(&anonymous, "GET", "/api", None).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );
    if env.control_plane().is_none() {
        return;
    }
    let closed = TestEnv::start_with(ocm_controlplane::ControlPlane::builder().anonymous_auth(false))
        .await
        .unwrap();
    let mut closed_config = config(&closed).await;
    closed_config.auth_info = kube::config::AuthInfo::default();
    let anonymous = kube::Client::try_from(closed_config).unwrap();
    let (code, body) = send(&anonymous, "GET", "/version", None).await;
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["reason"], "Unauthorized");
}

#[tokio::test]
async fn kubeconfig_helpers_give_working_identities() {
    let env = TestEnv::start().await.unwrap();
    let Some(control_plane) = env.control_plane() else {
        eprintln!("skipping kubeconfig_helpers_give_working_identities: embedded helpers only");
        return;
    };
    let client_of = |yaml: String| async move {
        let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    };
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let agent = client_of(
        control_plane
            .kubeconfig_for("agent", &["g1", "g2"], Duration::from_secs(600))
            .unwrap(),
    )
    .await;
    let (code, me) = send(&agent, "POST", path, Some(&review)).await;
    assert_eq!(code, 201, "{me}");
    assert_eq!(
        me.pointer("/status/userInfo/groups"),
        Some(&json!(["g1", "g2", "system:authenticated"]))
    );

    let bootstrap = client_of(
        control_plane
            .bootstrap_kubeconfig(Duration::from_secs(600))
            .await
            .unwrap(),
    )
    .await;
    let (code, me) = send(&bootstrap, "POST", path, Some(&review)).await;
    assert_eq!(code, 201, "{me}");
    assert_eq!(
        me.pointer("/status/userInfo/groups"),
        Some(&json!([
            "system:bootstrappers",
            "system:bootstrappers:managedcluster",
            "system:authenticated"
        ]))
    );
    let (request, _) = csr_for(
        "system:open-cluster-management:c1:agent",
        &["system:open-cluster-management:c1"],
    );
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"generateName": "c1-"}, "spec": {"request": base64::engine::general_purpose::STANDARD.encode(request),
        "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}});
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let (code, created) = loop {
        let answer = send(&bootstrap, "POST", CSRS, Some(&csr)).await;
        if answer.0 != 403 || tokio::time::Instant::now() > deadline {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(code, 201, "{created}");
    assert!(
        created
            .pointer("/spec/username")
            .and_then(Value::as_str)
            .unwrap()
            .starts_with("system:bootstrap:")
    );
    assert_eq!(
        send(&bootstrap, "GET", "/api/v1/namespaces/default/secrets", None)
            .await
            .0,
        403
    );
}

#[tokio::test]
async fn service_account_tokens_authenticate_until_the_service_account_is_deleted() {
    let env = TestEnv::start().await.unwrap();
    let admin = env.client().await.unwrap();
    let ns = format!("sec-sa-{}", std::process::id());
    assert_eq!(
        send(
            &admin,
            "POST",
            "/api/v1/namespaces",
            Some(&json!({"metadata": {"name": ns}}))
        )
        .await
        .0,
        201
    );
    let sa = json!({"metadata": {"name": "agent"}});
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
            Some(&sa)
        )
        .await
        .0,
        201
    );
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}});
    let (code, issued) = send(
        &admin,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/agent/token"),
        Some(&request),
    )
    .await;
    assert_eq!(code, 201, "{issued}");
    let token = issued
        .pointer("/status/token")
        .and_then(Value::as_str)
        .unwrap()
        .to_string();

    let mut config = config(&env).await;
    config.auth_info = serde_json::from_value(json!({"token": token})).unwrap();
    let agent = kube::Client::try_from(config).unwrap();
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let (code, me) = send(&agent, "POST", path, Some(&review)).await;
    assert_eq!(code, 201, "{me}");
    assert_eq!(
        me.pointer("/status/userInfo/username"),
        Some(&json!(format!("system:serviceaccount:{ns}:agent")))
    );
    assert_eq!(
        me.pointer("/status/userInfo/groups"),
        Some(&json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated"
        ]))
    );
    let token_review =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let (code, reviewed) = send(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(&token_review),
    )
    .await;
    assert_eq!(code, 201, "{reviewed}");
    assert_eq!(reviewed.pointer("/status/authenticated"), Some(&json!(true)));
    // Its rights are what RBAC grants it: nothing in the namespace yet.
    assert_eq!(
        send(&agent, "GET", &format!("/api/v1/namespaces/{ns}/secrets"), None)
            .await
            .0,
        403
    );

    send(
        &admin,
        "DELETE",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/agent"),
        None,
    )
    .await;
    let (code, body) = send(&agent, "POST", path, Some(&review)).await;
    assert_eq!(code, 401, "{body}");
    let (code, reviewed) = send(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(&token_review),
    )
    .await;
    assert_eq!(code, 201, "{reviewed}");
    assert!(reviewed.pointer("/status/authenticated").is_none(), "{reviewed}");
    send(&admin, "DELETE", &format!("/api/v1/namespaces/{ns}"), None).await;
}
