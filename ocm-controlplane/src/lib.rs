//! An embedded, Kubernetes-API-compatible control plane for Open Cluster Management.
//!
//! This crate serves the Kubernetes REST API from a single process, so that the OCM controllers of
//! this workspace can run and be tested on one machine without a Kubernetes cluster. It is the
//! test environment of every crate, the hub of the quickstart, and a standalone hub.
//!
//! | module | what it holds |
//! |---|---|
//! | [`storage`] | the `Storage` trait and `MemoryStorage` (bounded history, watch, redb persistence) |
//! | [`registry`] | served group/version/resources, built-in discovery data, per-type behaviour |
//! | [`rest`] | the verbs over storage: get, list, watch, create, update, patch, delete, deletecollection |
//! | [`crd`] | CustomResourceDefinitions: dynamic serving, pruning, defaulting, validation |
//! | [`conversion`] | converters called for CRDs with conversion strategy `Webhook` |
//! | [`fieldmanager`] | `managedFields`: Update operations and server-side apply |
//! | [`selector`] | label selectors (parsed by `ocm_api::selector`) and field selectors |
//! | [`status`] | errors as `metav1.Status` with kube-apiserver's reasons and messages |
//! | [`validation`] | names, labels, annotations, finalizers |
//! | [`gojson`] | JSON syntax errors worded as Go's |
//! | [`admission`] | in-process admission of the OCM hub kinds (ManagedCluster, ManagedClusterSetBinding) as upstream's webhooks |
//! | [`auth`] | authentication: client certificates, bootstrap and ServiceAccount tokens, impersonation |
//! | [`authorization`] | request attributes, RBAC evaluation, kube-apiserver's Forbidden messages |
//! | [`http`] | paths, content negotiation, discovery, Table output |
//! | [`metrics`] | Prometheus metrics on `/metrics` |
//! | [`tls`] | CA, serving and admin certificates, kubeconfig |
//! | [`server`] | `ControlPlane::builder()` and the running handle |
//! | [`testenv`] | `TestEnv` for tests |
//! | [`controllers`] | in-process controllers: built-in namespaces, `kube-root-ca.crt` and `default` ServiceAccount in every namespace, the controller-manager Lease, garbage collection, namespace deletion, ClusterRole aggregation, CSR signing |

// `ApiError` carries a full `metav1.Status` (message, details); boxing it everywhere would only
// move the allocation. Errors are the cold path of every handler.
#![allow(clippy::result_large_err)]

pub mod admission;
pub mod auth;
pub mod authorization;
pub mod controllers;
pub mod conversion;
pub mod crd;
pub mod fieldmanager;
pub mod gojson;
pub mod http;
pub mod metrics;
pub mod registry;
pub mod rest;
pub mod selector;
pub mod server;
pub mod status;
pub mod storage;
pub mod testenv;
pub mod tls;
pub mod validation;

pub use server::{ControlPlane, ControlPlaneBuilder, ControlPlaneHandle};
pub use testenv::TestEnv;
