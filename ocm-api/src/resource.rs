//! The root types of OCM kinds: `apiVersion`, `kind`, `metadata`, `spec` and `status`.
//!
//! `custom_resource!` (crate-private) writes for a kind what `kube::CustomResource` would, with three
//! differences that wire compatibility needs:
//!
//! - a kind whose upstream schema does not require `spec` reads an object without one (its spec is
//!   then the default), and writes no `spec` when its spec is the default, so that every object
//!   an upstream client wrote round-trips unchanged;
//! - a kind without a `spec` (PlacementDecision, AddOnPlacementScore) has none in Rust either;
//! - its CustomResourceDefinition carries the structural schema of [`crate::schema`].
//!
//! Each root type implements [`kube::Resource`] (so `kube::Api<K>` works), `HasSpec` and
//! `HasStatus` where it has those, and [`crate::crd::VersionedCrd`].

/// Whether a value equals its type's default (used to leave out an all-default optional `spec`).
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Defines the root type of a kind. See the [module docs](self).
macro_rules! custom_resource {
    (
        $(#[$attr:meta])*
        pub struct $kind:ident {
            group: $group:expr,
            version: $version:literal,
            plural: $plural:literal,
            scope: $scope:ident,
            short_names: [$($short:literal),* $(,)?],
            $(spec: $spec:ty, spec_required: $spec_required:literal,)?
            $(status: $status:ty,)?
            printer_columns: [$(($col_name:literal, $col_type:literal, $col_path:literal)),* $(,)?],
            description: $description:expr $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $kind {
            /// Standard object metadata: name, namespace, labels, annotations, …
            pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
            $(
                /// The desired state.
                #[serde(default)]
                pub spec: $spec,
            )?
            $(
                /// The observed state, written by controllers.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub status: Option<$status>,
            )?
        }

        impl $kind {
            /// The API group of this kind.
            pub const GROUP: &'static str = $group;
            /// The API version of this kind, without the group.
            pub const VERSION: &'static str = $version;
            /// The kind's name.
            pub const KIND: &'static str = stringify!($kind);
            /// The REST resource name (plural).
            pub const PLURAL: &'static str = $plural;
        }

        $(
            impl $kind {
                /// A new object with this name and spec, and no status.
                #[must_use]
                #[allow(clippy::needless_update, reason = "kinds without a status have no other fields")]
                pub fn new(name: &str, spec: $spec) -> Self {
                    Self {
                        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                            name: Some(name.to_owned()),
                            ..Default::default()
                        },
                        spec,
                        ..Default::default()
                    }
                }
            }

            impl kube::core::object::HasSpec for $kind {
                type Spec = $spec;
                fn spec(&self) -> &$spec {
                    &self.spec
                }
                fn spec_mut(&mut self) -> &mut $spec {
                    &mut self.spec
                }
            }
        )?

        $(
            impl kube::core::object::HasStatus for $kind {
                type Status = $status;
                fn status(&self) -> Option<&$status> {
                    self.status.as_ref()
                }
                fn status_mut(&mut self) -> &mut Option<$status> {
                    &mut self.status
                }
            }
        )?

        impl serde::Serialize for $kind {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("apiVersion", &format!("{}/{}", $group, $version))?;
                map.serialize_entry("kind", stringify!($kind))?;
                map.serialize_entry("metadata", &self.metadata)?;
                $(
                    let spec_required: bool = $spec_required;
                    if spec_required || !$crate::resource::is_default::<$spec>(&self.spec) {
                        map.serialize_entry("spec", &self.spec)?;
                    }
                )?
                $(
                    if let Some(status) = &self.status {
                        map.serialize_entry::<str, $status>("status", status)?;
                    }
                )?
                map.end()
            }
        }

        impl kube::Resource for $kind {
            type DynamicType = ();
            type Scope = $crate::resource::custom_resource!(@scope $scope);

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                stringify!($kind).into()
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                $group.into()
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                $version.into()
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }

        impl $crate::crd::VersionedCrd for $kind {
            fn versioned_crd() -> $crate::crd::Result<
                k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
            > {
                #[allow(unused_mut, reason = "only kinds with a required spec push to it")]
                let mut required: Vec<&str> = Vec::new();
                #[allow(unused_mut, unused_assignments, reason = "depends on the kind's fields")]
                let mut spec_schema = None;
                $(
                    spec_schema = Some($crate::schema::structural_schema::<$spec>());
                    if $spec_required {
                        required.push("spec");
                    }
                )?
                #[allow(unused_mut, unused_assignments, reason = "depends on the kind's fields")]
                let mut status_schema = None;
                #[allow(unused_mut, unused_assignments, reason = "depends on the kind's fields")]
                let mut has_status = false;
                $(
                    status_schema = Some($crate::schema::structural_schema::<$status>());
                    has_status = true;
                )?
                $crate::crd::build(&$crate::crd::KindInfo {
                    group: $group,
                    version: $version,
                    kind: stringify!($kind),
                    plural: $plural,
                    namespaced: $crate::resource::custom_resource!(@namespaced $scope),
                    short_names: &[$($short),*],
                    printer_columns: &[$(($col_name, $col_type, $col_path)),*],
                    has_status_subresource: has_status,
                    schema: $crate::schema::object_schema($description, spec_schema, status_schema, &required),
                })
            }
        }
    };
    (@scope Cluster) => { kube::core::ClusterResourceScope };
    (@scope Namespaced) => { kube::core::NamespaceResourceScope };
    (@namespaced Cluster) => { false };
    (@namespaced Namespaced) => { true };
}
pub(crate) use custom_resource;
