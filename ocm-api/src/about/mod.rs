//! `about.k8s.io`: the SIG-Multicluster About API, with which a cluster describes itself. OCM
//! installs it on managed clusters.
//!
//! | version | kinds |
//! |---|---|
//! | [`v1alpha1`] | [`ClusterProperty`](v1alpha1::ClusterProperty) |

pub mod v1alpha1;

use crate::crd::{self, GeneratedCrd, InstallTarget, VersionedCrd};

/// The API group of this module.
pub const GROUP: &str = "about.k8s.io";

/// The annotation kube-apiserver requires on CRDs of groups under `k8s.io` and `kubernetes.io`.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Where the About API was approved: the Kubernetes enhancement (KEP-2149) upstream's CRD names.
pub const API_APPROVAL: &str = "https://github.com/kubernetes/enhancements/pull/3084";

/// The CRDs of this group. `about.k8s.io` is a protected group, so its CRD carries the API
/// approval annotation (kube-apiserver refuses it without).
pub(crate) fn crds() -> crd::Result<Vec<GeneratedCrd>> {
    let mut crd = v1alpha1::ClusterProperty::versioned_crd()?;
    crd.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(API_APPROVED_ANNOTATION.to_owned(), API_APPROVAL.to_owned());
    Ok(vec![GeneratedCrd {
        target: InstallTarget::Managed,
        crd,
    }])
}
