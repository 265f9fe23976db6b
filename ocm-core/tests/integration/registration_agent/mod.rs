//! Integration tests of the registration agent (ocm-core.md §6.1), on a TestEnv hub and spoke.
//! The hub controllers are not used: `support` acts as the hub admin.

mod addon;
mod joining;
mod rebootstrap;
mod rotation;
mod status;
mod support;
