//! One minimal counterexample per fault class that broke something, for the top of the
//! report: of the matrix's cells in that column, the one a reader cares about most is
//! picked, its first violating seed shrunk ([`crate::search::shrink`]) to the smallest
//! schedule that still breaks the same checker, and the shrunk run replayed for its story
//! and its timeline.
//!
//! Which checker a class is told by: a lost update when any cell lost one (the damage a
//! broken lock does, shown with both holders and the erased write), else two holders at
//! once, else a stale token accepted, else the first checker (in the report's order) any
//! cell of the class violated. Which cell: the setups the opening compares against first
//! (the baselines: a single node before the setups measured against it), then the setups
//! compared, then the rest, each in the order the grid names them; the first whose cell
//! violated that checker. The classes come in the order a reader needs them (see
//! [`picks`]). Shrinking is bounded in runs, never in host time, so the report stays the
//! same bytes run to run.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::CHECKERS;
use super::counterexample::Counterexample;
use super::figures::timeline::Timeline;
use super::matrix_summary::MatrixSummary;
use crate::check::{self, check_all};
use crate::scenario::load_str;
use crate::search::shrink::{Budget, Deployment, shrink_within};
use crate::search::story;
use crate::sweep::run_seed;

/// Simulated runs one class's shrink may spend, all told (its search, the 20 other seeds
/// it tries, the story's replay).
pub const SHRINK_RUNS: u64 = 120;

/// The cell of one fault class to shrink, and toward which checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub fault: usize,
    pub setup: usize,
    pub checker: &'static str,
    /// The cell's first seed that violated `checker`.
    pub seed: u64,
}

/// The checkers that tell a broken lock, the first a class is told by (in this order).
const SAFETY_HEADLINES: [&str; 3] = [
    check::resource_safety::NAME,
    check::mutual_exclusion::NAME,
    check::stale_write::NAME,
];

/// The checker a class is told by, in order of preference (see the module's doc).
fn headline_checkers() -> Vec<&'static str> {
    let rest = CHECKERS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !SAFETY_HEADLINES.contains(name));
    SAFETY_HEADLINES.into_iter().chain(rest).collect()
}

/// The setups in the order a class's cell is picked from: the baselines the comparisons
/// measure against (the simplest setup that breaks reads most plainly), then the setups
/// compared, then the rest in grid order.
fn setup_order(matrix: &MatrixSummary) -> Vec<usize> {
    let mut order: Vec<usize> = Vec::new();
    let baselines = matrix.comparisons.iter().map(|&(_, against)| against);
    let compared = matrix.comparisons.iter().map(|&(setup, _)| setup);
    for s in baselines.chain(compared) {
        if !order.contains(&s) {
            order.push(s);
        }
    }
    let rest: Vec<usize> = (0..matrix.setups.len()).filter(|s| !order.contains(s)).collect();
    order.extend(rest);
    order
}

/// One pick per fault class in which some cell violated some checker, in the order a
/// reader needs them: classes told by a safety checker (lost update, two holders, stale
/// token) before those told by validity or liveness, since a broken lock is what the page
/// is for and a slow one is not; among those, the class that broke the most setups first (the
/// failure every setup shares, a holder's pause, before one that needs a rare setup);
/// ties in column order. Liveness-only classes ("no fault": a wait a little over the
/// bound) come last.
pub fn picks(matrix: &MatrixSummary) -> Vec<Pick> {
    let setups = setup_order(matrix);
    let checkers = headline_checkers();
    let rank = |pick: &Pick| {
        let broken = (0..matrix.setups.len())
            .filter_map(|s| matrix.cell(s, pick.fault))
            .filter(|report| {
                report
                    .violations
                    .get(pick.checker)
                    .is_some_and(|seeds| !seeds.is_empty())
            })
            .count();
        (
            !SAFETY_HEADLINES.contains(&pick.checker),
            std::cmp::Reverse(broken),
            pick.fault,
        )
    };
    let mut picks = picks_in_column_order(matrix, &setups, &checkers);
    picks.sort_by_key(rank);
    picks
}

/// One pick per fault class that broke something, in column order.
fn picks_in_column_order(matrix: &MatrixSummary, setups: &[usize], checkers: &[&'static str]) -> Vec<Pick> {
    (0..matrix.faults.len())
        .filter_map(|fault| {
            checkers.iter().copied().find_map(|checker| {
                setups.iter().find_map(|&setup| {
                    let report = matrix.cell(setup, fault)?;
                    let seed = *report.violations.get(checker)?.first()?;
                    Some(Pick {
                        fault,
                        setup,
                        checker,
                        seed,
                    })
                })
            })
        })
        .collect()
}

/// A fault class's minimal counterexample.
#[derive(Debug, Clone)]
pub struct Minimal {
    /// The fault class's name and label.
    pub fault: String,
    pub fault_label: String,
    /// The setup whose cell was shrunk.
    pub setup_label: String,
    /// The checker it was shrunk toward.
    pub checker: String,
    /// The cell's scenario file and seed it was shrunk from.
    pub from_file: String,
    pub from_seed: u64,
    /// The shrunk run: what broke, its story, its replay (from the shrunk file).
    pub example: Counterexample,
    /// What each pass of the shrink changed.
    pub shrink_steps: Vec<String>,
    /// Of seeds 0–19, how many the shrunk schedule violates.
    pub neighbours: (u64, u64),
    /// Simulated runs the shrink spent.
    pub runs: u64,
    /// The shrunk scenario, as its file is written.
    pub scenario: Value,
}

impl Minimal {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        json!({
            "fault": self.fault,
            "fault_label": self.fault_label,
            "setup": self.setup_label,
            "checker": self.checker,
            "shrunk_from": {"file": self.from_file, "seed": self.from_seed},
            "shrink": self.shrink_steps,
            "violating_neighbours": {"violating": self.neighbours.0, "seeds": self.neighbours.1},
            "shrink_runs": self.runs,
            "counterexample": self.example.to_json(),
        })
    }
}

/// The file a class's shrunk scenario is written to, under the report's directory.
pub fn scenario_file(out: &Path, fault: &str) -> std::path::PathBuf {
    out.join("minimal").join(format!("{fault}.json"))
}

/// Shrinks every pick on `jobs` threads (each shrink is deterministic, so the order they
/// finish in changes nothing) and replays each shrunk run; a pick whose cell file cannot
/// be read or whose shrink fails is left out.
pub fn shrink_all(matrix: &MatrixSummary, out: &Path, jobs: usize) -> Vec<(Minimal, Timeline)> {
    let picks = picks(matrix);
    let results: Mutex<Vec<Option<(Minimal, Timeline)>>> = Mutex::new(vec![None; picks.len()]);
    let next = Mutex::new(0usize);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(picks.len()) {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().expect("work queue poisoned");
                        let index = *next;
                        *next += 1;
                        index
                    };
                    let Some(pick) = picks.get(index) else { break };
                    let done = shrink_one(matrix, pick, out);
                    results.lock().expect("results poisoned")[index] = done;
                }
            });
        }
    });
    results
        .into_inner()
        .expect("results poisoned")
        .into_iter()
        .flatten()
        .collect()
}

/// Shrinks one pick and replays the shrunk run for its story and timeline.
fn shrink_one(matrix: &MatrixSummary, pick: &Pick, out: &Path) -> Option<(Minimal, Timeline)> {
    let report = matrix.cell(pick.setup, pick.fault)?;
    let text = std::fs::read_to_string(&report.file).ok()?;
    let scenario: Value = serde_json::from_str(&text).ok()?;
    let budget = Budget {
        max_runs: SHRINK_RUNS,
        max_wall: None,
    };
    // The cell's deployment is half of what it shows: its masters and replicas stay.
    let shrunk = shrink_within(
        &scenario,
        pick.seed,
        Some(pick.checker),
        budget,
        Deployment::Keep,
        &mut |_| {},
    )
    .ok()?;
    let fault = &matrix.faults[pick.fault];
    let file = scenario_file(out, &fault.name);
    let parsed = Arc::new(load_str(&file, &shrunk.scenario.to_string()).ok()?);
    let history = run_seed(&parsed, shrunk.seed).ok()?;
    let verdicts = check_all(&history, &parsed.check_settings());
    let id = format!("minimal-{}", fault.name);
    let example = Counterexample::of_run(
        id,
        parsed.name.clone(),
        file,
        shrunk.seed,
        &history,
        &verdicts,
        pick.checker,
    );
    let until = verdicts
        .iter()
        .find(|v| v.checker == pick.checker)
        .and_then(|v| v.violation.as_deref())
        .and_then(story::last_time_named);
    let setup_label = matrix.setups[pick.setup].label.clone();
    let title = format!("{}: {} — minimal, seed {}", fault.label, setup_label, shrunk.seed);
    let timeline = Timeline::from_history(&history, &title, until.map(|us| us as f64 / 1000.0));
    Some((
        Minimal {
            fault: fault.name.clone(),
            fault_label: fault.label.clone(),
            setup_label,
            checker: pick.checker.to_string(),
            from_file: report.file.display().to_string(),
            from_seed: pick.seed,
            example,
            shrink_steps: shrunk.steps.clone(),
            neighbours: shrunk.neighbours,
            runs: shrunk.runs,
            scenario: shrunk.scenario,
        },
        timeline,
    ))
}
