//! Packing scenarios: upstream's work builder cases and the add-on framework's multi-work scenario.

use serde_json::json;

use super::*;
use crate::work::v1::{DeletePropagationPolicy, ResourceIdentifier};

const KIB: usize = 1024;

fn manifest(value: serde_json::Value) -> Manifest {
    Manifest::try_from(value).unwrap()
}

fn padding(size: usize) -> String {
    "a".repeat(size)
}

fn crd(name: &str, size: usize) -> Manifest {
    manifest(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "annotations": {"data": padding(size)}}
    }))
}

fn deployment(name: &str, namespace: &str, size: usize) -> Manifest {
    manifest(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"data": padding(size)}},
        "spec": {}
    }))
}

fn role(name: &str, namespace: &str, size: usize) -> Manifest {
    manifest(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"data": padding(size)}}
    }))
}

fn cr(name: &str, namespace: &str, size: usize) -> Manifest {
    manifest(json!({
        "apiVersion": "test/v1", "kind": "Test",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"data": padding(size)}}
    }))
}

fn meta(index: usize) -> ObjectMeta {
    ObjectMeta {
        name: Some(format!("test-work-{index}")),
        namespace: Some("cluster1".to_owned()),
        labels: Some(BTreeMap::from([("app".to_owned(), "test-app".to_owned())])),
        ..Default::default()
    }
}

fn existing(index: usize, manifests: Vec<Manifest>) -> ManifestWork {
    ManifestWork {
        metadata: meta(index),
        spec: ManifestWorkSpec {
            workload: Some(ManifestsTemplate {
                manifests: Some(manifests),
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The usual five objects of work 0 in upstream's scenarios.
fn work0_objects() -> Vec<Manifest> {
    vec![
        crd("test1", 10 * KIB),
        crd("test2", 10 * KIB),
        deployment("test", "test", KIB),
        role("test", "test", KIB),
        cr("test", "test", KIB),
    ]
}

fn shape(works: &[ManifestWork]) -> Vec<(String, usize)> {
    works
        .iter()
        .map(|w| {
            (
                w.metadata.name.clone().unwrap_or_default(),
                existing_manifests(w).len(),
            )
        })
        .collect()
}

fn names(works: &[(&str, usize)]) -> Vec<(String, usize)> {
    works.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect()
}

fn build(limit: usize, objects: &[Manifest], options: &WorkOptions) -> Works {
    WorkBuilder::new()
        .with_manifests_limit(limit)
        .build(objects, meta, options)
        .unwrap()
}

#[test]
fn limits() {
    assert_eq!(WorkBuilder::new().fill_limit(), 40_960);
    assert_eq!(WorkBuilder::for_addons().fill_limit(), 409_600);
    assert_eq!(
        WorkBuilder::default().with_manifests_limit(30 * KIB).fill_limit(),
        24_576
    );
}

#[test]
fn sizes_follow_the_go_encoding() {
    let small = manifest(json!({"apiVersion": "v1", "kind": "A"}));
    let text = r#"{"apiVersion":"v1","kind":"A"}"#;
    assert_eq!(manifest_size(&small), 1 + 1 + text.len() + 1);
    let escaped = manifest(json!({"apiVersion": "v1", "kind": "<"}));
    assert_eq!(manifest_size(&escaped), manifest_size(&small) + 5);
    assert_eq!(varint_len(127), 1);
    assert_eq!(varint_len(128), 2);
    assert_eq!(varint_len(16_383), 2);
    assert_eq!(varint_len(16_384), 3);
    let big = crd("x", 20 * KIB);
    let encoded = go_json::to_string(&serde_json::Value::Object(big.as_object().clone())).len() + 1;
    assert_eq!(manifest_size(&big), 1 + 3 + encoded);
}

#[test]
fn one_work_when_everything_fits() {
    let works = build(DEFAULT_MANIFESTS_LIMIT, &work0_objects(), &WorkOptions::default());
    assert_eq!(shape(&works.apply), names(&[("test-work-0", 5)]));
    assert!(works.delete.is_empty());
    let work = &works.apply[0];
    assert_eq!(work.metadata.namespace.as_deref(), Some("cluster1"));
    assert_eq!(work.metadata.annotations, None);
}

#[test]
fn new_works_are_filled_in_size_order() {
    let objects = vec![
        crd("test1", 5 * KIB),
        crd("test2", 10 * KIB),
        crd("test3", 20 * KIB),
        crd("test4", 11 * KIB),
        deployment("test", "test", KIB),
        role("test", "test", KIB),
        cr("test", "test", KIB),
    ];
    let works = build(DEFAULT_MANIFESTS_LIMIT, &objects, &WorkOptions::default());
    assert_eq!(
        shape(&works.apply),
        names(&[("test-work-0", 2), ("test-work-1", 5)])
    );
}

#[test]
fn options_go_on_every_work() {
    let objects = vec![
        crd("test1", 5 * KIB),
        crd("test2", 7 * KIB),
        crd("test3", 20 * KIB),
        crd("test4", 15 * KIB),
        deployment("test", "test", 8 * KIB),
        role("test", "test", 6 * KIB),
        cr("test", "test", KIB),
    ];
    let options = WorkOptions {
        delete_option: Some(DeleteOption {
            propagation_policy: Some(DeletePropagationPolicy::Foreground),
            ..Default::default()
        }),
        manifest_configs: Some(vec![ManifestConfigOption {
            resource_identifier: ResourceIdentifier {
                group: Some("apps".to_owned()),
                resource: "deployments".to_owned(),
                name: "test".to_owned(),
                namespace: Some("test".to_owned()),
            },
            ..Default::default()
        }]),
        annotations: Some(BTreeMap::from([(
            crate::names::annotations::CONFIG_SPEC_HASH.to_owned(),
            "{}".to_owned(),
        )])),
        ..Default::default()
    };
    let works = build(30 * KIB, &objects, &options);
    assert_eq!(
        shape(&works.apply),
        names(&[("test-work-0", 1), ("test-work-1", 2), ("test-work-2", 4)])
    );
    for work in &works.apply {
        assert_eq!(work.spec.delete_option, options.delete_option);
        assert_eq!(work.spec.manifest_configs, options.manifest_configs);
        assert_eq!(work.metadata.annotations, options.annotations);
        assert_eq!(work.metadata.labels, meta(0).labels);
    }
}

#[test]
fn existing_works_get_new_versions_in_place() {
    let mut objects = work0_objects();
    objects[1] = crd("test2", 11 * KIB);
    let options = WorkOptions {
        existing_works: vec![existing(0, work0_objects())],
        ..Default::default()
    };
    let works = build(DEFAULT_MANIFESTS_LIMIT, &objects, &options);
    assert_eq!(shape(&works.apply), names(&[("test-work-0", 5)]));
    assert!(manifest_size(&existing_manifests(&works.apply[0])[1]) > 11 * KIB);
}

#[test]
fn unwanted_manifests_leave_existing_works() {
    let objects = vec![
        crd("test1", 10 * KIB),
        deployment("test", "test", KIB),
        deployment("test1", "test1", KIB),
        role("test", "test", KIB),
        cr("test", "test", KIB),
    ];
    let work1 = vec![
        crd("test3", 10 * KIB),
        crd("test4", 10 * KIB),
        deployment("test1", "test1", KIB),
        role("test1", "test1", KIB),
        cr("test1", "test1", KIB),
    ];
    let options = WorkOptions {
        existing_works: vec![existing(0, work0_objects()), existing(1, work1)],
        ..Default::default()
    };
    let works = build(DEFAULT_MANIFESTS_LIMIT, &objects, &options);
    assert_eq!(
        shape(&works.apply),
        names(&[("test-work-0", 4), ("test-work-1", 1)])
    );
    assert!(works.delete.is_empty());
}

#[test]
fn emptied_existing_works_are_deleted() {
    let objects = vec![
        crd("test1", 10 * KIB),
        deployment("test", "test", KIB),
        role("test", "test", KIB),
        cr("test", "test", KIB),
    ];
    let options = WorkOptions {
        existing_works: vec![
            existing(0, work0_objects()),
            existing(1, vec![crd("test3", 10 * KIB)]),
        ],
        ..Default::default()
    };
    let works = build(DEFAULT_MANIFESTS_LIMIT, &objects, &options);
    assert_eq!(shape(&works.apply), names(&[("test-work-0", 4)]));
    assert_eq!(shape(&works.delete), names(&[("test-work-1", 0)]));
}

#[test]
fn added_objects_go_to_the_work_with_most_room() {
    let mut objects = work0_objects();
    objects.push(crd("test3", 10 * KIB));
    objects.push(crd("test4", 20 * KIB));
    let options = WorkOptions {
        existing_works: vec![
            existing(0, work0_objects()),
            existing(1, vec![crd("test3", 10 * KIB)]),
        ],
        ..Default::default()
    };
    let works = build(DEFAULT_MANIFESTS_LIMIT, &objects, &options);
    assert_eq!(
        shape(&works.apply),
        names(&[("test-work-0", 5), ("test-work-1", 2)])
    );
}

#[test]
fn new_works_come_first_and_options_replace_existing_ones() {
    let mut objects = work0_objects();
    objects.push(crd("test3", 10 * KIB));
    objects.push(crd("test4", 20 * KIB));
    objects.push(deployment("test2", "test2", 10 * KIB));
    objects.push(cr("test2", "test2", 10 * KIB));
    let mut work0 = existing(0, work0_objects());
    work0.spec.delete_option = Some(DeleteOption {
        propagation_policy: Some(DeletePropagationPolicy::Orphan),
        ..Default::default()
    });
    let options = WorkOptions {
        existing_works: vec![work0, existing(1, vec![crd("test3", 10 * KIB)])],
        delete_option: Some(DeleteOption {
            propagation_policy: Some(DeletePropagationPolicy::Foreground),
            ..Default::default()
        }),
        ..Default::default()
    };
    let works = build(DEFAULT_MANIFESTS_LIMIT, &objects, &options);
    assert_eq!(
        shape(&works.apply),
        names(&[("test-work-2", 1), ("test-work-0", 6), ("test-work-1", 2)])
    );
    for work in &works.apply {
        assert_eq!(work.spec.delete_option, options.delete_option);
    }
}

#[test]
fn deleted_and_added_objects_rebalance() {
    let objects = vec![
        crd("test2", 10 * KIB),
        crd("test4", 10 * KIB),
        deployment("test", "test", KIB),
        role("test", "test", KIB),
        cr("test", "test", KIB),
        cr("test1", "test1", KIB),
        crd("test5", 21 * KIB),
        deployment("test2", "test2", 20 * KIB),
        cr("test2", "test2", 10 * KIB),
    ];
    let options = WorkOptions {
        existing_works: vec![
            existing(0, work0_objects()),
            existing(1, vec![crd("test3", 10 * KIB)]),
            existing(2, vec![crd("test4", 10 * KIB), cr("test1", "test1", KIB)]),
        ],
        ..Default::default()
    };
    let works = build(DEFAULT_MANIFESTS_LIMIT, &objects, &options);
    assert_eq!(
        shape(&works.apply),
        names(&[("test-work-0", 5), ("test-work-1", 1), ("test-work-2", 3)])
    );
    assert!(works.delete.is_empty());
}

/// The add-on framework's multi-work scenario: about 150 KiB, 200 KiB and 50 KiB objects.
#[test]
fn addon_multi_work_scenario() {
    let builder = WorkBuilder::for_addons();
    let name = |i| ObjectMeta {
        name: Some(format!("addon-test-deploy-{i}")),
        ..Default::default()
    };
    let first = vec![
        deployment("deploy", "default", 150 * KIB),
        crd("crd", 200 * KIB),
        cr("cr", "default", 50 * KIB),
    ];
    let works = builder.build(&first, name, &WorkOptions::default()).unwrap();
    assert_eq!(
        shape(&works.apply),
        names(&[("addon-test-deploy-0", 2), ("addon-test-deploy-1", 1)])
    );

    let mut second = first.clone();
    second.push(manifest(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "annotations": {"data": padding(80 * KIB)}}
    })));
    let existing_works = works.apply.clone();
    let works = builder
        .build(
            &second,
            name,
            &WorkOptions {
                existing_works: existing_works.clone(),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        shape(&works.apply),
        names(&[("addon-test-deploy-0", 2), ("addon-test-deploy-1", 2)])
    );

    let third: Vec<_> = second.into_iter().skip(1).collect();
    let works = builder
        .build(
            &third,
            name,
            &WorkOptions {
                existing_works: works.apply,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        shape(&works.apply),
        names(&[("addon-test-deploy-0", 1), ("addon-test-deploy-1", 2)])
    );
}

#[test]
fn an_oversized_first_object_leaves_an_empty_new_work() {
    let works = build(
        10 * KIB,
        &[crd("big", 9 * KIB), crd("small", KIB)],
        &WorkOptions::default(),
    );
    assert_eq!(
        shape(&works.apply),
        names(&[("test-work-0", 0), ("test-work-1", 1), ("test-work-2", 1)])
    );
}

#[test]
fn later_duplicates_win() {
    let works = build(
        DEFAULT_MANIFESTS_LIMIT,
        &[crd("a", 1), crd("a", 2)],
        &WorkOptions::default(),
    );
    assert_eq!(existing_manifests(&works.apply[0]), &[crd("a", 2)]);
}

#[test]
fn objects_need_kind_and_version() {
    let builder = WorkBuilder::new();
    let no_kind = manifest(json!({"apiVersion": "v1", "metadata": {"name": "x"}}));
    assert_eq!(
        builder.build(&[crd("a", 1), no_kind.clone()], meta, &WorkOptions::default()),
        Err(Error::IdentifyObject { index: 1 })
    );
    let options = WorkOptions {
        existing_works: vec![existing(3, vec![no_kind])],
        ..Default::default()
    };
    assert_eq!(
        builder.build(&[crd("a", 1)], meta, &options),
        Err(Error::IdentifyExistingManifest {
            work: "test-work-3".to_owned(),
            index: 0
        })
    );
}
