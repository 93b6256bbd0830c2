//! What a sweep of one scenario found, as a table row, a replay hint and a JSON object.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::check;
use crate::scenario::{Expectation, Scenario};

/// The table's checker columns, in order, with their headers.
const COLUMNS: [(&str, &str); 7] = [
    (check::mutual_exclusion::NAME, "mutex"),
    (check::resource_safety::NAME, "data"),
    (check::stale_write::NAME, "stale"),
    (check::deadlock::NAME, "deadlock"),
    (check::validity::NAME, "validity"),
    (check::liveness::NAME, "live"),
    (check::starvation::NAME, "starve"),
];
use crate::sweep::SeedRun;

/// The outcome of running one scenario over a range of seeds.
#[derive(Debug, Clone)]
pub struct ScenarioReport {
    pub file: PathBuf,
    pub name: String,
    pub seed_start: u64,
    pub seeds: u64,
    /// Checker name → seeds whose run violated it (in seed order).
    pub violations: BTreeMap<&'static str, Vec<u64>>,
    /// Seeds whose run failed inside the simulator, with the message.
    pub errors: Vec<(u64, String)>,
    /// Checker name → (expected, met).
    pub expectations: Vec<(&'static str, Expectation, bool)>,
    /// Host time the sweep took (not part of any digest).
    pub wall_ms: u128,
}

impl ScenarioReport {
    /// Summarises the runs of one scenario against its expectations.
    pub fn new(file: &Path, scenario: &Scenario, seed_start: u64, runs: &[SeedRun], wall_ms: u128) -> Self {
        let mut violations: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
        let mut errors = Vec::new();
        for run in runs {
            match &run.outcome {
                Ok(summary) => {
                    for verdict in &summary.verdicts {
                        let seeds = violations.entry(verdict.checker).or_default();
                        if verdict.violation.is_some() {
                            seeds.push(run.seed);
                        }
                    }
                }
                Err(message) => errors.push((run.seed, message.clone())),
            }
        }
        let expectations = scenario
            .expect
            .entries()
            .into_iter()
            .map(|(checker, expected)| {
                let violated = violations.get(checker).is_some_and(|seeds| !seeds.is_empty());
                let met = errors.is_empty() && violated == (expected == Expectation::Violated);
                (checker, expected, met)
            })
            .collect();
        ScenarioReport {
            file: file.to_path_buf(),
            name: scenario.name.clone(),
            seed_start,
            seeds: runs.len() as u64,
            violations,
            errors,
            expectations,
            wall_ms,
        }
    }

    /// Seeds that violated any checker, in order.
    pub fn violating_seeds(&self) -> Vec<u64> {
        let mut seeds: Vec<u64> = self.violations.values().flatten().copied().collect();
        seeds.sort_unstable();
        seeds.dedup();
        seeds
    }

    /// Whether every expectation was met and no run failed.
    pub fn expect_met(&self) -> bool {
        self.errors.is_empty() && self.expectations.iter().all(|(_, _, met)| *met)
    }

    /// The header of the verdict table: one column per checker, then the verdict.
    pub fn table_header() -> String {
        let columns: String = COLUMNS
            .iter()
            .map(|(_, header)| format!(" {header:>9}"))
            .collect();
        format!(
            "{:<44} {:>6} {:>9}{columns}  verdict",
            "scenario", "seeds", "violating"
        )
    }

    /// The legend printed under the table.
    pub fn table_legend() -> &'static str {
        "cells: violating seeds per checker; v / h = expected violated / holds; ! = expectation not met"
    }

    /// One row of the verdict table, then a replay hint for the first violating seed.
    pub fn table_lines(&self) -> Vec<String> {
        let cells: String = COLUMNS
            .iter()
            .map(|(checker, _)| {
                let count = self.violations.get(checker).map_or(0, Vec::len);
                let mark = match self.expectations.iter().find(|(c, _, _)| c == checker) {
                    None => "  ",
                    Some((_, Expectation::Violated, true)) => "v ",
                    Some((_, Expectation::Holds, true)) => "h ",
                    Some((_, Expectation::Violated, false)) => "v!",
                    Some((_, Expectation::Holds, false)) => "h!",
                };
                format!(" {count:>7}{mark}")
            })
            .collect();
        let verdict = match (self.expect_met(), self.errors.len()) {
            (true, _) => "met".to_string(),
            (false, 0) => "NOT MET".to_string(),
            (false, n) => format!("NOT MET ({n} runs failed)"),
        };
        let mut lines = vec![format!(
            "{:<44} {:>6} {:>9}{cells}  {verdict}",
            self.name,
            self.seeds,
            self.violating_seeds().len(),
        )];
        if let Some(seed) = self.violating_seeds().first() {
            lines.push(format!(
                "replay: locksim replay {} --seed {seed}",
                self.file.display()
            ));
        }
        for (seed, message) in &self.errors {
            lines.push(format!("error: seed {seed}: the run failed: {message}"));
        }
        lines
    }

    /// The machine-readable form, one object per scenario.
    pub fn to_json(&self) -> Value {
        let violating = self.violating_seeds();
        let checkers: serde_json::Map<String, Value> = self
            .violations
            .iter()
            .map(|(checker, seeds)| {
                let expectation = self.expectations.iter().find(|(c, _, _)| c == checker);
                (
                    checker.to_string(),
                    json!({
                        "violating_seeds": seeds,
                        "expect": expectation.map(|(_, e, _)| expectation_word(*e)),
                        "met": expectation.map(|(_, _, met)| *met),
                    }),
                )
            })
            .collect();
        json!({
            "name": self.name,
            "file": self.file.display().to_string(),
            "seed_start": self.seed_start,
            "seeds": self.seeds,
            "violating_seeds": violating.len(),
            "first_violation_seed": violating.first(),
            "expect_met": self.expect_met(),
            "checkers": checkers,
            "errors": self.errors.iter().map(|(seed, message)| json!({"seed": seed, "message": message})).collect::<Vec<_>>(),
            "wall_ms": self.wall_ms as u64,
        })
    }
}

fn expectation_word(e: Expectation) -> &'static str {
    match e {
        Expectation::Violated => "violated",
        Expectation::Holds => "holds",
    }
}
