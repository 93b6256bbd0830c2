//! Checkers: one file per invariant, each a pure function of a run's [`History`].
//!
//! Every checker is proven both ways in its tests: a hand-written history that must
//! violate the invariant and one that must not.

pub mod deadlock;
pub mod liveness;
pub mod mutual_exclusion;
pub mod resource_safety;
pub mod stale_write;
pub mod starvation;
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
    /// The longest the lock may stay free while some client wants it.
    pub liveness_bound_ms: u64,
    /// The longest one client may wait for the lock while others get it.
    pub starvation_bound_ms: u64,
}

impl CheckSettings {
    /// Settings for a scenario: the slack is one full retry cycle (the longest retry
    /// sleep, a timed-out request, the longest think time) after the key expired. The
    /// bounds are the scenario's `checks`, or else: liveness, one worst-case hand-over
    /// (the holder died, its key lives out the TTL, a waiter notices within the slack);
    /// starvation, [`STARVATION_CYCLES`] of the longest lock cycles (the longer of the TTL
    /// and the longest critical section, then the slack).
    pub fn for_scenario(scenario: &Scenario) -> Self {
        let options = scenario.lock.options();
        let deadlock_slack_ms = options.retry.delay_ms
            + options.retry.jitter_ms
            + options.request_timeout_ms
            + scenario.clients.think_ms[1];
        let clients = &scenario.clients;
        let longest_section_ms = clients.longest_work_ms() + clients.write_delay_ms.map_or(0, |[_, max]| max);
        let longest_cycle_ms = options.ttl_ms.max(longest_section_ms) + deadlock_slack_ms;
        CheckSettings {
            ttl_ms: options.ttl_ms,
            deadlock_slack_ms,
            liveness_bound_ms: scenario
                .checks
                .liveness_bound_ms
                .unwrap_or(options.ttl_ms + deadlock_slack_ms),
            starvation_bound_ms: scenario
                .checks
                .starvation_bound_ms
                .unwrap_or(STARVATION_CYCLES * longest_cycle_ms),
        }
    }
}

/// The default starvation bound, in lock cycles at their longest: a waiter kept out for
/// five whole cycles, each of which it could have won, is not unlucky but starved.
pub const STARVATION_CYCLES: u64 = 5;

/// Runs every checker over one history.
pub fn check_all(history: &History, settings: &CheckSettings) -> Vec<Verdict> {
    vec![
        mutual_exclusion::check(history),
        resource_safety::check(history),
        stale_write::check(history),
        deadlock::check(history, settings),
        validity::check(history),
        liveness::check(history, settings),
        starvation::check(history, settings),
    ]
}
