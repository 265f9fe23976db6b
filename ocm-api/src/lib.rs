//! Typed Open Cluster Management (OCM) APIs.
//!
//! Every OCM kind as a Rust type that serializes exactly as upstream OCM does, the wire names that
//! OCM components agree on, and client-free helpers. This crate has no Kubernetes client and no
//! async runtime: it is what add-on authors and the other crates of this workspace build on.
//!
//! | module | what it holds |
//! |---|---|
//! | [`cluster`] | `cluster.open-cluster-management.io`: ManagedCluster, cluster sets, placement, claims |
//! | [`admission`] | ManagedCluster and ManagedClusterSetBinding admission as upstream's webhooks decide it (pure rules) |
//! | [`addon`] | `addon.open-cluster-management.io`: ClusterManagementAddOn, ManagedClusterAddOn, AddOnDeploymentConfig, AddOnTemplate (v1alpha1 and v1beta1, with conversion) |
//! | [`work`] | `work.open-cluster-management.io`: ManifestWork, AppliedManifestWork, ManifestWorkReplicaSet |
//! | [`operator`] | `operator.open-cluster-management.io`: ClusterManager, Klusterlet |
//! | [`multicluster`] | `multicluster.x-k8s.io` (SIG-Multicluster, installed on the hub): ClusterProfile |
//! | [`about`] | `about.k8s.io` (SIG-Multicluster, installed on managed clusters): ClusterProperty |
//! | [`names`] | wire names in one place: labels, annotations, finalizers, conditions, object names, feature gates |
//! | [`conditions`] | setting and reading status conditions with Kubernetes semantics |
//! | [`spec_hash`] | the Go-compatible configuration spec hash (and Go-compatible JSON) |
//! | [`selector`] | label selectors: matching, validation, the `?labelSelector=` syntax, Placement claim selectors |
//! | [`rollout`] | the rollout planner for All, Progressive and ProgressivePerGroup strategies |
//! | [`workbuilder`] | packing objects into size-bounded ManifestWorks, reusing existing works |
//! | [`decode`] | reading objects from JSON or YAML with errors that name the offending field |
//! | [`meta`] | Kubernetes types the kinds embed (conditions, label selectors) with their CRD schemas |
//! | [`schema`] | structural OpenAPI schemas generated from the types |
//! | [`crd`] | the CustomResourceDefinitions of every kind |
//! | [`resource`] | how the root type of each kind is defined |
//!
//! ```
//! use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
//! use ocm_api::{
//!     cluster::v1::{ManagedCluster, ManagedClusterSpec},
//!     conditions::{ConditionList, Status},
//!     meta::Condition,
//!     names::conditions::cluster::managed_cluster,
//! };
//!
//! // A cluster the hub accepts, as an agent would create it and the hub would mark it joined.
//! let mut cluster = ManagedCluster::new(
//!     "cluster1",
//!     ManagedClusterSpec { hub_accepts_client: Some(true), ..ManagedClusterSpec::default() },
//! );
//! let now = Time(Timestamp::from_second(1_700_000_000).unwrap());
//! let status = cluster.status.get_or_insert_with(Default::default);
//! status.conditions.set_condition(Condition::new(
//!     managed_cluster::JOINED,
//!     Status::True,
//!     managed_cluster::reasons::JOINED,
//!     "Managed cluster joined",
//!     now,
//! ));
//! assert!(status.conditions.is_condition_true(managed_cluster::JOINED));
//!
//! // Serialized exactly as upstream OCM writes it.
//! let json = serde_json::to_value(&cluster).unwrap();
//! assert_eq!(json["apiVersion"], "cluster.open-cluster-management.io/v1");
//! assert_eq!(json["spec"]["hubAcceptsClient"], true);
//! ```

pub mod about;
pub mod addon;
pub mod admission;
pub mod cluster;
pub mod conditions;
pub mod crd;
pub mod decode;
pub mod meta;
pub mod multicluster;
pub mod names;
pub mod operator;
pub mod resource;
pub mod rollout;
pub mod schema;
pub mod selector;
pub mod spec_hash;
pub mod work;
pub mod workbuilder;
