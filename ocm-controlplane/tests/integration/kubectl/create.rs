//! `kubectl create -f` of the OCM CRDs and of every OCM example, and kubectl's default validation.

use super::*;

#[tokio::test]
async fn kubectl_create_ocm_crds_and_wait_established() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_create_ocm_crds_and_wait_established").await else {
        return;
    };
    let dir = ocm_crd_dir();
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in ["hub", "managed", "operator"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    files.sort();
    assert!(files.len() >= 10, "{files:?}");

    let run = k.create_file(&dir).await;
    let against_real_cluster = env.control_plane().is_none();
    for line in run.stderr.lines() {
        // A real cluster may have them already; the embedded server starts empty.
        let tolerated = against_real_cluster && line.contains("AlreadyExists");
        assert!(
            tolerated || line.starts_with("WARNING: version difference"),
            "kubectl create -f {}: {line}\nstderr: {}",
            dir.display(),
            run.stderr
        );
    }
    let mut names = Vec::new();
    for file in &files {
        let stem = file.file_stem().unwrap().to_str().unwrap().to_string();
        if env.control_plane().is_some() {
            let want = format!("customresourcedefinition.apiextensions.k8s.io/{stem} created");
            assert!(
                run.stdout.lines().any(|l| l == want),
                "{want} not in:\n{}",
                run.stdout
            );
        }
        names.push(format!("crd/{stem}"));
    }

    let mut args = vec!["wait", "--for=condition=Established", "--timeout=30s"];
    args.extend(names.iter().map(String::as_str));
    let waited = k.ok(&args).await;
    assert_eq!(waited.lines().count(), names.len(), "{waited}");
    assert!(waited.lines().all(|l| l.ends_with(" condition met")), "{waited}");
    let mut args = vec!["wait", "--for=condition=NamesAccepted", "--timeout=30s"];
    args.extend(names.iter().map(String::as_str));
    k.ok(&args).await;

    let crd = "managedclusters.cluster.open-cluster-management.io";
    let accepted = k
        .ok(&[
            "get",
            "crd",
            crd,
            "-o",
            "jsonpath={.status.acceptedNames.kind}/{.status.acceptedNames.plural}/{.status.storedVersions}",
        ])
        .await;
    assert_eq!(accepted, r#"ManagedCluster/managedclusters/["v1"]"#);
    // Served at once: an empty list, in kubectl's words.
    let r = k.run(&["get", "managedclusters"]).await;
    assert!(r.ok, "{r:?}");
    if env.control_plane().is_some() {
        assert!(r.stderr.lines().any(|l| l == "No resources found"), "{r:?}");
    }
}

/// `kubectl get crd` prints the default columns of a kind without printer: NAME and CREATED AT
/// (an RFC 3339 timestamp, not an age).
#[tokio::test]
async fn kubectl_get_crd_prints_created_at() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_get_crd_prints_created_at").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    let crd = "managedclusters.cluster.open-cluster-management.io";
    let table = Table::parse(&k.ok(&["get", "crd", crd]).await);
    assert_eq!(table.columns, columns(&["NAME", "CREATED AT"]), "{table:?}");
    let created = &table.row(0, crd)[1];
    assert!(
        chrono::DateTime::parse_from_rfc3339(created).is_ok(),
        "CREATED AT is a timestamp: {created:?}"
    );
}

/// kubectl's defaults (`--validate=true`, i.e. strict, checked by the server through
/// `fieldValidation`) and its `warn` setting. Needs `/openapi/v3/apis/<group>/<version>` to list the
/// `fieldValidation` query parameter on the kind's post/put/patch operations, as kube-apiserver's
/// does; without it kubectl falls back to client-side validation with `/openapi/v2`.
#[tokio::test]
async fn kubectl_create_validates_by_default() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_create_validates_by_default").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    let name = unique("validate");
    let good = managed_cluster_yaml(&name, "validate");
    let r = k.run_with_input(&["create", "-f", "-"], Some(&good)).await;
    assert!(r.ok, "kubectl create -f - (default validation): {}", r.stderr);
    assert_eq!(r.stdout.trim(), format!("{MC}/{name} created"));
    // Strict: the server's 400 for an unknown field.
    let bogus =
        managed_cluster_yaml(&format!("{name}-x"), "validate").replace("spec:\n", "spec:\n  bogus: 1\n");
    let r = k.run_with_input(&["create", "-f", "-"], Some(&bogus)).await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains(
            "Error from server (BadRequest): error when creating \"STDIN\": ManagedCluster in version \"v1\" \
             cannot be handled as a ManagedCluster: strict decoding error: unknown field \"spec.bogus\""
        ),
        "{}",
        r.stderr
    );
    // Warn: created, with the server's warning; the field is pruned.
    let r = k
        .run_with_input(&["create", "--validate=warn", "-f", "-"], Some(&bogus))
        .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("Warning: unknown field \"spec.bogus\""),
        "{}",
        r.stderr
    );
    let spec = k
        .ok(&["get", "mcl", &format!("{name}-x"), "-o", "jsonpath={.spec}"])
        .await;
    assert!(!spec.contains("bogus"), "{spec}");
    k.ok(&["delete", "mcl", &name, &format!("{name}-x")]).await;
}

#[tokio::test]
async fn kubectl_create_every_ocm_example() {
    let Some(dir) = examples_dir("kubectl_create_every_ocm_example") else {
        return;
    };
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_create_every_ocm_example").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();

    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no examples in {}", dir.display());

    // The namespaces the examples live in.
    let mut namespaces = std::collections::BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for doc in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
            if let Some(ns) = doc.pointer("/metadata/namespace").and_then(Value::as_str) {
                namespaces.insert(ns.to_string());
            }
        }
    }
    let existing = k.ok(&["get", "namespaces", "-o", "name"]).await;
    let mut created_namespaces = Vec::new();
    for ns in &namespaces {
        if !existing.lines().any(|l| l == format!("namespace/{ns}")) {
            k.with_stdin("create", &namespace_yaml(ns), &[]).await;
            created_namespaces.push(ns.clone());
        }
    }

    // Several examples share a name (variants of one object), so each file is created, read back
    // and deleted before the next.
    let mut failures = Vec::new();
    for file in &files {
        let shown = file.file_name().unwrap().to_string_lossy().to_string();
        let path = file.to_str().unwrap();
        // On a shared real cluster an example's fixed name may be taken already (a hub's
        // controllers make the `global` and `default` ManagedClusterSets): not ours to replace.
        if k.run(&["get", "-f", path, "-o", "name"]).await.ok {
            println!("SKIP {shown}: its objects exist on this cluster already, made by others");
            continue;
        }
        let run = k.create_file(file).await;
        if !run.ok {
            failures.push(format!("create -f {shown}: {}", run.stderr.trim()));
            continue;
        }
        let created = run.stdout.lines().filter(|l| l.ends_with(" created")).count();
        let text = std::fs::read_to_string(file).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple::<Value>(&text)
            .unwrap()
            .into_iter()
            .filter(|d| !d.is_null())
            .collect();
        if created != docs.len() {
            failures.push(format!(
                "create -f {shown}: {created} of {} created: {}",
                docs.len(),
                run.stdout
            ));
        }
        let got = k.run(&["get", "-f", path, "-o", "json"]).await;
        if got.ok {
            let v: Value = serde_json::from_str(&got.stdout).unwrap();
            let items = v
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_else(|| vec![v]);
            for (doc, item) in docs.iter().zip(&items) {
                if doc["spec"].is_object() && item["spec"].is_null() {
                    failures.push(format!("get -f {shown}: spec missing: {item}"));
                }
                if item["metadata"]["uid"].as_str().is_none() {
                    failures.push(format!("get -f {shown}: no uid: {item}"));
                }
            }
        } else {
            failures.push(format!("get -f {shown}: {}", got.stderr.trim()));
        }
        let deleted = k
            .run(&["delete", "-f", path, "--wait=true", "--timeout=30s"])
            .await;
        if !deleted.ok {
            failures.push(format!("delete -f {shown}: {}", deleted.stderr.trim()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );

    for ns in created_namespaces {
        k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
    }
}
