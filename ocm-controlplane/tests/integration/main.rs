//! Integration tests of ocm-controlplane: one test binary, one module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod bad_input;
mod builtin_validation;
mod compaction;
mod conformance;
mod crd_conversion;
mod crd_lifecycle;
mod discovery_v2;
mod durability;
mod garbage_collection;
mod go_clients;
mod inflight;
mod kube_client;
mod kube_runtime;
mod kubectl;
mod namespace_lifecycle;
mod request_options;
mod scale;
mod security_rbac;
mod server_side_apply;
mod strategic_merge;
mod token_request;
