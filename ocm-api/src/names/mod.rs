//! The wire names OCM components agree on, in one place: label, annotation and finalizer keys,
//! taint keys, condition types and reasons, object names and name formats, identities, and
//! feature gates.
//!
//! Every string here must match upstream OCM byte for byte: agents, hubs and add-ons written in
//! Go read and write the same objects. Name formats that take arguments are functions.
//!
//! | module | what it holds |
//! |---|---|
//! | [`labels`] | label keys (and the values some of them take) |
//! | [`annotations`] | annotation keys and their fixed values |
//! | [`finalizers`] | finalizers OCM controllers put on objects |
//! | [`taints`] | taint keys put on ManagedClusters |
//! | [`conditions`] | condition types and reasons, per kind |
//! | [`namespaces`] | well-known namespaces |
//! | [`secrets`] | secrets, config maps, their data keys and mount paths |
//! | [`leases`] | leases agents renew |
//! | [`objects`] | names and name formats of other objects (works, decisions, RBAC, agents, claims) |
//! | [`subjects`] | users, groups, certificate subjects and signer names |
//! | [`feature_gates`] | feature gate names and their defaults per component |
//! | [`values`] | the strings of enum-like API fields and other fixed values |

pub mod annotations;
pub mod conditions;
pub mod feature_gates;
pub mod finalizers;
pub mod labels;
pub mod leases;
pub mod namespaces;
pub mod objects;
pub mod secrets;
pub mod subjects;
pub mod taints;
pub mod values;
