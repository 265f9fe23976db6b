//! Example programs of OCM for Rust.
//!
//! The binaries that assemble a full hub, a klusterlet, the helloworld add-on (hub and agent) and
//! the quickstart live in this package as they are built; it is not published.
