//! The strings of enum-like API fields, and other fixed values OCM components agree on.
//!
//! Fields whose CRD schema has an `enum` are Rust enums in the kind modules; the strings here
//! are for code that works on raw objects, and for fields whose CRD has no `enum` (such as a
//! Klusterlet's install mode or a Placement toleration's operator).

/// ClusterManagementAddOn `spec.installStrategy.type`.
pub mod install_strategy {
    /// Users create ManagedClusterAddOns themselves (the default).
    pub const MANUAL: &str = "Manual";
    /// The add-on manager installs the add-on on the clusters placements select.
    pub const PLACEMENTS: &str = "Placements";
}

/// Registration types of add-ons.
pub mod registration_type {
    /// v1beta1 ManagedClusterAddOn: credentials for the hub API server.
    pub const KUBE_CLIENT: &str = "kubeClient";
    /// v1beta1 ManagedClusterAddOn: a certificate from a custom signer.
    pub const CUSTOM_SIGNER: &str = "customSigner";
    /// AddOnTemplate (v1alpha1): credentials for the hub API server.
    pub const KUBE_CLIENT_V1ALPHA1: &str = "KubeClient";
    /// AddOnTemplate (v1alpha1): a certificate from a custom signer.
    pub const CUSTOM_SIGNER_V1ALPHA1: &str = "CustomSigner";
}

/// `kubeClient.driver` of an add-on registration: how the agent authenticates.
pub mod kube_client_driver {
    /// A client certificate obtained through a CSR.
    pub const CSR: &str = "csr";
    /// A service account token.
    pub const TOKEN: &str = "token";
}

/// AddOnTemplate `hubPermissions[].type`.
pub mod hub_permissions_binding {
    /// Bind a role in one given namespace.
    pub const SINGLE_NAMESPACE: &str = "SingleNamespace";
    /// Bind a cluster role in the cluster's own namespace.
    pub const CURRENT_CLUSTER: &str = "CurrentCluster";
}

/// ManagedClusterAddOn `status.healthCheck.mode`.
pub mod health_check_mode {
    /// The spoke agent checks the add-on's lease.
    pub const LEASE: &str = "Lease";
    /// Someone else (the add-on or its manager) sets `Available`.
    pub const CUSTOMIZED: &str = "Customized";
}

/// ManagedCluster taint effects.
pub mod taint_effect {
    /// Placements do not select the cluster unless they tolerate the taint.
    pub const NO_SELECT: &str = "NoSelect";
    /// Placements avoid the cluster (informational upstream).
    pub const PREFER_NO_SELECT: &str = "PreferNoSelect";
    /// Placements keep the cluster if already selected, but do not newly select it.
    pub const NO_SELECT_IF_NEW: &str = "NoSelectIfNew";
}

/// Resource names of a ManagedCluster's capacity.
pub mod resource_name {
    /// CPU.
    pub const CPU: &str = "cpu";
    /// Memory.
    pub const MEMORY: &str = "memory";
}

/// Rollout strategy `type`.
pub mod rollout_type {
    /// Every cluster at once.
    pub const ALL: &str = "All";
    /// A bounded number of clusters at a time.
    pub const PROGRESSIVE: &str = "Progressive";
    /// One decision group at a time.
    pub const PROGRESSIVE_PER_GROUP: &str = "ProgressivePerGroup";
}

/// Placement enums and enum-like fields.
pub mod placement {
    /// `sortBy`: by cluster name.
    pub const SORT_BY_CLUSTER_NAME: &str = "ClusterName";
    /// `sortBy`: by score.
    pub const SORT_BY_SCORE: &str = "Score";
    /// `prioritizerPolicy.mode`: the built-in prioritizers plus the configured ones.
    pub const PRIORITIZER_MODE_ADDITIVE: &str = "Additive";
    /// `prioritizerPolicy.mode`: only the configured prioritizers.
    pub const PRIORITIZER_MODE_EXACT: &str = "Exact";
    /// `scoreCoordinate.type`: a built-in prioritizer.
    pub const SCORE_COORDINATE_BUILT_IN: &str = "BuiltIn";
    /// `scoreCoordinate.type`: a score from AddOnPlacementScores.
    pub const SCORE_COORDINATE_ADDON: &str = "AddOn";
    /// Built-in prioritizer spreading decisions over clusters.
    pub const PRIORITIZER_BALANCE: &str = "Balance";
    /// Built-in prioritizer keeping existing decisions.
    pub const PRIORITIZER_STEADY: &str = "Steady";
    /// Built-in prioritizer preferring allocatable CPU.
    pub const PRIORITIZER_RESOURCE_ALLOCATABLE_CPU: &str = "ResourceAllocatableCPU";
    /// Built-in prioritizer preferring allocatable memory.
    pub const PRIORITIZER_RESOURCE_ALLOCATABLE_MEMORY: &str = "ResourceAllocatableMemory";
    /// Built-in prioritizer spreading over topology (API only upstream).
    pub const PRIORITIZER_SPREAD: &str = "Spread";
    /// `spreadConstraints[].topologyKeyType`: a cluster claim.
    pub const TOPOLOGY_KEY_CLAIM: &str = "Claim";
    /// `spreadConstraints[].topologyKeyType`: a cluster label.
    pub const TOPOLOGY_KEY_LABEL: &str = "Label";
    /// `spreadConstraints[].whenUnsatisfiable`: do not schedule.
    pub const WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE: &str = "DoNotSchedule";
    /// `spreadConstraints[].whenUnsatisfiable`: schedule anyway.
    pub const WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
    /// `tolerations[].operator`: any value of the key.
    pub const TOLERATION_OPERATOR_EXISTS: &str = "Exists";
    /// `tolerations[].operator`: exactly the given value (the default).
    pub const TOLERATION_OPERATOR_EQUAL: &str = "Equal";
}

/// ManagedClusterSet `spec.clusterSelector.selectorType`.
pub mod cluster_set_selector_type {
    /// Members carry the cluster-set label with the set's name.
    pub const EXCLUSIVE_CLUSTER_SET_LABEL: &str = "ExclusiveClusterSetLabel";
    /// Members match a label selector.
    pub const LABEL_SELECTOR: &str = "LabelSelector";
}

/// Operator enums and enum-like fields.
pub mod operator {
    /// Resource QoS class: the operator's defaults.
    pub const QOS_DEFAULT: &str = "Default";
    /// Resource QoS class: no requests or limits.
    pub const QOS_BEST_EFFORT: &str = "BestEffort";
    /// Resource QoS class: the requirements given in the spec.
    pub const QOS_RESOURCE_REQUIREMENT: &str = "ResourceRequirement";
    /// Endpoint exposure: a host name.
    pub const EXPOSURE_HOSTNAME: &str = "hostname";
    /// Endpoint exposure: a load balancer service.
    pub const EXPOSURE_LOAD_BALANCER: &str = "loadBalancer";
    /// Endpoint exposure: an OpenShift route.
    pub const EXPOSURE_ROUTE: &str = "route";
    /// Work driver: the Kubernetes API.
    pub const WORK_DRIVER_KUBE: &str = "kube";
    /// Work driver: MQTT cloud events.
    pub const WORK_DRIVER_MQTT: &str = "mqtt";
    /// Work driver: gRPC cloud events.
    pub const WORK_DRIVER_GRPC: &str = "grpc";
    /// Feature gate mode: on.
    pub const FEATURE_GATE_ENABLE: &str = "Enable";
    /// Feature gate mode: off.
    pub const FEATURE_GATE_DISABLE: &str = "Disable";
    /// Install mode: agents run on the managed cluster.
    pub const INSTALL_MODE_DEFAULT: &str = "Default";
    /// Install mode: agents run on a management cluster.
    pub const INSTALL_MODE_HOSTED: &str = "Hosted";
    /// Install mode: one combined agent on the managed cluster.
    pub const INSTALL_MODE_SINGLETON: &str = "Singleton";
    /// Install mode: one combined agent on a management cluster.
    pub const INSTALL_MODE_SINGLETON_HOSTED: &str = "SingletonHosted";
    /// Bootstrap kubeconfigs: read from local secrets.
    pub const BOOTSTRAP_KUBECONFIGS_LOCAL_SECRETS: &str = "LocalSecrets";
    /// Bootstrap kubeconfigs: only the default one.
    pub const BOOTSTRAP_KUBECONFIGS_NONE: &str = "None";
    /// Registration auth type: client certificates through CSRs.
    pub const AUTH_CSR: &str = "csr";
    /// Registration auth type: AWS IAM roles for service accounts.
    pub const AUTH_AWS_IRSA: &str = "awsirsa";
    /// Registration auth type: gRPC.
    pub const AUTH_GRPC: &str = "grpc";
}

/// ManifestWork enums and enum-like fields.
pub mod work {
    /// `conditionRules[].type`: built-in rules for well-known kinds.
    pub const CONDITION_RULE_WELL_KNOWN_CONDITIONS: &str = "WellKnownConditions";
    /// `conditionRules[].type`: CEL expressions.
    pub const CONDITION_RULE_CEL: &str = "CEL";
    /// `feedbackScrapeType`: read status periodically.
    pub const FEEDBACK_SCRAPE_POLL: &str = "Poll";
    /// `feedbackScrapeType`: watch the resource.
    pub const FEEDBACK_SCRAPE_WATCH: &str = "Watch";
    /// `executor.subject.type`: a service account.
    pub const EXECUTOR_SERVICE_ACCOUNT: &str = "ServiceAccount";
    /// `updateStrategy.type`: update the whole object (the default).
    pub const UPDATE_STRATEGY_UPDATE: &str = "Update";
    /// `updateStrategy.type`: create once, never update.
    pub const UPDATE_STRATEGY_CREATE_ONLY: &str = "CreateOnly";
    /// `updateStrategy.type`: server-side apply.
    pub const UPDATE_STRATEGY_SERVER_SIDE_APPLY: &str = "ServerSideApply";
    /// `updateStrategy.type`: only read the object (for feedback).
    pub const UPDATE_STRATEGY_READ_ONLY: &str = "ReadOnly";
    /// `ignoreFields[].condition`: ignore the fields once the spoke changed them.
    pub const IGNORE_FIELDS_ON_SPOKE_CHANGE: &str = "OnSpokeChange";
    /// `ignoreFields[].condition`: ignore the fields once they exist on the spoke.
    pub const IGNORE_FIELDS_ON_SPOKE_PRESENT: &str = "OnSpokePresent";
    /// `feedbackRules[].type`: the well-known status fields of the kind.
    pub const FEEDBACK_WELL_KNOWN_STATUS: &str = "WellKnownStatus";
    /// `feedbackRules[].type`: the given JSON paths.
    pub const FEEDBACK_JSON_PATHS: &str = "JSONPaths";
    /// `deleteOption.propagationPolicy`: delete and wait for dependents.
    pub const DELETE_PROPAGATION_FOREGROUND: &str = "Foreground";
    /// `deleteOption.propagationPolicy`: leave the resources.
    pub const DELETE_PROPAGATION_ORPHAN: &str = "Orphan";
    /// `deleteOption.propagationPolicy`: leave only the listed resources.
    pub const DELETE_PROPAGATION_SELECTIVELY_ORPHAN: &str = "SelectivelyOrphan";
    /// Feedback `fieldValue.type`: an integer.
    pub const VALUE_TYPE_INTEGER: &str = "Integer";
    /// Feedback `fieldValue.type`: a string.
    pub const VALUE_TYPE_STRING: &str = "String";
    /// Feedback `fieldValue.type`: a boolean.
    pub const VALUE_TYPE_BOOLEAN: &str = "Boolean";
    /// Feedback `fieldValue.type`: raw JSON.
    pub const VALUE_TYPE_JSON_RAW: &str = "JsonRaw";
    /// ManifestWorkReplicaSet `cascadeDeletionPolicy`: wait for the works to go.
    pub const CASCADE_DELETION_FOREGROUND: &str = "Foreground";
    /// ManifestWorkReplicaSet `cascadeDeletionPolicy`: delete works in the background (the default).
    pub const CASCADE_DELETION_BACKGROUND: &str = "Background";
}

/// Names of the values the work agent reports for `WellKnownStatus` feedback rules.
pub mod well_known_status {
    /// Deployment `.status.readyReplicas`.
    pub const READY_REPLICAS: &str = "ReadyReplicas";
    /// Deployment `.status.replicas`.
    pub const REPLICAS: &str = "Replicas";
    /// Deployment `.status.availableReplicas`.
    pub const AVAILABLE_REPLICAS: &str = "AvailableReplicas";
    /// DaemonSet `.status.numberReady`.
    pub const NUMBER_READY: &str = "NumberReady";
    /// DaemonSet `.status.desiredNumberScheduled`.
    pub const DESIRED_NUMBER_SCHEDULED: &str = "DesiredNumberScheduled";
    /// DaemonSet `.status.numberAvailable`.
    pub const NUMBER_AVAILABLE: &str = "NumberAvailable";
    /// Job: the status of its `Complete` condition.
    pub const JOB_COMPLETE: &str = "JobComplete";
    /// Job `.status.succeeded`.
    pub const JOB_SUCCEEDED: &str = "JobSucceeded";
    /// Pod: the status of its `Ready` condition.
    pub const POD_READY: &str = "PodReady";
    /// Pod `.status.phase`.
    pub const POD_PHASE: &str = "PodPhase";
}

/// Add-on configuration resources and template values.
pub mod addon {
    /// The resource of AddOnDeploymentConfigs.
    pub const ADDON_DEPLOYMENT_CONFIGS: &str = "addondeploymentconfigs";
    /// The resource of AddOnTemplates.
    pub const ADDON_TEMPLATES: &str = "addontemplates";
    /// The config name that means "this config type is supported, with no default" (v1alpha1 conversion).
    pub const RESERVED_NO_DEFAULT_CONFIG_NAME: &str = "__reserved_no_default__";
    /// Install mode value seen by add-on templates: the agent runs on the managed cluster.
    pub const INSTALL_MODE_DEFAULT: &str = "Default";
    /// Install mode value seen by add-on templates: the agent runs on a hosting cluster.
    pub const INSTALL_MODE_HOSTED: &str = "Hosted";
    /// Template add-on variable: the path of the hub kubeconfig.
    pub const TEMPLATE_HUB_KUBECONFIG: &str = "HUB_KUBECONFIG";
    /// Template add-on variable: the managed cluster's name.
    pub const TEMPLATE_CLUSTER_NAME: &str = "CLUSTER_NAME";
    /// Template add-on variable: the agent's install namespace.
    pub const TEMPLATE_INSTALL_NAMESPACE: &str = "INSTALL_NAMESPACE";
}
