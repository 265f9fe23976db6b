//! Integration tests of `ocm-api` against the upstream CRDs and examples in `../shared`.
//!
//! Tests that need `../shared` skip, saying so, when it is absent (a fresh clone without it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod addon_conversion;
mod crd_conformance;
mod examples_roundtrip;
mod kinds;
mod shared;
