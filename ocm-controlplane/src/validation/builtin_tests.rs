//! Table tests of built-in kind validation, derived from kube-apiserver's rules: each case is an
//! object (after the scheme defaults this server applies), optionally the stored object for an
//! update, and the causes kube-apiserver answers (field, reason, message); a few cases also check
//! the aggregated 422 message.

use serde_json::{Value, json};

use crate::registry::Registry;
use crate::status::{ApiError, Cause};

fn run(group: &str, resource: &str, mut object: Value, old: Option<Value>) -> Vec<Cause> {
    let registry = Registry::with_builtins();
    let info = registry.get(group, "v1", resource).expect("built-in");
    crate::rest::kinds::default(&info, &mut object);
    let mut old = old;
    if let Some(o) = old.as_mut() {
        crate::rest::kinds::default(&info, o);
    }
    super::builtin::validate(&info, &object, old.as_ref(), "")
}

fn triples(causes: &[Cause]) -> Vec<(&str, &str, &str)> {
    causes
        .iter()
        .map(|c| (c.field.as_str(), c.reason.as_str(), c.message.as_str()))
        .collect()
}

fn deployment() -> Value {
    json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}})
}

fn with(mut base: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    let target = base.pointer_mut(parent).expect("parent exists");
    if let Ok(i) = key.parse::<usize>()
        && let Some(a) = target.as_array_mut()
    {
        a[i] = value;
    } else if let Some(m) = target.as_object_mut() {
        m.insert(key.to_string(), value);
    }
    base
}

const C0: &str = "spec.template.spec.containers[0]";

/// An object and the causes expected for it: `(field, reason, message)`.
type Case = (Value, Vec<(String, &'static str, &'static str)>);

#[test]
fn deployments() {
    assert!(run("apps", "deployments", deployment(), None).is_empty());
    let cases: Vec<Case> = vec![
        (
            with(
                deployment(),
                "/spec/template/metadata/labels",
                json!({"app": "other"}),
            ),
            vec![(
                "spec.template.metadata.labels".into(),
                "FieldValueInvalid",
                "Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
            )],
        ),
        (
            with(deployment(), "/spec/replicas", json!(-1)),
            vec![(
                "spec.replicas".into(),
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0",
            )],
        ),
        (
            with(
                deployment(),
                "/spec/template/spec/containers/0",
                json!({"name": "App_1"}),
            ),
            vec![
                (
                    format!("{C0}.name"),
                    "FieldValueInvalid",
                    "Invalid value: \"App_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ),
                (format!("{C0}.image"), "FieldValueRequired", "Required value"),
            ],
        ),
        (
            with(
                deployment(),
                "/spec/template/spec/containers",
                json!([
                {"name": "a", "image": "x", "ports": [{"containerPort": 70000, "protocol": "XTP"}],
                 "env": [{"name": "A=B"}]},
                {"name": "a", "image": "y"}]),
            ),
            vec![
                (
                    format!("{C0}.ports[0].containerPort"),
                    "FieldValueInvalid",
                    "Invalid value: 70000: must be between 1 and 65535, inclusive",
                ),
                (
                    format!("{C0}.ports[0].protocol"),
                    "FieldValueNotSupported",
                    "Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ),
                (
                    format!("{C0}.env[0].name"),
                    "FieldValueInvalid",
                    "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                ),
                (
                    "spec.template.spec.containers[1].name".into(),
                    "FieldValueDuplicate",
                    "Duplicate value: \"a\"",
                ),
            ],
        ),
        (
            with(deployment(), "/spec/template/spec/restartPolicy", json!("Never")),
            vec![(
                "spec.template.spec.restartPolicy".into(),
                "FieldValueNotSupported",
                "Unsupported value: \"Never\": supported values: \"Always\"",
            )],
        ),
        (
            with(deployment(), "/spec/template/spec/dnsPolicy", json!("Bogus")),
            vec![(
                "spec.template.spec.dnsPolicy".into(),
                "FieldValueNotSupported",
                "Unsupported value: \"Bogus\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            )],
        ),
        (
            with(
                deployment(),
                "/spec/template/spec/containers/0",
                json!({"name": "a", "image": "x",
                "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                "volumeMounts": [{"name": "data", "mountPath": "/d"}]}),
            ),
            vec![
                (
                    format!("{C0}.volumeMounts[0].name"),
                    "FieldValueNotFound",
                    "Not found: \"data\"",
                ),
                (
                    format!("{C0}.resources.requests"),
                    "FieldValueInvalid",
                    "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
                ),
            ],
        ),
        (
            with(
                deployment(),
                "/spec/strategy",
                json!({"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}),
            ),
            vec![(
                "spec.strategy.rollingUpdate.maxUnavailable".into(),
                "FieldValueInvalid",
                "Invalid value: 0: may not be 0 when `maxSurge` is 0",
            )],
        ),
    ];
    for (object, expected) in cases {
        let causes = run("apps", "deployments", object, None);
        let want: Vec<(&str, &str, &str)> = expected.iter().map(|(f, r, m)| (f.as_str(), *r, *m)).collect();
        assert_eq!(triples(&causes), want);
    }
}

#[test]
fn missing_selector_and_message() {
    let mut d = deployment();
    d["spec"].as_object_mut().expect("spec").remove("selector");
    d["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .expect("container")
        .remove("image");
    let causes = run("apps", "deployments", d, None);
    assert_eq!(
        triples(&causes),
        vec![
            ("spec.selector", "FieldValueRequired", "Required value"),
            (
                "spec.template.metadata.labels",
                "FieldValueInvalid",
                "Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
            ),
            (
                "spec.template.spec.containers[0].image",
                "FieldValueRequired",
                "Required value"
            ),
        ]
    );
    let registry = Registry::with_builtins();
    let info = registry.get("apps", "v1", "deployments").expect("built-in");
    let mut subject = info.subject();
    subject.group = info.storage_group.clone();
    let e = ApiError::invalid(&subject, "web", causes);
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`, spec.template.spec.containers[0].image: Required value]"
    );
}

#[test]
fn workload_selectors_are_immutable() {
    let changed = with(
        deployment(),
        "/spec/selector",
        json!({"matchLabels": {"app": "web", "v": "2"}}),
    );
    let changed = with(
        changed,
        "/spec/template/metadata/labels",
        json!({"app": "web", "v": "2"}),
    );
    for (group, resource) in [
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "daemonsets"),
    ] {
        let causes = run(group, resource, changed.clone(), Some(deployment()));
        assert!(
            triples(&causes).contains(&(
                "spec.selector",
                "FieldValueInvalid",
                "Invalid value: {\"matchLabels\":{\"app\":\"web\",\"v\":\"2\"}}: field is immutable"
            )),
            "{resource}: {causes:?}"
        );
    }
    let rs = with(deployment(), "/spec/selector", json!({}));
    assert_eq!(
        triples(&run("apps", "replicasets", rs, None)),
        vec![(
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: {}: empty selector is invalid for deployment"
        )]
    );
}

#[test]
fn stateful_sets_and_daemon_sets() {
    let sts = with(deployment(), "/spec/podManagementPolicy", json!("Random"));
    let sts = with(sts, "/spec/serviceName", json!("svc"));
    assert_eq!(
        triples(&run("apps", "statefulsets", sts.clone(), None)),
        vec![(
            "spec.podManagementPolicy",
            "FieldValueInvalid",
            "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"
        )]
    );
    let old = with(deployment(), "/spec/serviceName", json!("svc"));
    let new = with(deployment(), "/spec/serviceName", json!("other"));
    assert_eq!(
        triples(&run("apps", "statefulsets", new, Some(old))),
        vec![(
            "spec",
            "FieldValueForbidden",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        )]
    );
    let ds = with(
        deployment(),
        "/spec/updateStrategy",
        json!({"type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}),
    );
    assert_eq!(
        triples(&run("apps", "daemonsets", ds, None)),
        vec![(
            "spec.updateStrategy.rollingUpdate.maxSurge",
            "FieldValueInvalid",
            "Invalid value: 1: may not be set when maxUnavailable is non-zero"
        )]
    );
}

fn job() -> Value {
    json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "j", "image": "busybox:1"}]}}}})
}

#[test]
fn jobs_and_cron_jobs() {
    assert!(run("batch", "jobs", job(), None).is_empty());
    let always = with(job(), "/spec/template/spec/restartPolicy", json!("Always"));
    assert_eq!(
        triples(&run("batch", "jobs", always, None)),
        vec![(
            "spec.template.spec.restartPolicy",
            "FieldValueRequired",
            "Required value: valid values: \"OnFailure\", \"Never\""
        )]
    );
    let negative = with(job(), "/spec/parallelism", json!(-1));
    assert_eq!(
        triples(&run("batch", "jobs", negative, None)),
        vec![(
            "spec.parallelism",
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0"
        )]
    );
    let changed = with(job(), "/spec/completions", json!(3));
    assert!(triples(&run("batch", "jobs", changed, Some(job()))).contains(&(
        "spec.completions",
        "FieldValueInvalid",
        "Invalid value: 3: field is immutable"
    )));
    let cron = json!({"metadata": {"name": "c"}, "spec": {"schedule": "every minute",
        "jobTemplate": {"spec": job()["spec"].clone()}}});
    assert_eq!(
        triples(&run("batch", "cronjobs", cron, None)),
        vec![(
            "spec.schedule",
            "FieldValueInvalid",
            "Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]"
        )]
    );
}

#[test]
fn services() {
    let svc = |spec: Value| json!({"metadata": {"name": "s"}, "spec": spec});
    assert!(run("", "services", svc(json!({"ports": [{"port": 80}]})), None).is_empty());
    assert_eq!(
        triples(&run("", "services", svc(json!({"selector": {"app": "x"}})), None)),
        vec![("spec.ports", "FieldValueRequired", "Required value")]
    );
    assert_eq!(
        triples(&run(
            "",
            "services",
            svc(json!({"type": "Bogus", "ports": [{"port": 0}, {"port": 81, "nodePort": 30000}]})),
            None
        )),
        vec![
            ("spec.ports[0].name", "FieldValueRequired", "Required value"),
            (
                "spec.ports[0].port",
                "FieldValueInvalid",
                "Invalid value: 0: must be between 1 and 65535, inclusive"
            ),
            (
                "spec.ports[0].targetPort",
                "FieldValueInvalid",
                "Invalid value: 0: must be between 1 and 65535, inclusive"
            ),
            ("spec.ports[1].name", "FieldValueRequired", "Required value"),
            (
                "spec.type",
                "FieldValueNotSupported",
                "Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
            ),
        ]
    );
    let causes = run(
        "",
        "services",
        svc(json!({"ports": [{"port": 80, "nodePort": 30001}]})),
        None,
    );
    assert_eq!(
        triples(&causes),
        vec![(
            "spec.ports[0].nodePort",
            "FieldValueForbidden",
            "Forbidden: may not be used when `type` is 'ClusterIP'"
        )]
    );
}

#[test]
fn namespaces_nodes_secrets_config_maps() {
    let ns = json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["foo"]}});
    assert_eq!(
        triples(&run("", "namespaces", ns, None)),
        vec![(
            "spec.finalizers",
            "FieldValueInvalid",
            "Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified"
        )]
    );
    let node = json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}});
    assert_eq!(
        triples(&run("", "nodes", node, None)),
        vec![(
            "metadata.taints[0].effect",
            "FieldValueNotSupported",
            "Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
        )]
    );
    let token = json!({"metadata": {"name": "t"}, "type": "kubernetes.io/service-account-token"});
    assert_eq!(
        triples(&run("", "secrets", token, None)),
        vec![(
            "metadata.annotations[kubernetes.io/service-account.name]",
            "FieldValueRequired",
            "Required value"
        )]
    );
    let cm = json!({"metadata": {"name": "c"}, "data": {"k": "v"}, "binaryData": {"k": "dg=="}});
    assert_eq!(
        triples(&run("", "configmaps", cm, None)),
        vec![(
            "data[k]",
            "FieldValueInvalid",
            "Invalid value: \"k\": duplicate of key present in binaryData"
        )]
    );
}

#[test]
fn pods() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x"}]}});
    assert!(run("", "pods", pod.clone(), None).is_empty());
    let renamed = with(pod.clone(), "/spec/containers/0/name", json!("b"));
    let causes = run("", "pods", renamed, Some(pod.clone()));
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "spec");
    assert!(
        causes[0].message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
        )
    );
    let image = with(pod.clone(), "/spec/containers/0/image", json!("y"));
    assert!(run("", "pods", image, Some(pod)).is_empty());
}

#[test]
fn rbac_kinds() {
    let role = json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]});
    assert_eq!(
        triples(&run("rbac.authorization.k8s.io", "roles", role, None)),
        vec![(
            "rules[0].verbs",
            "FieldValueRequired",
            "Required value: verbs must contain at least one value"
        )]
    );
    let ns_url =
        json!({"metadata": {"name": "r"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
    assert_eq!(
        triples(&run("rbac.authorization.k8s.io", "roles", ns_url, None)),
        vec![(
            "rules[0].nonResourceURLs",
            "FieldValueInvalid",
            "Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs"
        )]
    );
    let binding = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "Thing", "name": "r"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Robot", "name": "x"}]});
    assert_eq!(
        triples(&run("rbac.authorization.k8s.io", "rolebindings", binding, None)),
        vec![
            (
                "roleRef.kind",
                "FieldValueNotSupported",
                "Unsupported value: \"Thing\": supported values: \"Role\", \"ClusterRole\""
            ),
            (
                "subjects[1].kind",
                "FieldValueNotSupported",
                "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\""
            ),
        ]
    );
    let crb = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}]});
    assert_eq!(
        triples(&run(
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            crb,
            None
        )),
        vec![("subjects[0].namespace", "FieldValueRequired", "Required value")]
    );
}

#[test]
fn leases_and_csrs() {
    let lease =
        json!({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
    assert_eq!(
        triples(&run("coordination.k8s.io", "leases", lease, None)),
        vec![
            (
                "spec.leaseDurationSeconds",
                "FieldValueInvalid",
                "Invalid value: 0: must be greater than 0"
            ),
            (
                "spec.leaseTransitions",
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0"
            ),
        ]
    );
    let csr = json!({"metadata": {"name": "c"}, "spec": {"request": "", "signerName": "foo",
        "usages": ["client auth", "flying"]}});
    assert_eq!(
        triples(&run(
            "certificates.k8s.io",
            "certificatesigningrequests",
            csr,
            None
        ))[1..],
        [
            (
                "spec.usages[1]",
                "FieldValueNotSupported",
                "Unsupported value: \"flying\": supported values: \"any\", \"cert sign\", \"client auth\", \"code signing\", \"content commitment\", \"crl sign\", \"data encipherment\", \"decipher only\", \"digital signature\", \"email protection\", \"encipher only\", \"ipsec end system\", \"ipsec tunnel\", \"ipsec user\", \"key agreement\", \"key encipherment\", \"microsoft sgc\", \"netscape sgc\", \"ocsp signing\", \"s/mime\", \"server auth\", \"signing\", \"timestamping\""
            ),
            (
                "spec.signerName",
                "FieldValueInvalid",
                "Invalid value: \"foo\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
            ),
        ]
    );
}

#[test]
fn owner_references() {
    let cm = json!({"metadata": {"name": "c", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "controller": true},
        {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u2", "controller": true}]}});
    let causes = run("", "configmaps", cm, None);
    assert_eq!(causes.len(), 2);
    assert_eq!(
        (causes[0].field.as_str(), causes[0].message.as_str()),
        (
            "metadata.ownerReferences.uid",
            "Invalid value: \"\": must not be empty"
        )
    );
    assert_eq!(causes[1].field, "metadata.ownerReferences");
    assert!(causes[1].message.ends_with(
        "Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/o and Secret/s"
    ));
}
