//! The status side of the work agent: what the agent reports about the objects a ManifestWork
//! applied (upstream's `AvailableStatusController`).
//!
//! For every manifest of a work's `status.resourceStatus` the agent reads the object on the
//! managed cluster and sets the manifest condition `Available`, the `statusFeedback` values and
//! `StatusFeedbackSynced`, and the conditions of the manifest's condition rules; the work then
//! gets `Available` and one aggregated condition per rule condition type. The status is written
//! only when it changed.
//!
//! | module | what it holds |
//! |---|---|
//! | [`jsonpath`] | kube's JSONPath templates (`{.status.conditions[?(@.type=="Ready")].status}`) |
//! | [`feedback`] | feedback values (well-known and JSONPaths) and `StatusFeedbackSynced` |
//! | [`rules`] | condition rules (well-known and CEL) and pruning of stale rule conditions |
//! | [`aggregate`] | the work-level `Available` and `ConditionRulesAggregated` conditions |

pub mod aggregate;
pub mod controller;
pub mod feedback;
pub mod jsonpath;
mod reader;
pub mod rules;
