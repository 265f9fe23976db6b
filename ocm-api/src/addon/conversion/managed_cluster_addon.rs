//! ManagedClusterAddOn between v1alpha1 and v1beta1.
//!
//! - `spec.installNamespace` (v1alpha1 only) travels in the annotation
//!   `addon.open-cluster-management.io/v1alpha1-install-namespace`
//!   ([`V1ALPHA1_INSTALL_NAMESPACE`]): set from the field on the way to v1beta1 (replacing an
//!   annotation already there), and moved back into the field (and removed) on the way back.
//! - `spec.configs` is the same in both versions.
//! - `status.registrations`: a v1alpha1 registration for the signer
//!   `kubernetes.io/kube-apiserver-client` ([`KUBE_APISERVER_CLIENT_SIGNER`]) is a `kubeClient`
//!   registration with the subject's user and groups (its organizational units are lost); any
//!   other is a `customSigner` registration with the signer name and the whole subject. Back in
//!   v1alpha1, `kubeClient` has that signer and `customSigner` its own; a `customSigner`
//!   registration without settings is an error.
//! - `status.kubeClientDriver` (v1alpha1) is the `driver` of every `kubeClient` registration;
//!   back in v1alpha1 it is the driver of the first `kubeClient` registration with settings.
//! - `status.configReferences[]`: the deprecated v1alpha1 `name`/`namespace` are dropped on the
//!   way to v1beta1 and rebuilt from `desiredConfig` on the way back.
//! - The deprecated v1alpha1 `status.addOnConfiguration` is dropped; everything else in the
//!   status is the same in both versions.

use super::{Error, Result, take_annotation};
use crate::{
    addon::{
        v1alpha1::{self, Subject},
        v1beta1::{
            self, CustomSignerConfig, CustomSignerSubject, KubeClientConfig, KubeClientSubject,
            RegistrationConfigType,
        },
    },
    names::{annotations::V1ALPHA1_INSTALL_NAMESPACE, subjects::KUBE_APISERVER_CLIENT_SIGNER},
};

impl From<v1alpha1::ManagedClusterAddOn> for v1beta1::ManagedClusterAddOn {
    fn from(addon: v1alpha1::ManagedClusterAddOn) -> Self {
        let mut metadata = addon.metadata;
        if let Some(namespace) = addon.spec.install_namespace {
            metadata
                .annotations
                .get_or_insert_default()
                .insert(V1ALPHA1_INSTALL_NAMESPACE.to_owned(), namespace);
        }
        Self {
            metadata,
            spec: v1beta1::ManagedClusterAddOnSpec {
                configs: addon.spec.configs,
            },
            status: addon.status.map(status_to_v1beta1),
        }
    }
}

impl TryFrom<v1beta1::ManagedClusterAddOn> for v1alpha1::ManagedClusterAddOn {
    type Error = Error;

    fn try_from(addon: v1beta1::ManagedClusterAddOn) -> Result<Self> {
        let mut metadata = addon.metadata;
        let install_namespace = take_annotation(&mut metadata, V1ALPHA1_INSTALL_NAMESPACE);
        Ok(Self {
            metadata,
            spec: v1alpha1::ManagedClusterAddOnSpec {
                configs: addon.spec.configs,
                install_namespace,
            },
            status: addon.status.map(status_to_v1alpha1).transpose()?,
        })
    }
}

/// The v1beta1 form of a v1alpha1 status.
fn status_to_v1beta1(status: v1alpha1::ManagedClusterAddOnStatus) -> v1beta1::ManagedClusterAddOnStatus {
    let mut registrations: Option<Vec<v1beta1::RegistrationConfig>> = status
        .registrations
        .map(|registrations| registrations.into_iter().map(registration_to_v1beta1).collect());
    if let Some(driver) = status.kube_client_driver {
        for registration in registrations.iter_mut().flatten() {
            if registration.type_ == RegistrationConfigType::KubeClient {
                registration.kube_client.get_or_insert_default().driver = Some(driver);
            }
        }
    }
    v1beta1::ManagedClusterAddOnStatus {
        add_on_meta: status.add_on_meta,
        conditions: status.conditions,
        config_references: status
            .config_references
            .map(|references| references.into_iter().map(config_reference_to_v1beta1).collect()),
        health_check: status.health_check,
        namespace: status.namespace,
        registrations,
        related_objects: status.related_objects,
        supported_configs: status.supported_configs,
    }
}

/// The v1alpha1 form of a v1beta1 status.
fn status_to_v1alpha1(
    status: v1beta1::ManagedClusterAddOnStatus,
) -> Result<v1alpha1::ManagedClusterAddOnStatus> {
    let kube_client_driver = status
        .registrations
        .iter()
        .flatten()
        .find_map(
            |registration| match (&registration.type_, &registration.kube_client) {
                (RegistrationConfigType::KubeClient, Some(kube_client)) => Some(kube_client.driver),
                _ => None,
            },
        )
        .flatten();
    let registrations = status
        .registrations
        .map(|registrations| {
            registrations
                .into_iter()
                .enumerate()
                .map(|(index, registration)| registration_to_v1alpha1(index, registration))
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?;
    Ok(v1alpha1::ManagedClusterAddOnStatus {
        add_on_configuration: None,
        add_on_meta: status.add_on_meta,
        conditions: status.conditions,
        config_references: status
            .config_references
            .map(|references| references.into_iter().map(config_reference_to_v1alpha1).collect()),
        health_check: status.health_check,
        kube_client_driver,
        namespace: status.namespace,
        registrations,
        related_objects: status.related_objects,
        supported_configs: status.supported_configs,
    })
}

/// The v1beta1 form of a v1alpha1 registration: `kubeClient` for the API server client signer,
/// `customSigner` for any other.
fn registration_to_v1beta1(registration: v1alpha1::RegistrationConfig) -> v1beta1::RegistrationConfig {
    if registration.signer_name == KUBE_APISERVER_CLIENT_SIGNER {
        v1beta1::RegistrationConfig {
            custom_signer: None,
            kube_client: Some(KubeClientConfig {
                driver: None,
                subject: registration.subject.map(|subject| KubeClientSubject {
                    groups: subject.groups,
                    user: subject.user,
                }),
            }),
            type_: RegistrationConfigType::KubeClient,
        }
    } else {
        v1beta1::RegistrationConfig {
            custom_signer: Some(CustomSignerConfig {
                signer_name: registration.signer_name,
                subject: registration.subject.map(|subject| CustomSignerSubject {
                    groups: subject.groups,
                    organization_units: subject.organization_unit,
                    user: subject.user,
                }),
            }),
            kube_client: None,
            type_: RegistrationConfigType::CustomSigner,
        }
    }
}

/// The v1alpha1 form of the v1beta1 registration at `index`.
fn registration_to_v1alpha1(
    index: usize,
    registration: v1beta1::RegistrationConfig,
) -> Result<v1alpha1::RegistrationConfig> {
    match registration.type_ {
        RegistrationConfigType::KubeClient => Ok(v1alpha1::RegistrationConfig {
            signer_name: KUBE_APISERVER_CLIENT_SIGNER.to_owned(),
            subject: registration
                .kube_client
                .and_then(|kube_client| kube_client.subject)
                .map(|subject| Subject {
                    groups: subject.groups,
                    organization_unit: None,
                    user: subject.user,
                }),
        }),
        RegistrationConfigType::CustomSigner => {
            let custom_signer = registration
                .custom_signer
                .ok_or(Error::ConvertRegistration { index })?;
            Ok(v1alpha1::RegistrationConfig {
                signer_name: custom_signer.signer_name,
                subject: custom_signer.subject.map(|subject| Subject {
                    groups: subject.groups,
                    organization_unit: subject.organization_units,
                    user: subject.user,
                }),
            })
        }
    }
}

/// The v1beta1 form of a v1alpha1 config reference, without the deprecated name and namespace.
fn config_reference_to_v1beta1(reference: v1alpha1::ConfigReference) -> v1beta1::ConfigReference {
    v1beta1::ConfigReference {
        desired_config: reference.desired_config,
        group: reference.group,
        last_applied_config: reference.last_applied_config,
        last_observed_generation: reference.last_observed_generation,
        resource: reference.resource,
    }
}

/// The v1alpha1 form of a v1beta1 config reference, with the deprecated name and namespace of
/// its desired config (an empty name when it has none).
fn config_reference_to_v1alpha1(reference: v1beta1::ConfigReference) -> v1alpha1::ConfigReference {
    let (name, namespace) = reference
        .desired_config
        .as_ref()
        .map(|desired| (desired.name.clone(), desired.namespace.clone()))
        .unwrap_or_default();
    v1alpha1::ConfigReference {
        desired_config: reference.desired_config,
        group: reference.group,
        last_applied_config: reference.last_applied_config,
        last_observed_generation: reference.last_observed_generation,
        name,
        namespace,
        resource: reference.resource,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::addon::v1alpha1::{ConfigSpecHash, KubeClientDriver};

    fn alpha_registration(signer: &str, ou: Option<Vec<&str>>) -> v1alpha1::RegistrationConfig {
        v1alpha1::RegistrationConfig {
            signer_name: signer.into(),
            subject: Some(Subject {
                groups: Some(vec!["g1".into()]),
                organization_unit: ou.map(|ou| ou.into_iter().map(Into::into).collect()),
                user: Some("u1".into()),
            }),
        }
    }

    #[test]
    fn install_namespace_travels_in_the_annotation() {
        let mut alpha = v1alpha1::ManagedClusterAddOn::new(
            "helloworld",
            v1alpha1::ManagedClusterAddOnSpec {
                install_namespace: Some("agents".into()),
                ..Default::default()
            },
        );
        alpha.metadata.namespace = Some("cluster1".into());
        let beta = v1beta1::ManagedClusterAddOn::from(alpha.clone());
        assert_eq!(
            beta.metadata.annotations,
            Some([(V1ALPHA1_INSTALL_NAMESPACE.to_owned(), "agents".to_owned())].into())
        );
        let back = v1alpha1::ManagedClusterAddOn::try_from(beta).unwrap();
        assert_eq!(back, alpha);
        assert_eq!(back.metadata.annotations, None);
    }

    #[test]
    fn install_namespace_annotation_keeps_other_annotations() {
        let mut beta = v1beta1::ManagedClusterAddOn::new("a", v1beta1::ManagedClusterAddOnSpec::default());
        beta.metadata.annotations = Some(
            [
                (V1ALPHA1_INSTALL_NAMESPACE.to_owned(), "agents".to_owned()),
                ("other".to_owned(), "kept".to_owned()),
            ]
            .into(),
        );
        let alpha = v1alpha1::ManagedClusterAddOn::try_from(beta.clone()).unwrap();
        assert_eq!(alpha.spec.install_namespace.as_deref(), Some("agents"));
        assert_eq!(
            alpha.metadata.annotations,
            Some([("other".to_owned(), "kept".to_owned())].into())
        );
        assert_eq!(v1beta1::ManagedClusterAddOn::from(alpha), beta);
    }

    #[test]
    fn no_install_namespace_adds_no_annotation() {
        let alpha = v1alpha1::ManagedClusterAddOn::new("a", v1alpha1::ManagedClusterAddOnSpec::default());
        let beta = v1beta1::ManagedClusterAddOn::from(alpha);
        assert_eq!(beta.metadata.annotations, None);
    }

    #[test]
    fn kube_api_server_client_signer_is_a_kube_client_registration() {
        let beta = registration_to_v1beta1(alpha_registration(KUBE_APISERVER_CLIENT_SIGNER, None));
        assert_eq!(
            serde_json::to_value(&beta).unwrap(),
            json!({"type": "kubeClient", "kubeClient": {"subject": {"groups": ["g1"], "user": "u1"}}})
        );
        assert_eq!(
            registration_to_v1alpha1(0, beta).unwrap(),
            alpha_registration(KUBE_APISERVER_CLIENT_SIGNER, None)
        );
    }

    #[test]
    fn kube_client_registration_loses_organization_units() {
        let beta =
            registration_to_v1beta1(alpha_registration(KUBE_APISERVER_CLIENT_SIGNER, Some(vec!["o1"])));
        let back = registration_to_v1alpha1(0, beta).unwrap();
        assert_eq!(back.subject.and_then(|s| s.organization_unit), None);
    }

    #[test]
    fn other_signers_are_custom_signer_registrations() {
        let alpha = alpha_registration("example.com/signer-name", Some(vec!["o1", "o2"]));
        let beta = registration_to_v1beta1(alpha.clone());
        assert_eq!(
            serde_json::to_value(&beta).unwrap(),
            json!({"type": "customSigner", "customSigner": {"signerName": "example.com/signer-name",
                "subject": {"groups": ["g1"], "organizationUnits": ["o1", "o2"], "user": "u1"}}})
        );
        assert_eq!(registration_to_v1alpha1(0, beta).unwrap(), alpha);
    }

    #[test]
    fn registration_without_subject_stays_without() {
        for signer in [KUBE_APISERVER_CLIENT_SIGNER, "example.com/signer"] {
            let alpha = v1alpha1::RegistrationConfig {
                signer_name: signer.into(),
                subject: None,
            };
            assert_eq!(
                registration_to_v1alpha1(0, registration_to_v1beta1(alpha.clone())).unwrap(),
                alpha
            );
        }
        let bare = v1beta1::RegistrationConfig {
            type_: RegistrationConfigType::KubeClient,
            ..Default::default()
        };
        assert_eq!(
            registration_to_v1alpha1(0, bare).unwrap(),
            v1alpha1::RegistrationConfig {
                signer_name: KUBE_APISERVER_CLIENT_SIGNER.into(),
                subject: None,
            }
        );
    }

    #[test]
    fn custom_signer_registration_without_settings_is_an_error() {
        let status = v1beta1::ManagedClusterAddOnStatus {
            registrations: Some(vec![
                registration_to_v1beta1(alpha_registration(KUBE_APISERVER_CLIENT_SIGNER, None)),
                v1beta1::RegistrationConfig {
                    type_: RegistrationConfigType::CustomSigner,
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        assert!(matches!(
            status_to_v1alpha1(status),
            Err(Error::ConvertRegistration { index: 1 })
        ));
    }

    #[test]
    fn kube_client_driver_goes_to_every_kube_client_registration() {
        let alpha = v1alpha1::ManagedClusterAddOnStatus {
            kube_client_driver: Some(KubeClientDriver::Token),
            registrations: Some(vec![
                alpha_registration(KUBE_APISERVER_CLIENT_SIGNER, None),
                alpha_registration("example.com/signer", None),
                alpha_registration(KUBE_APISERVER_CLIENT_SIGNER, None),
            ]),
            ..Default::default()
        };
        let beta = status_to_v1beta1(alpha.clone());
        let drivers: Vec<_> = beta
            .registrations
            .iter()
            .flatten()
            .map(|r| r.kube_client.as_ref().and_then(|k| k.driver))
            .collect();
        assert_eq!(
            drivers,
            vec![Some(KubeClientDriver::Token), None, Some(KubeClientDriver::Token)]
        );
        assert_eq!(status_to_v1alpha1(beta).unwrap(), alpha);
    }

    #[test]
    fn kube_client_driver_comes_from_the_first_kube_client_registration() {
        let kube_client = |driver| v1beta1::RegistrationConfig {
            kube_client: Some(KubeClientConfig {
                driver,
                subject: None,
            }),
            type_: RegistrationConfigType::KubeClient,
            ..Default::default()
        };
        let status = v1beta1::ManagedClusterAddOnStatus {
            registrations: Some(vec![
                v1beta1::RegistrationConfig {
                    type_: RegistrationConfigType::KubeClient,
                    ..Default::default()
                },
                kube_client(Some(KubeClientDriver::Csr)),
                kube_client(Some(KubeClientDriver::Token)),
            ]),
            ..Default::default()
        };
        assert_eq!(
            status_to_v1alpha1(status).unwrap().kube_client_driver,
            Some(KubeClientDriver::Csr)
        );
    }

    #[test]
    fn kube_client_driver_without_kube_client_registration_is_lost() {
        let alpha = v1alpha1::ManagedClusterAddOnStatus {
            kube_client_driver: Some(KubeClientDriver::Csr),
            ..Default::default()
        };
        assert_eq!(
            status_to_v1alpha1(status_to_v1beta1(alpha))
                .unwrap()
                .kube_client_driver,
            None
        );
    }

    #[test]
    fn config_reference_name_comes_from_desired_config() {
        let desired = ConfigSpecHash {
            name: "deploy-config".into(),
            namespace: Some("cluster1".into()),
            spec_hash: Some("abc".into()),
        };
        let alpha = v1alpha1::ConfigReference {
            desired_config: Some(desired.clone()),
            group: Some("addon.open-cluster-management.io".into()),
            last_observed_generation: Some(2),
            name: "deploy-config".into(),
            namespace: Some("cluster1".into()),
            resource: "addondeploymentconfigs".into(),
            ..Default::default()
        };
        let beta = config_reference_to_v1beta1(alpha.clone());
        assert_eq!(
            serde_json::to_value(&beta).unwrap(),
            json!({"desiredConfig": {"name": "deploy-config", "namespace": "cluster1", "specHash": "abc"},
                "group": "addon.open-cluster-management.io", "lastObservedGeneration": 2,
                "resource": "addondeploymentconfigs"})
        );
        assert_eq!(config_reference_to_v1alpha1(beta), alpha);

        let without_desired = config_reference_to_v1alpha1(v1beta1::ConfigReference {
            resource: "addondeploymentconfigs".into(),
            ..Default::default()
        });
        assert_eq!(without_desired.name, "");
        assert_eq!(without_desired.namespace, None);
    }

    #[test]
    fn deprecated_status_add_on_configuration_is_dropped() {
        let alpha = v1alpha1::ManagedClusterAddOnStatus {
            add_on_configuration: Some(v1alpha1::AddOnConfiguration {
                cr_name: Some("c".into()),
                ..Default::default()
            }),
            namespace: Some("agents".into()),
            ..Default::default()
        };
        let back = status_to_v1alpha1(status_to_v1beta1(alpha)).unwrap();
        assert_eq!(back.add_on_configuration, None);
        assert_eq!(back.namespace.as_deref(), Some("agents"));
    }
}
