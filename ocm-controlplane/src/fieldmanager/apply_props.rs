//! Property tests of server-side apply: for random configurations, the result is what the merge
//! rules say (the applier's fields set, what it stopped applying removed, keyed-list items merged
//! by key, ownership recorded exactly), and malformed configurations never panic.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::apply::{ApplyError, ApplyRequest, apply};
use super::typed::{self, Schema};
use super::{FieldSet, Manager};

fn request(
    name: &'static str,
    resource: &'static str,
    api_version: &'static str,
    force: bool,
) -> ApplyRequest<'static> {
    let group = if resource == "deployments" { "apps" } else { "" };
    ApplyRequest {
        schema: Schema::builtin(group, resource),
        reset: if resource == "deployments" {
            &["status"]
        } else {
            &[]
        },
        manager: Manager {
            name,
            api_version,
            subresource: "",
        },
        force,
    }
}

fn configmap(data: &Map<String, Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}, "data": data})
}

fn stored(mut object: Value) -> Value {
    object["metadata"]["uid"] = json!("u");
    object
}

fn owned(object: &Value, manager: &str) -> FieldSet {
    let entries = object["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let managed = super::managers::decode(&entries).unwrap();
    managed
        .iter()
        .filter(|(id, _)| id.manager == manager)
        .fold(FieldSet::default(), |acc, (_, o)| acc.union(&o.set))
}

fn data_map() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map("[a-e]", "[x-z]{1,2}", 0..5)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}

fn containers() -> impl Strategy<Value = Vec<Value>> {
    proptest::collection::btree_map("(app|side|proxy|init)", "img-[1-3]", 1..4).prop_map(|m| {
        m.into_iter()
            .map(|(name, image)| json!({"name": name, "image": image}))
            .collect()
    })
}

fn deployment(containers: &[Value]) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p"},
        "spec": {"selector": {"matchLabels": {"app": "p"}},
            "template": {"metadata": {"labels": {"app": "p"}}, "spec": {"containers": containers}}}})
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z$.:{}\"]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                "(data|metadata|spec|name|image|containers|template|k:x|[a-c])",
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
    fn one_manager_applying_a_then_b_leaves_exactly_b(a in data_map(), b in data_map()) {
        let first = stored(apply(&json!({}), &configmap(&a), &request("m", "configmaps", "v1", false)).unwrap().object);
        let second = apply(&first, &configmap(&b), &request("m", "configmaps", "v1", false)).unwrap().object;
        let data = second.get("data").and_then(Value::as_object).cloned().unwrap_or_default();
        prop_assert_eq!(&data, &b);
        let expected = typed::to_field_set(&configmap(&b), Schema::builtin("", "configmaps")).unwrap();
        let expected = super::managers::strip(&expected);
        prop_assert_eq!(owned(&second, "m"), expected);
    }

    #[test]
    fn disjoint_managers_both_survive_and_own_apart(a in data_map(), b in data_map()) {
        let b: Map<String, Value> = b.into_iter().filter(|(k, _)| !a.contains_key(k)).collect();
        // An empty `data` is a field both may own.
        prop_assume!(!a.is_empty() && !b.is_empty());
        let first = stored(apply(&json!({}), &configmap(&a), &request("ma", "configmaps", "v1", false)).unwrap().object);
        let both = apply(&first, &configmap(&b), &request("mb", "configmaps", "v1", false)).unwrap().object;
        let data = both.get("data").and_then(Value::as_object).cloned().unwrap_or_default();
        for (k, v) in a.iter().chain(b.iter()) {
            prop_assert_eq!(data.get(k), Some(v));
        }
        prop_assert!(owned(&both, "ma").intersection(&owned(&both, "mb")).is_empty());
    }

    #[test]
    fn changing_anothers_field_conflicts_unless_forced(a in data_map(), key in "[a-e]") {
        prop_assume!(a.contains_key(&key));
        let first = stored(apply(&json!({}), &configmap(&a), &request("ma", "configmaps", "v1", false)).unwrap().object);
        let mut change = Map::new();
        change.insert(key.clone(), json!("changed"));
        let err = apply(&first, &configmap(&change), &request("mb", "configmaps", "v1", false)).unwrap_err();
        prop_assert!(matches!(&err, ApplyError::ApplyConflicts(c) if c.len() == 1 && c[0].path == format!(".data.{key}")), "{}", err);
        let forced = apply(&first, &configmap(&change), &request("mb", "configmaps", "v1", true)).unwrap().object;
        prop_assert_eq!(&forced["data"][&key], &json!("changed"));
        let mut data = FieldSet::default();
        data.insert_child(format!("f:{key}"), FieldSet::leaf());
        let mut taken = FieldSet::default();
        taken.insert_child("f:data".to_string(), data);
        prop_assert!(owned(&forced, "ma").intersection(&taken).is_empty());
        prop_assert!(!owned(&forced, "mb").intersection(&taken).is_empty());
    }

    #[test]
    fn keyed_list_items_follow_the_last_configuration(a in containers(), b in containers()) {
        let first = stored(apply(&json!({}), &deployment(&a), &request("m", "deployments", "apps/v1", false)).unwrap().object);
        let second = apply(&first, &deployment(&b), &request("m", "deployments", "apps/v1", false)).unwrap().object;
        let mut got: Vec<Value> = second["spec"]["template"]["spec"]["containers"].as_array().cloned().unwrap_or_default();
        let mut want = b.clone();
        got.sort_by_key(|c| c["name"].as_str().map(str::to_string));
        want.sort_by_key(|c| c["name"].as_str().map(str::to_string));
        prop_assert_eq!(got, want);
    }

    #[test]
    fn a_second_manager_adds_list_items_by_key(a in containers(), extra in "(x1|x2)") {
        let first = stored(apply(&json!({}), &deployment(&a), &request("ma", "deployments", "apps/v1", false)).unwrap().object);
        let added = json!([{"name": extra, "image": "e"}]);
        let both = apply(&first, &deployment(added.as_array().unwrap()), &request("mb", "deployments", "apps/v1", false)).unwrap().object;
        let names: Vec<String> = both["spec"]["template"]["spec"]["containers"].as_array().unwrap().iter()
            .filter_map(|c| c["name"].as_str().map(str::to_string)).collect();
        for c in &a {
            prop_assert!(names.contains(&c["name"].as_str().unwrap().to_string()));
        }
        prop_assert!(names.contains(&extra));
    }

    #[test]
    fn malformed_configurations_never_panic(body in arbitrary_json(), live in arbitrary_json()) {
        let mut config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p"}});
        if let (Some(c), Value::Object(extra)) = (config.as_object_mut(), &body) {
            for (k, v) in extra {
                c.insert(k.clone(), v.clone());
            }
        }
        let _ = apply(&live, &config, &request("m", "deployments", "apps/v1", false));
        let _ = apply(&json!({}), &body, &request("m", "configmaps", "v1", true));
    }
}
