//! Flag values parsed the way upstream's components parse them: `--feature-gates Name=true,…`
//! against the gates a component knows, and `key=value` lists such as `--labels` and
//! `--cluster-annotations`.

use std::collections::{BTreeMap, BTreeSet};

use ocm_api::names::feature_gates::{Component, DEFAULTS};

/// A flag value could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// A `--feature-gates` entry is not `Name=true|false`.
    #[error("--feature-gates: {entry:?} is not Name=true or Name=false")]
    ParseFeatureGate {
        /// The entry.
        entry: String,
    },
    /// A `--feature-gates` entry names a gate this component does not know.
    #[error("--feature-gates: unknown feature gate {name:?}; known: {known}")]
    UnknownFeatureGate {
        /// The gate.
        name: String,
        /// The gates the component knows, comma-separated.
        known: String,
    },
    /// A duration is not a number followed by `s`, `m`, `h` or `d`.
    #[error("{value:?} is not a duration such as 90s, 30m, 24h or 7d")]
    ParseDuration {
        /// The value.
        value: String,
    },
    /// A `key=value` entry has no `=` or an empty key.
    #[error("--{flag}: {entry:?} is not key=value")]
    ParseKeyValue {
        /// The flag.
        flag: &'static str,
        /// The entry.
        entry: String,
    },
}

/// The feature gates of one component (or of the several components one process runs): their
/// defaults, overridden by `--feature-gates`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureGates {
    enabled: BTreeSet<&'static str>,
}

impl FeatureGates {
    /// The gates of `component` with `entries` (`Name=true|false`, as given to
    /// `--feature-gates`) applied over its defaults.
    ///
    /// # Errors
    /// An entry is malformed or names a gate `component` does not know.
    pub fn parse(component: Component, entries: &[String]) -> Result<Self, FlagError> {
        Self::parse_for(&[component], entries)
    }

    /// The gates of every component in `components` (a gate several of them know is one gate:
    /// set once, on in all of them) with `entries` applied over their defaults.
    ///
    /// # Errors
    /// An entry is malformed or names a gate none of `components` knows.
    pub fn parse_for(components: &[Component], entries: &[String]) -> Result<Self, FlagError> {
        let mut known: Vec<_> = DEFAULTS
            .iter()
            .filter(|d| components.contains(&d.component))
            .collect();
        known.sort_by_key(|d| d.name);
        known.dedup_by_key(|d| d.name);
        let mut enabled: BTreeSet<&'static str> =
            known.iter().filter(|d| d.enabled).map(|d| d.name).collect();
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let (name, value) = entry.split_once('=').ok_or_else(|| FlagError::ParseFeatureGate {
                entry: entry.to_string(),
            })?;
            let on = match value.trim() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(FlagError::ParseFeatureGate {
                        entry: entry.to_string(),
                    });
                }
            };
            let gate = known.iter().find(|d| d.name == name.trim()).ok_or_else(|| {
                FlagError::UnknownFeatureGate {
                    name: name.trim().to_string(),
                    known: known.iter().map(|d| d.name).collect::<Vec<_>>().join(","),
                }
            })?;
            if on {
                enabled.insert(gate.name);
            } else {
                enabled.remove(gate.name);
            }
        }
        Ok(Self { enabled })
    }

    /// Whether `gate` is on.
    pub fn enabled(&self, gate: &str) -> bool {
        self.enabled.contains(gate)
    }
}

/// `key=value` entries (as given to `--labels` or `--cluster-annotations`) as a map; later
/// entries win.
///
/// # Errors
/// An entry has no `=` or an empty key.
pub fn key_values(flag: &'static str, entries: &[String]) -> Result<BTreeMap<String, String>, FlagError> {
    let mut map = BTreeMap::new();
    for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        match entry.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                map.insert(key.trim().to_string(), value.trim().to_string());
            }
            _ => {
                return Err(FlagError::ParseKeyValue {
                    flag,
                    entry: entry.to_string(),
                });
            }
        }
    }
    Ok(map)
}

/// A duration written as a whole number with a unit: `90s`, `30m`, `24h`, `7d` (seconds when
/// the unit is left out).
///
/// # Errors
/// The value is not of that form.
pub fn duration(value: &str) -> Result<std::time::Duration, FlagError> {
    let error = || FlagError::ParseDuration {
        value: value.to_string(),
    };
    let value = value.trim();
    let (number, unit) = match value.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => value.split_at(at),
        None => (value, "s"),
    };
    let number: u64 = number.parse().map_err(|_| error())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(error()),
    };
    Ok(std::time::Duration::from_secs(
        number.checked_mul(seconds).ok_or_else(error)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::names::feature_gates::{MANAGED_CLUSTER_AUTO_APPROVAL, RESOURCE_CLEANUP};

    #[test]
    fn gates_start_from_the_component_defaults_and_flags_override_them() {
        let gates = FeatureGates::parse(Component::HubRegistration, &[]).unwrap();
        assert!(gates.enabled(RESOURCE_CLEANUP));
        assert!(!gates.enabled(MANAGED_CLUSTER_AUTO_APPROVAL));
        let gates = FeatureGates::parse(
            Component::HubRegistration,
            &[
                "ManagedClusterAutoApproval=true".into(),
                " ResourceCleanup=false".into(),
            ],
        )
        .unwrap();
        assert!(gates.enabled(MANAGED_CLUSTER_AUTO_APPROVAL));
        assert!(!gates.enabled(RESOURCE_CLEANUP));
    }

    #[test]
    fn malformed_and_unknown_gates_are_refused() {
        let err = FeatureGates::parse(Component::HubRegistration, &["ResourceCleanup".into()]).unwrap_err();
        assert!(matches!(err, FlagError::ParseFeatureGate { .. }));
        let err =
            FeatureGates::parse(Component::HubRegistration, &["ResourceCleanup=yes".into()]).unwrap_err();
        assert!(matches!(err, FlagError::ParseFeatureGate { .. }));
        let err = FeatureGates::parse(Component::HubRegistration, &["ClusterClaim=true".into()]).unwrap_err();
        assert!(
            err.to_string().contains("unknown feature gate \"ClusterClaim\""),
            "{err}"
        );
    }

    #[test]
    fn durations_take_a_unit() {
        use std::time::Duration;
        assert_eq!(duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(duration("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(duration("2d").unwrap(), Duration::from_secs(172_800));
        assert_eq!(duration("15").unwrap(), Duration::from_secs(15));
        assert!(duration("1w").is_err());
        assert!(duration("h").is_err());
        assert!(duration("-1s").is_err());
    }

    #[test]
    fn key_values_parse_and_refuse_entries_without_a_key() {
        let map = key_values("labels", &["a=1".into(), "b=".into(), "a=2".into()]).unwrap();
        assert_eq!(map.get("a").map(String::as_str), Some("2"));
        assert_eq!(map.get("b").map(String::as_str), Some(""));
        assert!(key_values("labels", &["novalue".into()]).is_err());
        assert!(key_values("labels", &["=x".into()]).is_err());
    }
}
