//! The one protobuf answer this server gives: a `Status` for a request that accepts only
//! `application/vnd.kubernetes.protobuf`, which this server does not serve (406).
//!
//! kube-apiserver's protobuf envelope is the magic `k8s\0` followed by a `runtime.Unknown` message
//! (`typeMeta`, `raw`, `contentEncoding`, `contentType`) whose `raw` is the encoded object; a
//! `Status` has `metadata` (1), `status` (2), `message` (3), `reason` (4) and `code` (6).

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};

use crate::status::ApiError;

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
