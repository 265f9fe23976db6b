//! Installing the OCM CustomResourceDefinitions a hub or a managed cluster needs, as upstream's
//! cluster-manager and klusterlet operators do: every CRD of the target is written with a forced
//! server-side apply (so running it again updates them and nothing else), then waited for until
//! the API server reports it `Established`.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use ocm_api::crd::{GeneratedCrd, InstallTarget};

/// The field manager the CRDs are applied as.
pub const FIELD_MANAGER: &str = "ocm-rs-installer";

/// A failed installation.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The CRDs could not be generated from the types.
    #[error("generating the OCM CRDs: {0}")]
    Generate(#[from] ocm_api::crd::Error),
    /// Applying one CRD failed.
    #[error("applying CustomResourceDefinition {name}: {source}")]
    Apply {
        /// The CRD.
        name: String,
        /// What the API server said.
        source: kube::Error,
    },
    /// Reading a CRD back failed.
    #[error("reading CustomResourceDefinition {name}: {source}")]
    Read {
        /// The CRD.
        name: String,
        /// What the API server said.
        source: kube::Error,
    },
    /// A CRD was not Established in time.
    #[error("CustomResourceDefinition {name} was not Established within {timeout:?}")]
    NotEstablished {
        /// The CRD.
        name: String,
        /// How long was waited.
        timeout: Duration,
    },
}

/// The CRDs upstream installs on `targets` (a caller may adjust them before [`install`], as an
/// embedded control plane switching the add-on kinds to its in-process conversion does).
///
/// # Errors
/// The types did not produce valid CRDs.
pub fn generated(targets: &[InstallTarget]) -> Result<Vec<GeneratedCrd>, InstallError> {
    Ok(ocm_api::crd::all()?
        .into_iter()
        .filter(|c| targets.contains(&c.target))
        .collect())
}

/// Applies `crds` and waits up to `timeout` until every one is Established; returns their names.
///
/// # Errors
/// Applying or reading a CRD failed, or one was not Established in time.
pub async fn install(
    client: &kube::Client,
    crds: Vec<CustomResourceDefinition>,
    timeout: Duration,
) -> Result<Vec<String>, InstallError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::new();
    for mut crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crd.metadata.managed_fields = None;
        crd.metadata.resource_version = None;
        crd.status = None;
        // k8s-openapi writes apiVersion and kind, as an apply body needs.
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|source| InstallError::Apply {
                name: name.clone(),
                source,
            })?;
        names.push(name);
    }
    let deadline = tokio::time::Instant::now() + timeout;
    for name in &names {
        loop {
            let crd = api.get(name).await.map_err(|source| InstallError::Read {
                name: name.clone(),
                source,
            })?;
            if is_established(&crd) {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(InstallError::NotEstablished {
                    name: name.clone(),
                    timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(names)
}

/// Whether the API server reports the CRD `Established`.
pub fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_and_managed_targets_select_their_crds() {
        let hub = generated(&[InstallTarget::Hub]).unwrap();
        assert!(
            hub.iter()
                .any(|c| c.name() == "managedclusters.cluster.open-cluster-management.io")
        );
        assert!(hub.iter().all(|c| c.target == InstallTarget::Hub));
        let managed = generated(&[InstallTarget::Managed]).unwrap();
        assert!(
            managed
                .iter()
                .any(|c| c.name() == "clusterclaims.cluster.open-cluster-management.io")
        );
        assert!(
            !managed
                .iter()
                .any(|c| c.name() == "managedclusters.cluster.open-cluster-management.io")
        );
    }
}
