//! Types that both [`ClusterManager`](super::ClusterManager) and [`Klusterlet`](super::Klusterlet)
//! use.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::{Condition, ResourceRequirements, Toleration};

/// The pattern of a DNS host name (not an IP address): dot-separated labels.
pub const HOSTNAME_PATTERN: &str = r"^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])$";

/// The pattern of the ARN of an EKS cluster.
pub const EKS_CLUSTER_ARN_PATTERN: &str = r"^arn:aws:eks:([a-zA-Z0-9-]+):(\d{12}):cluster/([a-zA-Z0-9-]+)$";

/// A feature gate of an OCM component, switched on or off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureGate {
    /// The name of the feature, e.g. `ManifestWorkReplicaSet`.
    pub feature: String,
    /// Whether the feature is on; `Disable` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Disable"))]
    pub mode: Option<FeatureGateMode>,
}

/// Whether a feature gate is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FeatureGateMode {
    /// The feature is on.
    Enable,
    /// The feature is off.
    #[default]
    Disable,
}

/// Where the operator schedules the pods it deploys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePlacement {
    /// Node labels the pods' nodes must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Node taints the pods tolerate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
}

/// The compute resources of the containers the operator deploys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirement {
    /// The requests and limits, for type `ResourceRequirement`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_requirements: Option<ResourceRequirements>,
    /// Which resources the containers get; `Default` when absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Default"))]
    pub type_: Option<ResourceQosClass>,
}

/// The resources the containers deployed by an operator get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ResourceQosClass {
    /// The operator's built-in requests.
    #[default]
    Default,
    /// No requests and no limits.
    BestEffort,
    /// The requests and limits given in `resourceRequirements`.
    ResourceRequirement,
}

/// How an agent authenticates to the hub when it registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RegistrationAuthType {
    /// A client certificate, requested with a CertificateSigningRequest.
    #[default]
    #[serde(rename = "csr")]
    Csr,
    /// An AWS IAM role for service accounts, on EKS.
    #[serde(rename = "awsirsa")]
    AwsIrsa,
    /// A certificate issued through the hub's gRPC server.
    #[serde(rename = "grpc")]
    Grpc,
}

/// The state of an installation as its operator reports it (the status of both ClusterManager
/// and Klusterlet).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorStatus {
    /// Conditions: `Applied`, `Progressing`, `Available`, and the degraded conditions of the
    /// components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// The last generation of each deployed object the operator has reconciled, to tell when
    /// one changed behind its back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generations: Option<Vec<GenerationStatus>>,
    /// The `metadata.generation` of the spec the operator last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The objects the operator deployed for this installation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_resources: Option<Vec<RelatedResourceMeta>>,
}

/// The last reconciled generation of one object deployed by an operator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerationStatus {
    /// The API group of the object; empty for the core group.
    pub group: String,
    /// The `metadata.generation` of the object when the operator last reconciled it.
    pub last_generation: i64,
    /// The name of the object.
    pub name: String,
    /// The namespace of the object; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource (plural, lower case) of the object.
    pub resource: String,
    /// The API version of the object.
    pub version: String,
}

/// One object an operator deployed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedResourceMeta {
    /// The API group of the object; empty for the core group.
    pub group: String,
    /// The name of the object.
    pub name: String,
    /// The namespace of the object; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The resource (plural, lower case) of the object.
    pub resource: String,
    /// The API version of the object.
    pub version: String,
}
