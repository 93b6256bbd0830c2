//! The no-fault control: is a violation the faults' doing?
//!
//! An expectation of *violated* claims that the scenario's faults break the lock. That
//! holds only if the same seeds, run without the faults, do not break it: work longer than
//! the TTL, say, breaks a lock with no help from any fault. So for every checker a
//! scenario expects violated, the first [`CONTROL_SEEDS`] violating seeds run again with
//! the scenario's faults removed (scheduled faults, crash points and the nemesis alike;
//! clocks, network settings and the workload stay). Each fault draws from its own seeded
//! generator, made after every node's, so the control's clients, clocks and network draw
//! what they drew with the faults. A checker whose control violates too is *present
//! without the faults*, and its expectation of violated is not met.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::rate::Rate;
use crate::scenario::{Expectation, Scenario};
use crate::sweep::SeedRun;

/// How many violating seeds a control runs again, at most (the first ones).
pub const CONTROL_SEEDS: usize = 20;

/// The violating seeds of a scenario run again without its faults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Control {
    /// The seeds run without faults, in order.
    pub seeds: Vec<u64>,
    /// Checker name → the control seeds that violated it even so, in order.
    pub violations: BTreeMap<&'static str, Vec<u64>>,
    /// Control seeds whose run failed inside the simulator, with the message.
    pub errors: Vec<(u64, String)>,
}

/// Whether a checker's violations are the faults' doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// No control seed violated it: without the faults the violation goes away.
    CausedByFaults,
    /// Some control seed violated it too: the workload alone breaks it.
    PresentWithoutFaults,
    /// The scenario has no faults: its point is the workload itself (a late release, a
    /// critical section longer than the TTL), and nothing is there to take away.
    Workload,
}

impl Attribution {
    /// The words used in tables, JSON and messages.
    pub fn words(self) -> &'static str {
        match self {
            Attribution::CausedByFaults => "caused by the faults",
            Attribution::PresentWithoutFaults => "present without the faults",
            Attribution::Workload => "the workload itself (the scenario has no faults)",
        }
    }
}

impl Control {
    /// The seeds a control of `scenario` runs, given each checker's violating seeds: the
    /// first [`CONTROL_SEEDS`] seeds that violated a checker expected violated. None when
    /// the scenario has no faults (nothing to take away) or expects no violation.
    pub fn seeds_for(scenario: &Scenario, violations: &BTreeMap<&'static str, Vec<u64>>) -> Vec<u64> {
        if scenario.faults.is_empty() {
            return Vec::new();
        }
        let mut seeds: Vec<u64> = scenario
            .expect
            .entries()
            .into_iter()
            .filter(|(_, expected)| *expected == Expectation::Violated)
            .filter_map(|(checker, _)| violations.get(checker))
            .flatten()
            .copied()
            .collect();
        seeds.sort_unstable();
        seeds.dedup();
        seeds.truncate(CONTROL_SEEDS);
        seeds
    }

    /// The control made of `runs`, the runs of `seeds` without the faults (simulated, or
    /// live).
    pub fn from_runs(seeds: Vec<u64>, runs: Vec<SeedRun>) -> Control {
        let mut control = Control {
            seeds,
            ..Control::default()
        };
        for run in runs {
            match run.outcome {
                Ok(summary) => {
                    for verdict in summary.verdicts.iter().filter(|v| v.violation.is_some()) {
                        control
                            .violations
                            .entry(verdict.checker)
                            .or_default()
                            .push(run.seed);
                    }
                }
                Err(message) => control.errors.push((run.seed, message)),
            }
        }
        control
    }

    /// How many control seeds violated `checker`, over those that ran to the end.
    pub fn rate(&self, checker: &str) -> Rate {
        Rate {
            violating: self.violations.get(checker).map_or(0, Vec::len) as u64,
            seeds: (self.seeds.len() - self.errors.len()) as u64,
        }
    }

    /// Whether `checker`'s violations are the faults' doing (`None` when no control seed
    /// ran to the end).
    pub fn attribution(&self, checker: &str) -> Option<Attribution> {
        let rate = self.rate(checker);
        match (rate.seeds, rate.violating) {
            (0, _) => None,
            (_, 0) => Some(Attribution::CausedByFaults),
            _ => Some(Attribution::PresentWithoutFaults),
        }
    }

    /// The first control seed that violated `checker`, if any.
    pub fn first_violating(&self, checker: &str) -> Option<u64> {
        self.violations
            .get(checker)
            .and_then(|seeds| seeds.first().copied())
    }

    /// The JSON form of `checker`'s control.
    pub fn to_json(&self, checker: &str) -> Value {
        let rate = self.rate(checker);
        json!({
            "seeds": rate.seeds,
            "violating": rate.violating,
            "violating_seeds": self.violations.get(checker).cloned().unwrap_or_default(),
            "attribution": self.attribution(checker).map(Attribution::words),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::check;
    use crate::scenario;

    fn load(name: &str) -> Scenario {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name);
        scenario::load(&file).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_control_reruns_the_first_seeds_that_broke_an_expected_violation() {
        let scenario = load("single-node-gc-pause.json");
        let mut violations = BTreeMap::new();
        violations.insert(check::mutual_exclusion::NAME, (0..30).rev().collect::<Vec<u64>>());
        violations.insert(check::deadlock::NAME, vec![100]);
        let seeds = Control::seeds_for(&scenario, &violations);
        // deadlock is expected to hold: its seed is no evidence for a violation.
        assert_eq!(seeds, (0..CONTROL_SEEDS as u64).collect::<Vec<_>>());
        assert!(Control::seeds_for(&scenario.without_faults(), &violations).is_empty());
    }
}
