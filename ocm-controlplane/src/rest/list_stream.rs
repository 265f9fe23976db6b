//! LIST responses of built-in kinds written as JSON straight from the stored objects, in chunks.
//!
//! [`Api::list`] builds the whole `…List` document as one `serde_json::Value` (each item copied to
//! relabel it) and the HTTP layer then serializes it into one buffer: a list of 10 000 objects
//! held three forms of every item at once. For built-in kinds in JSON this module instead
//! serializes each selected stored object directly (leaving out `apiVersion` and `kind`, as list
//! items of built-in kinds are sent) into chunks of about [`CHUNK_BYTES`], which the HTTP layer
//! streams as the response body. The objects are shared with the store (`Arc`), never copied.
//! Custom resources and `events.k8s.io` Events go through their conversion and keep using
//! [`Api::list`], whose errors (a failing conversion webhook) must become the response's status.

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

/// A LIST response being written: the document's head, the selected objects, and the tail.
pub struct ListChunks {
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<Arc<Value>>,
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
            // Serializing a `Value` into a `Vec` cannot fail (its keys are strings).
            if serde_json::to_writer(&mut buf, &WithoutTypeMeta(&object)).is_err() {
                buf.extend_from_slice(b"null");
            }
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
        let (items, rv, next, remaining) = self.list_objects(info, ctx, opts).await?;
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

    fn chunks_of(items: Vec<Value>, head: &str) -> Vec<u8> {
        let mut head = head.as_bytes().to_vec();
        head.extend_from_slice(b"\"items\":[");
        let chunks = ListChunks {
            head: Some(head),
            items: items.into_iter().map(Arc::new).collect::<Vec<_>>().into_iter(),
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
            items: items
                .iter()
                .cloned()
                .map(Arc::new)
                .collect::<Vec<_>>()
                .into_iter(),
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
}
