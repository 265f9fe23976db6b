//! LIST responses of built-in kinds written as JSON straight from the stored bytes, in chunks.
//!
//! [`Api::list`] builds the whole `…List` document as one `serde_json::Value` (each item parsed
//! from the store and relabelled) and the HTTP layer then serializes it into one buffer. For
//! built-in kinds in JSON this module instead copies each selected object's stored JSON (the
//! store keeps objects serialized, see [`crate::storage`]) into chunks of about [`CHUNK_BYTES`],
//! leaving out the top-level `apiVersion` and `kind` as list items of built-in kinds are sent, and
//! the HTTP layer streams the chunks as the response body. No item is parsed unless a selector
//! needs it, and no item is held twice: the stored bytes are shared (`Arc`), and only the chunk
//! being filled is extra. Custom resources and `events.k8s.io` Events go through their
//! conversion and keep using [`Api::list`], whose errors (a failing conversion webhook) must
//! become the response's status.

use std::sync::Arc;

use bytes::Bytes;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use super::list::ListOptions;
use super::{Api, RequestContext};
use crate::registry::ResourceInfo;
use crate::status::ApiError;

/// The size a chunk of the body grows to before it is handed to the connection.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Whether LISTs of this type are streamed by [`Api::list_chunks`] (built-in kinds, which need no
/// conversion beyond their `apiVersion`, and which list items leave out anyway).
pub fn streams(info: &ResourceInfo) -> bool {
    !info.is_custom() && info.group != "events.k8s.io"
}

/// An object serialized without its top-level `apiVersion` and `kind`.
struct WithoutTypeMeta<'a>(&'a Value);

impl Serialize for WithoutTypeMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.0 else {
            return self.0.serialize(serializer);
        };
        let kept = |k: &String| k != "apiVersion" && k != "kind";
        let mut out = serializer.serialize_map(Some(map.keys().filter(|k| kept(k)).count()))?;
        for (k, v) in map.iter().filter(|(k, _)| kept(k)) {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}

/// The end (exclusive) of the JSON string starting at `at`.
fn skip_string(src: &[u8], at: usize) -> Option<usize> {
    if src.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        match src.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The end (exclusive) of the compact JSON value starting at `at`.
fn skip_value(src: &[u8], at: usize) -> Option<usize> {
    match src.get(at)? {
        b'"' => skip_string(src, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match src.get(i)? {
                    b'"' => {
                        i = skip_string(src, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let len = src[at..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']'))
                .unwrap_or(src.len() - at);
            Some(at + len)
        }
    }
}

/// Appends the compact JSON object `src` to `out` without its top-level `apiVersion` and `kind`
/// members. `false` (and nothing appended) when `src` is not a compact JSON object.
fn copy_without_type_meta(src: &[u8], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let copied = copy_members(src, out);
    if copied.is_none() {
        out.truncate(start);
    }
    copied.is_some()
}

fn copy_members(src: &[u8], out: &mut Vec<u8>) -> Option<()> {
    if src.first() != Some(&b'{') {
        return None;
    }
    out.push(b'{');
    if src.get(1) == Some(&b'}') {
        out.push(b'}');
        return (src.len() == 2).then_some(());
    }
    let mut first = true;
    let mut i = 1;
    loop {
        let key_end = skip_string(src, i)?;
        if src.get(key_end) != Some(&b':') {
            return None;
        }
        let value_end = skip_value(src, key_end + 1)?;
        let key = src.get(i..key_end)?;
        if key != b"\"apiVersion\"" && key != b"\"kind\"" {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(src.get(i..value_end)?);
        }
        match src.get(value_end)? {
            b',' => i = value_end + 1,
            b'}' => {
                out.push(b'}');
                return (value_end + 1 == src.len()).then_some(());
            }
            _ => return None,
        }
    }
}

/// Appends a list item: the stored object without `apiVersion` and `kind`.
fn push_item(object: &[u8], out: &mut Vec<u8>) {
    if copy_without_type_meta(object, out) {
        return;
    }
    // Not compact JSON as the store writes it: go through a tree.
    let written = serde_json::from_slice::<Value>(object)
        .ok()
        .and_then(|tree| serde_json::to_writer(&mut *out, &WithoutTypeMeta(&tree)).ok());
    if written.is_none() {
        out.extend_from_slice(b"null");
    }
}

/// A LIST response being written: the document's head, the selected objects, and the tail.
pub struct ListChunks {
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<Arc<[u8]>>,
    first: bool,
    done: bool,
}

impl Iterator for ListChunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut buf = self
            .head
            .take()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES + 4096));
        for object in self.items.by_ref() {
            if !self.first {
                buf.push(b',');
            }
            self.first = false;
            push_item(&object, &mut buf);
            if buf.len() >= CHUNK_BYTES {
                return Some(Bytes::from(buf));
            }
        }
        buf.extend_from_slice(b"]}");
        self.done = true;
        Some(Bytes::from(buf))
    }
}

impl Api {
    /// LIST of a type [`streams`] accepts, as the chunks of its JSON document (the same document
    /// [`Api::list`] answers, except that item keys keep their stored order).
    ///
    /// # Errors
    /// As [`Api::list`]: bad options, expired or too new resourceVersions and continue tokens.
    pub async fn list_chunks(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<ListChunks, ApiError> {
        let (items, rv, next, remaining) = self.list_encoded(info, ctx, opts).await?;
        let mut metadata = serde_json::Map::new();
        metadata.insert("resourceVersion".into(), json!(rv.to_string()));
        if let Some(c) = next {
            metadata.insert("continue".into(), json!(c));
        }
        if let Some(r) = remaining {
            metadata.insert("remainingItemCount".into(), json!(r));
        }
        let head = json!({"kind": info.list_kind(), "apiVersion": info.api_version(), "metadata": metadata});
        let mut head = serde_json::to_vec(&head).map_err(ApiError::internal)?;
        // Replace the closing brace: the items follow.
        head.pop();
        head.extend_from_slice(b",\"items\":[");
        Ok(ListChunks {
            head: Some(head),
            items: items
                .into_iter()
                .map(|(_, object)| object)
                .collect::<Vec<_>>()
                .into_iter(),
            first: true,
            done: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(object: &Value) -> Arc<[u8]> {
        Arc::from(serde_json::to_vec(object).unwrap())
    }

    fn chunks_of(items: Vec<Value>, head: &str) -> Vec<u8> {
        let mut head = head.as_bytes().to_vec();
        head.extend_from_slice(b"\"items\":[");
        let chunks = ListChunks {
            head: Some(head),
            items: items.iter().map(bytes_of).collect::<Vec<_>>().into_iter(),
            first: true,
            done: false,
        };
        chunks.flat_map(|c| c.to_vec()).collect()
    }

    #[test]
    fn items_lose_their_type_meta_and_the_document_closes() {
        let body = chunks_of(
            vec![
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "kind": "kept"}, "data": {"k": "v"}}),
                json!({"kind": "ConfigMap", "metadata": {"name": "b"}}),
            ],
            "{\"kind\":\"ConfigMapList\",",
        );
        let parsed: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            parsed,
            json!({"kind": "ConfigMapList", "items": [
                {"metadata": {"name": "a", "kind": "kept"}, "data": {"k": "v"}},
                {"metadata": {"name": "b"}},
            ]})
        );
        assert_eq!(chunks_of(Vec::new(), "{"), b"{\"items\":[]}".to_vec());
    }

    #[test]
    fn large_lists_come_in_several_chunks_that_join_into_one_document() {
        let payload = "x".repeat(1000);
        let items: Vec<Value> = (0..500)
            .map(|i| json!({"metadata": {"name": format!("cm-{i}")}, "data": {"p": payload}}))
            .collect();
        let head = b"{\"items\":[".to_vec();
        let chunks: Vec<Bytes> = ListChunks {
            head: Some(head),
            items: items.iter().map(bytes_of).collect::<Vec<_>>().into_iter(),
            first: true,
            done: false,
        }
        .collect();
        assert!(chunks.len() > 5);
        assert!(chunks[..chunks.len() - 1].iter().all(|c| c.len() >= CHUNK_BYTES));
        let body: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
        let parsed: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(parsed["items"].as_array().unwrap().len(), 500);
        assert_eq!(parsed["items"][499]["metadata"]["name"], "cm-499");
    }

    #[test]
    fn type_meta_is_cut_from_the_bytes_as_from_the_tree() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {"kind": "x\"}{,"}}, "data": {"apiVersion": "[1,{]"}}),
            json!({"metadata": {"name": "b"}, "n": [1, 2.5, -3e10, true, null, {"kind": []}], "kind": "Last"}),
            json!({"kind": "Only"}),
            json!({}),
        ];
        for object in &objects {
            let mut from_bytes = Vec::new();
            assert!(copy_without_type_meta(
                &serde_json::to_vec(object).unwrap(),
                &mut from_bytes
            ));
            let from_tree = serde_json::to_vec(&WithoutTypeMeta(object)).unwrap();
            assert_eq!(
                String::from_utf8(from_bytes).unwrap(),
                String::from_utf8(from_tree).unwrap()
            );
        }
        for bad in [&b"[1]"[..], b"{\"a\":1", b"{\"a\" 1}", b"{\"a\":1}x", b"\"s\""] {
            let mut out = b"kept".to_vec();
            assert!(!copy_without_type_meta(bad, &mut out));
            assert_eq!(out, b"kept");
        }
        let mut out = Vec::new();
        push_item(b"{ \"kind\": \"K\", \"a\": 1 }", &mut out);
        assert_eq!(out, b"{\"a\":1}");
    }
}
