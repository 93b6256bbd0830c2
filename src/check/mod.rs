//! Checkers: one file per invariant, each a pure function of a run's [`History`].
//!
//! Every checker is proven both ways in its tests: a hand-written history that must
//! violate the invariant and one that must not.

pub mod deadlock;
pub mod mutual_exclusion;
pub mod resource_safety;
pub mod stale_write;
pub mod validity;

#[cfg(test)]
mod testing;

use crate::history::History;
use crate::scenario::Scenario;

/// One checker's judgement of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The checker's name, as used in a scenario's `expect`.
    pub checker: &'static str,
    /// `None` when the invariant held; otherwise what broke it, in words.
    pub violation: Option<String>,
}

/// What the checkers need to know of the scenario beyond the history itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSettings {
    /// The lock's time to live.
    pub ttl_ms: u64,
    /// How long after a key could have expired a waiting client may take to notice.
    pub deadlock_slack_ms: u64,
}

impl CheckSettings {
    /// Settings for a scenario: the slack is one full retry cycle (the longest retry
    /// sleep, a timed-out request, the longest think time) after the key expired.
    pub fn for_scenario(scenario: &Scenario) -> Self {
        let options = scenario.lock.options();
        CheckSettings {
            ttl_ms: options.ttl_ms,
            deadlock_slack_ms: options.retry.delay_ms
                + options.retry.jitter_ms
                + options.request_timeout_ms
                + scenario.clients.think_ms[1],
        }
    }
}

/// Runs every checker over one history.
pub fn check_all(history: &History, settings: &CheckSettings) -> Vec<Verdict> {
    vec![
        mutual_exclusion::check(history),
        resource_safety::check(history),
        stale_write::check(history),
        deadlock::check(history, settings),
        validity::check(history),
    ]
}
