//! Every resource in `../shared/ocm-examples` deserializes into our type and serializes back to
//! JSON equal to the input.

use serde_json::Value;

use crate::{kinds, shared};

/// Deserializes `value` as `K` and serializes it back.
pub fn roundtrip<K>(value: &Value) -> Result<Value, String>
where
    K: serde::de::DeserializeOwned + serde::Serialize,
{
    let typed: K = serde_json::from_value(value.clone()).map_err(|e| format!("deserialize: {e}"))?;
    serde_json::to_value(&typed).map_err(|e| format!("serialize: {e}"))
}

/// Round-trips `value` through the type its `apiVersion` and `kind` name.
pub fn roundtrip_any(value: &Value) -> Result<Value, String> {
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    let kind = value["kind"].as_str().unwrap_or_default();
    kinds::roundtrip(api_version, kind, value)
        .unwrap_or_else(|| Err(format!("no type for {api_version} {kind}")))
}

#[test]
fn every_example_round_trips() {
    let Some(shared) = shared::dir("every_example_round_trips") else {
        return;
    };
    let mut failures = Vec::new();
    let mut count = 0;
    for path in shared::yaml_files(&shared.join("ocm-examples")) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for input in shared::read_yaml_documents(&path) {
            count += 1;
            match roundtrip_any(&input) {
                Ok(output) if output == input => {}
                Ok(output) => failures.push(format!("{name}: changed:\n  in:  {input}\n  out: {output}")),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    println!("round-tripped {count} example resources");
    assert!(
        failures.is_empty(),
        "{} examples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
