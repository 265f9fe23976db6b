//! A newcomer's kubectl session about identities: `auth whoami`, `auth can-i --as` before and
//! after a RoleBinding, and `certificate approve` refused to a user without `approve` on the
//! signer but done by the admin, after which the signer issues the certificate.

use std::time::Duration;

use base64::Engine;
use ocm_controlplane::TestEnv;
use serde_json::{Value, json};

use super::{DEADLINE, Kubectl, Table, columns, unique};

#[tokio::test]
async fn kubectl_auth_whoami_and_can_i_as_another_user() {
    let env = TestEnv::start().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_auth_whoami_and_can_i_as_another_user").await else {
        return;
    };
    let me: Value = serde_json::from_str(&k.ok(&["auth", "whoami", "-o", "json"]).await).unwrap();
    let groups = me.pointer("/status/userInfo/groups").cloned().unwrap_or_default();
    assert!(
        groups
            .as_array()
            .unwrap()
            .contains(&json!("system:authenticated")),
        "{me}"
    );

    let ns = unique("can-i");
    let user = unique("alice");
    k.ok(&["create", "namespace", &ns]).await;
    let can_i = |verb: &'static str| {
        let args = [
            "auth",
            "can-i",
            "--as",
            &user,
            "--as-group",
            "devs",
            verb,
            "configmaps",
            "-n",
            &ns,
        ];
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let k = &k;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            k.run(&args).await
        }
    };
    let before = can_i("get").await;
    assert!(!before.ok && before.stdout.trim() == "no", "{before:?}");
    k.ok(&[
        "create",
        "role",
        "cm-reader",
        "--verb=get,list",
        "--resource=configmaps",
        "-n",
        &ns,
    ])
    .await;
    k.ok(&[
        "create",
        "rolebinding",
        "reads",
        "--role=cm-reader",
        &format!("--user={user}"),
        "-n",
        &ns,
    ])
    .await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let now = can_i("get").await;
        if now.ok {
            assert_eq!(now.stdout.trim(), "yes");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "can-i never said yes: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let create = can_i("create").await;
    assert!(!create.ok && create.stdout.trim() == "no", "{create:?}");
    // The admin may impersonate: the request runs with the user's rights.
    k.ok(&[
        "get",
        "configmaps",
        "-n",
        &ns,
        "--as",
        &user,
        "--as-group",
        "devs",
    ])
    .await;
    let err = k
        .fails(&["get", "secrets", "-n", &ns, "--as", &user, "--as-group", "devs"])
        .await;
    assert!(
        err.contains(&format!("User \"{user}\" cannot list resource \"secrets\"")),
        "{err}"
    );
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}

#[tokio::test]
async fn kubectl_certificate_approve_needs_approve_on_the_signer() {
    let env = TestEnv::start().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_certificate_approve_needs_approve_on_the_signer").await else {
        return;
    };
    let name = unique("approve");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "newcomer");
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name}, "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem),
        "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"], "expirationSeconds": 3600}});
    k.with_stdin("create", &csr.to_string(), &[]).await;
    // `kubectl get csr` prints kube's columns: the quick start reads the requestor and condition.
    let table = Table::parse(&k.ok(&["get", "csr", &name]).await);
    assert_eq!(
        table.columns,
        columns(&[
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ])
    );
    let row = table.row(0, &name);
    assert_eq!(row[2], "kubernetes.io/kube-apiserver-client");
    assert_eq!(row[3], "admin");
    assert_eq!(row[4], "60m");
    assert_eq!(row[5], "Pending");
    // A user allowed to update approvals but not to approve for the signer is refused.
    let user = unique("approver");
    let role = unique("csr-approval");
    k.ok(&[
        "create",
        "clusterrole",
        &role,
        "--verb=get,list,update",
        "--resource=certificatesigningrequests,certificatesigningrequests/approval",
    ])
    .await;
    k.ok(&[
        "create",
        "clusterrolebinding",
        &role,
        &format!("--clusterrole={role}"),
        &format!("--user={user}"),
    ])
    .await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let refused = loop {
        let r = k.run(&["certificate", "approve", &name, "--as", &user]).await;
        assert!(!r.ok, "approved without approve on the signer: {r:?}");
        if r.stderr.contains("signerName") || tokio::time::Instant::now() > deadline {
            break r.stderr;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        refused.contains(
            "user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""
        ),
        "{refused}"
    );
    k.ok(&["certificate", "approve", &name]).await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let cert = k
            .ok(&["get", "csr", &name, "-o", "jsonpath={.status.certificate}"])
            .await;
        if !cert.trim().is_empty() {
            let table = Table::parse(&k.ok(&["get", "csr", &name]).await);
            assert_eq!(table.row(0, &name)[5], "Approved,Issued");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the approved CSR was never signed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    k.ok(&["delete", "csr", &name]).await;
    k.ok(&["delete", "clusterrolebinding", &role]).await;
    k.ok(&["delete", "clusterrole", &role]).await;
}

#[tokio::test]
async fn kubectl_create_token_gives_a_working_service_account_token() {
    let env = TestEnv::start().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_create_token_gives_a_working_service_account_token").await
    else {
        return;
    };
    let ns = unique("token");
    k.ok(&["create", "namespace", &ns]).await;
    k.ok(&["create", "serviceaccount", "agent", "-n", &ns]).await;
    let token = k
        .ok(&["create", "token", "agent", "-n", &ns, "--duration=1h"])
        .await;
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    // A kubeconfig with the token only (a client certificate would win over it, as in kube).
    let raw: Value =
        serde_json::from_str(&k.ok(&["config", "view", "--raw", "--minify", "-o", "json"]).await).unwrap();
    let kubeconfig = json!({"apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": raw["clusters"][0]["cluster"]}],
        "users": [{"name": "agent", "user": {"token": token}}],
        "contexts": [{"name": "agent", "context": {"cluster": "c", "user": "agent"}}],
        "current-context": "agent"});
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), kubeconfig.to_string()).unwrap();
    let flag = format!("--kubeconfig={}", file.path().display());
    let me: Value = serde_json::from_str(&k.ok(&["auth", "whoami", "-o", "json", &flag]).await).unwrap();
    assert_eq!(
        me.pointer("/status/userInfo/username"),
        Some(&json!(format!("system:serviceaccount:{ns}:agent")))
    );
    let no = k
        .run(&["auth", "can-i", &flag, "list", "secrets", "-n", &ns])
        .await;
    assert_eq!(no.stdout.trim(), "no", "{no:?}");
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}
