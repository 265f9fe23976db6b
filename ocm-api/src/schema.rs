//! Structural OpenAPI v3 schemas for CustomResourceDefinitions, generated from our Rust types.
//!
//! [`schemars`] describes a Rust type in JSON Schema; Kubernetes wants a *structural* OpenAPI v3
//! schema written the way `controller-gen` writes the upstream OCM CRDs. [`structural_schema`]
//! bridges the two:
//!
//! - every sub-schema is inlined (no `$ref`, no `definitions`), and `title`/`$schema` are dropped;
//! - `Option<T>` is *not* nullable: Go's `omitempty` fields are simply optional, so the
//!   `nullable: true` and `null` enum members schemars adds for options are removed. A field whose
//!   upstream schema says `nullable: true` asks for it with `#[schemars(extend("x-nullable" = true))]`;
//! - a `default: null` (from `#[serde(default)]` on an option) is dropped.
//!
//! Everything else a field declares through schemars attributes (`range`, `length`, `regex`,
//! `extend("default" = …)`, `extend("x-kubernetes-list-type" = …)`, …) is kept as written.
//!
//! The `*_schema` functions are for `#[schemars(schema_with = "…")]` on fields whose wire schema
//! is not what their Rust type would produce on its own.

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};
use serde_json::{Map, Value};

/// The marker a field uses to keep `nullable: true` in its schema.
const NULLABLE_MARKER: &str = "x-nullable";

/// The structural schema of `T`, as a JSON value ready to become an `openAPIV3Schema` node.
pub fn structural_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("definitions");
        map.remove("$defs");
    }
    make_structural(&mut value);
    value
}

/// Rewrites one schema node (and everything below it) into the upstream CRD conventions.
fn make_structural(value: &mut Value) {
    let Value::Object(node) = value else { return };
    node.remove("title");
    if let Some(Value::String(description)) = node.get_mut("description") {
        *description = strip_doc_links(description);
    }
    let keep_nullable = node
        .remove(NULLABLE_MARKER)
        .is_some_and(|v| v == Value::Bool(true));
    node.remove("nullable");
    if keep_nullable {
        node.insert("nullable".into(), Value::Bool(true));
    }
    if node.get("default").is_some_and(Value::is_null) {
        node.remove("default");
    }
    unwrap_optional_any_of(node);
    collapse_documented_enum(node);
    if let Some(Value::Array(members)) = node.get_mut("enum") {
        members.retain(|member| !member.is_null());
    }
    for key in ["properties", "patternProperties"] {
        if let Some(Value::Object(children)) = node.get_mut(key) {
            children.values_mut().for_each(make_structural);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = node.get_mut(key) {
            make_structural(child);
        }
    }
    for key in ["anyOf", "allOf", "oneOf"] {
        if let Some(Value::Array(children)) = node.get_mut(key) {
            children.iter_mut().for_each(make_structural);
        }
    }
}

/// Rewrites rustdoc links in a doc comment for a CRD description: `` [`x`](path) `` and
/// `` [`x`] `` become `` `x` ``, since the reader of `kubectl explain` has no Rust paths to follow.
fn strip_doc_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        let Some(close) = rest[start..].find("`]").map(|i| start + i) else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(&rest[start + 1..close + 1]);
        rest = &rest[close + 2..];
        if rest.starts_with('(')
            && let Some(end) = rest.find(')')
        {
            rest = &rest[end + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// For an `Option<T>` whose schema schemars cannot mark nullable in place, it writes
/// `anyOf: [T, {nullable: true, enum: [null]}]`; an optional field is just `T`.
fn unwrap_optional_any_of(node: &mut Map<String, Value>) {
    let is_null = |member: &Value| {
        member.get("enum") == Some(&Value::Array(vec![Value::Null]))
            || member.get("type") == Some(&"null".into())
    };
    let Some(Value::Array(members)) = node.get("anyOf") else {
        return;
    };
    if members.len() != 2 || !members.iter().any(is_null) {
        return;
    }
    let Some(Value::Object(inner)) = members.iter().find(|m| !is_null(m)).cloned() else {
        return;
    };
    node.remove("anyOf");
    for (key, value) in inner {
        node.entry(key).or_insert(value);
    }
}

/// A Rust enum whose variants carry doc comments comes out of schemars as a `oneOf` of
/// single-value string enums; Kubernetes writes it as one string `enum`.
fn collapse_documented_enum(node: &mut Map<String, Value>) {
    let Some(Value::Array(members)) = node.get("oneOf") else {
        return;
    };
    let values: Option<Vec<Value>> = members
        .iter()
        .map(|member| match member.get("enum") {
            Some(Value::Array(single))
                if single.len() == 1 && member.get("type") == Some(&"string".into()) =>
            {
                Some(single[0].clone())
            }
            _ => None,
        })
        .collect();
    if let Some(values) = values {
        node.remove("oneOf");
        node.insert("type".into(), Value::String("string".into()));
        node.insert("enum".into(), Value::Array(values));
    }
}

/// The pattern Kubernetes puts on every `resource.Quantity` value.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Schema of a `resource.Quantity`: an integer or a string in quantity syntax.
pub fn quantity_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

/// Schema of a map from resource name to `resource.Quantity` (capacity, limits, requests).
pub fn quantity_map_schema(generator: &mut SchemaGenerator) -> Schema {
    let values = quantity_schema(generator);
    json_schema!({ "type": "object", "additionalProperties": values })
}

/// Schema of base64-encoded bytes (`[]byte` in Go, [`k8s_openapi::ByteString`] here).
pub fn byte_string_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "byte" })
}

/// Schema of an `intstr.IntOrString`.
pub fn int_or_string_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": true,
    })
}

/// Schema of an integer without a `format` (Go `int`), for `i64` fields whose upstream schema
/// gives none.
pub fn integer_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer" })
}

/// Schema of a complete Kubernetes object embedded as raw JSON (a ManifestWork manifest).
pub fn embedded_resource_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Schema of an arbitrary JSON object kept as it is.
pub fn preserved_object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}

/// The top-level `openAPIV3Schema` of a kind: `apiVersion`, `kind`, `metadata`, and the given
/// `spec`/`status` schemas, with `required` naming the top-level fields that must be present.
pub fn object_schema(
    description: &str,
    spec: Option<Value>,
    status: Option<Value>,
    required: &[&str],
) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "apiVersion".into(),
        serde_json::json!({
            "description": "The versioned schema of this object; the server converts known versions and may reject unknown ones.",
            "type": "string",
        }),
    );
    properties.insert(
        "kind".into(),
        serde_json::json!({
            "description": "The REST resource kind of this object, in CamelCase; the server infers it from the endpoint.",
            "type": "string",
        }),
    );
    properties.insert("metadata".into(), serde_json::json!({ "type": "object" }));
    if let Some(spec) = spec {
        properties.insert("spec".into(), spec);
    }
    if let Some(status) = status {
        properties.insert("status".into(), status);
    }
    let mut root = Map::new();
    root.insert("description".into(), Value::String(description.to_owned()));
    root.insert("type".into(), Value::String("object".into()));
    root.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        root.insert(
            "required".into(),
            required.iter().map(|r| Value::String((*r).to_owned())).collect(),
        );
    }
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    /// How a sample resolves; its variants are documented, which schemars writes as a `oneOf`.
    #[derive(Serialize, Deserialize, JsonSchema)]
    pub(super) enum Mode {
        /// One way.
        Fast,
        /// The other.
        Slow,
    }

    /// A sample type.
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Sample {
        /// Required name.
        name: String,
        /// Optional, not nullable.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<Mode>,
        /// Optional and explicitly nullable.
        #[schemars(extend("x-nullable" = true))]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<String>,
        /// With a default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(extend("default" = 60))]
        seconds: Option<i32>,
        /// Nested.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        children: Option<Vec<Child>>,
    }

    /// A child.
    #[derive(Serialize, Deserialize, JsonSchema)]
    pub(super) struct Child {
        /// Key.
        #[schemars(length(max = 10))]
        key: String,
    }

    #[test]
    fn options_are_not_nullable_unless_asked() {
        let schema = structural_schema::<Sample>();
        assert_eq!(
            schema["properties"]["mode"]["enum"],
            serde_json::json!(["Fast", "Slow"])
        );
        assert!(schema["properties"]["mode"].get("nullable").is_none());
        assert!(schema["properties"]["mode"].get("oneOf").is_none());
        assert_eq!(schema["properties"]["mode"]["type"], "string");
        assert_eq!(schema["properties"]["since"]["nullable"], Value::Bool(true));
        assert!(schema["properties"]["since"].get("x-nullable").is_none());
        assert_eq!(schema["properties"]["seconds"]["default"], serde_json::json!(60));
        assert_eq!(schema["properties"]["seconds"]["format"], "int32");
        assert_eq!(schema["required"], serde_json::json!(["name"]));
        assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
    }

    #[test]
    fn doc_links_become_plain_code() {
        assert_eq!(
            strip_doc_links("see [`crate::conditions`] now"),
            "see `crate::conditions` now"
        );
        assert_eq!(
            strip_doc_links("the [`KEY`](crate::names::KEY) key"),
            "the `KEY` key"
        );
        assert_eq!(strip_doc_links("a [link] and [`open"), "a [link] and [`open");
    }

    #[test]
    fn nested_schemas_are_inlined() {
        let schema = structural_schema::<Sample>();
        let items = &schema["properties"]["children"]["items"];
        assert_eq!(items["type"], "object");
        assert_eq!(items["properties"]["key"]["maxLength"], 10);
        assert!(serde_json::to_string(&schema).is_ok_and(|s| !s.contains("$ref")));
    }
}
