//! locksim inside a team's own `cargo test`: load (or write inline) a scenario, run it over
//! seeds, and assert that its expectations are met — a failed assertion prints the verdict
//! table, the replay command and the story of each violation, as `locksim run` and
//! `locksim replay --story` would.
//!
//! This is the whole surface a test needs; the other modules are locksim's insides and
//! may change. A crate that uses locksim builds with `--cfg madsim`, as locksim does
//! (`.cargo/config.toml`: `[build] rustflags = ["--cfg", "madsim"]`).
//!
//! ```
//! use locksim::api;
//!
//! // A single Redis node, the lock holder frozen for 4 s in the middle of its 2 s lease:
//! // the textbook way a lock without fencing lets two clients in.
//! let scenario = api::parse(r#"{
//!     "name": "gc-pause-in-my-service",
//!     "duration_ms": 20000,
//!     "topology": { "kind": "single" },
//!     "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
//!     "clients": { "count": 2, "work_ms": [100, 300] },
//!     "faults": [ { "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": 4000 } ],
//!     "expect": { "mutual_exclusion": "violated", "deadlock": "holds" }
//! }"#).unwrap();
//! let outcome = api::run(&scenario, 0..4);
//! assert!(!outcome.violating_seeds("mutual_exclusion").is_empty());
//! outcome.assert_met();
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::campaign::{sweeps, unmet};
use crate::report::ScenarioReport;
use crate::report::table::TableStyle;
pub use crate::scenario::{Scenario, ScenarioError};

/// Reads a scenario file (the format of docs/scenarios.md); an error names the file, the
/// field and the reason.
pub fn load(file: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
    crate::scenario::load(file.as_ref())
}

/// A scenario written inline, as JSON text; errors name it `<inline>`.
pub fn parse(json: &str) -> Result<Scenario, ScenarioError> {
    crate::scenario::load_str(Path::new("<inline>"), json)
}

/// Runs `seeds` of `scenario` on every core, then runs the first violating seeds again
/// without the faults (a violation the scenario expects must be the faults' doing), and
/// judges its `expect`.
pub fn run(scenario: &Scenario, seeds: Range<u64>) -> Outcome {
    run_named(scenario, seeds, PathBuf::from(format!("{}.json", scenario.name)))
}

/// [`run`] of a scenario file; the replay commands name the file.
pub fn run_file(file: impl AsRef<Path>, seeds: Range<u64>) -> Result<Outcome, ScenarioError> {
    let scenario = load(&file)?;
    Ok(run_named(&scenario, seeds, file.as_ref().to_path_buf()))
}

fn run_named(scenario: &Scenario, seeds: Range<u64>, file: PathBuf) -> Outcome {
    let scenario = Arc::new(scenario.clone());
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let count = seeds.end.saturating_sub(seeds.start);
    let report = sweeps::sweep(&file, &scenario, seeds.start, count, jobs);
    Outcome { report, scenario }
}

/// What a run found: each checker's violating seeds and whether the scenario's `expect`
/// was met.
#[derive(Debug, Clone)]
pub struct Outcome {
    report: ScenarioReport,
    scenario: Arc<Scenario>,
}

impl Outcome {
    /// Whether every expectation was met and no run failed. A scenario without `expect`
    /// is never met: it would pass whatever its seeds did.
    pub fn met(&self) -> bool {
        self.report.expect_met()
    }

    /// The seeds that violated `checker` (`mutual_exclusion`, `resource_safety`,
    /// `stale_write`, `deadlock`, `validity`, `liveness`, `starvation`), lowest first.
    pub fn violating_seeds(&self, checker: &str) -> Vec<u64> {
        self.report.violations.get(checker).cloned().unwrap_or_default()
    }

    /// The verdict table's lines (every rate with its 95% interval), why each unmet
    /// expectation was not met, and the story of each violation behind one.
    pub fn explain(&self) -> String {
        let mut lines = vec![ScenarioReport::table_header(WIDE)];
        lines.extend(self.report.table_lines(WIDE));
        for (checker, _, met) in &self.report.expectations {
            if !met {
                lines.extend(unmet::unmet_story(&self.report, &self.scenario, checker));
            }
        }
        lines.join("\n")
    }

    /// Panics, with [`Outcome::explain`], unless the scenario's expectations were met.
    #[track_caller]
    pub fn assert_met(&self) {
        assert!(
            self.met(),
            "locksim: {} did not meet its expectations\n{}",
            self.report.name,
            self.explain()
        );
    }

    /// Every number of the run, as `locksim run --json` writes it.
    pub fn to_json(&self) -> serde_json::Value {
        self.report.to_json()
    }
}

/// The table a test failure prints: wide (a log has room), plain (no terminal colours).
const WIDE: TableStyle = TableStyle {
    wide: true,
    colour: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The doc example's scenario, claiming what it does not do.
    fn broken_claim() -> Scenario {
        let text = std::fs::read_to_string("scenarios/single-node-gc-pause.json").unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        value["expect"] = serde_json::json!({"mutual_exclusion": "holds"});
        parse(&value.to_string()).unwrap()
    }

    #[test]
    fn a_broken_claim_fails_the_assertion_with_its_replay_and_story() {
        let outcome = run(&broken_claim(), 0..3);
        assert!(!outcome.met());
        assert_eq!(outcome.violating_seeds("mutual_exclusion"), [0, 1, 2]);
        let panic = std::panic::catch_unwind(|| outcome.assert_met()).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(message.contains("did not meet its expectations"), "{message}");
        assert!(
            message.contains("replay: locksim replay single-node-gc-pause.json --seed 0"),
            "{message}"
        );
        assert!(
            message.contains("Story of the mutual_exclusion violation"),
            "{message}"
        );
    }

    #[test]
    fn a_bad_scenario_is_an_error_naming_the_field() {
        let error = parse(r#"{"name": "x", "duration_ms": -1}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("<inline>") && error.contains("duration_ms"),
            "{error}"
        );
    }
}
