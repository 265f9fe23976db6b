//! Merging an applied configuration into an object, removing fields, naming list members.

use serde_json::{Map, Value};

use super::compare::union_keys;
use super::*;

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
