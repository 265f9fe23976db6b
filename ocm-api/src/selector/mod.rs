//! Label selectors: matching, validation, and the query-string syntax.
//!
//! A [`Selector`] is a list of [`Requirement`]s that must all hold. It is built from an API
//! [`LabelSelector`] ([`Selector::from_label_selector`]) or parsed from the query-string syntax
//! of `?labelSelector=` ([`Selector::parse`], e.g. `a=b,c!=d,e in (x,y),!f`), and both give the
//! same structure, checked the way Kubernetes checks it. Placement claim selectors are label
//! selectors over a cluster's claims ([`claims_match`]).
//!
//! ```
//! use std::collections::BTreeMap;
//! use ocm_api::selector::Selector;
//!
//! let selector = Selector::parse("env in (prod,staging),!canary").unwrap();
//! let labels = BTreeMap::from([("env".to_owned(), "prod".to_owned())]);
//! assert!(selector.matches(&labels));
//! assert_eq!(selector.to_string(), "!canary,env in (prod,staging)");
//! ```

mod parse;
mod validate;

use std::{collections::BTreeMap, fmt};

use crate::{
    cluster::{v1::ManagedClusterClaim, v1beta1::ClusterClaimSelector},
    meta::{LabelSelector, LabelSelectorRequirement},
};

/// Why a selector is invalid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An expression of a [`LabelSelector`] names an operator other than `In`, `NotIn`, `Exists`
    /// and `DoesNotExist`.
    #[error("{operator:?} is not a valid label selector operator (key {key:?})")]
    ParseOperator {
        /// The key of the requirement.
        key: String,
        /// The operator given.
        operator: String,
    },
    /// The values do not suit the operator (none for `In`, some for `Exists`, …).
    #[error("invalid values for operator {operator} of key {key:?}: {reason}")]
    CheckValues {
        /// The key of the requirement.
        key: String,
        /// The operator of the requirement.
        operator: Operator,
        /// What is wrong.
        reason: &'static str,
    },
    /// A key is no valid label key.
    #[error("invalid label key {key:?}: {reason}")]
    ValidateKey {
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A value is no valid label value.
    #[error("invalid label value {value:?} for key {key:?}: {reason}")]
    ValidateValue {
        /// The key of the requirement.
        key: String,
        /// The value.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// The query string does not follow the selector syntax.
    #[error("unable to parse requirement: found '{found}', expected: {expected}")]
    ParseQuery {
        /// The text found where something else was expected.
        found: String,
        /// What was expected.
        expected: &'static str,
    },
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a requirement relates a label to its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// The label is present with one of the values.
    In,
    /// The label is absent, or present with none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label is present with the value (`key=value`, and `matchLabels`).
    Equals,
    /// The label is present with the value (`key==value`).
    DoubleEquals,
    /// The label is absent, or present with another value (`key!=value`).
    NotEquals,
    /// The label is an integer greater than the value (`key>5`).
    GreaterThan,
    /// The label is an integer less than the value (`key<5`).
    LessThan,
}

impl Operator {
    /// The name of the operator in a [`LabelSelector`] expression, for the four operators it has.
    #[must_use]
    pub const fn as_api_str(self) -> Option<&'static str> {
        match self {
            Self::In => Some("In"),
            Self::NotIn => Some("NotIn"),
            Self::Exists => Some("Exists"),
            Self::DoesNotExist => Some("DoesNotExist"),
            _ => None,
        }
    }

    /// The operator of a [`LabelSelector`] expression.
    ///
    /// # Errors
    ///
    /// [`Error::ParseOperator`] for anything but `In`, `NotIn`, `Exists` and `DoesNotExist`.
    pub fn from_api_str(key: &str, operator: &str) -> Result<Self> {
        match operator {
            "In" => Ok(Self::In),
            "NotIn" => Ok(Self::NotIn),
            "Exists" => Ok(Self::Exists),
            "DoesNotExist" => Ok(Self::DoesNotExist),
            _ => Err(Error::ParseOperator {
                key: key.to_owned(),
                operator: operator.to_owned(),
            }),
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::GreaterThan => "gt",
            Self::LessThan => "lt",
        })
    }
}

/// One requirement on one label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// A checked requirement.
    ///
    /// # Errors
    ///
    /// - [`Error::ValidateKey`] if `key` is no valid label key;
    /// - [`Error::CheckValues`] if `In`/`NotIn` have no value, `Exists`/`DoesNotExist` have some,
    ///   the equality operators do not have exactly one, or `>`/`<` do not have one integer;
    /// - [`Error::ValidateValue`] if a value is no valid label value.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self> {
        if let Some(reason) = validate::key_problem(key) {
            return Err(Error::ValidateKey {
                key: key.to_owned(),
                reason,
            });
        }
        let values_error = |reason| Error::CheckValues {
            key: key.to_owned(),
            operator,
            reason,
        };
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(values_error(
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
                return Err(values_error(
                    "exact-match compatibility requires one single value",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(values_error(
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    return Err(values_error(
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                if values.iter().any(|v| v.parse::<i64>().is_err()) {
                    return Err(values_error(
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
            _ => {}
        }
        for value in &values {
            if let Some(reason) = validate::value_problem(value) {
                return Err(Error::ValidateValue {
                    key: key.to_owned(),
                    value: value.clone(),
                    reason,
                });
            }
        }
        Ok(Self {
            key: key.to_owned(),
            operator,
            values,
        })
    }

    /// The label key.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    #[must_use]
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values (empty for `Exists` and `DoesNotExist`).
    #[must_use]
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether `labels` meet the requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        let listed = |v: &String| self.values.contains(v);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => value.is_some_and(listed),
            Operator::NotIn | Operator::NotEquals => !value.is_some_and(listed),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [bound]) = (value, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(actual), Ok(bound)) = (actual.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        let first = self.values.first().map_or("", String::as_str);
        match self.operator {
            Operator::Exists => write!(f, "{key}"),
            Operator::DoesNotExist => write!(f, "!{key}"),
            Operator::Equals => write!(f, "{key}={first}"),
            Operator::DoubleEquals => write!(f, "{key}=={first}"),
            Operator::NotEquals => write!(f, "{key}!={first}"),
            Operator::GreaterThan => write!(f, "{key}>{first}"),
            Operator::LessThan => write!(f, "{key}<{first}"),
            Operator::In | Operator::NotIn => {
                let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
                values.sort_unstable();
                values.dedup();
                let word = if self.operator == Operator::In {
                    "in"
                } else {
                    "notin"
                };
                write!(f, "{key} {word} ({})", values.join(","))
            }
        }
    }
}

/// Requirements on labels, all of which must hold; no requirement matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches everything.
    #[must_use]
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector from requirements, kept in key order (stable for equal keys).
    #[must_use]
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// The selector an API [`LabelSelector`] stands for: each `matchLabels` entry is an equality
    /// requirement, each expression a requirement of its operator.
    ///
    /// # Errors
    ///
    /// [`Error::ParseOperator`] for an unknown operator, and the errors of [`Requirement::new`].
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(key, Operator::Equals, vec![value.clone()])?);
        }
        requirements.extend(requirements_of(
            selector.match_expressions.as_deref().unwrap_or_default(),
        )?);
        Ok(Self::from_requirements(requirements))
    }

    /// Parses the query-string syntax of `?labelSelector=`: comma-separated requirements of the
    /// forms `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (v1,v2)`,
    /// `key notin (v1,v2)`, `key>5` and `key<5`. The empty string selects everything.
    ///
    /// Values of one requirement are de-duplicated and sorted, and requirements are sorted by key,
    /// as Kubernetes does.
    ///
    /// # Errors
    ///
    /// [`Error::ParseQuery`] for a syntax error, and the errors of [`Requirement::new`].
    pub fn parse(query: &str) -> Result<Self> {
        parse::parse(query).map(Self::from_requirements)
    }

    /// The requirements, in key order.
    #[must_use]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector has no requirement (and so matches everything).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` meet every requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl TryFrom<&LabelSelector> for Selector {
    type Error = Error;

    fn try_from(selector: &LabelSelector) -> Result<Self> {
        Self::from_label_selector(selector)
    }
}

impl std::str::FromStr for Selector {
    type Err = Error;

    fn from_str(query: &str) -> Result<Self> {
        Self::parse(query)
    }
}

fn requirements_of(expressions: &[LabelSelectorRequirement]) -> Result<Vec<Requirement>> {
    expressions
        .iter()
        .map(|e| {
            let operator = Operator::from_api_str(&e.key, &e.operator)?;
            Requirement::new(&e.key, operator, e.values.clone().unwrap_or_default())
        })
        .collect()
}

/// Whether `labels` match the API label selector.
///
/// # Errors
///
/// The errors of [`Selector::from_label_selector`] for an invalid selector.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> Result<bool> {
    Ok(Selector::from_label_selector(selector)?.matches(labels))
}

/// A cluster's claims as a label map (claim name to value), which claim selectors match against.
/// Claims without a name are left out; a later claim of the same name wins.
#[must_use]
pub fn claims_as_labels(claims: &[ManagedClusterClaim]) -> BTreeMap<String, String> {
    claims
        .iter()
        .filter_map(|c| Some((c.name.clone()?, c.value.clone().unwrap_or_default())))
        .collect()
}

/// The selector a Placement claim selector stands for: its expressions as label requirements.
///
/// # Errors
///
/// The errors of [`Selector::from_label_selector`].
pub fn claim_selector(selector: &ClusterClaimSelector) -> Result<Selector> {
    Ok(Selector::from_requirements(requirements_of(
        selector.match_expressions.as_deref().unwrap_or_default(),
    )?))
}

/// Whether a cluster with `claims` (its `status.clusterClaims`) matches a Placement claim
/// selector. An empty claim selector matches every cluster.
///
/// # Errors
///
/// The errors of [`Selector::from_label_selector`] for an invalid selector.
pub fn claims_match(selector: &ClusterClaimSelector, claims: &[ManagedClusterClaim]) -> Result<bool> {
    Ok(claim_selector(selector)?.matches(&claims_as_labels(claims)))
}

#[cfg(test)]
mod tests;
