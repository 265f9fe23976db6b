//! managedFields between a parent and its Scale, as kube's `ScaleHandler` translates them: the
//! parent's managers of its replicas field own the Scale's `spec.replicas`, and the Scale's owner
//! of `spec.replicas` becomes an entry (`subresource: scale`) of the parent.

use serde_json::Value;

use super::{SCALE_API_VERSION, ScalePaths};
use crate::fieldmanager::managers::{self, Managed, Owned};
use crate::fieldmanager::{self, FieldSet};
use crate::status::ApiError;

/// The parent's managers that own its replicas field, as owners of the Scale's `spec.replicas`
/// (kube's `ScaleHandler.ToSubresource`).
pub(super) fn managers_to_scale(paths: &ScalePaths, parent: &Value) -> Vec<Value> {
    let Some(entries) = managers::entries_of(parent) else {
        return Vec::new();
    };
    let Ok(decoded) = managers::decode(entries) else {
        return Vec::new();
    };
    let replicas = scale_replicas_set();
    let mut out = Managed::new();
    for (identity, owned) in decoded {
        let Some(Some(path)) = paths.mapping(&owned.api_version) else {
            continue;
        };
        if owns(&owned.set, path) {
            out.insert(
                identity,
                Owned {
                    set: replicas.clone(),
                    api_version: SCALE_API_VERSION.into(),
                    time: owned.time,
                },
            );
        }
    }
    managers::encode(&out)
}

/// Whether `set` holds the field at `path` (field names).
fn owns(set: &FieldSet, path: &[String]) -> bool {
    let elements: Vec<String> = path
        .iter()
        .map(|n| fieldmanager::fieldset::field_element(n))
        .collect();
    set.has(&elements)
}

/// `{spec: {replicas}}` as a field set.
fn scale_replicas_set() -> FieldSet {
    path_set(&["spec".to_string(), "replicas".to_string()])
}

/// A set holding one path of fields.
fn path_set(path: &[String]) -> FieldSet {
    path.iter().rev().fold(FieldSet::leaf(), |child, name| {
        let mut set = FieldSet::default();
        set.insert_child(fieldmanager::fieldset::field_element(name), child);
        set
    })
}

/// The parent's managedFields after a write of its Scale (kube's `ScaleHandler.ToParent`):
/// managers that lost the Scale's replicas lose the parent's, managers of the Scale's replicas
/// own the parent's (in the addressed version), entries of unknown apiVersions are dropped.
pub(super) fn managers_to_parent(
    paths: &ScalePaths,
    parent: &Value,
    parent_api_version: &str,
    scale_entries: &[Value],
) -> Result<Vec<Value>, ApiError> {
    let parent_managed = match managers::entries_of(parent) {
        Some(entries) => managers::decode(entries).map_err(|e| ApiError::internal(e.to_string()))?,
        None => Managed::new(),
    };
    let mut scale_managed = managers::decode(scale_entries).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut out = Managed::new();
    for (identity, owned) in &parent_managed {
        let Some(path) = paths.mapping(&owned.api_version) else {
            continue;
        };
        let Some(path) = path.as_ref().filter(|p| owns(&owned.set, p)) else {
            out.insert(identity.clone(), owned.clone());
            continue;
        };
        if scale_managed.remove(identity).is_some() {
            out.insert(identity.clone(), owned.clone());
            continue;
        }
        let rest = owned.set.difference(&path_set(path));
        if !rest.is_empty() {
            out.insert(
                identity.clone(),
                Owned {
                    set: rest,
                    ..owned.clone()
                },
            );
        }
    }
    let replicas = ["spec".to_string(), "replicas".to_string()];
    let Some(Some(parent_path)) = paths.mapping(parent_api_version) else {
        return Ok(managers::encode(&out));
    };
    for (identity, owned) in scale_managed {
        if !owns(&owned.set, &replicas) {
            continue;
        }
        let time = parent_managed.get(&identity).and_then(|o| o.time.clone());
        out.insert(
            identity,
            Owned {
                set: path_set(parent_path),
                api_version: parent_api_version.to_string(),
                time,
            },
        );
    }
    Ok(managers::encode(&out))
}
