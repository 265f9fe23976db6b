//! Packing objects into ManifestWorks of bounded size.
//!
//! A ManifestWork may only be so large (the hub's ManifestWork webhook rejects works whose
//! manifests exceed 500 KiB by default), so a controller that deploys many or large objects to a
//! cluster spreads them over several works. [`WorkBuilder::build`] does this the way upstream's
//! work builder does, so that a Rust and a Go controller agree on which object goes where:
//!
//! 1. Each object is identified by API group, version, kind, namespace and name.
//! 2. Every existing work keeps its name and gets the new version of each object it already
//!    held; objects it held that are no longer wanted leave it. Its remaining room is the limit
//!    minus the size of what it keeps.
//! 3. The objects left over are placed largest first: each goes into the existing work with the
//!    most room left, if it is smaller than that room.
//! 4. What still does not fit goes into new works, numbered on from the number of existing works
//!    and filled in order; a new work starts whenever the next object would bring the total to
//!    the limit.
//! 5. Existing works left empty are to be deleted; every other work is to be applied.
//!
//! The limit the builder packs against is 80 % of the configured manifests limit, which leaves
//! room for objects that grow. The size of a manifest is what upstream measures: the length of
//! its Go `encoding/json` text (plus the newline Go's encoder ends it with), plus the few bytes
//! of its protobuf framing.
//!
//! Every work gets the same metadata from the caller (by index; existing works keep their
//! names), and the same delete option, executor, manifest configs and annotations.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    spec_hash::go_json,
    work::v1::{
        DeleteOption, Manifest, ManifestConfigOption, ManifestWork, ManifestWorkExecutor, ManifestWorkSpec,
        ManifestsTemplate,
    },
};

/// The manifests limit of a [`WorkBuilder`] when none is set (upstream's default): 50 KiB, of
/// which 80 % (40 960 bytes) is used.
pub const DEFAULT_MANIFESTS_LIMIT: usize = 50 * 1024;

/// The share of the manifests limit that works are filled to.
pub const MANIFESTS_THRESHOLD: f64 = 0.8;

/// The manifests limit the add-on framework builds deploy works with: the hub webhook's default
/// limit of 500 KiB, so that each work holds at most 409 600 bytes of manifests.
pub const ADDON_MANIFESTS_LIMIT: usize = 500 * 1024;

/// Why works could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An object to deploy lacks `apiVersion` or `kind`.
    #[error("object {index} to deploy has an empty kind or version")]
    IdentifyObject {
        /// The position of the object in the input.
        index: usize,
    },
    /// A manifest of an existing work lacks `apiVersion` or `kind`.
    #[error("manifest {index} of existing work {work:?} has an empty kind or version")]
    IdentifyExistingManifest {
        /// The name of the existing work.
        work: String,
        /// The position of the manifest in the work.
        index: usize,
    },
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What identifies an object across versions of a work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ManifestKey {
    group: String,
    version: String,
    kind: String,
    namespace: String,
    name: String,
}

impl ManifestKey {
    fn of(manifest: &Manifest) -> Option<Self> {
        let version = manifest.version().filter(|v| !v.is_empty())?;
        let kind = manifest.kind().filter(|k| !k.is_empty())?;
        Some(Self {
            group: manifest.group().unwrap_or_default().to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            namespace: manifest.namespace().unwrap_or_default().to_owned(),
            name: manifest.name().unwrap_or_default().to_owned(),
        })
    }
}

/// The size upstream measures for a manifest: its encoded JSON (with a trailing newline) inside
/// a length-delimited protobuf field.
#[must_use]
pub fn manifest_size(manifest: &Manifest) -> usize {
    let encoded = go_json::to_string(&serde_json::Value::Object(manifest.as_object().clone())).len() + 1;
    1 + varint_len(encoded) + encoded
}

/// The bytes of a protobuf varint holding `value`.
fn varint_len(mut value: usize) -> usize {
    let mut len = 1;
    while value >= 0x80 {
        value >>= 7;
        len += 1;
    }
    len
}

/// What [`WorkBuilder::build`] sets on, and takes into account for, every work.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkOptions {
    /// The works built last time, in order; their objects stay where they are when possible.
    pub existing_works: Vec<ManifestWork>,
    /// The delete option of every work.
    pub delete_option: Option<DeleteOption>,
    /// The manifest configs of every work.
    pub manifest_configs: Option<Vec<ManifestConfigOption>>,
    /// The executor of every work.
    pub executor: Option<ManifestWorkExecutor>,
    /// The annotations of every work; they replace any the metadata function sets.
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The works to apply and to delete.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Works {
    /// Works to create or update: new works first, then the existing works that still hold
    /// objects, in their original order.
    pub apply: Vec<ManifestWork>,
    /// Existing works left empty.
    pub delete: Vec<ManifestWork>,
}

/// Packs objects into ManifestWorks; see the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkBuilder {
    limit: usize,
}

impl Default for WorkBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkBuilder {
    /// A builder with the default limit ([`DEFAULT_MANIFESTS_LIMIT`]).
    #[must_use]
    pub fn new() -> Self {
        Self::new_with_limit(DEFAULT_MANIFESTS_LIMIT)
    }

    /// A builder with the add-on framework's limit ([`ADDON_MANIFESTS_LIMIT`]).
    #[must_use]
    pub fn for_addons() -> Self {
        Self::new_with_limit(ADDON_MANIFESTS_LIMIT)
    }

    /// The same builder with another manifests limit, in bytes; works are filled to 80 % of it.
    #[must_use]
    pub fn with_manifests_limit(self, limit: usize) -> Self {
        Self::new_with_limit(limit)
    }

    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "the threshold is applied in float64 and truncated, as upstream does"
    )]
    fn new_with_limit(limit: usize) -> Self {
        Self {
            limit: (limit as f64 * MANIFESTS_THRESHOLD) as usize,
        }
    }

    /// The size, in bytes, that the builder fills works to (80 % of the manifests limit).
    #[must_use]
    pub fn fill_limit(&self) -> usize {
        self.limit
    }

    /// Packs `objects` into works.
    ///
    /// `metadata(index)` gives the metadata (name, namespace, labels, owners) of the work with
    /// that index; the names it returns must be unique. Existing works keep their own names and
    /// take the rest of their metadata from `metadata(0)`. When two objects have the same
    /// identity the later one wins.
    ///
    /// # Errors
    ///
    /// [`Error::IdentifyObject`] if an object lacks `apiVersion` or `kind`,
    /// [`Error::IdentifyExistingManifest`] if a manifest of an existing work does.
    pub fn build(
        &self,
        objects: &[Manifest],
        metadata: impl Fn(usize) -> ObjectMeta,
        options: &WorkOptions,
    ) -> Result<Works> {
        // The wanted objects by identity, in input order.
        let mut wanted: Vec<(ManifestKey, Option<Manifest>)> = Vec::new();
        let mut position: HashMap<ManifestKey, usize> = HashMap::new();
        for (index, object) in objects.iter().enumerate() {
            let key = ManifestKey::of(object).ok_or(Error::IdentifyObject { index })?;
            if let Some(&at) = position.get(&key) {
                wanted[at].1 = Some(object.clone());
            } else {
                position.insert(key.clone(), wanted.len());
                wanted.push((key, Some(object.clone())));
            }
        }

        // Existing works keep the new versions of the objects they held.
        let mut updated: Vec<(ManifestWork, usize)> = Vec::new();
        for existing in &options.existing_works {
            let name = existing.metadata.name.clone().unwrap_or_default();
            let mut manifests = Vec::new();
            for (index, manifest) in existing_manifests(existing).iter().enumerate() {
                let key = ManifestKey::of(manifest).ok_or_else(|| Error::IdentifyExistingManifest {
                    work: name.clone(),
                    index,
                })?;
                if let Some(object) = position.get(&key).and_then(|&at| wanted[at].1.take()) {
                    manifests.push(object);
                }
            }
            let used: usize = manifests.iter().map(manifest_size).sum();
            let mut work = self.new_work(&metadata, 0, options);
            work.metadata.name = Some(name);
            set_manifests(&mut work, manifests);
            updated.push((work, self.limit.saturating_sub(used)));
        }

        // The rest, largest first (ties in input order), into the existing work with most room.
        let mut rest: Vec<(Manifest, usize)> = wanted
            .into_iter()
            .filter_map(|(_, object)| object)
            .map(|object| {
                let size = manifest_size(&object);
                (object, size)
            })
            .collect();
        rest.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
        let mut overflow = Vec::new();
        for (object, size) in rest {
            match roomiest(&mut updated) {
                Some((work, room)) if size < *room => {
                    push_manifest(work, object);
                    *room -= size;
                }
                _ => overflow.push((object, size)),
            }
        }

        let mut works = Works::default();
        if !overflow.is_empty() {
            works.apply = self.new_works(overflow, updated.len(), &metadata, options);
        }
        for (work, _) in updated {
            if existing_manifests(&work).is_empty() {
                works.delete.push(work);
            } else {
                works.apply.push(work);
            }
        }
        Ok(works)
    }

    /// Fills new works in order, starting at `first_index`.
    fn new_works(
        &self,
        manifests: Vec<(Manifest, usize)>,
        first_index: usize,
        metadata: &impl Fn(usize) -> ObjectMeta,
        options: &WorkOptions,
    ) -> Vec<ManifestWork> {
        let mut index = first_index;
        let mut works = vec![self.new_work(metadata, index, options)];
        let mut total = 0;
        for (manifest, size) in manifests {
            if total + size >= self.limit {
                index += 1;
                works.push(self.new_work(metadata, index, options));
                total = 0;
            }
            if let Some(work) = works.last_mut() {
                push_manifest(work, manifest);
            }
            total += size;
        }
        works
    }

    fn new_work(
        &self,
        metadata: &impl Fn(usize) -> ObjectMeta,
        index: usize,
        options: &WorkOptions,
    ) -> ManifestWork {
        let mut meta = metadata(index);
        meta.annotations.clone_from(&options.annotations);
        ManifestWork {
            metadata: meta,
            spec: ManifestWorkSpec {
                delete_option: options.delete_option.clone(),
                executor: options.executor.clone(),
                manifest_configs: options.manifest_configs.clone(),
                workload: Some(ManifestsTemplate::default()),
            },
            ..Default::default()
        }
    }
}

/// The work with the most room left (the first of equals), if any has room.
fn roomiest(works: &mut [(ManifestWork, usize)]) -> Option<(&mut ManifestWork, &mut usize)> {
    let mut best: Option<usize> = None;
    for (i, (_, room)) in works.iter().enumerate() {
        if *room > best.map_or(0, |b| works[b].1) {
            best = Some(i);
        }
    }
    let (work, room) = works.get_mut(best?)?;
    Some((work, room))
}

fn existing_manifests(work: &ManifestWork) -> &[Manifest] {
    work.spec
        .workload
        .as_ref()
        .and_then(|w| w.manifests.as_deref())
        .unwrap_or_default()
}

fn set_manifests(work: &mut ManifestWork, manifests: Vec<Manifest>) {
    let workload = work.spec.workload.get_or_insert_with(ManifestsTemplate::default);
    workload.manifests = (!manifests.is_empty()).then_some(manifests);
}

fn push_manifest(work: &mut ManifestWork, manifest: Manifest) {
    let workload = work.spec.workload.get_or_insert_with(ManifestsTemplate::default);
    workload.manifests.get_or_insert_with(Vec::new).push(manifest);
}

#[cfg(test)]
mod tests;
