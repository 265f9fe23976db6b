//! Unit tests of the JSONPath parser and evaluator.

use serde_json::json;

use super::*;

fn find(path: &str, data: &Value) -> Result<Vec<Value>> {
    let parsed = JsonPath::parse(&format!("{{{path}}}"))?.allow_missing_keys(true);
    let results = parsed.find_results(data)?;
    Ok(results
        .into_iter()
        .next()
        .unwrap_or_default()
        .into_iter()
        .map(Cow::into_owned)
        .collect())
}

fn pod() -> Value {
    json!({
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "web"}},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "NotReady"},
            ],
            "containerStatuses": [
                {"name": "a", "restartCount": 1, "ready": true},
                {"name": "b", "restartCount": 3, "ready": false},
            ],
            "ratio": 0.5,
            "nothing": null,
        }
    })
}

#[test]
fn fields_and_missing_keys() {
    assert_eq!(find(".status.phase", &pod()).unwrap(), vec![json!("Running")]);
    assert!(find(".status.missing.deeper", &pod()).unwrap().is_empty());
    assert_eq!(find(".status.nothing", &pod()).unwrap(), vec![Value::Null]);
    let strict = JsonPath::parse("{.status.missing}").unwrap();
    assert_eq!(
        strict.find_results(&pod()).unwrap_err().to_string(),
        "missing is not found"
    );
}

#[test]
fn filters_select_list_members() {
    assert_eq!(
        find(r#".status.conditions[?(@.type=="Ready")].status"#, &pod()).unwrap(),
        vec![json!("False")]
    );
    assert_eq!(
        find(r#".status.conditions[?(@.type == 'Initialized')].status"#, &pod()).unwrap(),
        vec![json!("True")]
    );
    assert_eq!(
        find(".status.containerStatuses[?(@.restartCount > 1)].name", &pod()).unwrap(),
        vec![json!("b")]
    );
    assert_eq!(
        find(".status.containerStatuses[?(@.restartCount<=1)].name", &pod()).unwrap(),
        vec![json!("a")]
    );
    assert_eq!(
        find(".status.conditions[?(@.reason)].type", &pod()).unwrap(),
        vec![json!("Ready")]
    );
    assert_eq!(
        find(".status.containerStatuses[?(@.ready==true)].name", &pod()).unwrap(),
        vec![json!("a")]
    );
    assert_eq!(
        find(r#".status.conditions[?(@.type=="Gone")].status"#, &pod()).unwrap(),
        Vec::<Value>::new()
    );
}

#[test]
fn filter_comparisons_follow_go_templates() {
    let err = find(
        r#".status.containerStatuses[?(@.restartCount=="1")].name"#,
        &pod(),
    );
    assert_eq!(err.unwrap_err().to_string(), "incompatible types for comparison");
    let err = find(".status.containerStatuses[?(@.ready<true)].name", &pod());
    assert_eq!(err.unwrap_err().to_string(), "invalid type for comparison");
    let err = find(r#".status[?(@.type=="x")]"#, &pod());
    assert!(
        err.unwrap_err()
            .to_string()
            .ends_with("is not array or slice and cannot be filtered")
    );
}

#[test]
fn indexes_slices_and_unions() {
    let data = json!({"l": [0, 1, 2, 3, 4]});
    assert_eq!(find(".l[0]", &data).unwrap(), vec![json!(0)]);
    assert_eq!(find(".l[-1]", &data).unwrap(), vec![json!(4)]);
    assert_eq!(find(".l[1:3]", &data).unwrap(), vec![json!(1), json!(2)]);
    assert_eq!(
        find(".l[::2]", &data).unwrap(),
        vec![json!(0), json!(2), json!(4)]
    );
    assert_eq!(find(".l[*]", &data).unwrap().len(), 5);
    assert_eq!(find(".l[0,3]", &data).unwrap(), vec![json!(0), json!(3)]);
    assert_eq!(find(".l[2:2]", &data).unwrap(), Vec::<Value>::new());
    assert_eq!(
        find(".l[9]", &data).unwrap_err().to_string(),
        "array index out of bounds: index 9, length 5"
    );
    assert_eq!(
        find(".l[1:9]", &data).unwrap_err().to_string(),
        "array index out of bounds: index 8, length 5"
    );
    assert_eq!(
        find(".l[0:3:0]", &data).unwrap_err().to_string(),
        "step must be > 0"
    );
    assert_eq!(
        find(".l.x[0]", &json!({"l": {"x": "s"}}))
            .unwrap_err()
            .to_string(),
        "string is not array or slice"
    );
}

#[test]
fn quoted_keys_wildcards_and_recursion() {
    assert_eq!(
        find(".metadata.labels['app\\.kubernetes\\.io/name']", &pod()).unwrap(),
        vec![json!("web")]
    );
    assert_eq!(
        find(".metadata.labels.app\\.kubernetes\\.io/name", &pod()).unwrap(),
        vec![json!("web")]
    );
    assert_eq!(find(".metadata['name']", &pod()).unwrap(), vec![json!("p")]);
    let names = find("..name", &pod()).unwrap();
    assert_eq!(names, vec![json!("p"), json!("a"), json!("b")]);
    assert_eq!(find(".metadata.*", &pod()).unwrap().len(), 2);
    assert_eq!(find("$.status.phase", &pod()).unwrap(), vec![json!("Running")]);
}

#[test]
fn templates_mix_text_and_actions() {
    let parsed = JsonPath::parse("phase={.status.phase} ratio={.status.ratio}").unwrap();
    let data = pod();
    let results = parsed.find_results(&data).unwrap();
    let flat: Vec<Value> = results.into_iter().flatten().map(Cow::into_owned).collect();
    assert_eq!(
        flat,
        vec![json!("phase="), json!("Running"), json!(" ratio="), json!(0.5)]
    );
    assert_eq!(
        JsonPath::parse("{\"quoted\"}")
            .unwrap()
            .find_results(&pod())
            .unwrap()[0][0]
            .as_ref(),
        &json!("quoted")
    );
}

#[test]
fn parse_errors() {
    for (path, message) in [
        ("{.a", "unclosed action"),
        ("{.a[0}", "unterminated array"),
        ("{.a[x]}", "invalid array index x"),
        ("{.a[?(@.b==1}", "unterminated filter"),
        ("{.a]}", "unrecognized character in action: U+005D ']'"),
        ("{.a[?(@.b=~1)]}", "unrecognized character in action: U+007E '~'"),
    ] {
        assert_eq!(
            JsonPath::parse(path).map(|_| ()).unwrap_err().to_string(),
            message,
            "{path}"
        );
    }
    assert!(JsonPath::parse("{range .items[*]}").is_ok());
    assert!(JsonPath::parse("{..}").is_ok());
    assert_eq!(
        find(".status.conditions[?(@.type===1)]", &pod())
            .unwrap_err()
            .to_string(),
        "unrecognized filter operator ==="
    );
    assert_eq!(
        find("range", &pod()).unwrap_err().to_string(),
        "range is not supported when reading values"
    );
}
