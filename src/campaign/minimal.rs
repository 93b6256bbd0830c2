//! One minimal counterexample per kind of deployment (single node, replicated, Redlock) and
//! fault class that broke something, for the top of the report: of the matrix's cells in
//! that column on setups of that kind, the one a reader cares about most is picked, its
//! first violating seed shrunk ([`crate::search::shrink`]) to the smallest schedule that
//! still breaks the same checker the same way (its mechanism: the promotion of a failover,
//! a Redlock grant's majority), on as many masters and replicas as the cell had, and the
//! shrunk run replayed for its story and its timeline. One per kind, not one per class:
//! the simplest setup that breaks would otherwise tell every class, and a reader would never
//! see how Redlock or a failover breaks.
//!
//! Which checker a pair is told by: a lost update when any of its cells lost one (the
//! damage a broken lock does, shown with both holders and the erased write), else two
//! holders at once, else a stale token accepted, else the first checker (in the report's
//! order) any of its cells violated. Which cell: the setups the opening compares against
//! first (the baselines: a single node before the setups measured against it), then the
//! setups compared, then the rest, each in the order the grid names them; the first of the
//! kind whose cell violated that checker. The pairs come in the order a reader needs them
//! (see [`picks`]). Shrinking is bounded in runs, never in host time, so the report stays
//! the same bytes run to run.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cache::{RunCache, Tally};

use crate::check::{self, check_all};
use crate::report::CHECKERS;
use crate::report::counterexample::Counterexample;
use crate::report::figures::timeline::Timeline;
use crate::report::matrix_summary::MatrixSummary;
use crate::report::minimal::Minimal;
use crate::scenario::{TopologyKind, load_str};
use crate::search::shrink::{Budget, Deployment, Shrunk, shrink_within};
use crate::sweep::run_seed;

/// Simulated runs one counterexample's shrink may spend, all told (its search, the 20 other
/// seeds it tries, the story's replay).
pub const SHRINK_RUNS: u64 = 120;

/// The cell of one fault class and kind of deployment to shrink, and toward which checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub fault: usize,
    /// The kind of deployment of `setup`.
    pub topology: TopologyKind,
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

/// The checkers a pick is told by, in order of preference (see the module's doc).
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

/// One pick per fault class and kind of deployment in which some cell violated some
/// checker, in the order a reader needs them: picks told by a safety checker (lost update,
/// two holders, stale token) before those told by validity or liveness, since a broken lock
/// is what the page is for and a slow one is not; among those, the class that broke the
/// most setups (of any kind, by the checker the class as a whole is told by) first (the
/// failure every setup shares, a holder's pause, before one that needs a rare setup); ties
/// in column order; within a class, single node, replicated, Redlock. Liveness-only picks
/// ("no fault": a wait a little over the bound) come last.
pub fn picks(matrix: &MatrixSummary) -> Vec<Pick> {
    let setups = setup_order(matrix);
    let checkers = headline_checkers();
    // How many setups each class broke, by the checker the class is told by over all kinds.
    let breadth: Vec<usize> = (0..matrix.faults.len())
        .map(|fault| {
            let Some(class) = pick_among(matrix, fault, &setups, &checkers) else {
                return 0;
            };
            (0..matrix.setups.len())
                .filter_map(|s| matrix.cell(s, fault))
                .filter(|report| {
                    report
                        .violations
                        .get(class.checker)
                        .is_some_and(|seeds| !seeds.is_empty())
                })
                .count()
        })
        .collect();
    let mut picks: Vec<Pick> = (0..matrix.faults.len())
        .flat_map(|fault| {
            let (setups, checkers) = (&setups, &checkers);
            TopologyKind::ALL.into_iter().filter_map(move |kind| {
                let of_kind: Vec<usize> = setups
                    .iter()
                    .copied()
                    .filter(|&s| matrix.setups[s].topology == kind)
                    .collect();
                pick_among(matrix, fault, &of_kind, checkers)
            })
        })
        .collect();
    picks.sort_by_key(|pick| {
        (
            !SAFETY_HEADLINES.contains(&pick.checker),
            std::cmp::Reverse(breadth[pick.fault]),
            pick.fault,
            pick.topology,
        )
    });
    picks
}

/// The pick of fault class `fault` among `setups` (in the order they are picked from): the
/// first of `checkers` any of their cells violated, and the first of them that did.
fn pick_among(
    matrix: &MatrixSummary,
    fault: usize,
    setups: &[usize],
    checkers: &[&'static str],
) -> Option<Pick> {
    checkers.iter().copied().find_map(|checker| {
        setups.iter().find_map(|&setup| {
            let report = matrix.cell(setup, fault)?;
            let seed = *report.violations.get(checker)?.first()?;
            Some(Pick {
                fault,
                topology: matrix.setups[setup].topology,
                setup,
                checker,
                seed,
            })
        })
    })
}

/// The file the shrunk scenario of fault class `fault` on `topology` is written to, under
/// the report's directory (`minimal/failover--redlock.json`: a class name has no `--`).
pub fn scenario_file(out: &Path, fault: &str, topology: TopologyKind) -> std::path::PathBuf {
    out.join("minimal")
        .join(format!("{fault}--{}.json", topology.name()))
}

/// Writes each shrunk scenario to its [`scenario_file`] under `out`, so each replays.
pub fn write_scenarios(out: &Path, shrunk: &[(Minimal, Timeline)]) -> std::io::Result<()> {
    if shrunk.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(out.join("minimal"))?;
    for (example, _) in shrunk {
        super::write_scenario(
            &scenario_file(out, &example.fault, example.topology),
            &example.scenario,
        )?;
    }
    Ok(())
}

/// Shrinks every pick on `jobs` threads (each shrink is deterministic, so the order they
/// finish in changes nothing; one `cache` holds, from earlier in this report or from an
/// earlier one, is reused; `tally` counts them) and replays each shrunk run; a pick whose
/// cell file cannot be read or whose shrink fails is left out.
pub fn shrink_all(
    matrix: &MatrixSummary,
    out: &Path,
    jobs: usize,
    cache: &RunCache,
    tally: &Tally,
) -> Vec<(Minimal, Timeline)> {
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
                    let done = shrink_one(matrix, pick, out, cache, tally);
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

/// What a report keeps of a shrink (the rest of [`Shrunk`] it does not show), with the
/// shrunk run replayed: its story and its timeline.
#[derive(Serialize, Deserialize)]
struct Kept {
    scenario: Value,
    steps: Vec<String>,
    neighbours: (u64, u64),
    mechanism: String,
    runs: u64,
    example: Counterexample,
    timeline: Timeline,
}

/// Shrinks one pick and replays the shrunk run for its story and timeline (or reuses what
/// `cache` kept of the same cell file, seed and checker, shown under the same names and
/// file), counted in `tally`.
fn shrink_one(
    matrix: &MatrixSummary,
    pick: &Pick,
    out: &Path,
    cache: &RunCache,
    tally: &Tally,
) -> Option<(Minimal, Timeline)> {
    let report = matrix.cell(pick.setup, pick.fault)?;
    let text = std::fs::read_to_string(&report.file).ok()?;
    let fault = &matrix.faults[pick.fault];
    let file = scenario_file(out, &fault.name, pick.topology);
    let setup_label = &matrix.setups[pick.setup].label;
    let key = format!(
        "shrink\n{text}\n{}\n{}\n{SHRINK_RUNS}\n{}\n{}\n{setup_label}",
        pick.seed,
        pick.checker,
        file.display(),
        fault.label
    );
    let kept = cache.value(&key, tally, || {
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
        serde_json::to_value(replay_shrunk(matrix, pick, file.clone(), shrunk)?).ok()
    })?;
    let kept: Kept = serde_json::from_value(kept).ok()?;
    Some((
        Minimal {
            fault: fault.name.clone(),
            fault_label: fault.label.clone(),
            topology: pick.topology,
            setup_label: setup_label.clone(),
            checker: pick.checker.to_string(),
            from_file: report.file.display().to_string(),
            from_seed: pick.seed,
            example: kept.example,
            shrink_steps: kept.steps,
            neighbours: kept.neighbours,
            mechanism: kept.mechanism,
            runs: kept.runs,
            scenario: kept.scenario,
        },
        kept.timeline,
    ))
}

/// The shrunk run of `pick`, written as `file`, replayed for its story and timeline.
fn replay_shrunk(
    matrix: &MatrixSummary,
    pick: &Pick,
    file: std::path::PathBuf,
    shrunk: Shrunk,
) -> Option<Kept> {
    let fault = &matrix.faults[pick.fault];
    let parsed = Arc::new(load_str(&file, &shrunk.scenario.to_string()).ok()?);
    let history = run_seed(&parsed, shrunk.seed).ok()?;
    let verdicts = check_all(&history, &parsed.check_settings());
    let id = format!("minimal-{}-{}", fault.name, pick.topology.name());
    let example = Counterexample::of_run(
        id,
        parsed.name.clone(),
        file,
        shrunk.seed,
        &history,
        &verdicts,
        pick.checker,
    );
    let setup_label = &matrix.setups[pick.setup].label;
    let title = format!("{}: {} — minimal, seed {}", fault.label, setup_label, shrunk.seed);
    let timeline = Timeline::of_violation(&history, &title, &verdicts, Some(pick.checker));
    Some(Kept {
        mechanism: shrunk.mechanism.to_string(),
        scenario: shrunk.scenario,
        steps: shrunk.steps,
        neighbours: shrunk.neighbours,
        runs: shrunk.runs,
        example,
        timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::compare::tests::{cell, setup};
    use crate::report::matrix_summary::FaultColumn;

    fn fault(name: &str) -> FaultColumn {
        FaultColumn {
            name: name.into(),
            label: name.into(),
            description: String::new(),
            strikes: Vec::new(),
        }
    }

    /// A single node (the baseline), a replicated setup, and Redlock on 3 and on 5 masters
    /// (the one compared), under three classes: no fault (a slow wait on one node only),
    /// a failover (no single node to run on) and a holder's pause.
    fn three_kinds() -> MatrixSummary {
        let mut slow = cell(50, 0, 0);
        slow.violations.insert(check::liveness::NAME, vec![7]);
        MatrixSummary {
            setups: vec![
                setup("lua-release", "tier 5", false, TopologyKind::Single),
                setup("replicated", "master + replica", false, TopologyKind::Replicated),
                setup("redlock-3", "Redlock 3", false, TopologyKind::Redlock),
                setup("redlock-5", "Redlock 5", false, TopologyKind::Redlock),
            ],
            faults: vec![fault("none"), fault("failover"), fault("pause")],
            cells: vec![
                vec![Some(slow), None, Some(cell(50, 50, 48))],
                vec![
                    Some(cell(50, 0, 0)),
                    Some(cell(50, 30, 0)),
                    Some(cell(50, 50, 40)),
                ],
                vec![Some(cell(50, 0, 0)), Some(cell(50, 0, 0)), Some(cell(50, 10, 0))],
                vec![Some(cell(50, 0, 0)), Some(cell(50, 0, 0)), Some(cell(50, 20, 0))],
            ],
            comparisons: vec![(3, 0)],
            clients_compared: Vec::new(),
        }
    }

    #[test]
    fn one_pick_per_kind_of_deployment_and_fault_class_safety_first_then_by_kind() {
        let matrix = three_kinds();
        let shown: Vec<(&str, &str, &str, &str)> = picks(&matrix)
            .iter()
            .map(|p| {
                (
                    matrix.faults[p.fault].name.as_str(),
                    p.topology.name(),
                    matrix.setups[p.setup].name.as_str(),
                    p.checker,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                // The pause lost updates on two setups, the failover overlapped on one: the
                // pause first, though its column comes later; on Redlock, the setup
                // compared before the other.
                ("pause", "single", "lua-release", check::resource_safety::NAME),
                ("pause", "replicated", "replicated", check::resource_safety::NAME),
                ("pause", "redlock", "redlock-5", check::mutual_exclusion::NAME),
                (
                    "failover",
                    "replicated",
                    "replicated",
                    check::mutual_exclusion::NAME
                ),
                ("none", "single", "lua-release", check::liveness::NAME),
            ]
        );
    }

    #[test]
    fn each_kind_of_a_class_has_a_file_of_its_own() {
        let out = Path::new("report");
        let files: Vec<_> = TopologyKind::ALL
            .into_iter()
            .map(|kind| scenario_file(out, "failover", kind))
            .collect();
        assert_eq!(files[2], out.join("minimal").join("failover--redlock.json"));
        assert!(files[0] != files[1] && files[1] != files[2]);
    }
}
