//! A kube-runtime `Controller` with `finalizer()` reconciling a test CRD.

use super::*;

/// A test kind: each Widget owns a ConfigMap `widget-<name>` holding its size.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, schemars::JsonSchema)]
#[kube(
    group = "runtime.test.ocm.io",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#
)]
struct WidgetSpec {
    size: i32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    configmap: Option<String>,
}

const FINALIZER: &str = "runtime.test.ocm.io/cleanup";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ReconcileError(#[from] kube::Error);

#[derive(Default)]
struct Ctx {
    client: Option<kube::Client>,
    /// Names of the widgets whose cleanup ran.
    cleaned: Mutex<Vec<String>>,
    /// Errors of the controller stream (reconcile failures, queue errors), for failure messages.
    errors: Mutex<Vec<String>>,
}

fn owned_name(widget: &Widget) -> String {
    format!("widget-{}", widget.name_any())
}

async fn apply_widget(widget: Arc<Widget>, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let client = ctx.client.clone().unwrap();
    let ns = widget.namespace().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let name = owned_name(&widget);
    let owner = widget.controller_owner_ref(&()).unwrap();
    let desired: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": [owner]},
        "data": {"size": widget.spec.size.to_string()},
    }))
    .unwrap();
    match cms.get_opt(&name).await? {
        None => {
            cms.create(&PostParams::default(), &desired).await?;
        }
        Some(current) if current.data != desired.data => {
            cms.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": desired.data})),
            )
            .await?;
        }
        Some(_) => {}
    }
    let widgets: Api<Widget> = Api::namespaced(client, &ns);
    widgets
        .patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "observedGeneration": widget.metadata.generation,
                "configmap": name,
            }})),
        )
        .await?;
    Ok(Action::await_change())
}

async fn cleanup_widget(widget: Arc<Widget>, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let client = ctx.client.clone().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client, &widget.namespace().unwrap());
    match cms.delete(&owned_name(&widget), &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    ctx.cleaned.lock().unwrap().push(widget.name_any());
    Ok(Action::await_change())
}

async fn reconcile(
    widget: Arc<Widget>,
    ctx: Arc<Ctx>,
) -> Result<Action, kube::runtime::finalizer::Error<ReconcileError>> {
    let client = ctx.client.clone().unwrap();
    let api: Api<Widget> = Api::namespaced(client, &widget.namespace().unwrap());
    finalizer(&api, FINALIZER, widget, |event| async move {
        match event {
            FinalizerEvent::Apply(w) => apply_widget(w, &ctx).await,
            FinalizerEvent::Cleanup(w) => cleanup_widget(w, &ctx).await,
        }
    })
    .await
}

async fn install_widget_crd(client: &kube::Client) -> Api<CustomResourceDefinition> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Widget::crd();
    let name = crd.name_any();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating the Widget CRD: {e}"),
    }
    eventually("the Widget CRD to be Established", || async {
        let crd = crds.get(&name).await.ok()?;
        let established = crd
            .status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        established.then_some(())
    })
    .await;
    crds
}

#[tokio::test]
async fn controller_with_finalizer_reconciles_and_cleans_up() {
    let env = TestEnv::hub().await.unwrap();
    let client = env.client().await.unwrap();
    let crds = install_widget_crd(&client).await;
    let ns = unique("rt-ctrl");
    create_namespace(&client, &ns).await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    // The discovery of the new kind may lag the Established condition for a moment.
    eventually("Widgets to be served", || async {
        widgets.list(&ListParams::default()).await.ok()
    })
    .await;

    let ctx = Arc::new(Ctx {
        client: Some(client.clone()),
        ..Ctx::default()
    });
    let controller = Controller::new(widgets.clone(), watcher::Config::default())
        .owns(cms.clone(), watcher::Config::default())
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_millis(200)),
            ctx.clone(),
        );
    let sink = ctx.clone();
    let task = tokio::spawn(async move {
        let mut results = controller.boxed();
        while let Some(result) = results.next().await {
            if let Err(e) = result {
                // Shown with the test's output when it fails.
                eprintln!("controller error: {e:?}");
                sink.errors.lock().unwrap().push(format!("{e:?}"));
            }
        }
    });
    let errors = || ctx.errors.lock().unwrap().clone();

    // Create: the finalizer is added first, then the owned ConfigMap and the status are written.
    let widget = Widget::new("w1", WidgetSpec { size: 3 });
    widgets.create(&PostParams::default(), &widget).await.unwrap();
    let reconciled = eventually("w1 to carry the finalizer and a status", || async {
        let w = widgets.get("w1").await.ok()?;
        let done = w.finalizers().iter().any(|f| f == FINALIZER)
            && w.status.as_ref().and_then(|s| s.observed_generation) == Some(1);
        done.then_some(w)
    })
    .await;
    assert_eq!(reconciled.finalizers(), [FINALIZER.to_string()], "{:?}", errors());
    assert_eq!(reconciled.status.unwrap().configmap.as_deref(), Some("widget-w1"));
    let owned = cms.get("widget-w1").await.unwrap();
    assert_eq!(owned.data.unwrap()["size"], "3");
    let owner = &owned.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Widget", "w1", Some(true))
    );
    assert_eq!(Some(&owner.uid), reconciled.metadata.uid.as_ref());

    // A spec change bumps the generation and is reconciled into the ConfigMap.
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}})),
        )
        .await
        .unwrap();
    eventually("the size change to be reconciled", || async {
        let cm = cms.get("widget-w1").await.ok()?;
        let w = widgets.get("w1").await.ok()?;
        let done = cm.data.as_ref().is_some_and(|d| d["size"] == "5")
            && w.status.as_ref().and_then(|s| s.observed_generation) == Some(2);
        done.then_some(())
    })
    .await;

    // The owned ConfigMap is watched: deleting it behind the controller's back recreates it.
    cms.delete("widget-w1", &DeleteParams::default()).await.unwrap();
    eventually("the owned ConfigMap to be recreated", || async {
        cms.get_opt("widget-w1").await.ok().flatten()
    })
    .await;

    // Delete: the finalizer holds the object (deletionTimestamp set) until cleanup has run, then
    // the finalizer is removed and the object disappears.
    widgets.delete("w1", &DeleteParams::default()).await.unwrap();
    eventually("w1 to be gone", || async {
        matches!(widgets.get_opt("w1").await, Ok(None)).then_some(())
    })
    .await;
    // Cleanup ran for w1. It can run twice: a reconcile queued while the first cleanup removed the
    // finalizer still sees the cached object (a real kube-apiserver shows this race), cleans up
    // again and finds the object gone when it removes the finalizer (404) — kube-runtime's
    // finalizer helper asks for an idempotent cleanup for that reason.
    let cleaned = ctx.cleaned.lock().unwrap().clone();
    assert!(
        !cleaned.is_empty() && cleaned.iter().all(|w| w == "w1"),
        "{cleaned:?} {:?}",
        errors()
    );

    assert!(
        cms.get_opt("widget-w1").await.unwrap().is_none(),
        "cleanup deleted the owned ConfigMap"
    );

    // A widget created with a foreign finalizer already present gets ours appended (JSON patch
    // `test` of the whole list, then `add` at `/-`), and deletion waits for both.
    let mut second = Widget::new("w2", WidgetSpec { size: 1 });
    second.metadata.finalizers = Some(vec!["example.com/other".into()]);
    widgets.create(&PostParams::default(), &second).await.unwrap();
    eventually("w2 to carry both finalizers", || async {
        let w = widgets.get("w2").await.ok()?;
        (w.finalizers() == ["example.com/other".to_string(), FINALIZER.to_string()]).then_some(())
    })
    .await;
    widgets.delete("w2", &DeleteParams::default()).await.unwrap();
    let held = eventually("w2's cleanup to run and our finalizer to be removed", || async {
        let w = widgets.get("w2").await.ok()?;
        (w.finalizers() == ["example.com/other".to_string()]).then_some(w)
    })
    .await;
    assert!(held.metadata.deletion_timestamp.is_some());
    assert!(ctx.cleaned.lock().unwrap().contains(&"w2".to_string()));
    widgets
        .patch(
            "w2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("w2 to be gone", || async {
        matches!(widgets.get_opt("w2").await, Ok(None)).then_some(())
    })
    .await;

    task.abort();
    delete_namespace(&client, &ns).await;
    crds.delete(&Widget::crd().name_any(), &DeleteParams::default())
        .await
        .unwrap();
}
