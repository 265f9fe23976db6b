//! Integration tests of the work agent (ocm-core.md §3, the work scenarios of §6.2), each
//! against a TestEnv hub and spoke (or the real clusters named by `OCM_TEST_HUB_KUBECONFIG` /
//! `OCM_TEST_SPOKE_KUBECONFIG`) with the agent running in the test process.
//!
//! | module | scenarios |
//! |---|---|
//! | `work` | `work:` — create, update, delete, several manifests, CRD + CR, cluster-scoped, conditions, labels |
//! | `deleteoption` | `deleteoption:` — shared resources, Orphan, SelectivelyOrphan |
//! | `updatestrategy` | `updatestrategy:` — CreateOnly, ReadOnly, ServerSideApply and ignoreFields |
//! | `statusfeedback` | `statusfeedback:` — well-known statuses, JSONPaths, raw JSON, wildcards, Watch |
//! | `conditionrules` | `conditionrules:` — well-known and CEL condition rules, aggregation, first match |
//! | `executor` | `executor:` — permission checks of the executor ServiceAccount, escalation, caches |
//! | `unmanaged_appliedwork` | `unmanaged_appliedwork:` — eviction of AppliedManifestWorks whose work is gone |

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

mod conditionrules;
mod deleteoption;
mod executor;
mod statusfeedback;
mod support;
mod updatestrategy;
mod work;
