//! JSON merge patches computed as the difference of two documents (ocm-core.md §0.4): keys that
//! disappeared become `null`, changed objects recurse, everything else is replaced whole.

use serde_json::{Map, Value};

/// The merge patch turning `old` into `new`, `None` when they are equal.
pub fn merge_diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for key in o.keys() {
                if !n.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            for (key, value) in n {
                match o.get(key) {
                    Some(before) => {
                        if let Some(d) = merge_diff(before, value) {
                            patch.insert(key.clone(), d);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(new.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn removed_keys_become_null_and_objects_recurse() {
        let old = json!({"a": {"cpu": "1", "mem": "2"}, "b": [1, 2], "c": 1});
        let new = json!({"a": {"mem": "3"}, "b": [1], "c": 1});
        assert_eq!(
            merge_diff(&old, &new),
            Some(json!({"a": {"cpu": null, "mem": "3"}, "b": [1]}))
        );
        assert_eq!(merge_diff(&old, &old), None);
    }
}
