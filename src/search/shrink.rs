//! Shrinking a violating run to a minimal scenario that still breaks the same checker.
//!
//! The passes, cheapest and most telling first (research/report-and-shrink.md):
//! 1. materialise the nemesis: its drawn faults become an explicit list;
//! 2. delta debugging (ddmin) over the fault list: the smallest set that still violates
//!    (none at all, when the workload alone breaks the lock);
//! 3. simplify each fault: halve every duration, jump, rate and delay while it violates,
//!    then delta debugging again (a fault halved to nothing may go now);
//! 4. fewer clients, fewer Redis masters and replicas (the nodes only when the caller lets
//!    the deployment shrink: [`Deployment`]);
//! 5. no clock offsets or drift, constant network latency;
//! 6. an earlier schedule: every fault moved earlier by one offset, as far as it still
//!    violates, so the run's prefix of routine lock cycles before the first grant that
//!    matters is cut;
//! 7. a shorter run: cut after the violation;
//! 8. other seeds: in how many of the 20 its file runs the minimal schedule violates too.
//!
//! Every candidate is a scenario file (JSON), validated like a user's and run on the same
//! seed; a candidate counts only if the *same checker* fires and its run keeps the
//! original's [`Mechanism`] (the promotion, restart, pause, clock jump … the original's
//! story told that its own faults make, and a Redlock grant's majority): a smaller schedule that breaks the lock
//! another way is another counterexample. A pass whose smaller candidates broke the checker
//! but lost the mechanism says so in its step line. The search is bounded in runs
//! (deterministic) and, if asked, in host time (not deterministic: a slower machine gets
//! less far); it returns the best scenario found so far when the budget runs out, never
//! nothing, and reports its progress as it goes.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mechanism::Mechanism;
use super::story;
use crate::check::check_all;
use crate::history::EventKind;
use crate::scenario::{Scenario, load_str};
use crate::sweep::run_seed;

/// What shrinking found.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The minimal scenario, as a file writes it, with `expect` set to the checker.
    pub scenario: Value,
    pub seed: u64,
    pub checker: String,
    /// What the checker said of the minimal run.
    pub violation: String,
    /// One line per pass that changed something.
    pub steps: Vec<String>,
    /// Simulated runs spent, with the replay of [`Shrunk::story`]: never more than the
    /// budget.
    pub runs: u64,
    /// Of the seeds the written file runs (0 to 19), how many the minimal scenario
    /// violates: the schedule's reach beyond the one seed it was found on.
    pub neighbours: (u64, u64),
    /// What the original violation rested on, which every accepted candidate kept.
    pub mechanism: Mechanism,
}

impl Shrunk {
    /// The minimal run told as a story (numbered steps ending in what broke), replayed on
    /// its seed; empty if the minimal scenario no longer runs.
    pub fn story(&self) -> Vec<String> {
        let Ok(minimal) = load_str(Path::new("(shrunk)"), &self.scenario.to_string()) else {
            return Vec::new();
        };
        let Ok(history) = run_seed(&Arc::new(minimal), self.seed) else {
            return Vec::new();
        };
        story::render(
            &story::story(&history, &self.checker, &self.violation),
            &self.checker,
            &self.violation,
        )
    }
}

/// Why shrinking could not start.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    #[error("seed {seed} does not violate {checker}: nothing to shrink")]
    NoViolation { seed: u64, checker: String },
    #[error("seed {seed} violates no checker: nothing to shrink")]
    NothingViolated { seed: u64 },
    #[error("{0}")]
    Invalid(String),
}

/// Whether a shrink may take Redis masters and replicas away. A report shrinks one cell of
/// a (deployment, fault class) table, so the deployment is part of what it shows; a user
/// shrinking a file of their own wants the smallest world that still breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployment {
    /// Fewer masters and replicas, while the violation stays.
    MayShrink,
    /// As many masters and replicas as the original (clients may still go).
    Keep,
}

/// How much a shrink may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Simulated runs.
    pub max_runs: u64,
    /// Host time, if bounded.
    pub max_wall: Option<Duration>,
}

/// Where a shrink is, as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress<'a> {
    /// The pass running now (`delta debugging`).
    pub pass: &'a str,
    pub runs: u64,
    pub max_runs: u64,
    /// Faults in the best scenario so far.
    pub faults: usize,
}

/// The search's state: the best scenario so far and the budget left.
struct Search<'p> {
    seed: u64,
    checker: String,
    /// What the original violation rested on: a candidate must keep it.
    mechanism: Mechanism,
    deployment: Deployment,
    best: Value,
    violation: String,
    runs: u64,
    max_runs: u64,
    deadline: Option<Instant>,
    steps: Vec<String>,
    pass: &'static str,
    /// This pass's candidates that broke the checker but lost some of the mechanism: how
    /// many, and what they lost.
    refused: (u64, BTreeSet<String>),
    progress: &'p mut dyn FnMut(&Progress),
}

/// Runs `scenario` on `seed`: the violation message of `checker`, if it fired, and what
/// the run showed before it ([`Mechanism::shown`]).
fn violates(scenario: &Value, seed: u64, checker: &str) -> Option<(String, Mechanism)> {
    let parsed = load_str(Path::new("(shrinking)"), &scenario.to_string()).ok()?;
    let parsed = Arc::new(parsed);
    let history = run_seed(&parsed, seed).ok()?;
    let violation = check_all(&history, &parsed.check_settings())
        .into_iter()
        .find(|verdict| verdict.checker == checker)?
        .violation?;
    let mechanism = Mechanism::shown(&history, checker, &violation);
    Some((violation, mechanism))
}

impl Search<'_> {
    /// Whether the budget is spent.
    fn exhausted(&self) -> bool {
        self.runs >= self.max_runs || self.deadline.is_some_and(|at| Instant::now() >= at)
    }

    /// Starts pass `pass`, and says so.
    fn enter(&mut self, pass: &'static str) {
        self.close_pass();
        self.pass = pass;
        self.report();
    }

    /// Ends the pass running now: a step line if it refused candidates that lost the
    /// mechanism.
    fn close_pass(&mut self) {
        let (count, lost) = std::mem::take(&mut self.refused);
        if count > 0 {
            self.steps.push(format!(
                "{}: {count} candidate(s) that still broke {} refused: they lost {}",
                self.pass,
                self.checker,
                lost.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }

    fn report(&mut self) {
        let faults = self.faults().len();
        (self.progress)(&Progress {
            pass: self.pass,
            runs: self.runs,
            max_runs: self.max_runs,
            faults,
        });
    }

    /// Whether `candidate` still violates the checker and keeps the mechanism (spending one
    /// run); if it does, it becomes the best so far.
    fn try_candidate(&mut self, candidate: Value) -> bool {
        if self.exhausted() || candidate == self.best {
            return false;
        }
        self.runs += 1;
        self.report();
        let Some((violation, mechanism)) = violates(&candidate, self.seed, &self.checker) else {
            return false;
        };
        let lost = self.mechanism.lost_in(&mechanism);
        if !lost.is_empty() {
            self.refused.0 += 1;
            self.refused.1.extend(lost);
            return false;
        }
        self.best = candidate;
        self.violation = violation;
        true
    }

    fn faults(&self) -> Vec<Value> {
        self.best["faults"].as_array().cloned().unwrap_or_default()
    }

    fn with_faults(&self, faults: Vec<Value>) -> Value {
        let mut candidate = self.best.clone();
        candidate["faults"] = Value::Array(faults);
        candidate
    }

    /// Pass 2: ddmin over the faults (Zeller): try halves, then complements of smaller and
    /// smaller chunks, keeping any subset that still violates.
    fn ddmin_faults(&mut self) {
        let before = self.faults().len();
        if before > 0 && self.try_candidate(self.with_faults(Vec::new())) {
            self.steps.push(format!(
                "delta debugging: {before} faults → 0 (the workload alone violates)"
            ));
            return;
        }
        let mut chunks = 2;
        loop {
            let faults = self.faults();
            if faults.len() < 2 || self.exhausted() {
                break;
            }
            let size = faults.len().div_ceil(chunks);
            let mut reduced = false;
            for start in (0..faults.len()).step_by(size) {
                let chunk: Vec<Value> = faults[start..(start + size).min(faults.len())].to_vec();
                if self.try_candidate(self.with_faults(chunk)) {
                    chunks = 2;
                    reduced = true;
                    break;
                }
            }
            if !reduced {
                for start in (0..faults.len()).step_by(size) {
                    let complement: Vec<Value> = faults
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i < start || *i >= start + size)
                        .map(|(_, f)| f.clone())
                        .collect();
                    if self.try_candidate(self.with_faults(complement)) {
                        chunks = (chunks - 1).max(2);
                        reduced = true;
                        break;
                    }
                }
            }
            if !reduced {
                if chunks >= faults.len() {
                    break;
                }
                chunks = (chunks * 2).min(faults.len());
            }
        }
        let after = self.faults().len();
        if after < before {
            self.steps
                .push(format!("delta debugging: {before} faults → {after}"));
        }
    }

    /// Pass 3: halve each numeric field of each fault while the violation stays.
    fn simplify_faults(&mut self) {
        const FIELDS: [&str; 7] = [
            "duration_ms",
            "by_ms",
            "restart_after_ms",
            "rate_ppm",
            "delay_ms",
            "rate",
            "latency_ms",
        ];
        for index in 0..self.faults().len() {
            for field in FIELDS {
                let mut halvings = 0;
                while let Some(halved) = self.best["faults"][index].get(field).and_then(halve) {
                    let mut candidate = self.best.clone();
                    candidate["faults"][index][field] = halved;
                    if !self.try_candidate(candidate) {
                        break;
                    }
                    halvings += 1;
                }
                if halvings > 0 {
                    self.steps.push(format!(
                        "fault {} ({}): {field} halved {halvings} time(s), to {}",
                        index + 1,
                        self.best["faults"][index]["kind"].as_str().unwrap_or("?"),
                        self.best["faults"][index][field]
                    ));
                }
            }
        }
    }

    /// Pass 4: fewer clients, and fewer masters and replicas if the deployment may shrink.
    fn smaller_world(&mut self) {
        let nodes = [
            (&["topology", "masters"][..], 3, "Redis masters"),
            (&["topology", "replicas"][..], 1, "replicas"),
        ];
        let nodes = match self.deployment {
            Deployment::MayShrink => &nodes[..],
            Deployment::Keep => &[],
        };
        for &(path, floor, what) in [(&["clients", "count"][..], 2, "clients")].iter().chain(nodes) {
            let Some(start) = get_path(&self.best, path).and_then(Value::as_u64) else {
                continue;
            };
            let mut count = start;
            while count > floor {
                let mut candidate = self.best.clone();
                set_path(&mut candidate, path, json!(count - 1));
                if !self.try_candidate(candidate) {
                    break;
                }
                count -= 1;
            }
            if count < start {
                self.steps.push(format!("{what}: {start} → {count}"));
            }
        }
    }

    /// Pass 5: honest clocks and a constant latency, where the violation does not need them.
    fn plainer_environment(&mut self) {
        if self.best.get("clocks").is_some() {
            let mut candidate = self.best.clone();
            candidate
                .as_object_mut()
                .expect("a scenario is an object")
                .remove("clocks");
            if self.try_candidate(candidate) {
                self.steps.push("clock offsets and drift removed".into());
            }
        }
        if let Some(latency) = self.best["network"]["latency_ms"].as_array().cloned()
            && latency.len() == 2
            && latency[0] != latency[1]
        {
            let mut candidate = self.best.clone();
            candidate["network"]["latency_ms"] = json!([latency[0], latency[0]]);
            if self.try_candidate(candidate) {
                self.steps
                    .push(format!("network latency constant at {} ms", latency[0]));
            }
        }
    }

    /// Pass 6: every fault's trigger time (`at_ms`; an `on` fault's earliest time) moved
    /// earlier by one offset, keeping their order and spacing: the [`offsets`](Self::offsets)
    /// tried largest first, the first that still violates taken, then again from the new
    /// schedule. The run before a fault strikes is the same run, so a fault moved to the
    /// same moment of an earlier lock cycle meets that cycle's grant, and the cycles
    /// before it drop out of the run.
    fn earlier_faults(&mut self) {
        let before = self.earliest_fault_ms();
        while let Some(earliest) = self.earliest_fault_ms().filter(|&ms| ms > 0) {
            let moved = self.offsets(earliest).into_iter().any(|offset| {
                let faults = self
                    .faults()
                    .into_iter()
                    .map(|fault| shifted(fault, offset))
                    .collect();
                self.try_candidate(self.with_faults(faults))
            });
            if !moved {
                break;
            }
        }
        if let (Some(before), Some(after)) = (before, self.earliest_fault_ms())
            && after < before
        {
            self.steps.push(format!(
                "faults moved {} ms earlier (the first at {after} ms)",
                before - after
            ));
        }
    }

    /// The offsets (ms, largest first, none past `earliest`, the first fault's time) to
    /// move the faults earlier by: for each grant before the earliest grant the violation
    /// involves, the offset that puts the faults as far after it as they were after that
    /// grant; then `earliest` and its halves down to [`SHIFT_PRECISION_MS`]. Reading the
    /// grants spends one run.
    fn offsets(&mut self, earliest: u64) -> Vec<u64> {
        let mut offsets = BTreeSet::new();
        if !self.exhausted() {
            self.runs += 1;
            let parsed = load_str(Path::new("(shrinking)"), &self.best.to_string()).ok();
            if let Some(history) = parsed.and_then(|parsed| run_seed(&Arc::new(parsed), self.seed).ok()) {
                let involved_us = story::window(&history, &self.checker, &self.violation).from_us;
                offsets.extend(
                    history
                        .events
                        .iter()
                        .filter(|e| e.true_us < involved_us && matches!(e.kind, EventKind::Acquired { .. }))
                        .map(|grant| (involved_us - grant.true_us) / 1000)
                        .filter(|&offset| offset > 0 && offset <= earliest),
                );
            }
        }
        let mut offset = earliest;
        while offset >= SHIFT_PRECISION_MS.min(earliest) {
            offsets.insert(offset);
            offset /= 2;
        }
        offsets.into_iter().rev().collect()
    }

    /// The earliest trigger time of the faults, if there are any (`at_ms` absent is 0).
    fn earliest_fault_ms(&self) -> Option<u64> {
        self.faults()
            .iter()
            .map(|fault| fault["at_ms"].as_u64().unwrap_or(0))
            .min()
    }

    /// Pass 7: the shortest run that still violates (bisection on `duration_ms`).
    fn shorter_run(&mut self) {
        let Some(start) = self.best["duration_ms"].as_u64() else {
            return;
        };
        let (mut low, mut high) = (0, start);
        while high - low > SHORTEN_PRECISION_MS && !self.exhausted() {
            let middle = (low + high) / 2;
            let mut candidate = self.best.clone();
            candidate["duration_ms"] = json!(middle);
            if self.try_candidate(candidate) {
                high = middle;
            } else {
                low = middle;
            }
        }
        if high < start {
            self.steps.push(format!("run cut to {high} ms (from {start})"));
        }
    }
}

/// How close to the shortest violating duration the cut lands.
const SHORTEN_PRECISION_MS: u64 = 100;

/// The smallest offset the faults are moved earlier by, unless the first fault is closer
/// to 0 ms than that.
const SHIFT_PRECISION_MS: u64 = 100;

/// `fault` with its trigger time `offset` ms earlier (a fault without `at_ms` is at 0
/// already, and is never moved, since the offset is at most the earliest trigger time).
fn shifted(mut fault: Value, offset: u64) -> Value {
    if let Some(at_ms) = fault["at_ms"].as_u64() {
        fault["at_ms"] = json!(at_ms - offset);
    }
    fault
}

/// How many seeds the minimal scenario is tried on (and its file runs).
const NEIGHBOURS: u64 = 20;

/// Runs a shrink spends after its search: the [`NEIGHBOURS`] seeds and the replay of the
/// minimal run's story ([`Shrunk::story`]).
const RUNS_AFTER_SEARCH: u64 = NEIGHBOURS + 1;

/// The smallest budget a shrink can keep: its first run, and the runs after its search.
pub const MIN_SHRINK_RUNS: u64 = RUNS_AFTER_SEARCH + 1;

/// Half of a number (or of a `[min, max]` pair), when halving still means something.
fn halve(value: &Value) -> Option<Value> {
    match value {
        Value::Number(n) if n.is_u64() => {
            let n = n.as_u64()?;
            (n > 1).then(|| json!(n / 2))
        }
        Value::Number(n) if n.is_i64() => {
            let n = n.as_i64()?;
            (n.abs() > 1).then(|| json!(n / 2))
        }
        Value::Number(n) => {
            let n = n.as_f64()?;
            (n > 0.01).then(|| json!(n / 2.0))
        }
        Value::Array(pair) if pair.len() == 2 => Some(Value::Array(vec![halve(&pair[0])?, halve(&pair[1])?])),
        _ => None,
    }
}

fn get_path<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(*key))
}

fn set_path(value: &mut Value, path: &[&str], new: Value) {
    let mut target = value;
    for key in path {
        target = &mut target[*key];
    }
    *target = new;
}

/// Replaces every `random` fault by the faults its nemesis drew in this seed's run, with
/// the times they struck: the schedule made explicit, so it can be cut down.
fn materialise(scenario: &Value, parsed: &Arc<Scenario>, seed: u64) -> Option<Value> {
    let faults = scenario["faults"].as_array()?;
    if !faults.iter().any(|f| f["kind"] == "random") {
        return None;
    }
    let history = run_seed(parsed, seed).ok()?;
    let drawn: Vec<Value> = history
        .drawn
        .iter()
        .filter_map(|fault| serde_json::from_str(fault).ok())
        .collect();
    let mut explicit: Vec<Value> = faults.iter().filter(|f| f["kind"] != "random").cloned().collect();
    explicit.extend(drawn);
    let mut candidate = scenario.clone();
    candidate["faults"] = Value::Array(explicit);
    Some(candidate)
}

/// Shrinks the run of `scenario` (its file's JSON) on `seed` to a minimal scenario that
/// still violates `checker` (by default the first checker the run violates), within
/// `max_runs` simulated runs.
pub fn shrink(
    scenario: &Value,
    seed: u64,
    checker: Option<&str>,
    max_runs: u64,
) -> Result<Shrunk, ShrinkError> {
    let budget = Budget {
        max_runs,
        max_wall: None,
    };
    shrink_within(
        scenario,
        seed,
        checker,
        budget,
        Deployment::MayShrink,
        &mut |_| {},
    )
}

/// As [`shrink`], within `budget`, shrinking the deployment only if `deployment` lets it,
/// telling `progress` where it is at each run and pass.
pub fn shrink_within(
    scenario: &Value,
    seed: u64,
    checker: Option<&str>,
    budget: Budget,
    deployment: Deployment,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Shrunk, ShrinkError> {
    if budget.max_runs < MIN_SHRINK_RUNS {
        return Err(ShrinkError::Invalid(format!(
            "a budget of {} runs is too small: shrinking spends {RUNS_AFTER_SEARCH} after its search ({NEIGHBOURS} \
             other seeds and the story's replay); give at least {MIN_SHRINK_RUNS}",
            budget.max_runs
        )));
    }
    let parsed = Arc::new(
        load_str(Path::new("(shrinking)"), &scenario.to_string())
            .map_err(|e| ShrinkError::Invalid(e.to_string()))?,
    );
    let history = run_seed(&parsed, seed)
        .map_err(|e| ShrinkError::Invalid(format!("seed {seed}: the run failed: {e}")))?;
    let verdicts = check_all(&history, &parsed.check_settings());
    let fired = match checker {
        Some(name) => verdicts
            .iter()
            .find(|v| v.checker == name && v.violation.is_some()),
        None => verdicts.iter().find(|v| v.violation.is_some()),
    };
    let Some(fired) = fired else {
        return Err(match checker {
            Some(name) => ShrinkError::NoViolation {
                seed,
                checker: name.to_string(),
            },
            None => ShrinkError::NothingViolated { seed },
        });
    };
    let violation = fired.violation.clone().unwrap_or_default();
    let mut search = Search {
        seed,
        checker: fired.checker.to_string(),
        mechanism: Mechanism::told(&history, fired.checker, &violation).made_by(
            scenario["faults"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|fault| fault["kind"].as_str()),
        ),
        deployment,
        best: scenario.clone(),
        violation,
        runs: 1,
        max_runs: budget.max_runs - RUNS_AFTER_SEARCH,
        deadline: budget.max_wall.map(|wall| Instant::now() + wall),
        steps: Vec::new(),
        pass: "materialising the nemesis",
        refused: (0, BTreeSet::new()),
        progress,
    };
    search
        .best
        .as_object_mut()
        .expect("a scenario is an object")
        .remove("expect");
    search.enter("materialising the nemesis");
    if let Some(explicit) = materialise(&search.best, &parsed, seed) {
        let drawn = explicit["faults"].as_array().map_or(0, Vec::len);
        let refused = search.refused.0;
        if search.try_candidate(explicit) {
            search
                .steps
                .push(format!("nemesis materialised: {drawn} explicit faults"));
        } else if search.refused.0 == refused {
            search.steps.push(
                "the nemesis' faults, made explicit, do not violate on this seed: kept the nemesis".into(),
            );
        }
    }
    search.enter("delta debugging the faults");
    search.ddmin_faults();
    search.enter("simplifying each fault");
    search.simplify_faults();
    // A fault halved to nothing may now go: its removal no longer shifts what follows.
    search.enter("delta debugging the simplified faults");
    search.ddmin_faults();
    search.enter("fewer clients and nodes");
    search.smaller_world();
    search.enter("plainer clocks and network");
    search.plainer_environment();
    search.enter("moving the faults earlier");
    search.earlier_faults();
    search.enter("a shorter run");
    search.shorter_run();
    search.enter("trying other seeds");
    let checker = search.checker.clone();
    // The seeds the written file runs (0..NEIGHBOURS): its expectation holds if any does.
    let violating_neighbours = (0..NEIGHBOURS)
        .filter(|&s| violates(&search.best, s, &checker).is_some())
        .count() as u64;
    let mut minimal = search.best.clone();
    if let Some(name) = minimal["name"].as_str() {
        minimal["name"] = json!(format!("{name}-shrunk"));
    }
    minimal["seeds"] = json!(NEIGHBOURS);
    minimal["description"] = json!(format!(
        "Shrunk by locksim from seed {seed}: the smallest schedule found that still violates {checker} the same \
         way ({}). {}",
        search.mechanism,
        search.steps.join("; ")
    ));
    minimal["expect"] = json!({ checker.clone(): "violated" });
    Ok(Shrunk {
        scenario: minimal,
        seed,
        checker,
        violation: search.violation,
        steps: search.steps,
        runs: search.runs + RUNS_AFTER_SEARCH,
        neighbours: (violating_neighbours, NEIGHBOURS),
        mechanism: search.mechanism,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_keeps_the_shape_of_a_field() {
        assert_eq!(halve(&json!(4000)), Some(json!(2000)));
        assert_eq!(halve(&json!(-3000)), Some(json!(-1500)));
        assert_eq!(halve(&json!([100, 500])), Some(json!([50, 250])));
        assert_eq!(halve(&json!(1)), None);
        assert_eq!(halve(&json!("holder")), None);
    }
}
