//! `status.registrations` from the add-on's registration intents and what the registration
//! agent already wrote (upstream's `buildRegistrationConfigs`).

use ocm_api::addon::v1beta1::{
    KubeClientConfig, KubeClientDriver, KubeClientSubject, RegistrationConfig, RegistrationConfigType,
};

use crate::registration::{default_groups, default_user};

/// The registrations to publish: custom-signer intents as given; kube-client intents matched
/// by ordinal with the existing kube-client entries, whose driver (set by the agent) wins. With
/// driver `token` the agent's subject is kept, with `csr` the intent's subject or else the
/// default user and groups, with no driver the intent's subject.
pub(super) fn registrations(
    cluster: &str,
    addon: &str,
    wanted: &[RegistrationConfig],
    existing: &[RegistrationConfig],
) -> Vec<RegistrationConfig> {
    let mut existing_kube_clients = existing
        .iter()
        .filter(|r| r.type_ == RegistrationConfigType::KubeClient);
    let mut out = Vec::with_capacity(wanted.len());
    for config in wanted {
        if config.type_ == RegistrationConfigType::CustomSigner {
            out.push(config.clone());
            continue;
        }
        let intent = config.kube_client.clone().unwrap_or_default();
        let matched = existing_kube_clients.next().and_then(|r| r.kube_client.as_ref());
        let driver = matched.and_then(|k| k.driver).or(intent.driver);
        let subject = match driver {
            None => intent.subject.clone(),
            Some(KubeClientDriver::Token) => matched.and_then(|k| k.subject.clone()),
            Some(KubeClientDriver::Csr) => {
                let empty = intent.subject.as_ref().is_none_or(|s| {
                    s.user.as_deref().unwrap_or_default().is_empty()
                        && s.groups.as_deref().unwrap_or_default().is_empty()
                });
                if empty {
                    Some(KubeClientSubject {
                        user: Some(default_user(cluster, addon, addon)),
                        groups: Some(default_groups(cluster, addon)),
                    })
                } else {
                    intent.subject.clone()
                }
            }
        };
        out.push(RegistrationConfig {
            type_: RegistrationConfigType::KubeClient,
            kube_client: Some(KubeClientConfig { driver, subject }),
            custom_signer: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;
    use serde_json::json;

    fn configs(v: serde_json::Value) -> Vec<RegistrationConfig> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn without_a_driver_the_intent_is_published() {
        let wanted = configs(
            json!([{"type": "kubeClient", "kubeClient": {"subject": {"user": "u"}}},
            {"type": "customSigner", "customSigner": {"signerName": "example.com/s"}}]),
        );
        assert_eq!(registrations("c", "a", &wanted, &[]), wanted);
    }

    #[test]
    fn the_agents_driver_wins_and_csr_defaults_the_subject() {
        let wanted = configs(json!([{"type": "kubeClient"}]));
        let existing = configs(json!([{"type": "kubeClient", "kubeClient": {"driver": "csr"}}]));
        let got = serde_json::to_value(registrations("c", "a", &wanted, &existing)).unwrap();
        assert_eq!(
            got,
            json!([{"type": "kubeClient", "kubeClient": {"driver": "csr", "subject": {
                "user": "system:open-cluster-management:cluster:c:addon:a:agent:a",
                "groups": ["system:open-cluster-management:cluster:c:addon:a",
                           "system:open-cluster-management:addon:a"]}}}])
        );
    }

    #[test]
    fn token_keeps_the_agents_subject_matched_by_ordinal() {
        let wanted = configs(json!([
            {"type": "kubeClient", "kubeClient": {"subject": {"user": "mine1"}}},
            {"type": "kubeClient", "kubeClient": {"subject": {"user": "mine2"}}}]));
        let existing = configs(json!([
            {"type": "customSigner", "customSigner": {"signerName": "example.com/s"}},
            {"type": "kubeClient", "kubeClient": {"driver": "token", "subject": {"user": "sa1"}}},
            {"type": "kubeClient", "kubeClient": {"driver": "csr"}}]));
        let got = serde_json::to_value(registrations("c", "a", &wanted, &existing)).unwrap();
        assert_eq!(
            got,
            json!([{"type": "kubeClient", "kubeClient": {"driver": "token", "subject": {"user": "sa1"}}},
                   {"type": "kubeClient", "kubeClient": {"driver": "csr", "subject": {"user": "mine2"}}}])
        );
        let unmatched = configs(json!([{"type": "kubeClient", "kubeClient": {"driver": "token",
            "subject": {"user": "x"}}}]));
        let got = registrations("c", "a", &unmatched, &[]);
        assert_eq!(got[0].kube_client.as_ref().unwrap().subject, None);
    }
}
