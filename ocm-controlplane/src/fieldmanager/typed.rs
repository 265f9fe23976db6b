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

/// The fields added, modified and removed between two versions of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    /// Fields of the old version the new one lacks.
    pub removed: FieldSet,
    /// Leaves (scalars, atomic and empty values) present in both with different values.
    pub modified: FieldSet,
    /// Fields of the new version the old one lacks.
    pub added: FieldSet,
}

impl Comparison {
    fn insert_child(&mut self, element: &str, child: Comparison) {
        self.removed.insert_child(element.to_string(), child.removed);
        self.modified.insert_child(element.to_string(), child.modified);
        self.added.insert_child(element.to_string(), child.added);
    }

    fn leaf(l: Option<&Value>, r: Option<&Value>) -> Comparison {
        let mut c = Comparison::default();
        match (l, r) {
            (None, _) => c.added.member = true,
            (_, None) => c.removed.member = true,
            (Some(a), Some(b)) if a != b => c.modified.member = true,
            _ => {}
        }
        c
    }

    /// The comparison without the fields `filter` takes away.
    pub(crate) fn without_top(&self, names: &[&str]) -> Comparison {
        Comparison {
            removed: self.removed.without_top(names),
            modified: self.modified.without_top(names),
            added: self.added.without_top(names),
        }
    }
}

/// Compares two versions of an object.
pub(crate) fn compare(old: &Value, new: &Value, schema: Schema<'_>) -> Result<Comparison, String> {
    let mut c = compare_node(Some(old), Some(new), schema.root())?;
    c.removed.member = false;
    c.modified.member = false;
    c.added.member = false;
    Ok(c)
}

fn compare_node(l: Option<&Value>, r: Option<&Value>, shape: Shape<'_>) -> Result<Comparison, String> {
    let fl = l.map(|v| form(&shape, v));
    let fr = r.map(|v| form(&shape, v));
    if let (Some(a), Some(b)) = (fl, fr)
        && a.rank() != b.rank()
    {
        return Ok(Comparison::leaf(l, r));
    }
    let mut out = Comparison::default();
    match fr.or(fl) {
        None | Some(Form::Scalar) => return Ok(Comparison::leaf(l, r)),
        Some(Form::Map(_)) => {
            let (a, b) = (map_of(fl), map_of(fr));
            if shape.atomic_map() || (empty_map(a) && empty_map(b)) {
                return Ok(Comparison::leaf(l, r));
            }
            for k in union_keys(a, b) {
                let child = compare_node(
                    a.and_then(|m| m.get(k)),
                    b.and_then(|m| m.get(k)),
                    shape.field(k).0,
                )?;
                out.insert_child(&field_element(k), child);
            }
        }
        Some(Form::List(_)) => {
            let (a, b) = (list_of(fl), list_of(fr));
            let kind = shape.list_kind();
            if kind == ListKind::Atomic || (empty_list(a) && empty_list(b)) {
                return Ok(Comparison::leaf(l, r));
            }
            compare_items(
                a.map_or(&[][..], Vec::as_slice),
                b.map_or(&[][..], Vec::as_slice),
                shape,
                &kind,
                &mut out,
            )?;
        }
    }
    if l.is_none() {
        out.added.member = true;
    } else if r.is_none() {
        out.removed.member = true;
    }
    Ok(out)
}

fn map_of<'v>(f: Option<Form<'v>>) -> Option<&'v Map<String, Value>> {
    match f {
        Some(Form::Map(m)) => m,
        _ => None,
    }
}

fn list_of<'v>(f: Option<Form<'v>>) -> Option<&'v Vec<Value>> {
    match f {
        Some(Form::List(l)) => l,
        _ => None,
    }
}

fn union_keys<'m>(a: Option<&'m Map<String, Value>>, b: Option<&'m Map<String, Value>>) -> Vec<&'m String> {
    let mut keys: Vec<&String> = a.map(|m| m.keys().collect()).unwrap_or_default();
    if let Some(b) = b {
        keys.extend(b.keys().filter(|k| a.is_none_or(|a| !a.contains_key(*k))));
    }
    keys
}

/// Items grouped by element, in first-seen order.
fn group_items<'v>(
    shape: &Shape<'_>,
    kind: &ListKind,
    items: &'v [Value],
    order: &mut Vec<String>,
) -> Result<HashMap<String, Vec<&'v Value>>, String> {
    let mut groups: HashMap<String, Vec<&Value>> = HashMap::new();
    for (e, item) in item_elements(shape, kind, items)?.into_iter().zip(items) {
        if !groups.contains_key(&e) {
            order.push(e.clone());
        }
        groups.entry(e).or_default().push(item);
    }
    Ok(groups)
}

fn compare_items(
    a: &[Value],
    b: &[Value],
    shape: Shape<'_>,
    kind: &ListKind,
    out: &mut Comparison,
) -> Result<(), String> {
    let mut order = Vec::new();
    let left = group_items(&shape, kind, a, &mut order)?;
    let right = group_items(&shape, kind, b, &mut order)?;
    let mut seen = HashSet::new();
    let item_shape = shape.items();
    for e in order {
        if !seen.insert(e.clone()) {
            continue;
        }
        let l = left.get(&e).map_or(&[][..], Vec::as_slice);
        let r = right.get(&e).map_or(&[][..], Vec::as_slice);
        let mut child = Comparison::default();
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => child = compare_node(l.first().copied(), r.first().copied(), item_shape)?,
            (2.., 2..) => {
                if l != r {
                    child.modified.member = true;
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    child = compare_node(None, Some(first), item_shape)?;
                }
                child.removed.member = true;
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    child = compare_node(Some(first), None, item_shape)?;
                }
                child.added.member = true;
            }
        }
        out.insert_child(&e, child);
    }
    Ok(())
}

/// Merges an applied configuration into an object: structs and maps field by field, keyed and
/// set lists item by item (keeping the object's order and placing the configuration's items as
/// it orders them), everything else replaced by the configuration's value.
pub(crate) fn merge(live: &Value, config: &Value, schema: Schema<'_>) -> Result<Value, String> {
    Ok(merge_node(Some(live), Some(config), schema.root())?.unwrap_or_else(|| Value::Object(Map::new())))
}

fn merge_node(l: Option<&Value>, r: Option<&Value>, shape: Shape<'_>) -> Result<Option<Value>, String> {
    let (l, r) = match (l, r) {
        (None, None) => return Ok(None),
        (Some(l), None) => return Ok(Some(l.clone())),
        (None, Some(r)) => return Ok(Some(r.clone())),
        (Some(l), Some(r)) => (l, r),
    };
    match (form(&shape, l), form(&shape, r)) {
        (Form::Map(a), Form::Map(b)) => {
            if shape.atomic_map() || (empty_map(a) && empty_map(b)) {
                return Ok(Some(r.clone()));
            }
            let mut out = Map::new();
            for k in union_keys(a, b) {
                let child = merge_node(
                    a.and_then(|m| m.get(k)),
                    b.and_then(|m| m.get(k)),
                    shape.field(k).0,
                )?;
                if let Some(child) = child {
                    out.insert(k.clone(), child);
                }
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
        (Form::List(a), Form::List(b)) => {
            let kind = shape.list_kind();
            if kind == ListKind::Atomic || (empty_list(a) && empty_list(b)) {
                return Ok(Some(r.clone()));
            }
            let items = merge_items(
                a.map_or(&[][..], Vec::as_slice),
                b.map_or(&[][..], Vec::as_slice),
                shape,
                &kind,
            )?;
            Ok((!items.is_empty()).then_some(Value::Array(items)))
        }
        _ => Ok(Some(r.clone())),
    }
}

/// Merges two associative lists as structured-merge-diff orders them: the object's items stay in
/// place, the configuration's items come where the configuration puts them relative to the items
/// both have.
fn merge_items(
    lhs: &[Value],
    rhs: &[Value],
    shape: Shape<'_>,
    kind: &ListKind,
) -> Result<Vec<Value>, String> {
    let rhs_el = item_elements(&shape, kind, rhs)?;
    let lhs_el = item_elements(&shape, kind, lhs)?;
    let mut observed_rhs: HashMap<&String, &Value> = HashMap::new();
    for (e, v) in rhs_el.iter().zip(rhs) {
        observed_rhs.entry(e).or_insert(v);
    }
    // Items the object holds twice are not merged with the configuration's.
    let mut observed_lhs: HashMap<&String, Option<&Value>> = HashMap::new();
    for (e, v) in lhs_el.iter().zip(lhs) {
        observed_lhs
            .entry(e)
            .and_modify(|slot| *slot = None)
            .or_insert(Some(v));
    }
    let mut shared: std::collections::VecDeque<&String> =
        rhs_el.iter().filter(|e| observed_lhs.contains_key(*e)).collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: HashSet<&String> = HashSet::new();
    let item_shape = shape.items();
    let mut out = Vec::new();
    let (mut li, mut ri) = (0, 0);
    while li < lhs_el.len() || ri < rhs_el.len() {
        if li < lhs_el.len() && ri < rhs_el.len() {
            let e = &lhs_el[li];
            if *e == rhs_el[ri] {
                merged_rhs.insert(e);
                let l = observed_lhs.get(e).copied().flatten();
                if let Some(v) = merge_node(l, observed_rhs.get(e).copied(), item_shape)? {
                    out.push(v);
                }
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if observed_rhs.contains_key(e) && next_shared.is_some_and(|n| n != e) {
                li += 1;
                continue;
            }
        }
        if li < lhs_el.len() {
            let e = &lhs_el[li];
            if !observed_rhs.contains_key(e) {
                if let Some(v) = merge_node(Some(&lhs[li]), None, item_shape)? {
                    out.push(v);
                }
                li += 1;
                continue;
            } else if merged_rhs.contains(e) {
                li += 1;
            }
        }
        if ri < rhs_el.len() {
            let e = &rhs_el[ri];
            merged_rhs.insert(e);
            let l = observed_lhs.get(e).copied().flatten();
            if let Some(v) = merge_node(l, observed_rhs.get(e).copied(), item_shape)? {
                out.push(v);
            }
            ri += 1;
            if next_shared == Some(e) {
                next_shared = shared.pop_front();
            }
        }
    }
    Ok(out)
}

/// The object without the members of `set` (a member takes its whole value away); maps and lists
/// left empty by the removal disappear.
pub(crate) fn remove_items(v: &Value, set: &FieldSet, schema: Schema<'_>) -> Value {
    remove_node(v, set, schema.root()).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_node(v: &Value, set: &FieldSet, shape: Shape<'_>) -> Option<Value> {
    match form(&shape, v) {
        Form::Map(Some(m)) if !m.is_empty() && !shape.atomic_map() => {
            let mut out = Map::new();
            for (k, cv) in m {
                match set.children.get(&field_element(k)) {
                    Some(c) if c.member => {}
                    Some(c) if !c.children.is_empty() => {
                        if let Some(kept) = remove_node(cv, c, shape.field(k).0) {
                            out.insert(k.clone(), kept);
                        }
                    }
                    _ => {
                        out.insert(k.clone(), cv.clone());
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Form::List(Some(items)) if !items.is_empty() => {
            let kind = shape.list_kind();
            if kind == ListKind::Atomic {
                return Some(v.clone());
            }
            let item_shape = shape.items();
            let mut out = Vec::new();
            for item in items {
                let Ok(e) = item_element(&shape, &kind, item) else {
                    out.push(item.clone());
                    continue;
                };
                match set.children.get(&e) {
                    Some(c) if c.member => {}
                    Some(c) if !c.children.is_empty() => {
                        if let Some(kept) = remove_node(item, c, item_shape) {
                            out.push(kept);
                        }
                    }
                    _ => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(v.clone()),
    }
}

/// The set with the declared fields of structs on its paths made members themselves (so that
/// removing it removes a struct field a manager owned only through its members).
pub(crate) fn ensure_named_members(set: &FieldSet, schema: Schema<'_>) -> FieldSet {
    let mut out = ensure_node(set, schema.root());
    out.member = set.member;
    out
}

fn ensure_node(set: &FieldSet, shape: Shape<'_>) -> FieldSet {
    let mut out = FieldSet {
        member: set.member,
        children: BTreeMap::new(),
    };
    for (e, child) in &set.children {
        let (child_shape, declared) = match e.strip_prefix("f:") {
            Some(name) => shape.field(name),
            None => (shape.items(), false),
        };
        let mut c = ensure_node(child, child_shape);
        if declared {
            c.member = true;
        }
        out.children.insert(e.clone(), c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Schema<'static> {
        Schema::builtin("apps", "deployments")
    }

    #[test]
    fn applied_fields_own_leaves_items_and_map_entries() {
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "b"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "strategy": {},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}}});
        let set = to_field_set(&config, deployment()).unwrap();
        assert_eq!(
            set.to_json(),
            json!({"f:apiVersion": {}, "f:kind": {}, "f:metadata": {"f:name": {}, "f:labels": {"f:a": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {}, "f:strategy": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}, "f:ports": {
                        "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
        );
    }

    #[test]
    fn comparison_marks_new_containers_and_changed_leaves() {
        let old = json!({"data": {"a": "1", "b": "1"}, "metadata": {"labels": {"x": "y"}}});
        let new = json!({"data": {"a": "2", "c": "1"}, "metadata": {"labels": {"x": "y"}}, "binaryData": {"k": "dg=="}});
        let c = compare(&old, &new, Schema::builtin("", "configmaps")).unwrap();
        assert_eq!(c.modified.to_json(), json!({"f:data": {"f:a": {}}}));
        assert_eq!(
            c.added.to_json(),
            json!({"f:data": {"f:c": {}}, "f:binaryData": {".": {}, "f:k": {}}})
        );
        assert_eq!(c.removed.to_json(), json!({"f:data": {"f:b": {}}}));
    }

    #[test]
    fn keyed_lists_merge_by_key_in_order() {
        let live = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "b", "image": "1"}, {"name": "c", "image": "1"}]}}}});
        let config = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "2"}, {"name": "d", "image": "2"}, {"name": "a", "image": "2"}]}}}});
        let merged = merge(&live, &config, deployment()).unwrap();
        let names: Vec<(&str, &str)> = merged["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
            .collect();
        assert_eq!(names, [("b", "1"), ("c", "2"), ("d", "2"), ("a", "2")]);
        // Atomic lists and structs are replaced.
        let live = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}}});
        let config = json!({"spec": {"selector": {"matchExpressions": []}, "template": {"spec": {"containers": [{"name": "a", "args": ["z"]}]}}}});
        let merged = merge(&live, &config, deployment()).unwrap();
        assert_eq!(merged["spec"]["selector"], json!({"matchExpressions": []}));
        assert_eq!(
            merged["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["z"])
        );
    }

    #[test]
    fn removal_and_named_members() {
        let schema = Schema::builtin("apps", "deployments");
        let obj = json!({"spec": {"paused": true, "template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}},
            "metadata": {"finalizers": ["x", "y"]}});
        let set = FieldSet::from_json(&json!({"f:spec": {"f:paused": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {}}}}},
            "f:metadata": {"f:finalizers": {"v:\"y\"": {}}}}))
        .unwrap();
        assert_eq!(
            remove_items(&obj, &set, schema),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}, "metadata": {"finalizers": ["x"]}})
        );
        let status = FieldSet::from_json(&json!({"f:status": {"f:replicas": {}}})).unwrap();
        assert_eq!(
            ensure_named_members(&status, schema).to_json(),
            json!({"f:status": {".": {}, "f:replicas": {}}})
        );
    }

    #[test]
    fn configurations_are_checked_against_the_schema() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": 1}, "bogus": true});
        let errors = validate(&config, Schema::builtin("", "configmaps"));
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                ".data.a: expected string, got 1",
                ".bogus: field not declared in schema"
            ]
        );
        let dup = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
        let errors = validate(&dup, deployment());
        assert_eq!(
            errors[0].to_string(),
            ".spec.template.spec.containers: duplicate entries for key [name=\"a\"]"
        );
        let crd = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        let errors = validate(
            &json!({"spec": {"y": 1}, "status": {"anything": {"goes": 1}}}),
            Schema::custom(&crd),
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].to_string(), ".spec.y: field not declared in schema");
    }
}
