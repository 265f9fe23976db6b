//! `metadata.managedFields`: which manager owns which fields, for Update operations and for
//! server-side apply, as kube-apiserver's field manager (structured-merge-diff) records them.
//!
//! | module | what it holds |
//! |---|---|
//! | [`fieldset`] | [`FieldSet`]: sets of field paths in the `FieldsV1` encoding, their algebra |
//! | [`typed`] | objects read through a [`Schema`]: field sets, comparison, merge, removal |
//! | [`managers`] | managedFields entries ⇄ the managers' sets (identities, sorting, capping) |
//! | [`update`] | the Update path: create, update and the non-apply patches |
//! | [`mod@apply`] | the Apply path: server-side apply's merge, pruning, conflicts and `force` |
//!
//! How an object maps onto field paths depends on its schema: the OpenAPI v3 schema of a custom
//! resource version, or the built-in kind's definition from [`crate::registry::structure`]
//! (structs, maps, atomic, set and keyed lists, `x-kubernetes-map-type: atomic`).

pub mod apply;
#[cfg(test)]
mod apply_props;
pub mod fieldset;
pub mod managers;
pub mod typed;
pub mod update;

pub use apply::{Applied, ApplyError, ApplyRequest, Conflict, apply};
pub use fieldset::FieldSet;
pub use managers::{keep_times_of_unchanged, sort_entries};
pub use typed::Schema;
pub use update::update_managed_fields;

/// The current time at second precision, as managedFields and timestamps carry it.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A request's manager identity.
#[derive(Debug, Clone, Copy)]
pub struct Manager<'a> {
    /// The manager name (`fieldManager` or the User-Agent prefix).
    pub name: &'a str,
    /// The request's `apiVersion`.
    pub api_version: &'a str,
    /// `status` for writes of the status subresource, else empty.
    pub subresource: &'a str,
}

/// The default manager name of a request: the User-Agent up to the first `/`.
pub fn default_manager(user_agent: Option<&str>) -> String {
    match user_agent {
        Some(ua) if !ua.is_empty() => ua.split('/').next().unwrap_or(ua).to_string(),
        _ => "unknown".to_string(),
    }
}
