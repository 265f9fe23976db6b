//! CEL cluster selectors (`celSelector.celExpressions`), evaluated with the `cel` crate and the
//! Kubernetes CEL libraries of kube-cel.
//!
//! Each expression sees the ManagedCluster as the variable `managedCluster` (its JSON form) and
//! may call, besides the Kubernetes libraries (strings, lists, sets, regex, URLs, IP/CIDR,
//! quantity, semver, format):
//! - `managedCluster.scores("<AddOnPlacementScore name>")`: the list of `{name, value}` of that
//!   score object in the cluster's namespace (an evaluation error when it does not exist);
//! - `"<json>".parseJSON()`: the JSON value of a string.
//!
//! A cluster matches when every expression evaluates to boolean `true`; an evaluation error or a
//! non-boolean result does not match.
//!
//! Decided on purpose: the `cel` crate has no type checker, so "compiling" is parsing plus a
//! check that every variable and function the expression names is declared. Errors upstream's
//! checker finds only through types (e.g. `managedCluster.metadata.name > 1`) are evaluation
//! errors here, so the cluster does not match instead of the placement being Misconfigured.
//! There is no cost budget either.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use kube_cel::KubeCelExt;
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, FunctionContext, Program, ResolveResult, Value};

use super::ScoreSource;

/// The name of the variable holding the cluster.
pub const CLUSTER_VARIABLE: &str = "managedCluster";

/// Compiled CEL expressions of one selector.
pub struct CelSelector {
    programs: Vec<Program>,
}

impl std::fmt::Debug for CelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelSelector")
            .field("programs", &self.programs.len())
            .finish()
    }
}

/// The functions the interpreter knows: the standard ones, kube-cel's and ours. Operators
/// (`_+_`, `@in`, `_[_]`...) and macros are always known.
fn declared_functions() -> &'static HashSet<String> {
    static DECLARED: OnceLock<HashSet<String>> = OnceLock::new();
    DECLARED.get_or_init(|| {
        const STANDARD: &[&str] = &[
            "contains",
            "size",
            "has",
            "map",
            "filter",
            "all",
            "max",
            "startsWith",
            "endsWith",
            "matches",
            "duration",
            "timestamp",
            "string",
            "bytes",
            "double",
            "exists",
            "exists_one",
            "int",
            "uint",
            "optional",
            "dyn",
            "type",
            "min",
            // timestamp and duration accessors
            "getDayOfWeek",
            "getDayOfMonth",
            "getDayOfYear",
            "getDate",
            "getFullYear",
            "getHours",
            "getMilliseconds",
            "getMinutes",
            "getMonth",
            "getSeconds",
        ];
        const KUBE: &[&str] = &[
            // strings
            "charAt",
            "indexOf",
            "lastIndexOf",
            "lowerAscii",
            "upperAscii",
            "replace",
            "split",
            "substring",
            "trim",
            "join",
            "reverse",
            "quote",
            "strings.quote",
            "format",
            // lists and sets
            "isSorted",
            "sum",
            "indexOf",
            "lastIndexOf",
            "slice",
            "flatten",
            "distinct",
            "sort",
            "range",
            "lists.range",
            "first",
            "last",
            "sets.contains",
            "sets.equivalent",
            "sets.intersects",
            // regex, urls, ip, cidr
            "find",
            "findAll",
            "url",
            "isURL",
            "getScheme",
            "getHost",
            "getHostname",
            "getPort",
            "getEscapedPath",
            "getQuery",
            "ip",
            "isIP",
            "cidr",
            "isCIDR",
            "family",
            "isUnspecified",
            "isLoopback",
            "isLinkLocalMulticast",
            "isLinkLocalUnicast",
            "isGlobalUnicast",
            "containsIP",
            "containsCIDR",
            "prefixLength",
            "masked",
            "ip.isCanonical",
            // quantity
            "quantity",
            "isQuantity",
            "sign",
            "isInteger",
            "asInteger",
            "asApproximateFloat",
            "add",
            "sub",
            "isGreaterThan",
            "isLessThan",
            "compareTo",
            // semver
            "semver",
            "isSemver",
            "major",
            "minor",
            "patch",
            // math and encoders
            "math.greatest",
            "math.least",
            "math.ceil",
            "math.floor",
            "math.round",
            "math.trunc",
            "math.abs",
            "math.sign",
            "math.isInf",
            "math.isNaN",
            "math.isFinite",
            "math.bitOr",
            "math.bitAnd",
            "math.bitXor",
            "math.bitNot",
            "math.bitShiftLeft",
            "math.bitShiftRight",
            "math.sqrt",
            "base64.encode",
            "base64.decode",
            "validate",
            "named_format",
        ];
        const OURS: &[&str] = &["scores", "parseJSON"];
        STANDARD
            .iter()
            .chain(KUBE)
            .chain(OURS)
            .map(|s| (*s).to_string())
            .collect()
    })
}

/// Whether `name` is an operator or index function of the parser.
fn is_operator(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('@') || name.starts_with('!')
}

impl CelSelector {
    /// Compiles `expressions`.
    ///
    /// # Errors
    /// The message of the first expression that does not parse or names an undeclared variable or
    /// function, as `compilation failed: ...`.
    pub fn compile(expressions: &[String]) -> Result<Self, String> {
        let mut programs = Vec::with_capacity(expressions.len());
        for expression in expressions {
            let program = Program::compile(expression)
                .map_err(|e| format!("compilation failed: ERROR: <input>: {e}"))?;
            let references = program.references();
            for function in references.functions() {
                if !is_operator(function) && !declared_functions().contains(function) {
                    return Err(format!(
                        "compilation failed: ERROR: <input>: undeclared reference to '{function}'"
                    ));
                }
            }
            programs.push(program);
        }
        Ok(Self { programs })
    }

    /// Whether every expression is `true` for the cluster `cluster` (its JSON form).
    #[must_use]
    pub fn matches(&self, env: &CelEnv, cluster: &Value) -> bool {
        let mut scope = env.context.new_inner_scope();
        scope.add_variable_from_value(CLUSTER_VARIABLE, cluster.clone());
        self.programs.iter().all(|program| {
            let Ok(value) = program.execute(&scope) else {
                return false;
            };
            matches!(value, Value::Bool(true))
        })
    }
}

/// The evaluation environment: the libraries and the `scores` function over a score source.
pub struct CelEnv {
    context: Context<'static>,
}

impl std::fmt::Debug for CelEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelEnv").finish_non_exhaustive()
    }
}

impl CelEnv {
    /// An environment whose `scores()` reads `scores`.
    #[must_use]
    pub fn new(scores: Arc<dyn ScoreSource>) -> Self {
        let mut context = Context::default().with_all();
        context.add_function(
            "scores",
            move |ftx: &FunctionContext, This(cluster): This<Value>, name: Arc<String>| -> ResolveResult {
                let cluster_name =
                    cluster_name(&cluster).ok_or_else(|| ftx.error("failed to get cluster name"))?;
                let score = scores
                    .score(&cluster_name, &name)
                    .ok_or_else(|| ftx.error(format!("failed to get score: {name} not found")))?;
                let items = score
                    .status
                    .iter()
                    .flat_map(|s| s.scores.iter().flatten())
                    .map(|item| {
                        let mut map = std::collections::HashMap::new();
                        map.insert(Key::from("name"), Value::from(item.name.clone()));
                        map.insert(Key::from("value"), Value::Int(i64::from(item.value)));
                        Value::Map(Map::from(map))
                    })
                    .collect::<Vec<_>>();
                Ok(Value::List(Arc::new(items)))
            },
        );
        context.add_function("parseJSON", parse_json);
        Self { context }
    }
}

/// `metadata.name` of a cluster value.
fn cluster_name(cluster: &Value) -> Option<String> {
    let Value::Map(cluster) = cluster else { return None };
    let Value::Map(metadata) = cluster.get(&Key::from("metadata"))? else {
        return None;
    };
    match metadata.get(&Key::from("name"))? {
        Value::String(name) => Some(name.to_string()),
        _ => None,
    }
}

/// `<string>.parseJSON()`.
fn parse_json(ftx: &FunctionContext, This(text): This<Arc<String>>) -> ResolveResult {
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ftx.error(format!("failed to parse json: {e}")))?;
    Ok(json_to_value(&json))
}

/// A JSON value as a CEL value: integers as `int` (`uint` past `i64`), other numbers as
/// `double`, objects as maps with string keys.
#[must_use]
pub fn json_to_value(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                Value::UInt(u)
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => Value::List(Arc::new(items.iter().map(json_to_value).collect())),
        serde_json::Value::Object(fields) => {
            let map: std::collections::HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::from(k.as_str()), json_to_value(v)))
                .collect();
            Value::Map(Map::from(map))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::schedule::ScoreMap;
    use crate::placement::schedule::testing::*;

    fn env(scores: ScoreMap) -> CelEnv {
        CelEnv::new(Arc::new(scores))
    }

    fn value(c: &ocm_api::cluster::v1::ManagedCluster) -> Value {
        json_to_value(&serde_json::to_value(c).unwrap())
    }

    fn check(expressions: &[&str], c: &ocm_api::cluster::v1::ManagedCluster, scores: ScoreMap) -> bool {
        let exprs: Vec<String> = expressions.iter().map(|s| (*s).to_string()).collect();
        CelSelector::compile(&exprs)
            .unwrap()
            .matches(&env(scores), &value(c))
    }

    #[test]
    fn labels_and_kubernetes_libraries() {
        let c = cluster("c1").label("version", "1.28.3").label("env", "prod");
        assert!(check(
            &["managedCluster.metadata.labels['env'] == 'prod'"],
            &c,
            ScoreMap::default()
        ));
        assert!(check(
            &["semver(managedCluster.metadata.labels['version']).isGreaterThan(semver('1.27.0'))"],
            &c,
            ScoreMap::default()
        ));
        assert!(!check(
            &[
                "managedCluster.metadata.labels['env'] == 'prod'",
                "managedCluster.metadata.name.startsWith('x')"
            ],
            &c,
            ScoreMap::default()
        ));
        assert!(check(
            &["managedCluster.metadata.labels.exists(k, k == 'env')"],
            &c,
            ScoreMap::default()
        ));
    }

    #[test]
    fn scores_reads_the_clusters_add_on_scores() {
        let c = cluster("c1");
        let scores = ScoreMap::from_scores([Arc::new(score("c1", "demo", &[("cpu", 80), ("mem", 3)], None))]);
        let expression = "managedCluster.scores('demo').filter(s, s.name == 'cpu').all(e, e.value > 70)";
        assert!(check(&[expression], &c, scores.clone()));
        assert!(!check(
            &["managedCluster.scores('demo').exists(s, s.value > 90)"],
            &c,
            scores.clone()
        ));
        // A missing score object is an evaluation error: no match.
        assert!(!check(
            &["managedCluster.scores('other').size() == 0"],
            &c,
            scores
        ));
    }

    #[test]
    fn parse_json_reads_json_strings() {
        let c = cluster("c1").label("x", "1");
        let expression = r#"'{"a": {"b": 2}}'.parseJSON().a.b == 2"#;
        assert!(check(&[expression], &c, ScoreMap::default()));
    }

    #[test]
    fn non_boolean_results_and_errors_do_not_match() {
        let c = cluster("c1");
        assert!(!check(&["managedCluster.metadata.name"], &c, ScoreMap::default()));
        assert!(!check(
            &["managedCluster.metadata.missing == 'x'"],
            &c,
            ScoreMap::default()
        ));
    }

    #[test]
    fn invalid_expressions_do_not_compile() {
        let err = CelSelector::compile(&["managedCluster.metadata.name ==".to_string()]).unwrap_err();
        assert!(err.starts_with("compilation failed:"), "{err}");
        let err = CelSelector::compile(&["noSuchFunction(managedCluster)".to_string()]).unwrap_err();
        assert!(err.contains("undeclared reference to 'noSuchFunction'"), "{err}");
    }
}
