//! Client certificates: verified against the client CA when a request is authenticated, not
//! during the TLS handshake, so that an expired or foreign certificate gets kube-apiserver's
//! `401 Unauthorized` instead of a failed handshake.
//!
//! `DeferredVerifier` is the rustls verifier: it asks for a client certificate (optional),
//! checks the handshake signature (the client holds the key) and accepts the chain as presented;
//! [`ClientCertificates::authenticate`] then verifies the chain (issuer, validity period, client
//! usage) with webpki at the time of each request.

use std::sync::Arc;

use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use sha2::Digest;

use super::{AuthenticateError, CREDENTIAL_ID, Identity, UserInfo};

/// How many verified certificates are remembered (the cache is cleared when it is full).
const VERIFIED_CACHE_CAPACITY: usize = 4096;

/// A certificate verified once: who it is and when it is valid.
#[derive(Debug, Clone)]
struct Verified {
    identity: Identity,
    /// Validity period of the leaf, in Unix seconds.
    not_before: i64,
    not_after: i64,
}

/// Verifies client certificates against the client CA.
///
/// A certificate signed directly by the client CA is verified once (chain and signature) and
/// then remembered by its SHA-256: later requests only check that the current time is inside its
/// validity period, which is all that can change for it.
#[derive(Debug)]
pub struct ClientCertificates {
    verifier: Arc<dyn ClientCertVerifier>,
    verified: std::sync::Mutex<std::collections::HashMap<[u8; 32], Verified>>,
}

impl ClientCertificates {
    /// Verification against `verifier` (webpki with the client CA as root).
    pub fn new(verifier: Arc<dyn ClientCertVerifier>) -> Self {
        Self {
            verifier,
            verified: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    fn cached(&self, digest: &[u8; 32], now: i64) -> Option<Identity> {
        let cache = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(digest)
            .filter(|v| v.not_before <= now && now <= v.not_after)
            .map(|v| v.identity.clone())
    }

    fn remember(&self, digest: [u8; 32], leaf: &[u8], identity: &Identity) {
        use x509_parser::prelude::{FromDer, X509Certificate};
        let Ok((_, cert)) = X509Certificate::from_der(leaf) else {
            return;
        };
        let validity = cert.validity();
        let mut cache = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= VERIFIED_CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(
            digest,
            Verified {
                identity: identity.clone(),
                not_before: validity.not_before.timestamp(),
                not_after: validity.not_after.timestamp(),
            },
        );
    }

    /// The rustls verifier for the handshake (see the module docs).
    pub fn handshake_verifier(&self) -> Arc<dyn ClientCertVerifier> {
        Arc::new(DeferredVerifier {
            inner: self.verifier.clone(),
        })
    }

    /// The user of a presented chain (leaf first), verified now.
    pub fn authenticate(&self, chain: &[CertificateDer<'static>]) -> Result<Identity, AuthenticateError> {
        let (leaf, intermediates) = chain
            .split_first()
            .ok_or_else(|| AuthenticateError::VerifyCertificate("no certificate".into()))?;
        let digest: [u8; 32] = sha2::Sha256::digest(leaf.as_ref()).into();
        let now = UnixTime::now();
        let now_secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        if intermediates.is_empty()
            && let Some(identity) = self.cached(&digest, now_secs)
        {
            return Ok(identity);
        }
        self.verifier
            .verify_client_cert(leaf, intermediates, now)
            .map_err(|e| AuthenticateError::VerifyCertificate(e.to_string()))?;
        let user =
            UserInfo::from_certificate(leaf.as_ref()).ok_or(AuthenticateError::ReadCertificateSubject)?;
        let mut identity = Identity::of(user);
        identity
            .extra
            .insert(CREDENTIAL_ID.into(), vec![format!("X509SHA256={}", hex(&digest))]);
        if intermediates.is_empty() {
            self.remember(digest, leaf.as_ref(), &identity);
        }
        Ok(identity)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The handshake half of client-certificate authentication (see the module docs).
#[derive(Debug)]
struct DeferredVerifier {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for DeferredVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
