//! Condition types and reasons, per kind.
//!
//! Each kind has a module with its condition types as constants and a `reasons` submodule with
//! the reasons OCM controllers write, prefixed by the condition they belong to where that helps.
//!
//! | module | kinds |
//! |---|---|
//! | [`cluster`] | ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding, Placement |
//! | [`work`] | ManifestWork, its manifests, ManifestWorkReplicaSet |
//! | [`addon`] | ManagedClusterAddOn, ClusterManagementAddOn |
//! | [`operator`] | ClusterManager, Klusterlet |
//! | [`certificate_signing_request`] | the CSRs OCM approves |

pub mod addon;
pub mod cluster;
pub mod operator;
pub mod work;

/// The `True` condition status.
pub const STATUS_TRUE: &str = "True";
/// The `False` condition status.
pub const STATUS_FALSE: &str = "False";
/// The `Unknown` condition status.
pub const STATUS_UNKNOWN: &str = "Unknown";

/// Conditions on CertificateSigningRequests that OCM controllers approve.
pub mod certificate_signing_request {
    /// The CSR was approved.
    pub const APPROVED: &str = "Approved";
    /// The CSR was denied.
    pub const DENIED: &str = "Denied";

    /// Reasons OCM writes on CSR conditions.
    pub mod reasons {
        /// A hub controller (cluster registration or an add-on manager) approved the CSR.
        pub const AUTO_APPROVED: &str = "AutoApprovedByHubCSRApprovingController";
    }
}
