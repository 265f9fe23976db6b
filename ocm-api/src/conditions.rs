//! Reading and writing status conditions the way Kubernetes does.
//!
//! The rules are those of Kubernetes' `meta.SetStatusCondition`: a condition is identified by its
//! `type`; setting a condition whose status did not change keeps its `lastTransitionTime` and only
//! updates `reason`, `message` and `observedGeneration`; a status change also moves
//! `lastTransitionTime`. Library code has no clock: callers pass the current time in, usually by
//! building the condition with [`Condition::new`].
//!
//! The free functions work on a `Vec<Condition>`; [`ConditionList`] offers the same operations as
//! methods on `Vec<Condition>` and on the `Option<Vec<Condition>>` that status structs hold.
//!
//! ```
//! use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
//! use ocm_api::conditions::{ConditionList, Status};
//! use ocm_api::meta::Condition;
//!
//! let now = Time(Timestamp::from_second(1_700_000_000).unwrap());
//! let mut conditions: Option<Vec<Condition>> = None;
//! conditions.set_condition(Condition::new("Available", Status::True, "Ready", "all good", now));
//! assert!(conditions.is_condition_true("Available"));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::meta::Condition;

/// The status of a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Whether the condition holds is not known.
    Unknown,
}

impl Status {
    /// The wire string: `True`, `False` or `Unknown`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }

    /// The status for a wire string, or `None` for anything else.
    #[must_use]
    pub fn parse(status: &str) -> Option<Self> {
        match status {
            "True" => Some(Self::True),
            "False" => Some(Self::False),
            "Unknown" => Some(Self::Unknown),
            _ => None,
        }
    }
}

impl From<bool> for Status {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Condition {
    /// A condition of `type_` with the given status, reason and message, whose
    /// `lastTransitionTime` is `now` (used only if setting it changes the status).
    #[must_use]
    pub fn new(type_: &str, status: Status, reason: &str, message: &str, now: Time) -> Self {
        Self {
            last_transition_time: now,
            message: message.to_owned(),
            observed_generation: None,
            reason: reason.to_owned(),
            status: status.as_str().to_owned(),
            type_: type_.to_owned(),
        }
    }

    /// The same condition, computed from `generation` of the object.
    #[must_use]
    pub fn with_observed_generation(mut self, generation: i64) -> Self {
        self.observed_generation = Some(generation);
        self
    }

    /// The status, or `None` if the condition carries an invalid one.
    #[must_use]
    pub fn status(&self) -> Option<Status> {
        Status::parse(&self.status)
    }
}

/// The condition of `type_`, if present.
#[must_use]
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The condition of `type_`, mutably, if present.
#[must_use]
pub fn find_mut<'a>(conditions: &'a mut [Condition], type_: &str) -> Option<&'a mut Condition> {
    conditions.iter_mut().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present with `status`.
#[must_use]
pub fn has_status(conditions: &[Condition], type_: &str, status: Status) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == status.as_str())
}

/// Whether the condition of `type_` is present and `True`.
#[must_use]
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    has_status(conditions, type_, Status::True)
}

/// Whether the condition of `type_` is present and `False`.
#[must_use]
pub fn is_false(conditions: &[Condition], type_: &str) -> bool {
    has_status(conditions, type_, Status::False)
}

/// Sets `condition` in `conditions` and tells whether anything changed.
///
/// A condition of a new type is appended as given. For an existing type, a different status
/// replaces status and `lastTransitionTime` (with the one of `condition`); `reason`, `message`
/// and `observedGeneration` are always taken from `condition`; the position in the list stays.
pub fn set(conditions: &mut Vec<Condition>, condition: Condition) -> bool {
    let Some(existing) = find_mut(conditions, &condition.type_) else {
        conditions.push(condition);
        return true;
    };
    let mut changed = false;
    if existing.status != condition.status {
        existing.status = condition.status;
        existing.last_transition_time = condition.last_transition_time;
        changed = true;
    }
    if existing.reason != condition.reason {
        existing.reason = condition.reason;
        changed = true;
    }
    if existing.message != condition.message {
        existing.message = condition.message;
        changed = true;
    }
    if existing.observed_generation != condition.observed_generation {
        existing.observed_generation = condition.observed_generation;
        changed = true;
    }
    changed
}

/// Removes the condition of `type_` and tells whether it was present.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// The condition operations as methods on the lists status structs hold.
///
/// For `Option<Vec<Condition>>`, setting a condition on `None` creates the list, and removing the
/// last condition turns the list back into `None`, so that the status serializes as Go's
/// `omitempty` would.
pub trait ConditionList {
    /// The conditions, empty if there are none.
    fn conditions(&self) -> &[Condition];

    /// Sets a condition (see [`set`]) and tells whether anything changed.
    fn set_condition(&mut self, condition: Condition) -> bool;

    /// Removes the condition of `type_` (see [`remove`]) and tells whether it was present.
    fn remove_condition(&mut self, type_: &str) -> bool;

    /// The condition of `type_`, if present.
    fn find_condition(&self, type_: &str) -> Option<&Condition> {
        find(self.conditions(), type_)
    }

    /// Whether the condition of `type_` is present and `True`.
    fn is_condition_true(&self, type_: &str) -> bool {
        is_true(self.conditions(), type_)
    }

    /// Whether the condition of `type_` is present and `False`.
    fn is_condition_false(&self, type_: &str) -> bool {
        is_false(self.conditions(), type_)
    }
}

impl ConditionList for Vec<Condition> {
    fn conditions(&self) -> &[Condition] {
        self
    }

    fn set_condition(&mut self, condition: Condition) -> bool {
        set(self, condition)
    }

    fn remove_condition(&mut self, type_: &str) -> bool {
        remove(self, type_)
    }
}

impl ConditionList for Option<Vec<Condition>> {
    fn conditions(&self) -> &[Condition] {
        self.as_deref().unwrap_or_default()
    }

    fn set_condition(&mut self, condition: Condition) -> bool {
        set(self.get_or_insert_with(Vec::new), condition)
    }

    fn remove_condition(&mut self, type_: &str) -> bool {
        let Some(conditions) = self else {
            return false;
        };
        let removed = remove(conditions, type_);
        if conditions.is_empty() {
            *self = None;
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn available(status: Status, reason: &str, now: i64) -> Condition {
        Condition::new("Available", status, reason, "msg", at(now))
    }

    #[test]
    fn new_condition_is_appended_with_its_time() {
        let mut conditions = Vec::new();
        assert!(set(&mut conditions, available(Status::True, "Ready", 10)));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].last_transition_time, at(10));
        assert_eq!(conditions[0].status(), Some(Status::True));
    }

    #[test]
    fn same_status_keeps_transition_time_but_updates_the_rest() {
        let mut conditions = vec![available(Status::True, "Ready", 10)];
        let update = Condition::new("Available", Status::True, "StillReady", "other", at(20))
            .with_observed_generation(3);
        assert!(set(&mut conditions, update));
        let c = &conditions[0];
        assert_eq!(c.last_transition_time, at(10));
        assert_eq!(c.reason, "StillReady");
        assert_eq!(c.message, "other");
        assert_eq!(c.observed_generation, Some(3));
    }

    #[test]
    fn unchanged_condition_reports_no_change() {
        let mut conditions = vec![available(Status::True, "Ready", 10)];
        assert!(!set(&mut conditions, available(Status::True, "Ready", 99)));
        assert_eq!(conditions[0].last_transition_time, at(10));
    }

    #[test]
    fn status_change_moves_transition_time_in_place() {
        let mut conditions = vec![
            available(Status::True, "Ready", 10),
            Condition::new("Degraded", Status::False, "Fine", "", at(10)),
        ];
        assert!(set(&mut conditions, available(Status::False, "Broken", 30)));
        assert_eq!(conditions[0].type_, "Available");
        assert_eq!(conditions[0].status, "False");
        assert_eq!(conditions[0].last_transition_time, at(30));
        assert_eq!(conditions[1].type_, "Degraded");
    }

    #[test]
    fn find_and_status_checks() {
        let conditions = vec![
            available(Status::True, "Ready", 10),
            Condition::new("Degraded", Status::False, "Fine", "", at(10)),
            Condition::new("Progressing", Status::Unknown, "Wait", "", at(10)),
        ];
        assert_eq!(
            find(&conditions, "Degraded").map(|c| c.reason.as_str()),
            Some("Fine")
        );
        assert!(find(&conditions, "Missing").is_none());
        assert!(is_true(&conditions, "Available"));
        assert!(!is_false(&conditions, "Available"));
        assert!(is_false(&conditions, "Degraded"));
        assert!(!is_true(&conditions, "Progressing"));
        assert!(!is_false(&conditions, "Progressing"));
        assert!(has_status(&conditions, "Progressing", Status::Unknown));
        assert!(!is_true(&conditions, "Missing"));
        assert!(!is_false(&conditions, "Missing"));
    }

    #[test]
    fn remove_reports_presence() {
        let mut conditions = vec![available(Status::True, "Ready", 10)];
        assert!(!remove(&mut conditions, "Degraded"));
        assert!(remove(&mut conditions, "Available"));
        assert!(conditions.is_empty());
    }

    #[test]
    fn optional_lists_are_created_and_dropped() {
        let mut conditions: Option<Vec<Condition>> = None;
        assert!(!conditions.is_condition_true("Available"));
        assert!(!conditions.remove_condition("Available"));
        assert!(conditions.set_condition(available(Status::True, "Ready", 10)));
        assert!(conditions.is_condition_true("Available"));
        assert_eq!(
            conditions.find_condition("Available").map(|c| c.reason.as_str()),
            Some("Ready")
        );
        assert!(conditions.remove_condition("Available"));
        assert_eq!(conditions, None);
    }

    #[test]
    fn vec_lists_have_the_same_methods() {
        let mut conditions: Vec<Condition> = Vec::new();
        assert!(conditions.set_condition(available(Status::False, "Down", 10)));
        assert!(conditions.is_condition_false("Available"));
        assert!(conditions.remove_condition("Available"));
    }

    #[test]
    fn status_strings_round_trip() {
        for status in [Status::True, Status::False, Status::Unknown] {
            assert_eq!(Status::parse(status.as_str()), Some(status));
            assert_eq!(status.to_string(), status.as_str());
        }
        assert_eq!(Status::parse("true"), None);
        assert_eq!(Status::from(true), Status::True);
        assert_eq!(Status::from(false), Status::False);
    }
}
