//! Objects as structured-merge-diff sees them through a schema: which nodes are structs, maps,
//! lists (atomic, sets, maps keyed by some fields) and scalars, and the operations field
//! management needs on such objects: the field set of an applied configuration, the comparison
//! of two versions, the merge of a configuration into an object, and the removal of fields.
//!
//! The schema comes from [`crate::registry::structure`]: a CRD version's `openAPIV3Schema` or a
//! built-in kind's definition, with `metadata` always read as ObjectMeta. Where the schema says
//! nothing (no schema, `x-kubernetes-preserve-unknown-fields`, a map without a value schema) the
//! value decides, as structured-merge-diff's "deduced" type does: objects are granular maps,
//! lists are atomic, everything else a scalar.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, field_element, key_element, path_string, value_element};
use crate::registry::structure::{self, ListType, Node};

/// How the field manager sees objects of one kind.
#[derive(Debug, Clone, Copy)]
pub struct Schema<'a> {
    root: Option<Node<'a>>,
    builtin: bool,
}

impl Schema<'static> {
    /// A built-in kind (`group` "" for core) in its addressed version's representation.
    pub fn builtin(group: &str, resource: &str) -> Self {
        Self {
            root: structure::builtin_root(group, resource),
            builtin: true,
        }
    }

    /// No schema: every value is read by its JSON type.
    pub const fn unknown() -> Self {
        Self {
            root: None,
            builtin: false,
        }
    }
}

impl<'a> Schema<'a> {
    /// A custom resource version with this `openAPIV3Schema`.
    pub fn custom(openapi: &'a Value) -> Self {
        Self {
            root: Some(Node::inline(openapi)),
            builtin: false,
        }
    }

    pub(crate) fn root(&self) -> Shape<'a> {
        Shape {
            node: self.root,
            root: true,
            preserve: self.root.is_some_and(|n| n.preserves_unknown_fields()),
            builtin: self.builtin,
        }
    }
}

/// How a list's items are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// Replaced as a whole.
    Atomic,
    /// Scalars identified by their value.
    Set,
    /// Objects identified by these key fields.
    Keyed(Vec<String>),
}

/// One node of the schema, as the walkers descend.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape<'a> {
    node: Option<Node<'a>>,
    root: bool,
    /// Below `x-kubernetes-preserve-unknown-fields`: undeclared fields are accepted.
    preserve: bool,
    /// A built-in kind's definition.
    builtin: bool,
}

fn object_meta() -> Option<Node<'static>> {
    structure::builtin_root("", "configmaps").and_then(|cm| cm.property("metadata"))
}

impl<'a> Shape<'a> {
    fn with(self, node: Option<Node<'a>>) -> Shape<'a> {
        Shape {
            node,
            root: false,
            preserve: self.preserve || node.is_some_and(|n| n.preserves_unknown_fields()),
            builtin: self.builtin,
        }
    }

    /// The node of field `name` and whether it is a declared field (of a struct).
    pub(crate) fn field(&self, name: &str) -> (Shape<'a>, bool) {
        if self.root {
            match name {
                "metadata" => {
                    return (
                        Shape {
                            node: object_meta(),
                            root: false,
                            preserve: false,
                            builtin: true,
                        },
                        true,
                    );
                }
                "apiVersion" | "kind" => {
                    return (self.with(self.node.and_then(|n| n.property(name))), true);
                }
                _ => {}
            }
        }
        match self.node {
            None => (self.with(None), false),
            Some(n) => match n.property(name) {
                Some(p) => (self.with(Some(p)), true),
                None => (self.with(n.map_values()), false),
            },
        }
    }

    /// The node of a list's items.
    pub(crate) fn items(&self) -> Shape<'a> {
        self.with(self.node.and_then(|n| n.items()))
    }

    /// `x-kubernetes-map-type: atomic`.
    fn atomic_map(&self) -> bool {
        self.node.is_some_and(|n| n.is_atomic_map())
    }

    /// How the list at this node merges: its list type, else its patch strategy (a merge key
    /// makes a keyed list, `merge` without one a set), else atomic.
    pub(crate) fn list_kind(&self) -> ListKind {
        let Some(n) = self.node else {
            return ListKind::Atomic;
        };
        let explicit = n.schema().get("x-kubernetes-list-type").is_some();
        match n.list_type() {
            ListType::Set => return ListKind::Set,
            ListType::Map(keys) => return ListKind::Keyed(keys),
            ListType::Atomic if explicit => return ListKind::Atomic,
            ListType::Atomic => {}
        }
        if n.patch_strategies().contains(&"merge") {
            return match n.patch_merge_key() {
                Some(key) => ListKind::Keyed(vec![key.to_string()]),
                None => ListKind::Set,
            };
        }
        ListKind::Atomic
    }

    fn object_typed(&self) -> bool {
        self.node
            .is_some_and(|n| n.type_name() == Some("object") || n.has_properties() || n.is_map())
    }

    fn array_typed(&self) -> bool {
        self.node
            .is_some_and(|n| n.type_name() == Some("array") || n.schema().get("items").is_some())
    }

    /// A struct that accepts no undeclared field.
    fn closed(&self) -> bool {
        !self.preserve
            && self.node.is_some_and(|n| {
                let additional = n.schema().get("additionalProperties");
                (n.has_properties() || self.root) && additional.is_none_or(|a| a == &Value::Bool(false))
                    || additional == Some(&Value::Bool(false))
            })
    }

    fn scalar_type(&self) -> Option<&'a str> {
        let n = self.node?;
        if n.is_int_or_string() {
            return None;
        }
        n.type_name()
            .filter(|t| matches!(*t, "string" | "integer" | "number" | "boolean"))
    }

    /// The default of a key field of this list's items, if the schema has one.
    fn key_default(&self, key: &str) -> Option<Value> {
        let items = self.items();
        if let Some(d) = items
            .node
            .and_then(|n| n.property(key))
            .and_then(|p| p.schema().get("default"))
        {
            return Some(d.clone());
        }
        // Built-in ports are keyed by protocol, which defaults to TCP.
        (self.builtin && key == "protocol" && items.node.is_some_and(|n| n.property("protocol").is_some()))
            .then(|| Value::String("TCP".into()))
    }
}

/// What a value is at a node.
#[derive(Debug, Clone, Copy)]
enum Form<'v> {
    Scalar,
    Map(Option<&'v Map<String, Value>>),
    List(Option<&'v Vec<Value>>),
}

impl Form<'_> {
    fn rank(&self) -> u8 {
        match self {
            Form::Scalar => 0,
            Form::Map(_) => 1,
            Form::List(_) => 2,
        }
    }
}

fn form<'v>(shape: &Shape<'_>, v: &'v Value) -> Form<'v> {
    match v {
        Value::Object(m) => Form::Map(Some(m)),
        Value::Array(l) => Form::List(Some(l)),
        Value::Null if shape.object_typed() => Form::Map(None),
        Value::Null if shape.array_typed() => Form::List(None),
        _ => Form::Scalar,
    }
}

fn empty_map(m: Option<&Map<String, Value>>) -> bool {
    m.is_none_or(Map::is_empty)
}

fn empty_list(l: Option<&Vec<Value>>) -> bool {
    l.is_none_or(Vec::is_empty)
}

/// A problem with a value at a path, worded as structured-merge-diff words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathError {
    /// Where (`.spec.taints[key="a"]`), empty at the root.
    pub path: String,
    /// What.
    pub message: String,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Errors as structured-merge-diff joins them (one line, or `errors:` and indented lines).
pub fn join_errors(errors: &[PathError]) -> String {
    if errors.len() == 1 {
        return errors[0].to_string();
    }
    let mut lines = vec!["errors:".to_string()];
    lines.extend(errors.iter().map(|e| format!("  {e}")));
    lines.join("\n")
}

/// The element identifying a list item.
fn item_element(shape: &Shape<'_>, kind: &ListKind, item: &Value) -> Result<String, String> {
    match kind {
        ListKind::Atomic => Err("invalid indexing of non-associative list".into()),
        ListKind::Set => match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".into()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".into()),
            scalar => Ok(value_element(scalar)),
        },
        ListKind::Keyed(keys) => {
            let m = match item {
                Value::Null => return Err("associative list with keys may not have a null element".into()),
                Value::Object(m) => m,
                _ => return Err("associative list with keys may not have non-map elements".into()),
            };
            let mut fields = BTreeMap::new();
            for key in keys {
                if let Some(v) = m.get(key) {
                    fields.insert(key.clone(), v.clone());
                } else if let Some(d) = shape.key_default(key) {
                    fields.insert(key.clone(), d);
                }
            }
            if !keys.is_empty() && fields.is_empty() {
                let quoted: Vec<String> = keys.iter().map(|k| crate::gojson::quote(k)).collect();
                return Err(format!(
                    "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                    quoted.join(" ")
                ));
            }
            Ok(key_element(&fields))
        }
    }
}

/// The elements of a list's items (an error names the first item that has none).
fn item_elements(shape: &Shape<'_>, kind: &ListKind, items: &[Value]) -> Result<Vec<String>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| item_element(shape, kind, item).map_err(|e| format!("element {i}: {e}")))
        .collect()
}

/// Checks an applied configuration against the schema: undeclared fields, scalar types, list
/// items without identity and duplicate items.
pub(crate) fn validate(config: &Value, schema: Schema<'_>) -> Vec<PathError> {
    let mut errors = Vec::new();
    validate_node(config, schema.root(), &mut Vec::new(), &mut errors);
    errors
}

fn validate_node(v: &Value, shape: Shape<'_>, path: &mut Vec<String>, errors: &mut Vec<PathError>) {
    fn err(errors: &mut Vec<PathError>, path: &[String], message: String) {
        errors.push(PathError {
            path: path_string(path),
            message,
        });
    }
    if let Some(t) = shape.scalar_type() {
        let ok = matches!(
            (t, v),
            (_, Value::Null)
                | ("string", Value::String(_))
                | ("boolean", Value::Bool(_))
                | ("integer" | "number", Value::Number(_))
        );
        if !ok {
            let want = match t {
                "integer" | "number" => "numeric (int or float)",
                other => other,
            };
            err(errors, path, format!("expected {want}, got {v}"));
        }
        return;
    }
    match v {
        Value::Object(m) => {
            if shape.array_typed() && !shape.object_typed() {
                err(errors, path, format!("expected list, got {v}"));
                return;
            }
            for (k, cv) in m {
                let (child, declared) = shape.field(k);
                path.push(field_element(k));
                if !declared && shape.closed() {
                    err(errors, path, "field not declared in schema".into());
                    path.pop();
                    return;
                }
                validate_node(cv, child, path, errors);
                path.pop();
            }
        }
        Value::Array(items) => {
            if shape.object_typed() && !shape.array_typed() {
                err(errors, path, format!("expected map, got {v}"));
                return;
            }
            let kind = shape.list_kind();
            let item_shape = shape.items();
            let mut seen = HashSet::new();
            for (i, item) in items.iter().enumerate() {
                let element = if kind == ListKind::Atomic {
                    format!("i:{i}")
                } else {
                    match item_element(&shape, &kind, item) {
                        Ok(e) => e,
                        Err(e) => {
                            err(errors, path, format!("element {i}: {e}"));
                            return;
                        }
                    }
                };
                if kind != ListKind::Atomic && !seen.insert(element.clone()) {
                    let shown = path_string(std::slice::from_ref(&element));
                    err(errors, path, format!("duplicate entries for key {shown}"));
                }
                path.push(element);
                validate_node(item, item_shape, path, errors);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The fields an applied configuration sets: every scalar, atomic value, list item and map
/// entry in it, and every empty or null field (structs and maps themselves only through these).
pub(crate) fn to_field_set(v: &Value, schema: Schema<'_>) -> Result<FieldSet, String> {
    let mut set = set_node(v, schema.root())?;
    set.member = false;
    Ok(set)
}

fn set_node(v: &Value, shape: Shape<'_>) -> Result<FieldSet, String> {
    let mut out = FieldSet::default();
    match form(&shape, v) {
        Form::Scalar => return Ok(FieldSet::leaf()),
        Form::Map(_) if shape.atomic_map() => return Ok(FieldSet::leaf()),
        Form::Map(None) => {}
        Form::Map(Some(m)) => {
            for (k, cv) in m {
                let (child_shape, declared) = shape.field(k);
                let mut child = set_node(cv, child_shape)?;
                let empty = cv.is_null() || cv.as_object().is_some_and(Map::is_empty);
                if empty || !declared {
                    child.member = true;
                }
                out.insert_child(field_element(k), child);
            }
        }
        Form::List(l) => {
            let kind = shape.list_kind();
            if kind == ListKind::Atomic {
                return Ok(FieldSet::leaf());
            }
            let Some(items) = l else {
                return Ok(out);
            };
            let elements = item_elements(&shape, &kind, items)?;
            let mut count: HashMap<&str, usize> = HashMap::new();
            for e in &elements {
                *count.entry(e.as_str()).or_default() += 1;
            }
            let item_shape = shape.items();
            for (e, item) in elements.iter().zip(items) {
                let mut child = if count.get(e.as_str()).copied().unwrap_or(0) > 1 {
                    FieldSet::default()
                } else {
                    set_node(item, item_shape)?
                };
                child.member = true;
                out.insert_child(e.clone(), child);
            }
        }
    }
    Ok(out)
}

mod compare;
mod merge;
#[cfg(test)]
mod tests;

pub(crate) use compare::compare;
pub(crate) use merge::{ensure_named_members, merge, remove_items};
