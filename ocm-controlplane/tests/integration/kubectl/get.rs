//! `kubectl get`: tables with the CRDs' printer columns, output formats and `-w`.

use super::*;

#[tokio::test]
async fn kubectl_get_printer_columns_and_output_formats() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_get_printer_columns_and_output_formats").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    let suite = unique("get");
    let (a, b) = (format!("{suite}-a"), format!("{suite}-b"));
    for name in [&a, &b] {
        let out = k
            .with_stdin("create", &managed_cluster_yaml(name, &suite), &[])
            .await;
        assert_eq!(out.trim(), format!("{MC}/{name} created"));
    }
    let status = json!({"status": {"conditions": [
        condition("ManagedClusterJoined", "True"),
        condition("ManagedClusterConditionAvailable", "Unknown"),
    ]}});
    k.ok(&[
        "patch",
        "managedcluster",
        &a,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ])
    .await;

    // Table: the CRD's additionalPrinterColumns, by plural, singular and short name.
    let selector = format!("suite={suite}");
    for resource in ["managedclusters", "managedcluster", "mcl"] {
        let table = Table::parse(&k.ok(&["get", resource, "-l", &selector]).await);
        assert_eq!(
            table.columns,
            columns(&[
                "NAME",
                "HUB ACCEPTED",
                "MANAGED CLUSTER URLS",
                "JOINED",
                "AVAILABLE",
                "AGE"
            ]),
            "{table:?}"
        );
        assert_eq!(table.rows.len(), 2, "{table:?}");
        let row = table.row(0, &a);
        assert_eq!(
            row[..5],
            columns(&[
                &a,
                "true",
                &format!("https://{a}.example.com:6443"),
                "True",
                "Unknown"
            ])[..],
            "{table:?}"
        );
        assert!(
            row[5].ends_with('s') || row[5].ends_with('m'),
            "AGE is an age: {row:?}"
        );
        assert_eq!(table.row(0, &b)[3..5], columns(&["", ""])[..], "{table:?}");
    }
    // -o wide adds nothing for these columns; --show-labels adds LABELS.
    let wide = Table::parse(&k.ok(&["get", "mcl", &a, "-o", "wide"]).await);
    assert_eq!(wide.columns.len(), 6, "{wide:?}");
    let labelled = Table::parse(&k.ok(&["get", "mcl", &a, "--show-labels"]).await);
    assert_eq!(labelled.columns.last().map(String::as_str), Some("LABELS"));
    assert_eq!(labelled.row(0, &a).last().unwrap(), &selector);
    // --no-headers, sorting, field selectors.
    let plain = k
        .ok(&[
            "get",
            "mcl",
            "-l",
            &selector,
            "--no-headers",
            "--sort-by=.metadata.name",
        ])
        .await;
    let first: Vec<&str> = plain
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(first, vec![a.as_str(), b.as_str()]);
    let only_b = k
        .ok(&[
            "get",
            "mcl",
            "--field-selector",
            &format!("metadata.name={b}"),
            "-o",
            "name",
        ])
        .await;
    assert_eq!(only_b.trim(), format!("{MC}/{b}"));

    // Structured output.
    let yaml = k.ok(&["get", "managedcluster", &a, "-o", "yaml"]).await;
    let obj: Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(obj["apiVersion"], "cluster.open-cluster-management.io/v1");
    assert_eq!(obj["kind"], "ManagedCluster");
    assert_eq!(obj["spec"]["hubAcceptsClient"], true);
    assert_eq!(obj["metadata"]["generation"], 1);
    assert!(
        obj["metadata"]["managedFields"].is_null(),
        "kubectl hides managedFields"
    );
    assert_eq!(obj["status"]["conditions"][0]["type"], "ManagedClusterJoined");
    let json_out: Value = serde_json::from_str(&k.ok(&["get", "mcl", &a, "-o", "json"]).await).unwrap();
    assert_eq!(json_out["metadata"]["uid"], obj["metadata"]["uid"]);
    let list: Value =
        serde_json::from_str(&k.ok(&["get", "mcl", "-l", &selector, "-o", "json"]).await).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let path = k
        .ok(&[
            "get",
            "mcl",
            &a,
            "-o",
            r#"jsonpath={.spec.managedClusterClientConfigs[0].url} {.status.conditions[?(@.type=="ManagedClusterJoined")].status}"#,
        ])
        .await;
    assert_eq!(path, format!("https://{a}.example.com:6443 True"));
    let range = k
        .ok(&[
            "get",
            "mcl",
            "-l",
            &selector,
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}"#,
        ])
        .await;
    assert_eq!(range.lines().collect::<Vec<_>>(), vec![a.as_str(), b.as_str()]);
    let custom = Table::parse(
        &k.ok(&[
            "get",
            "mcl",
            &a,
            "-o",
            "custom-columns=NAME:.metadata.name,ACCEPTED:.spec.hubAcceptsClient",
        ])
        .await,
    );
    assert_eq!(custom.rows, vec![columns(&[&a, "true"])]);
    let names = k.ok(&["get", "mcl", "-l", &selector, "-o", "name"]).await;
    assert_eq!(names.lines().count(), 2);
    // describe (its event lookup goes through client-go's typed client, which asks for protobuf
    // and takes JSON).
    let described = k.ok(&["describe", "managedcluster", &a]).await;
    assert!(described.contains(&format!("Name:         {a}")), "{described}");
    assert!(described.contains("Hub Accepts Client:"), "{described}");
    assert!(described.contains("Events:"), "{described}");

    // A namespaced OCM kind: Placement (columns without AGE), also across all namespaces.
    let ns = unique("kubectl-get");
    k.with_stdin("create", &namespace_yaml(&ns), &[]).await;
    let placement = format!(
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: p1\n  \
         namespace: {ns}\nspec:\n  numberOfClusters: 1\n"
    );
    k.with_stdin("create", &placement, &[]).await;
    let status = json!({"status": {"numberOfSelectedClusters": 1,
        "conditions": [condition("PlacementSatisfied", "True")]}});
    k.ok(&[
        "patch",
        "placement",
        "p1",
        "-n",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ])
    .await;
    let table = Table::parse(&k.ok(&["get", "placements", "-n", &ns]).await);
    assert_eq!(
        table.columns,
        columns(&["NAME", "SUCCEEDED", "REASON", "SELECTEDCLUSTERS"])
    );
    assert_eq!(table.rows, vec![columns(&["p1", "True", "Test", "1"])]);
    let all = Table::parse(
        &k.ok(&[
            "get",
            "placements",
            "-A",
            "--field-selector",
            &format!("metadata.namespace={ns}"),
        ])
        .await,
    );
    assert_eq!(all.columns[0], "NAMESPACE");
    assert_eq!(all.rows, vec![columns(&[&ns, "p1", "True", "Test", "1"])]);
    // A built-in kind: ConfigMap's DATA column.
    let cm = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c1\n  namespace: {ns}\ndata:\n  a: '1'\n  b: '2'\n"
    );
    k.with_stdin("create", &cm, &[]).await;
    let table = Table::parse(&k.ok(&["get", "configmap", "c1", "-n", &ns]).await);
    assert_eq!(table.columns, columns(&["NAME", "DATA", "AGE"]));
    assert_eq!(table.row(0, "c1")[1], "2");

    k.ok(&["delete", "mcl", &a, &b]).await;
    k.ok(&["delete", "placement", "p1", "-n", &ns]).await;
    k.ok(&["delete", "configmap", "c1", "-n", &ns]).await;
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
}

#[tokio::test]
async fn kubectl_get_watch_streams_rows() {
    let env = TestEnv::hub().await.unwrap();
    let Some(k) = Kubectl::new(&env, "kubectl_get_watch_streams_rows").await else {
        return;
    };
    env.install_ocm_crds().await.unwrap();
    let suite = unique("watch");
    let (a, b) = (format!("{suite}-a"), format!("{suite}-b"));
    k.with_stdin("create", &managed_cluster_yaml(&a, &suite), &[])
        .await;
    let selector = format!("suite={suite}");

    let mut table = k.stream(&["get", "managedclusters", "-l", &selector, "-w"]);
    let mut names = k.stream(&["get", "managedclusters", "-l", &selector, "-w", "-o", "name"]);
    let mut events = k.stream(&[
        "get",
        "managedclusters",
        "-l",
        &selector,
        "-w",
        "--output-watch-events",
        "-o",
        "json",
    ]);

    // The initial list, then the watch from its resourceVersion (so nothing written after the
    // list is missed, however late the watch opens).
    let header = table.next_line().await;
    let want_header = [
        "NAME",
        "HUB ACCEPTED",
        "MANAGED CLUSTER URLS",
        "JOINED",
        "AVAILABLE",
        "AGE",
    ];
    assert_eq!(Table::parse(&header).columns, columns(&want_header), "{header}");
    let first = table.next_line().await;
    assert!(first.starts_with(&a), "{first}");
    assert_eq!(names.next_line().await, format!("{MC}/{a}"));
    let initial = events.next_json().await;
    assert_eq!(initial["type"], "ADDED");
    assert_eq!(initial["object"]["metadata"]["name"], json!(a));

    k.with_stdin("create", &managed_cluster_yaml(&b, &suite), &[])
        .await;
    k.ok(&[
        "patch",
        "mcl",
        &a,
        "--type=merge",
        "-p",
        r#"{"spec":{"hubAcceptsClient":false}}"#,
    ])
    .await;
    k.ok(&["delete", "mcl", &b]).await;

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = events.next_json().await;
        seen.push((
            event["type"].as_str().unwrap().to_string(),
            event["object"]["metadata"]["name"].as_str().unwrap().to_string(),
            event["object"]["spec"]["hubAcceptsClient"].clone(),
        ));
    }
    assert_eq!(
        seen,
        vec![
            ("ADDED".to_string(), b.clone(), json!(true)),
            ("MODIFIED".to_string(), a.clone(), json!(false)),
            ("DELETED".to_string(), b.clone(), json!(true)),
        ]
    );
    let mut lines = Vec::new();
    while lines.len() < 3 {
        lines.push(names.next_line().await);
    }
    assert_eq!(
        lines,
        vec![format!("{MC}/{b}"), format!("{MC}/{a}"), format!("{MC}/{b}")]
    );

    // Later rows keep the CRD's printer columns: kube-apiserver sends each watch event as a Table
    // (column definitions in the first only), which kubectl prints under the first header.
    let mut rows = Vec::new();
    while rows.len() < 3 {
        rows.push(table.next_line().await);
    }
    let parsed = Table::parse(&format!("{header}\n{}", rows.join("\n")));
    assert!(
        parsed.rows[0][0] == b && parsed.rows[0][1] == "true",
        "{header}\n{}",
        rows.join("\n")
    );
    assert!(
        parsed.rows[1][0] == a && parsed.rows[1][1] == "false",
        "{header}\n{}",
        rows.join("\n")
    );
    assert_eq!(parsed.rows[2][0], b, "{header}\n{}", rows.join("\n"));

    for s in [table, names, events] {
        let stderr = s.stop();
        assert!(!stderr.contains("error"), "kubectl get -w reported: {stderr}");
    }
    k.ok(&["delete", "mcl", &a]).await;
}
