//! `executor:` scenarios of ocm-core.md §6.2: works applied in the name of a ServiceAccount of
//! the managed cluster, checked with SubjectAccessReviews and, for RBAC objects, an impersonated
//! dry-run create (the API server's escalation check).

use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use ocm_api::work::v1::{DeleteOption, Manifest};
use serde_json::{Value, json};

use super::statusfeedback::condition;
use super::support::{WorkEnv, eventually, manifest, manifest_conditions};

const EXECUTOR: &str = "executor";

fn executor(env: &WorkEnv) -> Value {
    json!({"subject": {"type": "ServiceAccount",
                       "serviceAccount": {"namespace": env.namespace, "name": EXECUTOR}}})
}

/// Creates work `name` with the executor (and delete option) set from the start.
async fn create_work(
    env: &WorkEnv,
    name: &str,
    manifests: Vec<Manifest>,
    delete_option: Option<DeleteOption>,
) {
    let mut work =
        ocm_api::work::v1::ManifestWork::new(&env.work_name(name), super::support::work_spec(manifests));
    work.spec.executor = Some(serde_json::from_value(executor(env)).unwrap());
    work.spec.delete_option = delete_option;
    env.works().create(&PostParams::default(), &work).await.unwrap();
}

/// A Role in the test namespace granting `verbs` on `resources` of `group` (only `names` if
/// given), bound to the executor.
async fn grant(
    env: &WorkEnv,
    role: &str,
    group: &str,
    resources: &[&str],
    verbs: &[&str],
    names: Option<&[&str]>,
) {
    let roles: Api<Role> = Api::namespaced(env.spoke_client.clone(), &env.namespace);
    let bindings: Api<RoleBinding> = Api::namespaced(env.spoke_client.clone(), &env.namespace);
    let meta = ObjectMeta {
        name: Some(role.into()),
        namespace: Some(env.namespace.clone()),
        ..ObjectMeta::default()
    };
    roles
        .create(
            &PostParams::default(),
            &Role {
                metadata: meta.clone(),
                rules: Some(vec![PolicyRule {
                    api_groups: Some(vec![group.into()]),
                    resources: Some(resources.iter().map(|r| (*r).to_string()).collect()),
                    verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
                    resource_names: names.map(|n| n.iter().map(|s| (*s).to_string()).collect()),
                    ..PolicyRule::default()
                }]),
            },
        )
        .await
        .unwrap();
    bindings
        .create(
            &PostParams::default(),
            &RoleBinding {
                metadata: meta,
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "Role".into(),
                    name: role.into(),
                },
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: EXECUTOR.into(),
                    namespace: Some(env.namespace.clone()),
                    ..Subject::default()
                }]),
            },
        )
        .await
        .unwrap();
}

async fn revoke(env: &WorkEnv, role: &str) {
    let roles: Api<Role> = Api::namespaced(env.spoke_client.clone(), &env.namespace);
    let bindings: Api<RoleBinding> = Api::namespaced(env.spoke_client.clone(), &env.namespace);
    roles.delete(role, &DeleteParams::default()).await.unwrap();
    bindings.delete(role, &DeleteParams::default()).await.unwrap();
}

/// Waits until the manifests' `type_` conditions have `statuses` (in order) and the work's
/// condition `type_` is `work_status`.
async fn wait_statuses(env: &WorkEnv, name: &str, type_: &str, work_status: &str, statuses: &[&str]) {
    eventually(&format!("{name}: {type_}={work_status} {statuses:?}"), || async {
        let work = env.work(name).await?;
        let manifests = manifest_conditions(&work);
        let got: Vec<String> = manifests
            .iter()
            .map(|m| condition(m, type_).map(|c| c.status.clone()).unwrap_or_default())
            .collect();
        let work_condition = super::support::work_condition(&work, type_)?;
        (work_condition.status == work_status && got == statuses).then_some(())
    })
    .await;
}

fn cm(env: &WorkEnv, name: &str) -> Manifest {
    env.configmap(name, json!({"a": "b"}))
}

const ALL_VERBS: &[&str] = &["create", "update", "patch", "get", "list", "delete"];

#[tokio::test]
async fn executor_no_permission() {
    let env = WorkEnv::started("ex-none").await;
    create_work(&env, "w", vec![cm(&env, "cm1"), cm(&env, "cm2")], None).await;
    wait_statuses(&env, "w", "Applied", "False", &["False", "False"]).await;
    wait_statuses(&env, "w", "Available", "False", &["False", "False"]).await;
    let work = env.work("w").await.unwrap();
    let applied = condition(&manifest_conditions(&work)[0], "Applied")
        .unwrap()
        .clone();
    assert_eq!(applied.reason, "AppliedManifestFailed");
    assert!(
        applied
            .message
            .contains("not allowed to apply the resource  configmaps"),
        "{}",
        applied.message
    );
    assert!(env.configmap_opt("cm1").await.is_none());
    assert!(env.configmap_opt("cm2").await.is_none());
    env.finish().await;
}

#[tokio::test]
async fn executor_partial_permission() {
    let env = WorkEnv::started("ex-partial").await;
    grant(&env, "cm1-only", "", &["configmaps"], ALL_VERBS, Some(&["cm1"])).await;
    create_work(&env, "w", vec![cm(&env, "cm1"), cm(&env, "cm2")], None).await;
    wait_statuses(&env, "w", "Applied", "False", &["True", "False"]).await;
    wait_statuses(&env, "w", "Available", "False", &["True", "False"]).await;
    assert!(env.configmap_opt("cm1").await.is_some());
    assert!(env.configmap_opt("cm2").await.is_none());
    env.finish().await;
}

#[tokio::test]
async fn executor_full_permission() {
    let env = WorkEnv::started("ex-full").await;
    grant(&env, "cms", "", &["configmaps"], ALL_VERBS, None).await;
    create_work(&env, "w", vec![cm(&env, "cm1"), cm(&env, "cm2")], None).await;
    wait_statuses(&env, "w", "Applied", "True", &["True", "True"]).await;
    wait_statuses(&env, "w", "Available", "True", &["True", "True"]).await;
    env.finish().await;
}

#[tokio::test]
async fn executor_delete_permission_by_delete_option() {
    let env = WorkEnv::started("ex-delete").await;
    grant(
        &env,
        "no-delete",
        "",
        &["configmaps"],
        &["create", "update", "patch", "get", "list"],
        None,
    )
    .await;
    // Foreground: the work owns both, so both need delete.
    create_work(&env, "fg", vec![cm(&env, "cm1"), cm(&env, "cm2")], None).await;
    wait_statuses(&env, "fg", "Applied", "False", &["False", "False"]).await;
    // Orphan: nothing is owned, so nothing needs delete.
    let orphan = serde_json::from_value(json!({"propagationPolicy": "Orphan"})).unwrap();
    create_work(
        &env,
        "orphan",
        vec![cm(&env, "cm3"), cm(&env, "cm4")],
        Some(orphan),
    )
    .await;
    wait_statuses(&env, "orphan", "Applied", "True", &["True", "True"]).await;
    // SelectivelyOrphan: only the orphaned ConfigMap can be applied.
    let selective = serde_json::from_value(json!({
        "propagationPolicy": "SelectivelyOrphan",
        "selectivelyOrphans": {"orphaningRules": [
            {"group": "", "resource": "configmaps", "namespace": env.namespace, "name": "cm5"}
        ]},
    }))
    .unwrap();
    create_work(
        &env,
        "selective",
        vec![cm(&env, "cm5"), cm(&env, "cm6")],
        Some(selective),
    )
    .await;
    wait_statuses(&env, "selective", "Applied", "False", &["True", "False"]).await;
    assert!(env.configmap_opt("cm5").await.is_some());
    assert!(env.configmap_opt("cm6").await.is_none());
    assert!(env.configmap_opt("cm1").await.is_none());
    env.finish().await;
}

fn rbac_manifests(env: &WorkEnv) -> Vec<Manifest> {
    vec![
        cm(env, "cm1"),
        manifest(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "role-cm-creator", "namespace": env.namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_VERBS}],
        })),
        manifest(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "role-cm-creator-binding", "namespace": env.namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role-cm-creator"},
            "subjects": [{"kind": "ServiceAccount", "namespace": env.namespace, "name": EXECUTOR}],
        })),
    ]
}

#[tokio::test]
async fn executor_escalation_without_permission() {
    let env = WorkEnv::started("ex-esc-no").await;
    grant(
        &env,
        "rbac-no-escalate",
        "rbac.authorization.k8s.io",
        &["roles", "rolebindings"],
        ALL_VERBS,
        None,
    )
    .await;
    create_work(&env, "w", rbac_manifests(&env), None).await;
    wait_statuses(&env, "w", "Applied", "False", &["False", "False", "False"]).await;
    let work = env.work("w").await.unwrap();
    let role_applied = condition(&manifest_conditions(&work)[1], "Applied")
        .unwrap()
        .clone();
    assert!(
        role_applied.message.contains("error: permission escalation"),
        "{}",
        role_applied.message
    );
    assert!(env.configmap_opt("cm1").await.is_none());
    env.finish().await;
}

#[tokio::test]
async fn executor_escalation_with_permission() {
    let env = WorkEnv::started("ex-esc-yes").await;
    grant(
        &env,
        "rbac-escalate",
        "rbac.authorization.k8s.io",
        &["roles", "rolebindings"],
        &[
            "create", "update", "patch", "get", "list", "delete", "escalate", "bind",
        ],
        None,
    )
    .await;
    create_work(&env, "w", rbac_manifests(&env), None).await;
    // The Role is applied first (kind order), the binding then gives the executor configmaps.
    wait_statuses(&env, "w", "Applied", "True", &["True", "True", "True"]).await;
    assert!(env.configmap_opt("cm1").await.is_some());
    env.finish().await;
}

#[tokio::test]
async fn executor_caches() {
    let mut env = WorkEnv::new("ex-caches").await;
    let mut options = env.options();
    options.executor_validating_caches = true;
    env.start_agent(options);
    create_work(&env, "w", vec![cm(&env, "cm1")], None).await;
    wait_statuses(&env, "w", "Applied", "False", &["False"]).await;
    assert!(env.configmap_opt("cm1").await.is_none());

    grant(
        &env,
        "cm1-cm2",
        "",
        &["configmaps"],
        ALL_VERBS,
        Some(&["cm1", "cm2"]),
    )
    .await;
    env.set_manifests("w", vec![cm(&env, "cm1"), cm(&env, "cm2")])
        .await;
    wait_statuses(&env, "w", "Applied", "True", &["True", "True"]).await;
    wait_statuses(&env, "w", "Available", "True", &["True", "True"]).await;

    revoke(&env, "cm1-cm2").await;
    env.set_manifests("w", vec![cm(&env, "cm1"), cm(&env, "cm2"), cm(&env, "cm3")])
        .await;
    wait_statuses(&env, "w", "Applied", "False", &["False", "False", "False"]).await;
    wait_statuses(&env, "w", "Available", "False", &["True", "True", "False"]).await;
    // Revoking the permission does not delete what was applied.
    assert!(env.configmap_opt("cm1").await.is_some());
    assert!(env.configmap_opt("cm2").await.is_some());
    assert!(env.configmap_opt("cm3").await.is_none());
    env.finish().await;
}
