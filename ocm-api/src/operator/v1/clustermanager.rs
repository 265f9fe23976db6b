//! The [`ClusterManager`] kind: how the cluster-manager operator runs the hub components.

use k8s_openapi::ByteString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    EKS_CLUSTER_ARN_PATTERN, FeatureGate, HOSTNAME_PATTERN, NodePlacement, OperatorStatus,
    RegistrationAuthType, ResourceRequirement,
};

crate::resource::custom_resource! {
    /// How the cluster-manager operator runs the hub: images, feature gates, registration and work
    /// drivers, and where the components and their webhooks run.
    ///
    /// There is one, named `cluster-manager`. In `Default` mode the operator runs the registration,
    /// work, placement and add-on manager components in `open-cluster-management-hub` on the hub
    /// itself; in `Hosted` mode it runs them elsewhere and exposes their webhooks at the addresses
    /// given in `spec.deployOption.hosted`.
    pub struct ClusterManager {
        group: super::super::GROUP,
        version: "v1",
        plural: "clustermanagers",
        scope: Cluster,
        short_names: [],
        spec: ClusterManagerSpec,
        spec_required: false,
        status: OperatorStatus,
        printer_columns: [],
        description: "How the cluster-manager operator runs the hub components (registration, work, placement, \
            add-on manager): images, feature gates, drivers, and where they run.",
    }
}

/// How to run the hub components.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"deployOption": {"mode": "Default"}}))]
pub struct ClusterManagerSpec {
    /// Settings of the add-on manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_manager_configuration: Option<ComponentConfiguration>,
    /// The image of the add-on manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/addon-manager"))]
    pub add_on_manager_image_pull_spec: Option<String>,
    /// Where the hub components run; on the hub itself (`Default` mode) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"mode": "Default"}))]
    pub deploy_option: Option<ClusterManagerDeployOption>,
    /// Where the pods of the hub components are scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,
    /// Settings of the placement controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_configuration: Option<ComponentConfiguration>,
    /// The image of the placement controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/placement"))]
    pub placement_image_pull_spec: Option<String>,
    /// Settings of the registration controller and webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_configuration: Option<RegistrationHubConfiguration>,
    /// The image of the registration controller and webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/registration"))]
    pub registration_image_pull_spec: Option<String>,
    /// The compute resources of the hub components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_requirement: Option<ResourceRequirement>,
    /// Settings of the hub's gRPC/HTTPS server, which agents may use instead of the Kubernetes
    /// API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_configuration: Option<ServerConfiguration>,
    /// Settings of the work controller and webhook; the `kube` driver when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"workDriver": "kube"}))]
    pub work_configuration: Option<WorkConfiguration>,
    /// The image of the work controller and webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/work"))]
    pub work_image_pull_spec: Option<String>,
}

/// Settings of a hub component that has nothing to set but feature gates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentConfiguration {
    /// Feature gates to switch on or off; the others keep their defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<Vec<FeatureGate>>,
}

/// Where the hub components run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagerDeployOption {
    /// Settings of `Default` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<DefaultClusterManagerConfiguration>,
    /// Settings of `Hosted` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted: Option<HostedClusterManagerConfiguration>,
    /// The mode. The API server sets `Default` when it is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "Default"))]
    pub mode: Option<ClusterManagerInstallMode>,
}

/// Where the hub components run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ClusterManagerInstallMode {
    /// On the hub, in `open-cluster-management-hub`.
    #[default]
    Default,
    /// Outside the hub, on a management cluster; the webhooks are reached at the addresses given
    /// in `hosted`.
    Hosted,
}

/// Settings of the webhooks in `Default` mode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultClusterManagerConfiguration {
    /// The add-on webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addon_webhook_configuration: Option<DefaultWebhookConfiguration>,
    /// The registration webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_webhook_configuration: Option<DefaultWebhookConfiguration>,
    /// The work webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_webhook_configuration: Option<DefaultWebhookConfiguration>,
}

/// A webhook running on the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultWebhookConfiguration {
    /// The ports the webhook's pod listens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_configuration: Option<BindConfiguration>,
}

/// The ports a webhook's pod listens on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindConfiguration {
    /// The port of the health probes; 8000 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 8000))]
    pub health_probe_port: Option<i32>,
    /// Whether the pod uses the host's network, so that the ports are the node's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<bool>,
    /// The port of the metrics endpoint; 8080 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 8080))]
    pub metrics_port: Option<i32>,
    /// The port of the webhook; 9443 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 9443))]
    pub port: Option<i32>,
}

/// Settings of the webhooks in `Hosted` mode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterManagerConfiguration {
    /// The registration webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_webhook_configuration: Option<HostedWebhookConfiguration>,
    /// The work webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_webhook_configuration: Option<HostedWebhookConfiguration>,
}

/// A webhook running outside the hub, and where the hub's API server reaches it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedWebhookConfiguration {
    /// The host name the hub's API server calls the webhook at (a DNS name, not an IP address).
    #[schemars(regex(pattern = HOSTNAME_PATTERN))]
    pub address: String,
    /// The ports the webhook's pod listens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_configuration: Option<BindConfiguration>,
    /// The port the hub's API server calls the webhook at; 443 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 443))]
    pub port: Option<i32>,
}

/// Settings of hub-side registration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationHubConfiguration {
    /// Users whose clusters are accepted without an administrator, with the
    /// `ManagedClusterAutoApproval` feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_approve_users: Option<Vec<String>>,
    /// Feature gates to switch on or off; the others keep their defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<Vec<FeatureGate>>,
    /// Settings of importing clusters from cluster providers, with the `ClusterImporter` feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importer_configuration: Option<ImporterConfiguration>,
    /// The ways agents may authenticate when they register, one per auth type; `csr` alone when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["authType"]))]
    pub registration_drivers: Option<Vec<RegistrationDriverHub>>,
}

/// Settings of importing clusters from cluster providers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImporterConfiguration {
    /// The renderers that produce the manifests installing the klusterlet on imported clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renderers: Option<Vec<String>>,
}

/// One way agents may authenticate when they register, as the hub accepts it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationDriverHub {
    /// The auth type. The API server sets `csr` when it is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "csr"))]
    pub auth_type: Option<RegistrationAuthType>,
    /// Settings of the `awsirsa` auth type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awsirsa: Option<AwsIrsaConfig>,
    /// Settings of the `csr` auth type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csr: Option<CsrConfig>,
    /// Settings of the `grpc` auth type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcConfig>,
}

/// Hub settings of registration through AWS IAM roles for service accounts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwsIrsaConfig {
    /// Identities (IAM role ARN patterns) whose clusters are accepted without an administrator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_approved_identities: Option<Vec<String>>,
    /// The ARN of the hub's EKS cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = EKS_CLUSTER_ARN_PATTERN))]
    pub hub_cluster_arn: Option<String>,
    /// Tags, `key=value`, put on the IAM roles created for managed clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

/// Hub settings of registration through CertificateSigningRequests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsrConfig {
    /// Users whose clusters are accepted without an administrator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_approved_identities: Option<Vec<String>>,
}

/// Hub settings of registration through the hub's gRPC server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcConfig {
    /// Users whose clusters are accepted without an administrator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_approved_identities: Option<Vec<String>>,
}

/// Settings of the hub's work controller and webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkConfiguration {
    /// Feature gates to switch on or off; the others keep their defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<Vec<FeatureGate>>,
    /// How ManifestWorks reach the work agents; `kube` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "kube"))]
    pub work_driver: Option<WorkDriverType>,
}

/// How ManifestWorks reach the work agents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum WorkDriverType {
    /// The agents read them from the hub's Kubernetes API.
    #[default]
    #[serde(rename = "kube")]
    Kube,
    /// They travel as CloudEvents over an MQTT broker.
    #[serde(rename = "mqtt")]
    Mqtt,
    /// They travel as CloudEvents over the hub's gRPC server.
    #[serde(rename = "grpc")]
    Grpc,
}

/// Settings of the hub's gRPC/HTTPS server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerConfiguration {
    /// How agents reach the server, one entry per protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints_exposure: Option<Vec<EndpointExposure>>,
    /// Feature gates to switch on or off; the others keep their defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<Vec<FeatureGate>>,
    /// The image of the server; the registration image when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_spec: Option<String>,
}

/// How agents reach the hub's server over one protocol.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointExposure {
    /// The endpoint, for protocol `grpc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<Endpoint>,
    /// The endpoint, for protocol `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<Endpoint>,
    /// The protocol. The API server sets `grpc` when it is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "grpc"))]
    pub protocol: Option<EndpointProtocol>,
    /// Who uses the endpoint, e.g. `agentToHub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
}

/// The protocols of the hub's server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum EndpointProtocol {
    /// gRPC.
    #[default]
    #[serde(rename = "grpc")]
    Grpc,
    /// HTTPS.
    #[serde(rename = "https")]
    Https,
}

/// How an endpoint of the hub's server is exposed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// Settings of type `hostname`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<HostnameConfig>,
    /// Settings of type `loadBalancer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerConfig>,
    /// Settings of type `route`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteConfig>,
    /// How the endpoint is exposed. The API server sets `hostname` when it is absent.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(required, extend("default" = "hostname"))]
    pub type_: Option<EndpointExposureType>,
}

/// The ways an endpoint of the hub's server is exposed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum EndpointExposureType {
    /// At a host name that routes to the server by other means (an ingress, DNS).
    #[default]
    #[serde(rename = "hostname")]
    Hostname,
    /// Through a Service of type LoadBalancer.
    #[serde(rename = "loadBalancer")]
    LoadBalancer,
    /// Through an OpenShift Route.
    #[serde(rename = "route")]
    Route,
}

/// An endpoint exposed at a host name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostnameConfig {
    /// PEM-encoded CA certificates for agents to verify the server with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::byte_string_schema")]
    pub ca_bundle: Option<ByteString>,
    /// The host name.
    pub host: String,
}

/// An endpoint exposed through a LoadBalancer Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerConfig {
    /// PEM-encoded CA certificates for agents to verify the server with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::byte_string_schema")]
    pub ca_bundle: Option<ByteString>,
    /// The host name of the load balancer; the address the Service gets when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// An endpoint exposed through an OpenShift Route.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteConfig {
    /// PEM-encoded CA certificates for agents to verify the server with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::byte_string_schema")]
    pub ca_bundle: Option<ByteString>,
    /// The host name of the route; the one OpenShift assigns when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural_schema;

    #[test]
    fn spec_schema_carries_nested_defaults() {
        let schema = structural_schema::<ClusterManagerSpec>();
        assert_eq!(
            schema["default"],
            serde_json::json!({"deployOption": {"mode": "Default"}})
        );
        let deploy = &schema["properties"]["deployOption"];
        assert_eq!(deploy["default"], serde_json::json!({"mode": "Default"}));
        assert_eq!(deploy["required"], serde_json::json!(["mode"]));
        let port =
            &deploy["properties"]["hosted"]["properties"]["workWebhookConfiguration"]["properties"]["port"];
        assert_eq!(port["default"], 443);
        assert_eq!(port["maximum"], 65535);
        assert_eq!(port["format"], "int32");
    }

    #[test]
    fn lower_case_enums_round_trip() {
        let json = serde_json::json!({
            "registrationDrivers": [{"authType": "awsirsa"}, {"authType": "grpc", "grpc": {}}],
        });
        let config: RegistrationHubConfiguration = serde_json::from_value(json.clone()).unwrap();
        let drivers = config.registration_drivers.as_ref().unwrap();
        assert_eq!(drivers[0].auth_type, Some(RegistrationAuthType::AwsIrsa));
        assert_eq!(serde_json::to_value(&config).unwrap(), json);
        let work: WorkConfiguration =
            serde_json::from_value(serde_json::json!({"workDriver": "mqtt"})).unwrap();
        assert_eq!(work.work_driver, Some(WorkDriverType::Mqtt));
    }
}
