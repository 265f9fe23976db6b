//! Results of a replay: per step, per scenario, and the per-area table with the first differences
//! of each failing step and the most common kinds of difference.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::Expectation;
use super::compare::{Diff, clip};
use super::fixture::Scenario;
use super::replay::label;

/// The outcome of one step.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Matched the recording.
    Passed,
    /// Differed; the differences.
    Failed(Vec<Diff>),
    /// Not judged; why.
    Skipped(String),
}

/// One step's result.
#[derive(Debug, Clone)]
pub struct StepResult {
    /// Index in the scenario.
    pub index: usize,
    /// `METHOD /path?query`.
    pub label: String,
    /// What happened.
    pub outcome: Outcome,
}

impl StepResult {
    /// A step result.
    pub fn new(index: usize, label: String, outcome: Outcome) -> Self {
        Self {
            index,
            label,
            outcome,
        }
    }
}

/// One scenario's results.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    /// `area/name`.
    pub id: String,
    /// The area.
    pub area: String,
    /// What the scenario shows.
    pub description: String,
    /// Step results, in order.
    pub steps: Vec<StepResult>,
    /// How long the replay took.
    pub duration: Duration,
}

impl ScenarioResult {
    /// An empty result for a scenario.
    pub fn new(scenario: &Scenario) -> Self {
        Self {
            id: scenario.id(),
            area: scenario.area.clone(),
            description: scenario.description.clone(),
            steps: Vec::new(),
            duration: Duration::ZERO,
        }
    }

    /// Every step skipped for one reason.
    pub fn skip_all(&mut self, scenario: &Scenario, reason: &str) {
        self.steps = scenario
            .steps
            .iter()
            .enumerate()
            .map(|(index, step)| StepResult::new(index, label(step), Outcome::Skipped(reason.to_string())))
            .collect();
    }

    /// Every step failed because the setup did.
    pub fn fail_setup(&mut self, scenario: &Scenario, error: &str) {
        self.steps = scenario
            .steps
            .iter()
            .enumerate()
            .map(|(index, step)| {
                StepResult::new(
                    index,
                    label(step),
                    Outcome::Failed(vec![Diff::new("setup", "requires met", error)]),
                )
            })
            .collect();
    }

    fn count(&self) -> Counts {
        let mut counts = Counts::default();
        for step in &self.steps {
            match step.outcome {
                Outcome::Passed => counts.passed += 1,
                Outcome::Failed(_) => counts.failed += 1,
                Outcome::Skipped(_) => counts.skipped += 1,
            }
        }
        counts
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }
}

/// The whole replay.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was replayed against.
    pub target: String,
    /// Scenario results, sorted by id.
    pub scenarios: Vec<ScenarioResult>,
}

impl Report {
    /// Scenario ids whose expectation is `MustPass` and which have a failing step.
    pub fn failing_must_pass(&self, expectation: impl Fn(&str) -> Expectation) -> Vec<String> {
        self.scenarios
            .iter()
            .filter(|scenario| {
                expectation(&scenario.id) == Expectation::MustPass && scenario.count().failed > 0
            })
            .map(|scenario| scenario.id.clone())
            .collect()
    }

    /// Total (passed, failed, skipped) steps.
    pub fn totals(&self) -> (usize, usize, usize) {
        let mut total = Counts::default();
        self.scenarios
            .iter()
            .for_each(|scenario| total.add(scenario.count()));
        (total.passed, total.failed, total.skipped)
    }

    /// The per-area table.
    pub fn table(&self, expectation: impl Fn(&str) -> Expectation) -> String {
        let mut areas: BTreeMap<&str, (Counts, usize, Vec<&str>)> = BTreeMap::new();
        for scenario in &self.scenarios {
            let entry = areas.entry(scenario.area.as_str()).or_default();
            entry.0.add(scenario.count());
            entry.1 += 1;
            let must = if expectation(&scenario.id) == Expectation::MustPass {
                "must pass"
            } else {
                "report"
            };
            if !entry.2.contains(&must) {
                entry.2.push(must);
            }
        }
        let mut out = String::new();
        let _ = writeln!(out, "apiserver conformance replay against {}", self.target);
        let _ = writeln!(
            out,
            "{:<11} {:>9} {:>7} {:>7} {:>8}  expectation",
            "area", "scenarios", "passed", "failed", "skipped"
        );
        let mut total = Counts::default();
        let mut scenarios = 0;
        for (area, (counts, count, expectations)) in &areas {
            let _ = writeln!(
                out,
                "{area:<11} {count:>9} {:>7} {:>7} {:>8}  {}",
                counts.passed,
                counts.failed,
                counts.skipped,
                expectations.join(" + ")
            );
            total.add(*counts);
            scenarios += count;
        }
        let _ = writeln!(
            out,
            "{:<11} {scenarios:>9} {:>7} {:>7} {:>8}",
            "total", total.passed, total.failed, total.skipped
        );
        out
    }

    /// Each failing step with its first `limit` differences (all, less shortened, when `limit` is 0).
    pub fn failures(&self, limit: usize) -> String {
        let width = if limit == 0 { 4000 } else { 300 };
        let mut out = String::new();
        for scenario in &self.scenarios {
            if scenario.count().failed > 0 {
                let _ = writeln!(
                    out,
                    "== {} ({} s): {}",
                    scenario.id,
                    scenario.duration.as_secs(),
                    clip(&scenario.description, 160)
                );
            }
            for step in &scenario.steps {
                if let Outcome::Failed(diffs) = &step.outcome {
                    let _ = writeln!(out, "FAIL {} step {}: {}", scenario.id, step.index, step.label);
                    let shown = if limit == 0 {
                        diffs.len()
                    } else {
                        limit.min(diffs.len())
                    };
                    for diff in &diffs[..shown] {
                        let _ = writeln!(out, "    {}", diff.render(width));
                    }
                    if shown < diffs.len() {
                        let _ = writeln!(out, "    ... {} more", diffs.len() - shown);
                    }
                }
            }
        }
        out
    }

    /// Skipped steps grouped by reason.
    pub fn skips(&self) -> String {
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for scenario in &self.scenarios {
            for step in &scenario.steps {
                if let Outcome::Skipped(reason) = &step.outcome {
                    *reasons.entry(reason.as_str()).or_default() += 1;
                }
            }
        }
        reasons
            .iter()
            .map(|(reason, count)| format!("{count:>5} skipped: {reason}\n"))
            .collect()
    }

    /// The most common kinds of difference: by path pattern (indexes erased) and, for status
    /// codes, by expected and actual code; ranked by scenarios affected, then steps.
    pub fn common_causes(&self, top: usize) -> String {
        let mut causes: BTreeMap<String, (usize, Vec<&str>, String)> = BTreeMap::new();
        for scenario in &self.scenarios {
            for step in &scenario.steps {
                let Outcome::Failed(diffs) = &step.outcome else {
                    continue;
                };
                let mut seen = Vec::new();
                for diff in diffs {
                    let signature = signature(diff);
                    if seen.contains(&signature) {
                        continue;
                    }
                    seen.push(signature.clone());
                    let entry = causes
                        .entry(signature)
                        .or_insert_with(|| (0, Vec::new(), format!("{} step {}", scenario.id, step.index)));
                    entry.0 += 1;
                    if !entry.1.contains(&scenario.id.as_str()) {
                        entry.1.push(&scenario.id);
                    }
                }
            }
        }
        let mut sorted: Vec<_> = causes.into_iter().collect();
        sorted.sort_by(|a, b| {
            b.1.1
                .len()
                .cmp(&a.1.1.len())
                .then(b.1.0.cmp(&a.1.0))
                .then(a.0.cmp(&b.0))
        });
        sorted
            .into_iter()
            .take(top)
            .map(|(signature, (steps, scenarios, example))| {
                format!(
                    "{:>4} scenarios {steps:>4} steps  {signature}   (e.g. {example})\n",
                    scenarios.len()
                )
            })
            .collect()
    }
}

/// A diff's path with step and list indexes erased, plus the status codes for status diffs.
fn signature(diff: &Diff) -> String {
    let mut path = String::new();
    let mut in_index = false;
    for c in diff.path.chars() {
        match c {
            '[' => {
                in_index = true;
                path.push_str("[*]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            other => path.push(other),
        }
    }
    let path = path.strip_prefix("steps[*].").unwrap_or(&path).to_string();
    if path.ends_with(".status") && !path.contains(".body") {
        let actual: String = diff.actual.chars().take_while(char::is_ascii_digit).collect();
        return format!("{path}: {} -> {actual}", diff.expected);
    }
    match diff.actual.as_str() {
        "(missing)" => format!("{path} missing"),
        other if other.starts_with("(no matching element") => format!("{path} missing"),
        _ if diff.expected == "(absent)" || diff.expected == "(nothing)" => format!("{path} unexpected"),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_erase_indexes() {
        let diff = Diff::new(
            "steps[3].response.body.items[0].metadata.labels",
            "{}",
            "(missing)",
        );
        assert_eq!(signature(&diff), "response.body.items[*].metadata.labels missing");
        let diff = Diff::new("steps[3].response.status", "201", "404 {...}");
        assert_eq!(signature(&diff), "response.status: 201 -> 404");
    }
}
