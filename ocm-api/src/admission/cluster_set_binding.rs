//! ManagedClusterSetBinding admission (ocm-core.md §2.7): on CREATE and UPDATE the binding's name
//! must equal `spec.clusterSet` (`400`); on CREATE the requester must be allowed to bind the set.

use serde_json::Value;

use super::{Check, Denial, Operation, Permission, meta_str};

/// The refusal of a binding whose name is not its set's.
pub const NAME_MISMATCH: &str =
    "The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet";

/// Checks `binding` and returns the permission checks the caller must make.
///
/// # Errors
/// `400` when the name is not `spec.clusterSet`.
pub fn validate(binding: &Value, operation: Operation) -> Result<Vec<Check>, Denial> {
    let set = binding
        .pointer("/spec/clusterSet")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if meta_str(binding, "name") != set {
        return Err(Denial::bad_request(NAME_MISMATCH));
    }
    Ok(match operation {
        Operation::Create => vec![Check::Access {
            permission: Permission::Bind,
            name: set.to_string(),
        }],
        Operation::Update => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn name_must_be_the_set_and_create_needs_bind() {
        let b = |name: &str, set: &str| json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"clusterSet": set}});
        assert_eq!(
            validate(&b("a", "a"), Operation::Create),
            Ok(vec![Check::Access {
                permission: Permission::Bind,
                name: "a".into()
            }])
        );
        assert_eq!(validate(&b("a", "a"), Operation::Update), Ok(vec![]));
        for op in [Operation::Create, Operation::Update] {
            let denial = validate(&b("a", "b"), op).unwrap_err();
            assert_eq!((denial.code, denial.message.as_str()), (400, NAME_MISMATCH));
        }
    }
}
