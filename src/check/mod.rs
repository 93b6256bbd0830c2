//! Checkers: one file per invariant, each a pure function of a run's [`History`].
//!
//! Every checker is proven both ways in its tests: a hand-written history that must
//! violate the invariant and one that must not.

mod by_node;
pub mod coverage;
pub mod deadlock;
pub mod evidence;
pub mod liveness;
pub mod mutual_exclusion;
pub mod resource_safety;
pub mod stale_write;
pub mod starvation;
pub mod validity;

#[cfg(test)]
mod testing;

use crate::history::History;
use liveness::{Wait, waits};
use mutual_exclusion::{Holding, holdings};

/// One checker's judgement of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The checker's name, as used in a scenario's `expect`.
    pub checker: &'static str,
    /// `None` when the invariant held; otherwise what broke it, in words.
    pub violation: Option<String>,
}

/// What the checkers (and the [`evidence`] rule) need to know of the scenario beyond the
/// history itself; `Scenario::check_settings` fills it in.
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
    /// How many faults the scenario schedules.
    pub faults: usize,
    /// Grants needed after every fault for a run to count as exercised.
    pub min_grants_after_fault: u64,
}

/// The default starvation bound, in lock cycles at their longest: a waiter kept out for
/// five whole cycles, each of which it could have won, is not unlucky but starved.
pub const STARVATION_CYCLES: u64 = 5;

/// Every checker's name, in the order [`check_all`] judges.
pub const NAMES: [&str; 7] = [
    mutual_exclusion::NAME,
    resource_safety::NAME,
    stale_write::NAME,
    deadlock::NAME,
    validity::NAME,
    liveness::NAME,
    starvation::NAME,
];

/// Who held the lock when and who waited for it when, over one history: found once and
/// read by every checker (and the [`evidence`] rule) that needs them, instead of each
/// walking the history for them again (issue 33).
pub struct Spans<'h> {
    /// [`holdings`], ordered by start.
    pub holdings: Vec<Holding<'h>>,
    /// [`waits`], ordered by start.
    pub waits: Vec<Wait<'h>>,
}

impl<'h> Spans<'h> {
    pub fn of(history: &'h History) -> Self {
        Spans {
            holdings: holdings(history),
            waits: waits(history),
        }
    }
}

/// Runs every checker over one history.
pub fn check_all(history: &History, settings: &CheckSettings) -> Vec<Verdict> {
    check_with(history, &Spans::of(history), settings)
}

/// [`check_all`] with the history's spans already found.
pub fn check_with(history: &History, spans: &Spans, settings: &CheckSettings) -> Vec<Verdict> {
    vec![
        mutual_exclusion::check(&spans.holdings),
        resource_safety::check(history),
        stale_write::check(history),
        deadlock::check(history, &spans.holdings, settings),
        validity::check(history),
        liveness::check(spans, settings),
        starvation::check(spans, settings),
    ]
}
