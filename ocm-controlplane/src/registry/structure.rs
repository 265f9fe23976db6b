//! The structure of objects as field management and strategic merge see it: which nodes are
//! structs, maps, lists (atomic, sets, or maps keyed by some fields) and scalars, and how strategic
//! merge patches merge lists (`x-kubernetes-patch-merge-key`, `x-kubernetes-patch-strategy`).
//!
//! Two sources answer through the same [`Node`]: a CRD version's `openAPIV3Schema` (inline, no
//! references) and the built-in kinds' definitions in `builtin_schemas.json`. That file holds Kubernetes
//! v1.36's OpenAPI definitions of every stored built-in kind reduced to structure and the
//! `x-kubernetes-*` extensions (no descriptions); `tools/gen_builtin_schemas.py` regenerates it.

use std::sync::OnceLock;

use serde_json::Value;

const BUILTIN_SCHEMAS: &str = include_str!("builtin_schemas.json");

fn builtin() -> &'static Value {
    static PARSED: OnceLock<Value> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(BUILTIN_SCHEMAS).unwrap_or(Value::Null))
}

fn definitions() -> Option<&'static serde_json::Map<String, Value>> {
    builtin().get("definitions").and_then(Value::as_object)
}

/// The definition of a stored built-in kind (`group` "" for core), if it is one.
pub fn builtin_root(group: &str, resource: &str) -> Option<Node<'static>> {
    let name = builtin()
        .get("roots")?
        .get(format!("{group}/{resource}"))?
        .as_str()?;
    let schema = definitions()?.get(name)?;
    Some(Node {
        schema,
        overlay: None,
        resolve_refs: true,
    })
}

/// The definition name of a stored built-in kind (`io.k8s.api.apps.v1.Deployment`), if it is one.
pub fn builtin_root_name(group: &str, resource: &str) -> Option<&'static str> {
    builtin()
        .get("roots")?
        .get(format!("{group}/{resource}"))?
        .as_str()
}

/// A definition of the built-in schemas by name.
pub fn builtin_definition(name: &str) -> Option<&'static Value> {
    definitions()?.get(name)
}

/// How a list merges, from its schema's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole (no `x-kubernetes-list-type`, or `atomic`).
    Atomic,
    /// A set of scalars (`set`).
    Set,
    /// Items keyed by these fields (`map` with `x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// One node of a schema. Missing information reads as "unknown": no properties, atomic lists.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    /// Where structure (`properties`, `items`, `additionalProperties`) is read.
    schema: &'a Value,
    /// The referencing property, when `schema` was reached through a `$ref`: its extensions
    /// (e.g. `x-kubernetes-patch-strategy: retainKeys` on a Deployment's `strategy`) win.
    overlay: Option<&'a Value>,
    resolve_refs: bool,
}

impl<'a> Node<'a> {
    /// A node of an inline schema (a CRD version's `openAPIV3Schema`).
    pub fn inline(schema: &'a Value) -> Node<'a> {
        Node {
            schema,
            overlay: None,
            resolve_refs: false,
        }
    }

    /// The schema JSON of this node (references followed).
    pub fn schema(&self) -> &'a Value {
        self.schema
    }

    fn child(&self, schema: &'a Value) -> Node<'a> {
        let target = if self.resolve_refs {
            schema
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|name| definitions().and_then(|d| d.get(name)))
        } else {
            None
        };
        match target {
            Some(definition) => Node {
                schema: definition,
                overlay: Some(schema),
                resolve_refs: true,
            },
            None => Node {
                schema,
                overlay: None,
                resolve_refs: self.resolve_refs,
            },
        }
    }

    /// An extension of this node: the referencing property's first, then the schema's.
    fn extension(&self, name: &str) -> Option<&'a Value> {
        self.overlay
            .and_then(|o| o.get(name))
            .or_else(|| self.schema.get(name))
    }

    /// The schema of property `name` of a struct node.
    pub fn property(&self, name: &str) -> Option<Node<'a>> {
        self.schema
            .get("properties")
            .and_then(|p| p.get(name))
            .map(|s| self.child(s))
    }

    /// The schema of a list's items.
    pub fn items(&self) -> Option<Node<'a>> {
        self.schema.get("items").map(|s| self.child(s))
    }

    /// The schema of a map's values (`additionalProperties` when it is a schema).
    pub fn map_values(&self) -> Option<Node<'a>> {
        self.schema
            .get("additionalProperties")
            .filter(|a| a.is_object())
            .map(|s| self.child(s))
    }

    /// The `type` of the node, if it says.
    pub fn type_name(&self) -> Option<&'a str> {
        self.schema.get("type").and_then(Value::as_str)
    }

    /// The node has declared properties (a struct).
    pub fn has_properties(&self) -> bool {
        self.schema.get("properties").is_some_and(Value::is_object)
    }

    /// The node is a map (`additionalProperties` or `x-kubernetes-preserve-unknown-fields`).
    pub fn is_map(&self) -> bool {
        self.schema.get("additionalProperties").is_some() || self.preserves_unknown_fields()
    }

    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.extension("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true)
    }

    /// `x-kubernetes-map-type: atomic`: a struct or map replaced as a whole.
    pub fn is_atomic_map(&self) -> bool {
        self.extension("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
    }

    /// How a list node merges under server-side apply.
    pub fn list_type(&self) -> ListType {
        match self.extension("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(
                self.extension("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => ListType::Atomic,
        }
    }

    /// `x-kubernetes-patch-merge-key` (strategic merge patch).
    pub fn patch_merge_key(&self) -> Option<&'a str> {
        self.extension("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str)
    }

    /// The strategies of `x-kubernetes-patch-strategy` (`merge`, `retainKeys`, `replace`).
    pub fn patch_strategies(&self) -> Vec<&'a str> {
        self.extension("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .map(|s| s.split(',').map(str::trim).collect())
            .unwrap_or_default()
    }

    /// `x-kubernetes-int-or-string`.
    pub fn is_int_or_string(&self) -> bool {
        self.extension("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_containers_are_keyed_by_name() {
        let deployment = builtin_root("apps", "deployments").expect("deployments");
        let containers = deployment
            .property("spec")
            .and_then(|s| s.property("template"))
            .and_then(|t| t.property("spec"))
            .and_then(|s| s.property("containers"))
            .expect("containers");
        assert_eq!(containers.list_type(), ListType::Map(vec!["name".into()]));
        assert_eq!(containers.patch_merge_key(), Some("name"));
        assert_eq!(containers.patch_strategies(), vec!["merge"]);
        let ports = containers
            .items()
            .and_then(|c| c.property("ports"))
            .expect("ports");
        assert_eq!(
            ports.list_type(),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(ports.patch_merge_key(), Some("containerPort"));
        let image = containers
            .items()
            .and_then(|c| c.property("image"))
            .expect("image");
        assert_eq!(image.type_name(), Some("string"));
    }

    #[test]
    fn metadata_and_atomic_structs() {
        let cm = builtin_root("", "configmaps").expect("configmaps");
        let meta = cm.property("metadata").expect("metadata");
        let owners = meta.property("ownerReferences").expect("ownerReferences");
        assert_eq!(owners.list_type(), ListType::Map(vec!["uid".into()]));
        assert!(owners.items().expect("items").is_atomic_map());
        assert!(meta.property("labels").expect("labels").is_map());
        assert_eq!(
            meta.property("finalizers").expect("finalizers").list_type(),
            ListType::Set
        );
        let selector = builtin_root("apps", "deployments")
            .and_then(|d| d.property("spec"))
            .and_then(|s| s.property("selector"))
            .expect("selector");
        assert!(selector.is_atomic_map());
        let strategy = builtin_root("apps", "deployments")
            .and_then(|d| d.property("spec"))
            .and_then(|s| s.property("strategy"))
            .expect("strategy");
        assert_eq!(strategy.patch_strategies(), vec!["retainKeys"]);
        assert!(strategy.property("rollingUpdate").is_some());
    }

    #[test]
    fn inline_schemas_read_the_same_way() {
        let schema = serde_json::json!({"type": "object", "properties": {"items": {"type": "array",
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}});
        let node = Node::inline(&schema);
        let items = node.property("items").expect("items");
        assert_eq!(items.list_type(), ListType::Map(vec!["a".into(), "b".into()]));
        assert_eq!(
            items
                .items()
                .and_then(|i| i.property("a"))
                .and_then(|a| a.type_name()),
            Some("string")
        );
        assert!(builtin_root("", "nothings").is_none());
    }
}
