//! What a sweep of one scenario found, as a table row, a replay hint and a JSON object.
//!
//! Every verdict carries its evidence: each checker's violating seeds as a rate with its
//! 95% interval, and whether the seeds contended for the lock after the faults at all. A
//! checker that found nothing in seeds that never exercised the lock is reported as *not
//! exercised*, never as *holds*.

pub mod advice;
pub mod compare;
pub mod control;
pub mod counterexample;
pub mod coverage;
pub mod envelope;
pub mod fault_classes;
pub mod figures;
pub mod files;
pub mod junit;
pub mod matrix_summary;
pub mod minimal;
pub mod mode;
pub mod outcome;
pub mod page;
pub mod rate;
pub mod struck;
pub mod summary;
pub mod table;
pub mod tally;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use self::control::{Attribution, Control};
use self::coverage::Coverage;
use self::mode::RunMode;
use self::rate::Rate;
use crate::check;
use crate::check::coverage::State;
use crate::check::evidence::{Evidence, NotExercised};
use crate::scenario::Expectation;

/// What the seeds say of one checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// Some seed violated it.
    Violated,
    /// No seed violated it, and every seed contended for the lock after its faults.
    Holds,
    /// No seed violated it, but some seeds never contended for the lock after the faults,
    /// or no seed reached a dangerous state the faults aim at: nothing was shown.
    NotExercised,
    /// The mode the seeds ran in cannot judge it (validity, live): nothing is claimed.
    NotJudged,
}

impl Finding {
    /// The word used in tables, JSON and messages.
    pub fn word(self) -> &'static str {
        match self {
            Finding::Violated => "violated",
            Finding::Holds => "holds",
            Finding::NotExercised => "not exercised",
            Finding::NotJudged => "not judged",
        }
    }
}

/// One scheduled fault over all seeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSummary {
    /// The fault's kind (`crash`, `partition`, …).
    pub kind: String,
    /// Seeds in which it struck.
    pub struck: u64,
    /// Grants after it struck, over the seeds where it did: fewest, median, most.
    pub grants_after: Option<[u64; 3]>,
    /// The dangerous state it aims at (`Scenario::aim`), which some seed must reach for a
    /// checker that found nothing to hold.
    pub aims: Option<State>,
}

/// What the seeds of a sweep did: how much the lock was used (the liveness side of a
/// setup), and which dangerous states the search reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// Grants over all seeds.
    pub grants: u64,
    /// Simulated time over all seeds, in µs.
    pub run_us: u64,
    /// The longest any client waited for the lock and got it, in any seed, in µs.
    pub longest_wait_us: u64,
    /// The seed of that wait (the lowest, where seeds tie), so a reader can replay it;
    /// `None` when no client waited.
    pub longest_wait_seed: Option<u64>,
    /// The seeds that reached each dangerous state.
    pub coverage: Coverage,
}

impl Activity {
    /// Grants per simulated second, over all seeds.
    pub fn acquisitions_per_s(self) -> f64 {
        self.grants as f64 / (self.run_us.max(1) as f64 / 1e6)
    }

    /// The JSON form.
    pub fn to_json(self) -> Value {
        json!({
            "grants": self.grants,
            "simulated_s": self.run_us as f64 / 1e6,
            "acquisitions_per_s": (self.acquisitions_per_s() * 100.0).round() / 100.0,
            "longest_wait_ms": self.longest_wait_us / 1000,
            "longest_wait_seed": self.longest_wait_seed,
        })
    }

    /// Folds in one seed's grants, run time and longest wait. The longest wait keeps its
    /// seed, the lowest of equal waits, so the result is the same in any finishing order.
    fn add(&mut self, seed: u64, evidence: &Evidence) {
        self.grants += evidence.grants;
        self.run_us += evidence.run_us;
        let wait = evidence.longest_wait_us;
        let longer = match self.longest_wait_seed {
            None => wait > 0,
            Some(kept) => (wait, std::cmp::Reverse(seed)) > (self.longest_wait_us, std::cmp::Reverse(kept)),
        };
        if longer {
            self.longest_wait_us = wait;
            self.longest_wait_seed = Some(seed);
        }
    }
}

/// The checkers a report shows, with their short names (as in the table).
pub const CHECKERS: [(&str, &str); 7] = [
    (check::mutual_exclusion::NAME, "mutex"),
    (check::resource_safety::NAME, "data"),
    (check::stale_write::NAME, "stale"),
    (check::deadlock::NAME, "deadlock"),
    (check::validity::NAME, "validity"),
    (check::liveness::NAME, "live"),
    (check::starvation::NAME, "starve"),
];

/// The outcome of running one scenario over a range of seeds.
#[derive(Debug, Clone)]
pub struct ScenarioReport {
    pub file: PathBuf,
    pub name: String,
    /// What the scenario shows, from its file.
    pub description: String,
    pub seed_start: u64,
    pub seeds: u64,
    /// Checker name → seeds whose run violated it (in seed order).
    pub violations: BTreeMap<&'static str, Vec<u64>>,
    /// Seeds whose run failed inside the simulator, with the message.
    pub errors: Vec<(u64, String)>,
    /// Seeds that did not contend for the lock after their faults, and why.
    pub not_exercised: Vec<(u64, NotExercised)>,
    /// The scheduled faults, in the scenario's order.
    pub faults: Vec<FaultSummary>,
    /// Checker name → (expected, met).
    pub expectations: Vec<(&'static str, Expectation, bool)>,
    /// How busy the lock was over the seeds that ran to the end.
    pub activity: Activity,
    /// The violating seeds run again without the faults, once [`ScenarioReport::control`]
    /// has run (a shard's share has none: it cannot judge).
    pub control: Option<Control>,
    /// Host time the sweep took (not part of any digest).
    pub wall_ms: u128,
    /// How the seeds ran: what the report may claim and how a seed is run again.
    pub mode: RunMode,
}

impl ScenarioReport {
    /// The report of seeds that ran in `mode`: a checker the mode cannot judge keeps no
    /// violations and no expectation, and shows "not judged".
    pub fn ran_in(mut self, mode: RunMode) -> Self {
        self.violations.retain(|checker, _| mode.judges(checker));
        self.expectations.retain(|(checker, _, _)| mode.judges(checker));
        self.mode = mode;
        self.judge();
        self
    }

    /// Judges the expectations again with `control`, however its seeds ran (live mode
    /// runs them live).
    pub fn with_control(&mut self, control: Control) {
        self.control = Some(control);
        self.judge();
    }

    /// Whose doing `checker`'s violations are, when it was expected violated and some seed
    /// violated it: the workload's in a scenario without faults, else the no-fault
    /// control's word once it ran.
    pub fn attribution(&self, checker: &str) -> Option<Attribution> {
        let expected = self
            .expectations
            .iter()
            .any(|(c, e, _)| *c == checker && *e == Expectation::Violated);
        if !expected || self.rate(checker).violating == 0 {
            return None;
        }
        if self.faults.is_empty() {
            return Some(Attribution::Workload);
        }
        self.control.as_ref()?.attribution(checker)
    }

    /// Seeds that violated any checker, in order.
    pub fn violating_seeds(&self) -> Vec<u64> {
        let mut seeds: Vec<u64> = self.violations.values().flatten().copied().collect();
        seeds.sort_unstable();
        seeds.dedup();
        seeds
    }

    /// Seeds that ran to the end and contended for the lock after every fault.
    pub fn exercised_seeds(&self) -> u64 {
        self.seeds - self.errors.len() as u64 - self.not_exercised.len() as u64
    }

    /// How often `checker` fired, over the seeds that ran to the end.
    pub fn rate(&self, checker: &str) -> Rate {
        Rate {
            violating: self.violations.get(checker).map_or(0, Vec::len) as u64,
            seeds: self.seeds_run(),
        }
    }

    /// Seeds that ran to the end (a harness error ends a run early).
    fn seeds_run(&self) -> u64 {
        self.seeds - self.errors.len() as u64
    }

    /// How often the protected data came to harm, over the seeds that ran to the end: seeds
    /// in which an update was lost (`resource_safety`) or a fenced resource accepted a
    /// stale token (`stale_write`). Two believed holders whose writes were all refused or
    /// never interleaved do no harm here.
    pub fn damage_rate(&self) -> Rate {
        let mut seeds: Vec<u64> = [
            crate::check::resource_safety::NAME,
            crate::check::stale_write::NAME,
        ]
        .iter()
        .filter_map(|checker| self.violations.get(checker))
        .flatten()
        .copied()
        .collect();
        seeds.sort_unstable();
        seeds.dedup();
        Rate {
            violating: seeds.len() as u64,
            seeds: self.seeds_run(),
        }
    }

    /// What the seeds say of `checker`: a violation is a violation in any seed; "holds"
    /// needs every seed to have contended for the lock after its faults, and some seed to
    /// have reached each dangerous state the faults aim at.
    pub fn finding(&self, checker: &str) -> Finding {
        if !self.mode.judges(checker) {
            Finding::NotJudged
        } else if self.rate(checker).violating > 0 {
            Finding::Violated
        } else if self.not_exercised.is_empty()
            && self.exercised_seeds() > 0
            && self.unreached_aims().is_empty()
        {
            Finding::Holds
        } else {
            Finding::NotExercised
        }
    }

    /// `checker`'s attribution in a few words, with the control's rate when one ran
    /// ("caused by the faults: 0/20 without them").
    pub fn attribution_note(&self, checker: &str) -> Option<String> {
        let attribution = self.attribution(checker)?;
        Some(match &self.control {
            Some(control) if attribution != Attribution::Workload => {
                let rate = control.rate(checker);
                format!(
                    "{}: {}/{} without them",
                    attribution.words(),
                    rate.violating,
                    rate.seeds
                )
            }
            _ => attribution.words().to_string(),
        })
    }

    /// Judges each expectation on what the seeds (and the control, once run) found: a
    /// violation expected must be found, and be the faults' doing when a control ran; a
    /// hold expected must hold in exercised seeds.
    fn judge(&mut self) {
        let judged: Vec<bool> = self
            .expectations
            .iter()
            .map(|&(checker, expected, _)| {
                self.errors.is_empty()
                    && match (expected, self.finding(checker)) {
                        (Expectation::Violated, Finding::Violated) => {
                            self.attribution(checker) != Some(Attribution::PresentWithoutFaults)
                        }
                        (Expectation::Violated, _) => false,
                        (Expectation::Holds, finding) => finding == Finding::Holds,
                    }
            })
            .collect();
        for (expectation, met) in self.expectations.iter_mut().zip(judged) {
            expectation.2 = met;
        }
    }

    /// Whether every expectation was met and no run failed. A scenario that expects
    /// nothing is *unchecked*, never met: it would pass whatever its seeds did.
    pub fn expect_met(&self) -> bool {
        self.errors.is_empty() && !self.unchecked() && self.expectations.iter().all(|(_, _, met)| *met)
    }

    /// Whether the scenario has no `expect`: its seeds were run and judged, against nothing.
    pub fn unchecked(&self) -> bool {
        self.expectations.is_empty()
    }

    /// The verdict in a word: `harness error` (a run panicked or hung), `unchecked` (no
    /// `expect`), `met` or `not met`.
    pub fn verdict_word(&self) -> &'static str {
        if !self.errors.is_empty() {
            self.mode.failed_word()
        } else if self.unchecked() {
            "unchecked"
        } else if self.expect_met() {
            "met"
        } else {
            "not met"
        }
    }

    /// Why each expectation that was not met was not, one sentence each (`checker: why`).
    pub fn unmet_reasons(&self) -> Vec<String> {
        if !self.errors.is_empty() {
            return vec![self.mode.failed_runs_reason(self.errors.len())];
        }
        if self.unchecked() {
            return vec![
                "unchecked: the scenario has no `expect`, so nothing was checked (add one, e.g. \"expect\": {\"mutual_exclusion\": \"holds\"})"
                    .into(),
            ];
        }
        self.expectations
            .iter()
            .filter(|(_, _, met)| !met)
            .map(|(checker, expected, _)| format!("{checker}: {}", self.unmet_reason(checker, *expected)))
            .collect()
    }

    /// Why the expectation on `checker` was not met, in one sentence.
    fn unmet_reason(&self, checker: &str, expected: Expectation) -> String {
        let rate = self.rate(checker).sentence();
        match (expected, self.finding(checker)) {
            (Expectation::Violated, Finding::Violated) => {
                let control = self
                    .control
                    .as_ref()
                    .expect("a violation is unmet only by its control");
                format!(
                    "expected violated by the faults, but it is present without them: {} of the {} violating seeds \
                     run again without the faults violated it too (replay: locksim replay {} --seed {} --without-faults)",
                    control.rate(checker).violating,
                    control.rate(checker).seeds,
                    self.file.display(),
                    control.first_violating(checker).unwrap_or_default(),
                )
            }
            (Expectation::Violated, _) => format!("expected violated, but no seed violated it: {rate}"),
            (Expectation::Holds, Finding::Violated) => format!("expected to hold, but violated in {rate}"),
            (Expectation::Holds, _) if self.not_exercised.is_empty() => {
                format!(
                    "expected to hold, but not exercised: {}",
                    self.not_exercised_reason()
                )
            }
            (Expectation::Holds, _) => format!(
                "expected to hold, but not exercised: {} of {} seeds never contended for the lock after \
                 their faults ({})",
                self.not_exercised.len(),
                self.seeds,
                self.not_exercised_reason()
            ),
        }
    }

    /// The dangerous states the faults aim at, each once, in [`State::ALL`]'s order.
    pub fn aims(&self) -> Vec<State> {
        let mut aims: Vec<State> = self.faults.iter().filter_map(|fault| fault.aims).collect();
        aims.sort_unstable();
        aims.dedup();
        aims
    }

    /// The states the faults aim at that no seed reached: while any is left, a checker
    /// that found nothing is *not exercised*.
    pub fn unreached_aims(&self) -> Vec<State> {
        self.activity.coverage.unreached(&self.aims())
    }

    /// The first seed that was not exercised, and why; when every seed was, the first
    /// aimed-at state no seed reached.
    pub fn not_exercised_reason(&self) -> String {
        match (self.not_exercised.first(), self.unreached_aims().first()) {
            (Some((seed, why)), _) => format!("seed {seed}: {why}"),
            (None, Some(state)) => format!(
                "no seed reached {state} ({}), which its faults aim at",
                state.description()
            ),
            (None, None) => "every seed that ran was".to_string(),
        }
    }

    /// The machine-readable form, one object per scenario.
    pub fn to_json(&self) -> Value {
        let violating = self.violating_seeds();
        let checkers: serde_json::Map<String, Value> = CHECKERS
            .iter()
            .map(|(checker, _)| {
                let expectation = self.expectations.iter().find(|(c, _, _)| c == checker);
                if !self.mode.judges(checker) {
                    let entry = json!({"finding": Finding::NotJudged.word(), "expect": null, "met": null});
                    return (checker.to_string(), entry);
                }
                let mut entry = self.rate(checker).to_json();
                entry["violating_seeds"] = json!(self.violations.get(checker).cloned().unwrap_or_default());
                entry["finding"] = json!(self.finding(checker).word());
                entry["expect"] = json!(expectation.map(|(_, e, _)| expectation_word(*e)));
                entry["met"] = json!(expectation.map(|(_, _, met)| *met));
                entry["attribution"] = json!(self.attribution(checker).map(Attribution::words));
                entry["control"] = match (&self.control, self.attribution(checker)) {
                    (Some(control), Some(_)) => control.to_json(checker),
                    _ => Value::Null,
                };
                (checker.to_string(), entry)
            })
            .collect();
        let faults: Vec<Value> = self
            .faults
            .iter()
            .enumerate()
            .map(|(i, fault)| {
                json!({
                    "fault": i + 1,
                    "kind": fault.kind,
                    "struck_seeds": fault.struck,
                    "grants_after": fault.grants_after.map(|[min, median, max]| {
                        json!({"min": min, "median": median, "max": max})
                    }),
                    "aims": fault.aims.map(State::id),
                })
            })
            .collect();
        let mut object = json!({
            "name": self.name,
            "file": self.file.display().to_string(),
            "seed_start": self.seed_start,
            "seeds": self.seeds,
            "violating_seeds": violating.len(),
            "first_violation_seed": violating.first(),
            "exercised_seeds": self.exercised_seeds(),
            "not_exercised": self.not_exercised.iter().map(|(seed, why)| json!({"seed": seed, "reason": why.to_string()})).collect::<Vec<_>>(),
            "faults": faults,
            "expect_met": self.expect_met(),
            "control_seeds": self.control.as_ref().map(|c| c.seeds.clone()),
            "verdict": self.verdict_word(),
            "checkers": checkers,
            "errors": self.errors.iter().map(|(seed, message)| json!({"seed": seed, "message": message})).collect::<Vec<_>>(),
            "activity": self.activity.to_json(),
            "coverage": self.activity.coverage.to_json(&self.aims()),
            "wall_ms": self.wall_ms as u64,
        });
        if let (Some(object), Value::Object(mode)) = (object.as_object_mut(), self.mode.to_json()) {
            object.extend(mode);
        }
        object
    }
}

/// The line that reports a run that panicked or hung: the scenario, the seed, what
/// happened, and how to run it again.
pub fn harness_error(scenario: &str, file: &Path, seed: u64, message: &str) -> String {
    format!(
        "harness error: scenario {scenario} seed {seed}: {message}; replay: locksim replay {} --seed {seed}",
        file.display()
    )
}

fn expectation_word(e: Expectation) -> &'static str {
    match e {
        Expectation::Violated => "violated",
        Expectation::Holds => "holds",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_wait_keeps_its_seed_in_any_finishing_order() {
        let waited = |longest_wait_us| Evidence {
            grants: 2,
            run_us: 1_000_000,
            longest_wait_us,
            faults: Vec::new(),
        };
        let runs = [(7, 400), (3, 900), (5, 900), (9, 0), (1, 200)];
        let mut forward = Activity::default();
        for (seed, wait) in runs {
            forward.add(seed, &waited(wait));
        }
        let mut backward = Activity::default();
        for (seed, wait) in runs.iter().rev() {
            backward.add(*seed, &waited(*wait));
        }
        assert_eq!(forward, backward);
        assert_eq!(
            (forward.longest_wait_us, forward.longest_wait_seed),
            (900, Some(3)),
            "the lowest of the seeds tied longest"
        );
        assert_eq!(forward.grants, 10);
        let mut idle = Activity::default();
        idle.add(4, &waited(0));
        assert_eq!(idle.longest_wait_seed, None, "no wait, no seed to replay");
    }
}
