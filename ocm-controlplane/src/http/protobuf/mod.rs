//! Protobuf (`application/vnd.kubernetes.protobuf`): request bodies of built-in kinds are decoded
//! into the JSON a JSON client would have sent for the same object; responses are never protobuf
//! (a request that accepts only protobuf gets a 406 `Status`, itself in protobuf).
//!
//! kube-apiserver's protobuf envelope is the magic `k8s\0` followed by a `runtime.Unknown` message
//! (`typeMeta` (1) with `apiVersion` (1) and `kind` (2), `raw` (2), `contentEncoding` (3),
//! `contentType` (4)) whose `raw` is the encoded object. `decode` turns a message into Go-shaped
//! JSON with the tables of `schema` (generated into `fields.json`), reading bytes with `wire`.
//! client-go's typed clients (kubectl's `create <generator>`, `certificate approve`) send their
//! bodies this way.
//!
//! A `Status` message has `metadata` (1), `status` (2), `message` (3), `reason` (4) and `code` (6).

mod decode;
#[cfg(test)]
mod decode_tests;
mod schema;
mod wire;

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value};

use crate::registry::ResourceInfo;
use crate::status::ApiError;

use decode::{DecodeError, Decoder};
use schema::Schema;
use wire::{Reader, WireError, WireType};

/// The protobuf media type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field (strings, bytes, messages).
fn bytes_field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(number << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// The `Status` message of an error.
fn status_message(error: &ApiError) -> Vec<u8> {
    let mut out = Vec::new();
    bytes_field(1, &[], &mut out);
    bytes_field(2, b"Failure", &mut out);
    bytes_field(3, error.message.as_bytes(), &mut out);
    bytes_field(4, error.reason.as_bytes(), &mut out);
    varint(6 << 3, &mut out);
    varint(u64::from(error.code), &mut out);
    out
}

/// The enveloped protobuf encoding of an error's `Status`.
pub fn encode_status(error: &ApiError) -> Vec<u8> {
    let mut type_meta = Vec::new();
    bytes_field(1, b"v1", &mut type_meta);
    bytes_field(2, b"Status", &mut type_meta);
    let mut unknown = Vec::new();
    bytes_field(1, &type_meta, &mut unknown);
    bytes_field(2, &status_message(error), &mut unknown);
    bytes_field(3, b"", &mut unknown);
    bytes_field(4, b"", &mut unknown);
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown);
    out
}

/// A 406 answered in protobuf.
pub fn not_acceptable(error: &ApiError) -> Response<Body> {
    let mut r = Response::new(Body::from(encode_status(error)));
    *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}

/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\0";

/// Whether a `Content-Type` names the protobuf media type (parameters ignored).
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(CONTENT_TYPE))
}

/// A failure to read the envelope, worded as kube-apiserver's protobuf serializer words it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnvelopeError {
    /// No body at all.
    #[error("empty data")]
    ReadEmpty,
    /// A body that does not start with `k8s\0`.
    #[error("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")]
    CheckPrefix,
    /// Only the magic.
    #[error("empty body")]
    ReadBody,
    /// A broken `runtime.Unknown`.
    #[error(transparent)]
    DecodeUnknown(#[from] DecodeError),
}

impl From<WireError> for EnvelopeError {
    fn from(e: WireError) -> Self {
        Self::DecodeUnknown(DecodeError::ReadWire(e))
    }
}

/// The parts of `runtime.Unknown` a request uses.
#[derive(Debug, Default, PartialEq)]
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

/// Reads one length-delimited field of the envelope's messages.
fn envelope_field<'a>(r: &mut Reader<'a>, field: &str, wire: WireType) -> Result<&'a [u8], EnvelopeError> {
    if wire != WireType::Len {
        return Err(DecodeError::CheckWireType {
            wire: wire.number(),
            field: field.to_string(),
        }
        .into());
    }
    Ok(r.bytes()?)
}

fn check_tag(message: &str, number: u64, wire: WireType) -> Result<(), EnvelopeError> {
    if wire == WireType::EndGroup {
        return Err(DecodeError::ReadEndGroup {
            message: message.to_string(),
        }
        .into());
    }
    if number == 0 {
        return Err(DecodeError::ReadTag {
            message: message.to_string(),
            number,
            wire: wire.number(),
        }
        .into());
    }
    Ok(())
}

fn parse_envelope(body: &[u8]) -> Result<Envelope<'_>, EnvelopeError> {
    if body.is_empty() {
        return Err(EnvelopeError::ReadEmpty);
    }
    let Some(data) = body.strip_prefix(MAGIC) else {
        return Err(EnvelopeError::CheckPrefix);
    };
    if data.is_empty() {
        return Err(EnvelopeError::ReadBody);
    }
    let mut envelope = Envelope::default();
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (number, wire) = r.tag()?;
        check_tag("Unknown", number, wire)?;
        match number {
            1 => {
                let mut t = Reader::new(envelope_field(&mut r, "TypeMeta", wire)?);
                while !t.is_empty() {
                    let (number, wire) = t.tag()?;
                    check_tag("TypeMeta", number, wire)?;
                    match number {
                        1 => {
                            let b = envelope_field(&mut t, "APIVersion", wire)?;
                            envelope.api_version = String::from_utf8_lossy(b).into_owned();
                        }
                        2 => {
                            let b = envelope_field(&mut t, "Kind", wire)?;
                            envelope.kind = String::from_utf8_lossy(b).into_owned();
                        }
                        _ => t.skip(wire)?,
                    }
                }
            }
            2 => envelope.raw = envelope_field(&mut r, "Raw", wire)?,
            3 => {
                envelope_field(&mut r, "ContentEncoding", wire)?;
            }
            4 => {
                envelope_field(&mut r, "ContentType", wire)?;
            }
            _ => r.skip(wire)?,
        }
    }
    Ok(envelope)
}

/// How kube-apiserver quotes an undecodable body: hex of its first 30 bytes (text for JSON).
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let shown = &body[..body.len().min(MAX)];
    let more = if body.len() > MAX { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(shown)),
        Some(_) => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

fn tables() -> Result<&'static Schema, ApiError> {
    Schema::get().map_err(ApiError::internal)
}

/// Decodes the protobuf body of a create or update of `info` (also its `status` and `approval`
/// subresources) into the JSON bytes the REST layer decodes.
///
/// The envelope's `typeMeta` picks the message (defaulted from the addressed type when empty); a
/// kind without a table becomes `{"kind", "apiVersion"}` alone, which the REST layer refuses as it
/// refuses that kind in JSON. Custom resources have no protobuf form: kube-apiserver's decoder
/// fails on them with the 400 answered here.
pub fn object_body_to_json(info: &ResourceInfo, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let envelope = parse_envelope(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {e} ({})",
            info.kind,
            summarize(body)
        ))
    })?;
    let kind = if envelope.kind.is_empty() {
        info.kind.clone()
    } else {
        envelope.kind.clone()
    };
    let (mut group, mut version) = match envelope.api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), envelope.api_version.clone()),
    };
    if version.is_empty() {
        group = info.group.clone();
        version = info.version.clone();
    }
    let api_version = if group.is_empty() {
        version.clone()
    } else {
        format!("{group}/{version}")
    };
    let failed = |e: &dyn std::fmt::Display| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: {e}",
            info.kind
        ))
    };
    if info.is_custom() {
        return Err(failed(&"Object 'Kind' is missing in 'object has no kind field '"));
    }
    let schema = tables()?;
    let mut object = Map::new();
    object.insert("kind".into(), Value::String(kind.clone()));
    object.insert("apiVersion".into(), Value::String(api_version.clone()));
    if let Some(id) = schema.kind(&api_version, &kind) {
        match Decoder::new(schema)
            .decode(id, envelope.raw)
            .map_err(|e| failed(&e))?
        {
            Value::Object(fields) => object.extend(fields),
            other => return Err(failed(&format!("decoded to {other}"))),
        }
    }
    serde_json::to_vec(&Value::Object(object)).map_err(ApiError::internal)
}

/// Decodes a protobuf `DeleteOptions` body (client-go's typed clients send one with every delete).
pub fn delete_options(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = parse_envelope(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let schema = tables()?;
    let id = schema
        .named("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions")
        .ok_or_else(|| ApiError::internal("protobuf field tables: no DeleteOptions"))?;
    Decoder::new(schema)
        .decode(id, envelope.raw)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope() {
        let e = ApiError::new(406, "NotAcceptable", "no");
        let bytes = encode_status(&e);
        assert!(bytes.starts_with(b"k8s\0"));
        // typeMeta { apiVersion: "v1", kind: "Status" }
        assert_eq!(&bytes[4..8], &[0x0a, 12, 0x0a, 2]);
        assert!(bytes.windows(3).any(|w| w == [0x30, 0x96, 0x03]), "code 406");
    }
}
