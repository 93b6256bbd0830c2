//! The shrink's state: the best scenario so far, the budget left, and the one way a
//! candidate is judged ([`Search::try_candidate`]: it still breaks the checker and keeps the
//! original's mechanism). The passes that make candidates are in `passes.rs`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::check::check_all;
use crate::scenario::load_str;
use crate::search::mechanism::Mechanism;
use crate::sweep::run_seed;

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
pub(super) struct Search<'p> {
    pub(super) seed: u64,
    pub(super) checker: String,
    /// What the original violation rested on: a candidate must keep it.
    pub(super) mechanism: Mechanism,
    pub(super) deployment: Deployment,
    pub(super) best: Value,
    pub(super) violation: String,
    pub(super) runs: u64,
    pub(super) max_runs: u64,
    pub(super) deadline: Option<Instant>,
    pub(super) steps: Vec<String>,
    pub(super) pass: &'static str,
    /// This pass's candidates that broke the checker but lost some of the mechanism: how
    /// many, and what they lost.
    pub(super) refused: (u64, BTreeSet<String>),
    pub(super) progress: &'p mut dyn FnMut(&Progress),
}

/// Runs `scenario` on `seed`: the violation message of `checker`, if it fired, and what
/// the run showed before it ([`Mechanism::shown`]).
pub(super) fn violates(scenario: &Value, seed: u64, checker: &str) -> Option<(String, Mechanism)> {
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
    pub(super) fn exhausted(&self) -> bool {
        self.runs >= self.max_runs || self.deadline.is_some_and(|at| Instant::now() >= at)
    }

    /// Starts pass `pass`, and says so.
    pub(super) fn enter(&mut self, pass: &'static str) {
        self.close_pass();
        self.pass = pass;
        self.report();
    }

    /// Ends the pass running now: a step line if it refused candidates that lost the
    /// mechanism.
    pub(super) fn close_pass(&mut self) {
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

    pub(super) fn report(&mut self) {
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
    pub(super) fn try_candidate(&mut self, candidate: Value) -> bool {
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

    pub(super) fn faults(&self) -> Vec<Value> {
        self.best["faults"].as_array().cloned().unwrap_or_default()
    }

    pub(super) fn with_faults(&self, faults: Vec<Value>) -> Value {
        let mut candidate = self.best.clone();
        candidate["faults"] = Value::Array(faults);
        candidate
    }
}
