//! Checkers: one file per invariant, each a pure function of a run's [`History`].
//!
//! Every checker is proven both ways in its tests: a hand-written history that must
//! violate the invariant and one that must not.

pub mod mutual_exclusion;

use crate::history::History;

/// One checker's judgement of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The checker's name, as used in a scenario's `expect`.
    pub checker: &'static str,
    /// `None` when the invariant held; otherwise what broke it, in words.
    pub violation: Option<String>,
}

/// Runs every checker over one history.
pub fn check_all(history: &History) -> Vec<Verdict> {
    vec![mutual_exclusion::check(history)]
}
