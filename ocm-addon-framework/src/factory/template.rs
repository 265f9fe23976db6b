//! Rendering one template file into one object (addon-framework.md §4.2): Go `text/template`
//! through the `gotmpl` crate with upstream's template functions, then YAML into a [`Manifest`].

use std::sync::Arc;

use base64::Engine;
use gotmpl::{Template, TemplateError, Value as TValue};
use ocm_api::work::v1::Manifest;
use serde_json::Value;

use super::FactoryError;
use super::values::Values;

/// One parsed template file.
#[derive(Clone)]
pub(crate) struct TemplateFile {
    /// The file's name (its path below the template directory).
    pub(crate) name: String,
    /// The parsed template; `None` for an empty file (skipped as upstream does).
    template: Option<Arc<Template>>,
}

impl TemplateFile {
    /// Parses `content` with upstream's template functions.
    pub(crate) fn parse(name: &str, content: &str) -> Result<Self, FactoryError> {
        if content.is_empty() {
            return Ok(Self {
                name: name.to_string(),
                template: None,
            });
        }
        let template = with_functions(Template::new(name))
            .parse(content)
            .map_err(|source| FactoryError::ParseTemplate {
                file: name.to_string(),
                source,
            })?;
        Ok(Self {
            name: name.to_string(),
            template: Some(Arc::new(template)),
        })
    }

    /// Renders the file with `values` and decodes the YAML object; `None` when the file is empty
    /// or renders to something without a `kind` (upstream skips "missing kind" files).
    pub(crate) fn render(&self, values: &Values) -> Result<Option<Manifest>, FactoryError> {
        let Some(template) = &self.template else {
            return Ok(None);
        };
        let text = template
            .execute_to_string(&to_template_value(&Value::Object(values.clone())))
            .map_err(|source| FactoryError::ExecuteTemplate {
                file: self.name.clone(),
                source,
            })?;
        decode_manifest(&self.name, &text)
    }
}

/// Decodes rendered YAML into one object; `None` when there is no `kind`.
pub(crate) fn decode_manifest(file: &str, text: &str) -> Result<Option<Manifest>, FactoryError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_saphyr::from_str(text).map_err(|source| FactoryError::DecodeManifest {
        file: file.to_string(),
        message: source.to_string(),
    })?;
    let Value::Object(object) = value else {
        return Ok(None);
    };
    let has_kind = object
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| !k.is_empty());
    if !has_kind {
        return Ok(None);
    }
    let has_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    if !has_version {
        return Err(FactoryError::DecodeManifest {
            file: file.to_string(),
            message: "the object has a kind but no apiVersion".to_string(),
        });
    }
    Ok(Some(Manifest::new(object)))
}

/// A JSON value as template data: objects become maps (ranged over in key order, as Go does
/// for maps), arrays lists, numbers integers where they are integral.
pub(crate) fn to_template_value(value: &Value) -> TValue {
    match value {
        Value::Null => TValue::Nil,
        Value::Bool(b) => TValue::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                TValue::Int(i)
            } else if let Some(u) = n.as_u64() {
                TValue::Uint(u)
            } else {
                TValue::Float(n.as_f64().unwrap_or_default())
            }
        }
        Value::String(s) => TValue::String(s.as_str().into()),
        Value::Array(items) => TValue::List(items.iter().map(to_template_value).collect()),
        Value::Object(map) => TValue::Map(Arc::new(
            map.iter()
                .map(|(k, v)| (Arc::from(k.as_str()), to_template_value(v)))
                .collect(),
        )),
    }
}

/// Registers upstream's template functions: `base64`, `indent`, `load`, `regexMatch`,
/// `notAfter`, `notBefore`, `issuer`.
fn with_functions(template: Template) -> Template {
    template
        .func("base64", |args| {
            let text = string_arg(args, 0);
            Ok(TValue::String(
                base64::engine::general_purpose::STANDARD.encode(text).into(),
            ))
        })
        .func("indent", |args| {
            let width = args
                .first()
                .and_then(|v| v.as_int())
                .ok_or_else(|| exec_error("indent: the first argument must be an integer"))?;
            let text = string_arg(args, 1);
            let newline = format!("\n{}", " ".repeat(usize::try_from(width).unwrap_or(0)));
            Ok(TValue::String(text.replace('\n', &newline).into()))
        })
        .func("load", |args| {
            let name = string_arg(args, 0);
            match args.get(1) {
                Some(TValue::Map(map)) => Ok(map.get(name.as_str()).cloned().unwrap_or(TValue::Nil)),
                _ => Ok(TValue::Nil),
            }
        })
        .func("regexMatch", |args| {
            let pattern = string_arg(args, 0);
            let input = string_arg(args, 1);
            // Upstream ignores a bad pattern and answers false.
            Ok(TValue::Bool(
                regex::Regex::new(&pattern).is_ok_and(|re| re.is_match(&input)),
            ))
        })
        .func("notAfter", |args| {
            cert_field(args, "notAfter", |cert| {
                rfc3339(cert.validity().not_after.timestamp())
            })
        })
        .func("notBefore", |args| {
            cert_field(args, "notBefore", |cert| {
                rfc3339(cert.validity().not_before.timestamp())
            })
        })
        .func("issuer", |args| {
            cert_field(args, "issuer", |cert| {
                Ok(cert
                    .issuer()
                    .iter_common_name()
                    .next()
                    .and_then(|cn| cn.as_str().ok())
                    .unwrap_or_default()
                    .to_string())
            })
        })
}

fn exec_error(message: impl Into<String>) -> TemplateError {
    TemplateError::Exec(message.into())
}

/// The `index`th argument as text (strings as they are, other scalars printed, nothing: "").
fn string_arg(args: &[TValue], index: usize) -> String {
    match args.get(index) {
        Some(TValue::String(s)) => s.to_string(),
        Some(TValue::Nil) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn rfc3339(timestamp: i64) -> Result<String, TemplateError> {
    chrono::DateTime::from_timestamp(timestamp, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .ok_or_else(|| exec_error(format!("time {timestamp} is out of range")))
}

/// Applies `f` to the first certificate of the PEM text in the first argument; empty text
/// gives an empty string as upstream's functions do.
fn cert_field(
    args: &[TValue],
    func: &str,
    f: impl Fn(&x509_parser::certificate::X509Certificate<'_>) -> Result<String, TemplateError>,
) -> Result<TValue, TemplateError> {
    let text = string_arg(args, 0);
    if text.is_empty() {
        return Ok(TValue::String("".into()));
    }
    let (_, pem) = x509_parser::pem::parse_x509_pem(text.as_bytes())
        .map_err(|e| exec_error(format!("{func}: parse the PEM certificate: {e}")))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| exec_error(format!("{func}: parse the certificate: {e}")))?;
    Ok(TValue::String(f(&cert)?.into()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    fn render(src: &str, values: Value) -> String {
        let file = TemplateFile::parse("t.yaml", src).unwrap();
        let Value::Object(values) = values else {
            panic!("not an object")
        };
        let template = file.template.unwrap();
        template
            .execute_to_string(&to_template_value(&Value::Object(values)))
            .unwrap()
    }

    #[test]
    fn functions_behave_as_upstreams() {
        assert_eq!(render(r#"{{ base64 "hello" }}"#, json!({})), "aGVsbG8=");
        assert_eq!(render(r#"{{ indent 2 .T }}"#, json!({"T": "a\nb"})), "a\n  b");
        assert_eq!(render(r#"{{ regexMatch "^a.+$" "abc" }}"#, json!({})), "true");
        assert_eq!(render(r#"{{ regexMatch "(" "abc" }}"#, json!({})), "false");
        assert_eq!(render(r#"{{ load "k" .M }}"#, json!({"M": {"k": "v"}})), "v");
        assert_eq!(render(r#"{{ notAfter "" }}"#, json!({})), "");
    }

    #[test]
    fn missing_keys_print_no_value_and_maps_range_in_key_order() {
        assert_eq!(render("{{ .Missing }}", json!({})), "<no value>");
        assert_eq!(
            render(
                "{{ range $k, $v := .M }}{{ $k }}={{ $v }};{{ end }}",
                json!({"M": {"b": 2, "a": 1}})
            ),
            "a=1;b=2;"
        );
    }

    #[test]
    fn certificate_functions_read_the_first_certificate() {
        let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test-ca");
        params.not_before = rcgen::date_time_ymd(2024, 1, 2);
        params.not_after = rcgen::date_time_ymd(2034, 5, 6);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let values = json!({"C": cert.pem()});
        assert_eq!(
            render("{{ notBefore .C }}", values.clone()),
            "2024-01-02T00:00:00Z"
        );
        assert_eq!(
            render("{{ notAfter .C }}", values.clone()),
            "2034-05-06T00:00:00Z"
        );
        assert_eq!(render("{{ issuer .C }}", values), "test-ca");
    }

    #[test]
    fn decoding_skips_kindless_output_and_refuses_a_kind_without_version() {
        assert!(decode_manifest("f", "  \n# only a comment\n").unwrap().is_none());
        assert!(decode_manifest("f", "metadata:\n  name: x\n").unwrap().is_none());
        assert!(decode_manifest("f", "kind: ConfigMap\nmetadata:\n  name: x\n").is_err());
        let m = decode_manifest("f", "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: x\n")
            .unwrap()
            .unwrap();
        assert_eq!(m.name(), Some("x"));
    }
}
