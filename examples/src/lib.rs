//! Example programs of OCM for Rust, and what they share.
//!
//! The binaries (`hub`, `klusterlet`, `quickstart`, and the helloworld add-on's `helloworld` and `helloworld-agent`) assemble the controllers of `ocm-core` into
//! processes that run the way upstream's do: flags named like upstream's, logs through `tracing`,
//! Prometheus metrics and health checks over HTTP, and a clean shutdown on SIGTERM or Ctrl-C. This
//! library holds those shared parts; the package is not published.
//!
//! | module | what it holds |
//! |---|---|
//! | [`cluster`] | the cluster a process talks to: a kubeconfig's, or an embedded control plane (`--embedded DIR`) |
//! | [`hub`] | the `hub` binary: flags, set-up, controllers, `get-token` |
//! | [`klusterlet`] | the `klusterlet` binary: flags, the registration and work agents, `--unjoin` |
//! | [`quickstart`] | the `quickstart` binary: an embedded hub and managed cluster joined step by step, then the helloworld add-on (`quickstart_addon`) |
//! | [`helloworld`] | the `helloworld` binary: the helloworld add-on's hub controller (templates, registration, hub RBAC, lease health) |
//! | [`helloworld_agent`] | the `helloworld-agent` binary: copies the hub ConfigMaps of its cluster to the managed cluster and renews the add-on lease |
//! | [`flags`] | `--feature-gates` and `key=value` flags parsed as upstream's components parse them |
//! | [`process`] | logging set-up and the shutdown signal |
//! | [`serving`] | `/healthz`, `/readyz` and `/metrics` over HTTP |

pub mod cluster;
pub mod flags;
pub mod helloworld;
pub mod helloworld_agent;
pub mod hub;
pub mod klusterlet;
pub mod process;
pub mod quickstart;
mod quickstart_addon;
pub mod serving;
