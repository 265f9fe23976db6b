//! The server under test: raw HTTP access as each identity of the fixtures' README, and the
//! unrecorded setup a scenario's `requires` asks for (OCM CRDs, namespaces).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::fixture;

/// The User-Agent of every request (the default field manager comes from it).
pub const USER_AGENT: &str = "ocm-conformance-recorder/v1 (linux/amd64)";

/// A raw HTTP answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Content-Type header.
    pub content_type: Option<String>,
    /// Texts of the `Warning` headers, unquoted, in order.
    pub warnings: Vec<String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON, if it is.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A request ready to send.
#[derive(Debug, Clone, Default)]
pub struct Outgoing {
    /// Method.
    pub method: String,
    /// Path and query string.
    pub uri: String,
    /// Headers (Content-Type, Accept, Authorization, Impersonate-*...).
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Outgoing {
    /// A JSON request as admin.
    pub fn json(method: &str, uri: &str, body: Option<&Value>) -> Self {
        let mut headers = vec![
            ("Accept".to_string(), "application/json".to_string()),
            ("User-Agent".into(), USER_AGENT.into()),
        ];
        let body = match body {
            Some(body) => {
                headers.push(("Content-Type".into(), "application/json".into()));
                serde_json::to_vec(body).unwrap_or_default()
            }
            None => Vec::new(),
        };
        Self {
            method: method.into(),
            uri: uri.into(),
            headers,
            body,
        }
    }

    /// The http request.
    pub fn build(&self) -> Result<hyper::Request<kube::client::Body>, String> {
        let mut builder = hyper::Request::builder()
            .method(self.method.as_str())
            .uri(self.uri.as_str());
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
            .body(kube::client::Body::from(self.body.clone()))
            .map_err(|e| format!("building request: {e}"))
    }
}

/// Percent-encodes a query component (everything but unreserved characters).
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Parses `Warning` header values (`299 - "text"`, possibly several comma-separated) into texts.
pub fn parse_warnings(value: &str) -> Vec<String> {
    let mut texts = Vec::new();
    let mut chars = value.chars().peekable();
    while chars.peek().is_some() {
        // code and agent, up to the opening quote
        for c in chars.by_ref() {
            if c == '"' {
                break;
            }
        }
        let mut text = String::new();
        let mut closed = false;
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(escaped) = chars.next() {
                        text.push(escaped);
                    }
                }
                '"' => {
                    closed = true;
                    break;
                }
                other => text.push(other),
            }
        }
        if closed || !text.is_empty() {
            texts.push(text);
        }
        // optional date, then a comma before the next warning
        for c in chars.by_ref() {
            if c == ',' {
                break;
            }
        }
    }
    texts
}

/// Sends a request and reads the whole answer.
pub async fn send(client: &kube::Client, request: &Outgoing) -> Result<Answer, String> {
    let response = client
        .send(request.build()?)
        .await
        .map_err(|e| format!("sending {} {}: {e}", request.method, request.uri))?;
    let (parts, body) = response.into_parts();
    let bytes = body
        .collect_bytes()
        .await
        .map_err(|e| format!("reading the body of {}: {e}", request.uri))?;
    Ok(Answer {
        status: parts.status.as_u16(),
        content_type: parts
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        warnings: parts
            .headers
            .get_all("warning")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(parse_warnings)
            .collect(),
        body: bytes.to_vec(),
    })
}

/// The server under test, reached through its admin kubeconfig.
pub struct Target {
    /// What it is (`TestEnv`, a kubeconfig path).
    pub label: String,
    /// The base URL (`https://127.0.0.1:PORT`).
    pub base_url: String,
    /// Requirement tags the server supports (`kcm`, `auth:x509`, ...).
    pub capabilities: Vec<String>,
    /// Whether to do the unrecorded setup of `requires` (off for the self-test mock).
    pub setup: bool,
    /// Every identity uses the admin client (the self-test mock does not authenticate).
    pub single_identity: bool,
    config: kube::Config,
    admin: kube::Client,
    anonymous: kube::Client,
    identities: Mutex<HashMap<String, kube::Client>>,
}

impl Target {
    /// Connects to the server an admin kubeconfig names. Clients never retry on their own: the
    /// replay must see every answer.
    pub async fn from_kubeconfig(
        path: &Path,
        label: &str,
        capabilities: Vec<String>,
    ) -> Result<Self, String> {
        let kubeconfig =
            Kubeconfig::read_from(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| format!("loading {}: {e}", path.display()))?;
        config.default_retry = false;
        config.read_timeout = Some(Duration::from_secs(120));
        Self::from_config(config, label, capabilities)
    }

    /// Connects with a ready client configuration.
    pub fn from_config(
        mut config: kube::Config,
        label: &str,
        capabilities: Vec<String>,
    ) -> Result<Self, String> {
        config.default_retry = false;
        let admin = kube::Client::try_from(config.clone()).map_err(|e| format!("admin client: {e}"))?;
        let mut anonymous_config = config.clone();
        anonymous_config.auth_info = AuthInfo::default();
        let anonymous =
            kube::Client::try_from(anonymous_config).map_err(|e| format!("anonymous client: {e}"))?;
        Ok(Self {
            label: label.to_string(),
            base_url: config.cluster_url.to_string().trim_end_matches('/').to_string(),
            capabilities,
            setup: true,
            single_identity: false,
            config,
            admin,
            anonymous,
            identities: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the server supports a requirement tag.
    pub fn supports(&self, tag: &str) -> bool {
        tag == "crds:ocm"
            || tag.starts_with("namespaces:")
            || self
                .capabilities
                .iter()
                .any(|capability| capability == tag || capability == "all")
    }

    /// The admin client.
    pub fn admin(&self) -> &kube::Client {
        &self.admin
    }

    /// A client without credentials.
    pub fn anonymous(&self) -> &kube::Client {
        &self.anonymous
    }

    /// Sends a request as admin.
    pub async fn send_admin(&self, request: &Outgoing) -> Result<Answer, String> {
        send(&self.admin, request).await
    }

    /// A client authenticating with a client certificate (PEM) and key (PEM).
    pub fn client_with_certificate(
        &self,
        certificate_pem: &str,
        key_pem: &str,
    ) -> Result<kube::Client, String> {
        let mut config = self.config.clone();
        config.auth_info = serde_json::from_value(json!({
            "client-certificate-data": BASE64.encode(certificate_pem),
            "client-key-data": BASE64.encode(key_pem),
        }))
        .map_err(|e| format!("client certificate auth info: {e}"))?;
        kube::Client::try_from(config).map_err(|e| format!("client with certificate: {e}"))
    }

    /// A client for a user with a certificate signed through the CSR API (kube-apiserver-client
    /// signer), as any conformant server with a signer issues one. Cached per user.
    pub async fn x509_client(&self, user: &str, groups: &[&str]) -> Result<kube::Client, String> {
        let mut identities = self.identities.lock().await;
        if let Some(client) = identities.get(user) {
            return Ok(client.clone());
        }
        let mut subject = format!("/CN={user}");
        for group in groups {
            subject.push_str(&format!("/O={group}"));
        }
        let generated = generate_csr(&subject)?;
        let csr = json!({
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"generateName": format!("conformance-{user}-")},
            "spec": {
                "request": generated.request_base64,
                "signerName": "kubernetes.io/kube-apiserver-client",
                "usages": ["client auth"],
                "expirationSeconds": 86400,
            },
        });
        let base = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
        let created = self.send_admin(&Outgoing::json("POST", base, Some(&csr))).await?;
        let mut object = created
            .json()
            .filter(|_| created.status == 201)
            .ok_or_else(|| format!("creating a CSR for {user}: {} {}", created.status, created.text()))?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        object["status"] = json!({"conditions": [{
            "type": "Approved",
            "status": "True",
            "reason": "ConformanceReplay",
            "message": "identity for the replay",
        }]});
        let approved = self
            .send_admin(&Outgoing::json(
                "PUT",
                &format!("{base}/{name}/approval"),
                Some(&object),
            ))
            .await?;
        if approved.status != 200 {
            return Err(format!(
                "approving the CSR for {user}: {} {}",
                approved.status,
                approved.text()
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let certificate = loop {
            let answer = self
                .send_admin(&Outgoing::json("GET", &format!("{base}/{name}"), None))
                .await?;
            if let Some(certificate) = answer
                .json()
                .and_then(|csr| csr.pointer("/status/certificate").cloned())
                && let Some(encoded) = certificate.as_str()
            {
                break BASE64
                    .decode(encoded)
                    .map_err(|e| format!("certificate of {name}: {e}"))?;
            }
            if Instant::now() > deadline {
                return Err(format!("the CSR for {user} was not signed within 30 s"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let _ = self
            .send_admin(&Outgoing::json("DELETE", &format!("{base}/{name}"), None))
            .await;
        let client =
            self.client_with_certificate(&String::from_utf8_lossy(&certificate), &generated.key_pem)?;
        identities.insert(user.to_string(), client.clone());
        Ok(client)
    }

    /// Creates what `requires` asks for that a scenario does not create itself: the OCM CRDs
    /// (as `crd/install-ocm-crds` does, until Established and served) and namespaces.
    pub async fn prepare(
        &self,
        requires: &[String],
        namespaces: &[String],
        shared: &Path,
    ) -> Result<(), String> {
        if !self.setup {
            return Ok(());
        }
        if requires.iter().any(|tag| tag == "crds:ocm") {
            self.install_ocm_crds(shared).await?;
        }
        for namespace in namespaces {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
            let answer = self
                .send_admin(&Outgoing::json("POST", "/api/v1/namespaces", Some(&body)))
                .await?;
            if answer.status != 201 && answer.status != 409 {
                return Err(format!(
                    "creating namespace {namespace}: {} {}",
                    answer.status,
                    answer.text()
                ));
            }
        }
        Ok(())
    }

    async fn install_ocm_crds(&self, shared: &Path) -> Result<(), String> {
        let crds = ocm_crd_files(shared)?;
        let mut served = Vec::new();
        for file in &crds {
            let crd = fixture::read_body_file(shared, file)?;
            let uri = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
            let answer = self.send_admin(&Outgoing::json("POST", uri, Some(&crd))).await?;
            if answer.status != 201 && answer.status != 409 {
                return Err(format!(
                    "creating CRD {file}: {} {}",
                    answer.status,
                    answer.text()
                ));
            }
            served.push(crd);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for crd in &served {
            let name = crd
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let uri = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
            loop {
                let answer = self.send_admin(&Outgoing::json("GET", &uri, None)).await?;
                let established = answer.json().is_some_and(|crd| {
                    crd.pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .is_some_and(|conditions| {
                            conditions
                                .iter()
                                .any(|c| c["type"] == "Established" && c["status"] == "True")
                        })
                });
                if established {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("CRD {name} not Established within 30 s"));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let plural = crd
                .pointer("/spec/names/plural")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let versions = crd
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for version in versions.iter().filter(|v| v["served"] == true) {
                let version = version["name"].as_str().unwrap_or_default();
                let uri = format!("/apis/{group}/{version}/{plural}?limit=1");
                loop {
                    let answer = self.send_admin(&Outgoing::json("GET", &uri, None)).await?;
                    if answer.status == 200 {
                        break;
                    }
                    if Instant::now() > deadline {
                        return Err(format!("{uri} not served within 30 s: {}", answer.status));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        Ok(())
    }
}

/// The OCM CRD files of `crds:ocm`, in the order `crd/install-ocm-crds` created them: hub, managed,
/// operator; the two hub addon CRDs with a templated conversion webhook from `api/addon/v1beta1`.
pub fn ocm_crd_files(shared: &Path) -> Result<Vec<String>, String> {
    const WEBHOOK_CRDS: &[&str] = &["clustermanagementaddons", "managedclusteraddons"];
    let mut files = Vec::new();
    for directory in ["hub", "managed", "operator"] {
        let path = shared.join("ocm-crds").join(directory);
        let mut names: Vec<String> = std::fs::read_dir(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml"))
            .collect();
        names.sort();
        for name in names {
            let webhook =
                directory == "hub" && WEBHOOK_CRDS.iter().any(|crd| name.contains(&format!("_{crd}.")));
            files.push(if webhook {
                format!("shared/ocm-crds/api/addon/v1beta1/{name}")
            } else {
                format!("shared/ocm-crds/{directory}/{name}")
            });
        }
    }
    Ok(files)
}

/// A generated key and CSR.
#[derive(Debug, Clone)]
pub struct GeneratedCsr {
    /// `spec.request`: the PEM CSR, base64-encoded.
    pub request_base64: String,
    /// The private key, PEM.
    pub key_pem: String,
}

/// A fresh EC P-256 key and CSR for a subject in OpenSSL compat form (`/CN=a/O=b/O=c`).
pub fn generate_csr(subject: &str) -> Result<GeneratedCsr, String> {
    let mut names = rcgen::DistinguishedName::new();
    let mut organizations = 0;
    for part in subject.split('/').filter(|part| !part.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("bad subject part {part:?} in {subject}"))?;
        match key {
            "CN" => names.push(rcgen::DnType::CommonName, value),
            // rcgen keeps one value per attribute type; a second O is written with O's OID as a custom type.
            "O" if organizations == 0 => {
                names.push(rcgen::DnType::OrganizationName, value);
                organizations += 1;
            }
            "O" if organizations == 1 => {
                names.push(rcgen::DnType::CustomDnType(vec![2, 5, 4, 10]), value);
                organizations += 1;
            }
            other => return Err(format!("subject attribute {other} of {subject} is not supported")),
        }
    }
    let key =
        rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|e| format!("key: {e}"))?;
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = names;
    let csr = params
        .serialize_request(&key)
        .map_err(|e| format!("CSR for {subject}: {e}"))?;
    let pem = csr.pem().map_err(|e| format!("CSR PEM for {subject}: {e}"))?;
    Ok(GeneratedCsr {
        request_base64: BASE64.encode(pem),
        key_pem: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_and_query_encoding() {
        assert_eq!(
            parse_warnings(r#"299 - "unknown field \"spec.bogus\"", 299 - "second""#),
            vec![r#"unknown field "spec.bogus""#.to_string(), "second".to_string()]
        );
        assert_eq!(
            encode_component("env in (prod,dev)"),
            "env%20in%20%28prod%2Cdev%29"
        );
    }

    #[test]
    fn csr_with_two_organizations() {
        let csr = generate_csr("/CN=agent/O=a/O=b").unwrap();
        assert!(!csr.request_base64.is_empty());
        assert!(csr.key_pem.contains("PRIVATE KEY"));
        assert!(generate_csr("/CN=x/OU=y").is_err());
    }

    #[test]
    fn ocm_crds_match_the_install_scenario() {
        let Some(shared) = fixture::shared_dir("ocm_crds_match_the_install_scenario") else {
            return;
        };
        let install = fixture::load(&shared.join("apiserver-conformance/crd/install-ocm-crds.json"));
        let recorded: Vec<String> = install
            .steps
            .iter()
            .filter_map(|step| match step {
                fixture::Step::Request(step) if step.response.status == 201 => step.request.body_file.clone(),
                _ => None,
            })
            .collect();
        assert_eq!(ocm_crd_files(&shared).unwrap(), recorded);
    }
}
