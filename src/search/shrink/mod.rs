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

mod passes;
mod search;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use self::search::{Deployment, Progress};
use self::search::{Search, violates};
use super::mechanism::Mechanism;
use super::story;
use crate::check::check_all;
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

/// How much a shrink may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Simulated runs.
    pub max_runs: u64,
    /// Host time, if bounded.
    pub max_wall: Option<Duration>,
}

/// How many seeds the minimal scenario is tried on (and its file runs).
const NEIGHBOURS: u64 = 20;

/// Runs a shrink spends after its search: the [`NEIGHBOURS`] seeds and the replay of the
/// minimal run's story ([`Shrunk::story`]).
const RUNS_AFTER_SEARCH: u64 = NEIGHBOURS + 1;

/// The smallest budget a shrink can keep: its first run, and the runs after its search.
pub const MIN_SHRINK_RUNS: u64 = RUNS_AFTER_SEARCH + 1;

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
