//! Scheme defaults of the workload kinds and the pod specs inside them, as kube-apiserver applies
//! them while decoding (so managedFields record them): Pod, PodTemplate, ReplicationController,
//! Deployment, ReplicaSet, DaemonSet, StatefulSet, Job, CronJob, and Service's simple defaults.
//!
//! Not reproduced (they need controllers, admission plugins or allocators this server does not
//! run): a Pod's ServiceAccount token volume, default tolerations, priority and QoS class, a Job's
//! generated selector and `controller-uid` labels, a Service's cluster IP and IP families.

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;

fn obj<'v>(v: &'v mut Value, key: &str) -> Option<&'v mut Map<String, Value>> {
    v.as_object_mut()?.get_mut(key)?.as_object_mut()
}

/// Sets `key` to `value` when it is absent or null.
fn default_value(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// Sets a string `key` when it is absent, null or empty (Go's zero string).
fn default_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    if map.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
        map.insert(key.into(), json!(value));
    }
}

/// The object at `key`, created as `{}` when absent or null.
fn ensure_obj<'m>(map: &'m mut Map<String, Value>, key: &str) -> Option<&'m mut Map<String, Value>> {
    let entry = map.entry(key).or_insert_with(|| json!({}));
    if entry.is_null() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

/// kube's image pull policy default: `Always` for `:latest` or an untagged image, else
/// `IfNotPresent`.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn default_probe(probe: &mut Map<String, Value>) {
    default_value(probe, "timeoutSeconds", json!(1));
    default_value(probe, "periodSeconds", json!(10));
    default_value(probe, "successThreshold", json!(1));
    default_value(probe, "failureThreshold", json!(3));
    if let Some(http) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
        default_str(http, "path", "/");
        default_str(http, "scheme", "HTTP");
    }
}

fn default_container(c: &mut Map<String, Value>) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // kube defaults the policy of an image without a tag (also an empty one) to Always.
    default_str(c, "imagePullPolicy", pull_policy(&image));
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    default_value(c, "resources", json!({}));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_str(port, "protocol", "TCP");
        }
    }
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for var in env.iter_mut() {
            if let Some(field_ref) = var
                .pointer_mut("/valueFrom/fieldRef")
                .and_then(Value::as_object_mut)
            {
                default_str(field_ref, "apiVersion", "v1");
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_probe(p);
        }
    }
}

/// The volume sources of a `VolumeSource`; a volume with none of them becomes an `emptyDir`.
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn default_volume(v: &mut Map<String, Value>) {
    if !VOLUME_SOURCES
        .iter()
        .any(|s| v.get(*s).is_some_and(|x| !x.is_null()))
    {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "projected", "downwardAPI"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            default_value(s, "defaultMode", json!(420));
        }
    }
}

/// Defaults of a `PodSpec`.
fn default_pod_spec(spec: &mut Map<String, Value>) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_value(spec, "terminationGracePeriodSeconds", json!(30));
    default_value(spec, "securityContext", json!({}));
    default_str(spec, "schedulerName", "default-scheduler");
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
            }
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            default_volume(v);
        }
    }
}

/// Defaults of a `PodTemplateSpec` at `template` of `parent`.
fn default_template(parent: &mut Map<String, Value>) {
    if let Some(spec) = parent.get_mut("template").and_then(|t| obj(t, "spec")) {
        default_pod_spec(spec);
    }
}

fn default_rolling_update(
    spec: &mut Map<String, Value>,
    strategy_key: &str,
    max_unavailable: Value,
    max_surge: Value,
) {
    let Some(strategy) = ensure_obj(spec, strategy_key) else {
        return;
    };
    default_str(strategy, "type", "RollingUpdate");
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
        && let Some(rolling) = ensure_obj(strategy, "rollingUpdate")
    {
        default_value(rolling, "maxUnavailable", max_unavailable);
        default_value(rolling, "maxSurge", max_surge);
    }
}

fn default_job_spec(spec: &mut Map<String, Value>) {
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec.insert("completions".into(), json!(1));
    }
    default_value(spec, "parallelism", json!(1));
    if spec.get("backoffLimitPerIndex").is_none_or(Value::is_null) {
        default_value(spec, "backoffLimit", json!(6));
    }
    default_str(spec, "completionMode", "NonIndexed");
    default_value(spec, "suspend", json!(false));
    let replacement = if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_str(spec, "podReplacementPolicy", replacement);
    default_template(spec);
}

/// Applies the scheme defaults of the workload kinds (no-op for other kinds).
pub fn default(info: &ResourceInfo, object: &mut Value) {
    let kind = (info.storage_group.as_str(), info.storage_resource.as_str());
    if kind == ("", "pods") {
        if let Some(spec) = obj(object, "spec") {
            default_value(spec, "enableServiceLinks", json!(true));
            default_pod_spec(spec);
        }
        return;
    }
    if kind == ("", "podtemplates") {
        if let Some(map) = object.as_object_mut() {
            default_template(map);
        }
        return;
    }
    let Some(spec) = obj(object, "spec") else {
        return;
    };
    match kind {
        ("apps", "deployments") => {
            default_value(spec, "replicas", json!(1));
            default_rolling_update(spec, "strategy", json!("25%"), json!("25%"));
            default_value(spec, "revisionHistoryLimit", json!(10));
            default_value(spec, "progressDeadlineSeconds", json!(600));
            default_template(spec);
        }
        ("apps", "replicasets") | ("", "replicationcontrollers") => {
            default_value(spec, "replicas", json!(1));
            default_template(spec);
        }
        ("apps", "daemonsets") => {
            default_rolling_update(spec, "updateStrategy", json!(1), json!(0));
            default_value(spec, "revisionHistoryLimit", json!(10));
            default_template(spec);
        }
        ("apps", "statefulsets") => {
            default_value(spec, "replicas", json!(1));
            default_str(spec, "podManagementPolicy", "OrderedReady");
            if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
                default_str(strategy, "type", "RollingUpdate");
                if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                    && let Some(rolling) = ensure_obj(strategy, "rollingUpdate")
                {
                    default_value(rolling, "partition", json!(0));
                }
            }
            default_value(spec, "revisionHistoryLimit", json!(10));
            if let Some(policy) = ensure_obj(spec, "persistentVolumeClaimRetentionPolicy") {
                default_str(policy, "whenDeleted", "Retain");
                default_str(policy, "whenScaled", "Retain");
            }
            default_template(spec);
        }
        ("batch", "jobs") => default_job_spec(spec),
        ("batch", "cronjobs") => {
            default_str(spec, "concurrencyPolicy", "Allow");
            default_value(spec, "suspend", json!(false));
            default_value(spec, "successfulJobsHistoryLimit", json!(3));
            default_value(spec, "failedJobsHistoryLimit", json!(1));
            if let Some(job_spec) = spec.get_mut("jobTemplate").and_then(|t| obj(t, "spec")) {
                default_template(job_spec);
            }
        }
        ("", "services") => {
            default_str(spec, "type", "ClusterIP");
            default_str(spec, "sessionAffinity", "None");
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                    default_str(port, "protocol", "TCP");
                    if port
                        .get("targetPort")
                        .is_none_or(|t| t.is_null() || *t == json!(0) || *t == json!(""))
                    {
                        let target = port.get("port").cloned().unwrap_or(Value::Null);
                        port.insert("targetPort".into(), target);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn defaulted(group: &str, resource: &str, object: Value) -> Value {
        let registry = Registry::with_builtins();
        let info = registry.get(group, "v1", resource).expect("registered");
        let mut object = object;
        default(&info, &mut object);
        object
    }

    #[test]
    fn deployments_get_kubes_defaults() {
        let d = defaulted(
            "apps",
            "deployments",
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1", "ports": [{"containerPort": 80}]},
                                        {"name": "side", "image": "busybox"}]}}}}),
        );
        let spec = &d["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["securityContext"], json!({}));
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        let app = &pod["containers"][0];
        assert_eq!(app["imagePullPolicy"], "IfNotPresent");
        assert_eq!(app["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(app["terminationMessagePolicy"], "File");
        assert_eq!(app["resources"], json!({}));
        assert_eq!(app["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "Always");
    }

    #[test]
    fn set_values_are_kept() {
        let d = defaulted(
            "apps",
            "deployments",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "template": {"spec": {
                "restartPolicy": "Always", "containers": [{"name": "a", "image": "x:latest", "imagePullPolicy": "Never"}]}}}}),
        );
        assert_eq!(d["spec"]["replicas"], 0);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Never"
        );
    }

    #[test]
    fn jobs_daemonsets_statefulsets_and_services() {
        let job = defaulted(
            "batch",
            "jobs",
            json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "j", "image": "busybox:1"}]}}}}),
        );
        assert_eq!(job["spec"]["completions"], 1);
        assert_eq!(job["spec"]["parallelism"], 1);
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert_eq!(job["spec"]["completionMode"], "NonIndexed");
        assert_eq!(job["spec"]["suspend"], false);
        assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
        let ds = defaulted(
            "apps",
            "daemonsets",
            json!({"spec": {"template": {"spec": {"containers": []}}}}),
        );
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        let sts = defaulted(
            "apps",
            "statefulsets",
            json!({"spec": {"template": {"spec": {"containers": []}}}}),
        );
        assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            sts["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        let svc = defaulted("", "services", json!({"spec": {"ports": [{"port": 80}]}}));
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(
            svc["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
    }

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("registry:5000/nginx"), "Always");
        assert_eq!(pull_policy("registry:5000/nginx:1.2"), "IfNotPresent");
        assert_eq!(pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }
}
