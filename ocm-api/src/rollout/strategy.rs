//! The rollout algorithms behind [`super::plan`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::{
    apimachinery::pkg::util::intstr::IntOrString,
    jiff::{SignedDuration, Timestamp},
};

use super::{
    ClusterGroups, ClusterRolloutStatus, Error, GroupKey, Result, RolloutResult, RolloutStatus,
    duration::parse_go_duration,
};
use crate::cluster::v1alpha1::{
    MandatoryDecisionGroup, RolloutConfig, RolloutProgressive, RolloutProgressivePerGroup,
};

/// A length of time, or `None` for "forever" (no deadline, or no soak end).
type Span = Option<SignedDuration>;

/// Upstream uses the largest Go duration as "forever"; a configured duration that large means
/// the same.
fn span(duration: SignedDuration) -> Span {
    (duration.as_nanos() != i128::from(i64::MAX)).then_some(duration)
}

/// Whether `text` matches upstream's `^(([0-9])+[h|m|s])|None$`: digits then `h`, `m`, `s` or `|`
/// at the start, or `None` at the end.
fn matches_deadline_pattern(text: &str) -> bool {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && matches!(text.as_bytes().get(digits), Some(b'h' | b'm' | b's' | b'|')))
        || text.ends_with("None")
}

/// Reads a `progressDeadline`: `Some` duration, or `None` for no deadline (the value absent,
/// empty or `None`).
///
/// # Errors
///
/// [`Error::ParseProgressDeadline`] unless the value is `None` or a Go duration starting with a
/// whole number of hours, minutes or seconds (`90s`, `30m`, `1h30m`).
pub fn parse_progress_deadline(value: Option<&str>) -> Result<Span> {
    match value {
        None | Some("" | "None") => Ok(None),
        Some(text) if matches_deadline_pattern(text) => parse_go_duration(text)
            .map(span)
            .map_err(|_| Error::ParseProgressDeadline(text.to_owned())),
        Some(text) => Err(Error::ParseProgressDeadline(text.to_owned())),
    }
}

/// `minSuccessTime`: absent means zero.
pub(super) fn parse_min_success_time(value: Option<&str>) -> Result<Span> {
    match value {
        None => Ok(Some(SignedDuration::ZERO)),
        Some(text) => parse_go_duration(text)
            .map(span)
            .map_err(|source| Error::ParseMinSuccessTime {
                value: text.to_owned(),
                source,
            }),
    }
}

/// Checks that a count-or-percentage is a count, or a number followed by `%`.
pub(super) fn check_rollout_size(value: Option<&IntOrString>) -> Result<(), String> {
    rollout_size(value, 0, 0).map(|_| ())
}

/// A count-or-percentage of `total`: a count as given, a percentage rounded up; a result of zero
/// or less, or above `total`, falls back to `default`. Absent counts as 0.
#[expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    reason = "percentages are computed in float64 exactly as upstream does"
)]
pub(super) fn rollout_size(
    value: Option<&IntOrString>,
    total: usize,
    default: usize,
) -> Result<usize, String> {
    let length: i64 = match value {
        None => 0,
        Some(IntOrString::Int(count)) => i64::from(*count),
        Some(IntOrString::String(text)) => {
            let Some(number) = text.strip_suffix('%') else {
                return Err(format!(
                    "'{text}' is an invalid maximum threshold value: string is not a percentage"
                ));
            };
            let percent: f64 = number
                .parse()
                .map_err(|_| format!("'{text}' is not a valid percentage"))?;
            (percent / 100.0 * total as f64).ceil() as i64
        }
    };
    match usize::try_from(length) {
        Ok(length) if length > 0 && length <= total => Ok(length),
        _ => Ok(default),
    }
}

/// The group keys mandatory decision groups name: by name when one is given, else by index.
pub(super) fn mandatory_keys(groups: Option<&[MandatoryDecisionGroup]>) -> Vec<GroupKey> {
    groups
        .unwrap_or_default()
        .iter()
        .map(|g| match g.group_name.as_deref() {
            Some(name) if !name.is_empty() => GroupKey::new(name, 0),
            _ => GroupKey::new("", g.group_index.unwrap_or_default()),
        })
        .collect()
}

/// Splits statuses into those of selected clusters and those of clusters no longer selected,
/// keeping their order.
fn split_removed(
    groups: &ClusterGroups,
    statuses: &[ClusterRolloutStatus],
) -> (Vec<ClusterRolloutStatus>, Vec<ClusterRolloutStatus>) {
    let clusters = groups.clusters();
    statuses
        .iter()
        .cloned()
        .partition(|s| clusters.contains(s.cluster_name.as_str()))
}

pub(super) struct Planner<'a> {
    pub(super) groups: &'a ClusterGroups,
    pub(super) now: Timestamp,
}

impl Planner<'_> {
    pub(super) fn all(
        &self,
        config: Option<&RolloutConfig>,
        statuses: &[ClusterRolloutStatus],
    ) -> Result<RolloutResult> {
        let deadline = parse_progress_deadline(config.and_then(|c| c.progress_deadline.as_deref()))?;
        let all = self.groups_besides(&[]);
        let (current, removed) = split_removed(&all, statuses);
        let total = all.clusters().len();
        let mut result = self.per_cluster(&all, total, total, Some(SignedDuration::ZERO), deadline, current);
        result.clusters_removed = removed;
        Ok(result)
    }

    pub(super) fn progressive(
        &self,
        progressive: &RolloutProgressive,
        statuses: &[ClusterRolloutStatus],
    ) -> Result<RolloutResult> {
        let config = &progressive.config;
        let min_success = parse_min_success_time(config.min_success_time.as_deref())?;
        let deadline = parse_progress_deadline(config.progress_deadline.as_deref())?;
        let all = self.groups_besides(&[]);
        let (current, removed) = split_removed(&all, statuses);
        let max_failures = rollout_size(config.max_failures.as_ref(), all.clusters().len(), 0)
            .map_err(Error::ParseMaxFailures)?;

        let mandatory = mandatory_keys(progressive.mandatory_decision_groups.as_deref());
        if let Some(mut result) = self.mandatory_groups_first(&mandatory, min_success, deadline, &current) {
            result.clusters_removed = removed;
            return Ok(result);
        }

        let rest = self.groups_besides(&mandatory);
        let total = rest.clusters().len();
        let size = rollout_size(progressive.max_concurrency.as_ref(), total, total)
            .map_err(Error::ParseMaxConcurrency)?;
        let mut result = self.per_cluster(&rest, size, max_failures, min_success, deadline, current);
        result.clusters_removed = removed;
        Ok(result)
    }

    pub(super) fn progressive_per_group(
        &self,
        per_group: &RolloutProgressivePerGroup,
        statuses: &[ClusterRolloutStatus],
    ) -> Result<RolloutResult> {
        let config = &per_group.config;
        let min_success = parse_min_success_time(config.min_success_time.as_deref())?;
        let deadline = parse_progress_deadline(config.progress_deadline.as_deref())?;
        let max_failures = config.max_failures.clone().unwrap_or(IntOrString::Int(0));
        check_rollout_size(Some(&max_failures)).map_err(Error::ParseMaxFailures)?;
        let all = self.groups_besides(&[]);
        let (current, removed) = split_removed(&all, statuses);

        let mandatory = mandatory_keys(per_group.mandatory_decision_groups.as_deref());
        if let Some(mut result) = self.mandatory_groups_first(&mandatory, min_success, deadline, &current) {
            result.clusters_removed = removed;
            return Ok(result);
        }

        let rest = self.groups_besides(&mandatory);
        let mut result = self.per_group(&rest, &max_failures, min_success, deadline, &current);
        result.clusters_removed = removed;
        Ok(result)
    }

    /// Rolls out cluster by cluster, in name order, until `rollout_size` clusters are in flight;
    /// stops adding clusters once more than `max_failures` failed or timed out.
    fn per_cluster(
        &self,
        groups: &ClusterGroups,
        rollout_size: usize,
        max_failures: usize,
        min_success: Span,
        deadline: Span,
        mut statuses: Vec<ClusterRolloutStatus>,
    ) -> RolloutResult {
        let (mut rollout, mut timed_out) = (Vec::new(), Vec::new());
        let mut existing = BTreeSet::new();
        let (mut failures, mut breach) = (0_usize, false);
        statuses.sort_by(|a, b| a.cluster_name.cmp(&b.cluster_name));
        for mut status in statuses {
            if status.cluster_name.is_empty() {
                continue;
            }
            existing.insert(status.cluster_name.clone());
            // After a breach only clusters that already got the workload are still followed.
            if !breach || status.status != RolloutStatus::ToApply {
                self.determine(&mut status, min_success, deadline, &mut rollout, &mut timed_out);
            }
            if matches!(status.status, RolloutStatus::TimeOut | RolloutStatus::Failed) {
                failures += 1;
                breach = failures > max_failures;
            }
            if rollout.len() >= rollout_size {
                return self.result(rollout, timed_out, breach);
            }
        }
        if breach {
            return self.result(rollout, timed_out, breach);
        }
        for cluster in groups.clusters() {
            if existing.contains(cluster) {
                continue;
            }
            let key = groups.group_of(cluster).cloned().unwrap_or_default();
            rollout.push(ClusterRolloutStatus::new(cluster, key, RolloutStatus::ToApply));
            if rollout.len() >= rollout_size {
                break;
            }
        }
        self.result(rollout, timed_out, false)
    }

    /// Rolls out group by group, in index order: a group's new clusters are added only when the
    /// earlier groups have nothing in flight; stops in a group with more failed or timed-out
    /// clusters than `max_failures` of that group allows.
    /// Mandatory decision groups roll out first, tolerating no failure: while any of them still
    /// has clusters to update or timed out, that is the whole plan.
    fn mandatory_groups_first(
        &self,
        mandatory: &[GroupKey],
        min_success: Option<SignedDuration>,
        deadline: Option<SignedDuration>,
        current: &[ClusterRolloutStatus],
    ) -> Option<RolloutResult> {
        let mandatory_groups = self.groups_with(mandatory);
        mandatory_groups.groups().next()?;
        let result = self.per_group(
            &mandatory_groups,
            &IntOrString::Int(0),
            min_success,
            deadline,
            current,
        );
        (!result.clusters_to_rollout.is_empty() || !result.clusters_timed_out.is_empty()).then_some(result)
    }

    fn per_group(
        &self,
        groups: &ClusterGroups,
        max_failures: &IntOrString,
        min_success: Span,
        deadline: Span,
        statuses: &[ClusterRolloutStatus],
    ) -> RolloutResult {
        let (mut rollout, mut timed_out) = (Vec::new(), Vec::new());
        let mut existing = HashMap::new();
        for status in statuses {
            // New (ToApply) clusters are handled group by group below.
            if status.cluster_name.is_empty() || status.status == RolloutStatus::ToApply {
                continue;
            }
            let mut status = status.clone();
            self.determine(&mut status, min_success, deadline, &mut rollout, &mut timed_out);
            existing.insert(status.cluster_name.clone(), status.status);
        }

        let (mut total_failures, mut breach) = (0_usize, false);
        for (key, clusters) in groups.groups() {
            let max_group_failures = rollout_size(Some(max_failures), clusters.len(), 0).unwrap_or(0);
            let mut group_failures = 0_usize;
            for cluster in clusters {
                if let Some(status) = existing.get(cluster.as_str()) {
                    if matches!(status, RolloutStatus::TimeOut | RolloutStatus::Failed) {
                        group_failures += 1;
                        breach = group_failures > max_group_failures;
                    }
                    continue;
                }
                rollout.push(ClusterRolloutStatus::new(
                    cluster,
                    key.clone(),
                    RolloutStatus::ToApply,
                ));
            }
            total_failures += group_failures;
            // The group is done only when nothing but failures is left in flight.
            if rollout.len() > total_failures || breach {
                break;
            }
        }
        self.result(rollout, timed_out, breach)
    }

    /// Sorts one cluster into the rollout or the timed-out list (or neither), setting its
    /// recheck time, and its status to `TimeOut` when its deadline passed.
    pub(super) fn determine(
        &self,
        status: &mut ClusterRolloutStatus,
        min_success: Span,
        deadline: Span,
        rollout: &mut Vec<ClusterRolloutStatus>,
        timed_out: &mut Vec<ClusterRolloutStatus>,
    ) {
        match status.status {
            RolloutStatus::ToApply => rollout.push(status.clone()),
            RolloutStatus::Succeeded => {
                // Still soaking: keep it in flight until the soak ends.
                if let Some(soak_end) = self.end_of(status.last_transition_time, min_success)
                    && self.now < soak_end
                {
                    status.recheck_time = Some(soak_end);
                    rollout.push(status.clone());
                }
            }
            RolloutStatus::TimeOut | RolloutStatus::Skip => {}
            RolloutStatus::Progressing | RolloutStatus::Failed => {
                let timeout_at = self.end_of(status.last_transition_time, deadline);
                status.recheck_time = timeout_at;
                if timeout_at.is_none_or(|at| self.now < at) {
                    rollout.push(status.clone());
                } else {
                    status.status = RolloutStatus::TimeOut;
                    timed_out.push(status.clone());
                }
            }
        }
    }

    /// `start` (or now, without one) plus `span`; `None` for "forever".
    fn end_of(&self, start: Option<Timestamp>, span: Span) -> Option<Timestamp> {
        start.unwrap_or(self.now).checked_add(span?).ok()
    }

    fn result(
        &self,
        rollout: Vec<ClusterRolloutStatus>,
        timed_out: Vec<ClusterRolloutStatus>,
        breach: bool,
    ) -> RolloutResult {
        let recheck_after = rollout
            .iter()
            .filter_map(|c| c.recheck_time)
            .map(|at| self.now.duration_until(at))
            .filter(|wait| wait.is_positive())
            .min()
            .and_then(|wait| std::time::Duration::try_from(wait).ok());
        RolloutResult {
            clusters_to_rollout: rollout,
            clusters_timed_out: timed_out,
            clusters_removed: Vec::new(),
            max_failure_breach: breach,
            recheck_after,
        }
    }

    /// Every group's name by index, and every name's indexes (ascending).
    fn indexes(&self) -> (BTreeMap<i32, &str>, BTreeMap<&str, Vec<i32>>) {
        let mut index_to_name = BTreeMap::new();
        let mut name_to_indexes: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (key, _) in self.groups.groups() {
            index_to_name.insert(key.index, key.name.as_str());
            name_to_indexes
                .entry(key.name.as_str())
                .or_default()
                .push(key.index);
        }
        (index_to_name, name_to_indexes)
    }

    /// The full keys of the groups `keys` name (a name stands for every group of that name).
    fn resolve(&self, keys: &[GroupKey]) -> Vec<GroupKey> {
        let (index_to_name, name_to_indexes) = self.indexes();
        let mut resolved = Vec::new();
        for key in keys {
            if key.name.is_empty() {
                if let Some(name) = index_to_name.get(&key.index) {
                    resolved.push(GroupKey::new(name, key.index));
                }
            } else if let Some(indexes) = name_to_indexes.get(key.name.as_str()) {
                resolved.extend(indexes.iter().map(|index| GroupKey::new(&key.name, *index)));
            }
        }
        resolved
    }

    /// The groups `keys` name.
    fn groups_with(&self, keys: &[GroupKey]) -> ClusterGroups {
        self.select(self.resolve(keys))
    }

    /// The groups with index 0 to the number of groups minus one, except those `keys` name.
    fn groups_besides(&self, keys: &[GroupKey]) -> ClusterGroups {
        let excluded = self.resolve(keys);
        let (index_to_name, _) = self.indexes();
        let count = i32::try_from(index_to_name.len()).unwrap_or(i32::MAX);
        let included = (0..count)
            .map(|index| GroupKey::new(index_to_name.get(&index).copied().unwrap_or_default(), index))
            .filter(|key| !excluded.contains(key))
            .collect();
        self.select(included)
    }

    fn select(&self, keys: Vec<GroupKey>) -> ClusterGroups {
        let mut selected = ClusterGroups::new();
        for key in keys {
            if let Some((_, clusters)) = self.groups.groups().find(|(k, _)| **k == key) {
                selected = selected.with_group(key, clusters.iter().map(String::as_str));
            }
        }
        selected
    }
}
