//! Comparing two versions of an object: the fields added, modified and removed.

use serde_json::{Map, Value};

use super::*;

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

pub(super) fn union_keys<'m>(
    a: Option<&'m Map<String, Value>>,
    b: Option<&'m Map<String, Value>>,
) -> Vec<&'m String> {
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
