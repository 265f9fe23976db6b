//! Property tests of strategic merge patch: without lists it equals a JSON merge patch (its
//! reference, RFC 7386); keyed lists merge by key (patched items updated, others kept, `$patch:
//! delete` removing); malformed patches never panic.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::strategic::apply;
use crate::registry::structure::builtin_root;

fn labels() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(
        "[a-d]",
        prop_oneof![Just(Value::Null), "[x-z]{1,2}".prop_map(Value::String)],
        0..5,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn containers() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::btree_map("(app|side|proxy|init)", "img-[1-3]", 0..4)
        .prop_map(|m| m.into_iter().collect())
}

fn deployment(labels: &Value, containers: &[(String, String)]) -> Value {
    let labels: serde_json::Map<String, Value> = labels
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let containers: Vec<Value> = containers
        .iter()
        .map(|(n, i)| json!({"name": n, "image": i}))
        .collect();
    json!({"metadata": {"name": "p", "labels": labels},
        "spec": {"template": {"spec": {"containers": containers}}}})
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("$patch"),
            Just("replace"),
            Just("delete"),
            Just("merge"),
            Just("name"),
            Just("x")
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                "(spec|template|containers|name|image|\\$patch|\\$retainKeys|\\$setElementOrder/containers|\\$deleteFromPrimitiveList/args|metadata|labels)",
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn maps_merge_as_a_json_merge_patch(original in labels(), patch in labels()) {
        let schema = builtin_root("apps", "deployments");
        let doc = deployment(&original, &[]);
        let p = json!({"metadata": {"labels": patch}});
        let got = apply(&doc, &p, schema).unwrap();
        let mut want = doc.clone();
        json_patch::merge(&mut want, &p);
        prop_assert_eq!(&got["metadata"]["labels"], &want["metadata"]["labels"]);
    }

    #[test]
    fn containers_merge_by_name(original in containers(), patch in containers(), deleted in "(app|side|proxy|init)") {
        let schema = builtin_root("apps", "deployments");
        let doc = deployment(&json!({}), &original);
        let mut items: Vec<Value> = patch.iter().map(|(n, i)| json!({"name": n, "image": i})).collect();
        items.retain(|c| c["name"] != deleted.as_str());
        items.push(json!({"name": deleted, "$patch": "delete"}));
        let p = json!({"spec": {"template": {"spec": {"containers": items}}}});
        let got = apply(&doc, &p, schema).unwrap();
        let result: Vec<(String, String)> = got["spec"]["template"]["spec"]["containers"].as_array().cloned().unwrap_or_default()
            .iter().map(|c| (c["name"].as_str().unwrap_or_default().to_string(), c["image"].as_str().unwrap_or_default().to_string())).collect();
        prop_assert!(!result.iter().any(|(n, _)| *n == deleted));
        for (name, image) in &patch {
            if *name != deleted {
                prop_assert!(result.contains(&(name.clone(), image.clone())), "{:?}", result);
            }
        }
        for (name, image) in &original {
            if *name != deleted && !patch.iter().any(|(n, _)| n == name) {
                prop_assert!(result.contains(&(name.clone(), image.clone())), "{:?}", result);
            }
        }
    }

    #[test]
    fn malformed_patches_never_panic(original in arbitrary_json(), patch in arbitrary_json()) {
        let schema = builtin_root("apps", "deployments");
        let doc = deployment(&json!({"a": "x"}), &[("app".into(), "img".into())]);
        let _ = apply(&doc, &patch, schema);
        let _ = apply(&original, &patch, schema);
        let _ = apply(&original, &patch, None);
    }
}
