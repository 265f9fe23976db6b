//! Who a request comes from.
//!
//! This issue serves one identity (the admin client certificate); authentication of other
//! certificates, tokens and RBAC authorization come later and plug in here: the HTTP layer builds a
//! [`UserInfo`] per request and hands it to the REST layer.

use x509_parser::prelude::{FromDer, X509Certificate};

/// The authenticated user of a request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// User name (`admin`, `system:anonymous`).
    pub name: String,
    /// Groups.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The anonymous user.
    pub fn anonymous() -> Self {
        Self {
            name: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    /// The user of a verified client certificate: CN is the name, O the groups.
    pub fn from_certificate(der: &[u8]) -> Option<Self> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let subject = cert.subject();
        let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
        let mut groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect();
        groups.push("system:authenticated".into());
        Some(Self { name, groups })
    }
}
