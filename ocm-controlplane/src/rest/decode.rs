//! Decoding request bodies into objects of the addressed type, with kube-apiserver's 400 messages.

use serde_json::Value;

use crate::gojson;
use crate::registry::{Registry, ResourceInfo, Special};
use crate::status::ApiError;

/// Parses a body as JSON; on a syntax error answers kube-apiserver's "unrecognized object" 400.
pub fn parse_object_body(info: &ResourceInfo, body: &[u8]) -> Result<Value, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(_) => {
            let go = gojson::syntax_error(body).unwrap_or_else(|| "unexpected end of JSON input".into());
            let shown = String::from_utf8_lossy(&body[..body.len().min(64)]).to_string();
            Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {go} ({shown})",
                info.kind
            )))
        }
    }
}

/// Checks `apiVersion`/`kind` of a body against the addressed type (filling them in when absent).
pub fn check_type(registry: &Registry, info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            info.kind,
            gojson::value_kind(object)
        )));
    };
    let api_version = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if kind.is_empty() {
        map.insert("kind".into(), Value::String(info.kind.clone()));
    }
    if api_version.is_empty() {
        map.insert("apiVersion".into(), Value::String(info.api_version()));
    }
    let kind = if kind.is_empty() { info.kind.clone() } else { kind };
    let api_version = if api_version.is_empty() {
        info.api_version()
    } else {
        api_version
    };
    if kind == info.kind && api_version == info.api_version() {
        return Ok(());
    }
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    if info.is_custom() {
        if group == info.group && kind == info.kind {
            // Another served version of the same kind would be converted; the server only
            // accepts the addressed version.
            if registry.by_kind(&group, &version, &kind).is_some() {
                return Ok(());
            }
        }
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            info.api_version()
        )));
    }
    if group == info.group && registry.by_kind(&group, &version, &kind).is_none() {
        let scheme = "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30";
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: no kind \"{kind}\" is registered for version \"{api_version}\" in scheme \"{scheme}\"",
            info.kind
        )));
    }
    let internal_group = if info.group.is_empty() {
        "core".to_string()
    } else {
        info.group.split('.').next().unwrap_or_default().to_string()
    };
    let from_group = version.clone();
    Err(ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {}: converting ({from_group}.{kind}) to ({internal_group}.{}): unknown conversion",
        info.kind, info.kind
    )))
}

/// Go-typed decoding checks of built-in kinds: values of the wrong JSON type and malformed
/// base64 are 400 BadRequest, as kube-apiserver's decoder answers.
pub fn check_builtin_types(info: &ResourceInfo, object: &Value) -> Result<(), ApiError> {
    let special = info.behavior.as_ref().map(|b| b.special);
    let prefix = format!(
        "{} in version \"{}\" cannot be handled as a {}",
        info.kind, info.version, info.kind
    );
    let bad = |msg: String| Err(ApiError::bad_request(format!("{prefix}: {msg}")));
    if let Some(meta) = object.get("metadata") {
        if !meta.is_object() {
            return bad(format!(
                "json: cannot unmarshal {} into Go struct field {}.metadata of type v1.ObjectMeta",
                gojson::value_kind(meta),
                info.kind
            ));
        }
        for field in ["labels", "annotations"] {
            if let Some(m) = meta.get(field)
                && let Some(bad_v) = string_map_error(m)
            {
                return bad(format!(
                    "json: cannot unmarshal {bad_v} into Go struct field ObjectMeta.metadata.{field} of type {}",
                    if m.is_object() {
                        "string"
                    } else {
                        "map[string]string"
                    }
                ));
            }
        }
    }
    if matches!(special, Some(Special::ConfigMap | Special::Secret)) {
        for field in ["data", "stringData", "binaryData"] {
            if let Some(m) = object.get(field)
                && let Some(bad_v) = string_map_error(m)
            {
                let go_type =
                    if field == "data" && special == Some(Special::ConfigMap) || field == "stringData" {
                        "string"
                    } else {
                        "[]uint8"
                    };
                return bad(format!(
                    "json: cannot unmarshal {bad_v} into Go struct field {}.{field} of type {}",
                    info.kind,
                    if m.is_object() {
                        go_type.to_string()
                    } else {
                        format!("map[string]{go_type}")
                    }
                ));
            }
        }
        let base64_fields: &[&str] = if special == Some(Special::Secret) {
            &["data"]
        } else {
            &["binaryData"]
        };
        for field in base64_fields {
            if let Some(m) = object.get(*field).and_then(Value::as_object) {
                for v in m.values() {
                    if let Some(s) = v.as_str()
                        && let Some(pos) = base64_error(s)
                    {
                        return bad(format!("illegal base64 data at input byte {pos}"));
                    }
                }
            }
        }
    }
    if let Some(msg) = crate::validation::go_types::decode_error(&info.group, &info.resource, object) {
        return bad(msg);
    }
    Ok(())
}

fn string_map_error(m: &Value) -> Option<&'static str> {
    match m {
        Value::Null => None,
        Value::Object(map) => map
            .values()
            .find(|v| !v.is_string() && !v.is_null())
            .map(gojson::value_kind),
        other => Some(gojson::value_kind(other)),
    }
}

/// The byte offset Go's base64 decoder reports for invalid standard base64, if invalid.
pub fn base64_error(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'=' {
            // Padding: only at the end, completing a quantum.
            let rest = &b[i..];
            let data_len = i;
            let pad_ok = rest.iter().all(|&x| x == b'=')
                && (data_len + rest.len()).is_multiple_of(4)
                && rest.len() <= 2;
            return if pad_ok && data_len % 4 >= 2 {
                None
            } else {
                Some(i)
            };
        }
        if c == b'\r' || c == b'\n' {
            i += 1;
            continue;
        }
        if !valid(c) {
            return Some(i);
        }
        i += 1;
    }
    if !b.len().is_multiple_of(4) {
        // Go reports the offset of the incomplete final quantum.
        return Some(b.len() / 4 * 4 + if b.len() % 4 == 1 { 0 } else { b.len() % 4 });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::base64_error;

    #[test]
    fn go_base64_offsets() {
        assert_eq!(base64_error("not base64!!"), Some(3));
        assert_eq!(base64_error("YWRtaW4="), None);
        assert_eq!(base64_error("ZnJvbS1kYXRh"), None);
    }
}
