//! What one matrix cell shows, read once for the page, the PNG and the comparisons: both
//! levels of safety (did two clients believe they held the lock; did the data come to
//! harm), whether fencing absorbed the overlap (only a setup whose lock fences can), and
//! the liveness lost (a deadlock, a lock left free while clients wanted it).

use serde_json::{Value, json};

use super::ScenarioReport;
use super::rate::Rate;
use crate::check;

/// The checkers that judge safety: two holders at once, and the data's harm (a lost
/// update, a stale token accepted).
pub const SAFETY_CHECKERS: [&str; 3] = [
    check::mutual_exclusion::NAME,
    check::resource_safety::NAME,
    check::stale_write::NAME,
];

/// Both levels of safety together, from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Safety {
    /// Nothing broke, but no seed contended for the lock after the faults: nothing shown.
    NotExercised,
    /// No two clients held the lock at once and no data came to harm, in enough seeds to
    /// say so ([`HOLDS_SEEDS`](super::rate::HOLDS_SEEDS)).
    Holds,
    /// No violation, but in too few seeds to call it *holds*: "no violation in 50 seeds
    /// (< 7%)".
    NoneSeen,
    /// Two clients believed they held the lock at once, but no data came to harm.
    OverlapNoDamage,
    /// Data came to harm: an update was lost or a stale token accepted.
    Damage,
}

impl Safety {
    /// The word a table and `summary.json` use.
    pub fn word(self) -> &'static str {
        match self {
            Safety::NotExercised => "not exercised",
            Safety::Holds => "holds",
            Safety::NoneSeen => "no violation seen",
            Safety::OverlapNoDamage => "overlap, no damage",
            Safety::Damage => "damage",
        }
    }
}

/// The liveness checkers a cell shows, with the word it uses for each.
pub const LIVENESS: [(&str, &str); 2] = [
    (check::deadlock::NAME, "deadlock"),
    (check::liveness::NAME, "stalled"),
];

/// One cell's seeds, as every view of the matrix reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub safety: Safety,
    /// Seeds in which two clients believed they held the lock at once.
    pub overlap: Rate,
    /// Seeds in which data came to harm ([`ScenarioReport::damage_rate`]).
    pub damage: Rate,
    /// Whether the setup fences and its overlaps did no harm: the storage refused every
    /// stale token.
    pub absorbed: bool,
    /// Seeds that contended for the lock after every fault.
    pub exercised: u64,
    /// Each liveness checker that fired, by its word ([`LIVENESS`]), with its rate.
    pub stuck: Vec<(&'static str, Rate)>,
}

impl Outcome {
    /// The outcome of a cell's sweep; `fenced` says whether the setup's lock hands out
    /// fencing tokens (from its configuration).
    pub fn of(report: &ScenarioReport, fenced: bool) -> Outcome {
        let overlap = report.rate(check::mutual_exclusion::NAME);
        let damage = report.damage_rate();
        let exercised = report.exercised_seeds();
        let safety = if damage.violating > 0 {
            Safety::Damage
        } else if overlap.violating > 0 {
            Safety::OverlapNoDamage
        } else if exercised > 0 && !report.unreached_aims().is_empty() {
            // Its faults aim at a dangerous state no seed reached: nothing was shown.
            Safety::NotExercised
        } else if exercised > 0 && overlap.holds() {
            Safety::Holds
        } else if exercised > 0 {
            Safety::NoneSeen
        } else {
            Safety::NotExercised
        };
        let stuck = LIVENESS
            .iter()
            .map(|&(checker, word)| (word, report.rate(checker)))
            .filter(|(_, rate)| rate.violating > 0)
            .collect();
        Outcome {
            safety,
            overlap,
            damage,
            absorbed: fenced && safety == Safety::OverlapNoDamage,
            exercised,
            stuck,
        }
    }

    /// Seeds run.
    pub fn seeds(&self) -> u64 {
        self.overlap.seeds
    }

    /// The first line of a cell: "overlap 50/50", or "not exercised".
    pub fn overlap_text(&self) -> String {
        match self.safety {
            Safety::NotExercised => "not exercised".into(),
            _ => format!("overlap {}/{}", self.overlap.violating, self.overlap.seeds),
        }
    }

    /// The second line: "damage 48/50", "absorbed: no damage" (a fenced overlap),
    /// "no damage".
    pub fn damage_text(&self) -> String {
        if self.damage.violating > 0 {
            format!("damage {}/{}", self.damage.violating, self.damage.seeds)
        } else if self.absorbed {
            "absorbed: no damage".into()
        } else {
            "no damage".into()
        }
    }

    /// The liveness lost, if any: "deadlock 9/50, stalled 41/50".
    pub fn stuck_text(&self) -> Option<String> {
        let parts: Vec<String> = self
            .stuck
            .iter()
            .map(|(word, rate)| format!("{word} {}/{}", rate.violating, rate.seeds))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        json!({
            "safety": self.safety.word(),
            "overlap": {"violating": self.overlap.violating, "seeds": self.overlap.seeds},
            "damage": {"violating": self.damage.violating, "seeds": self.damage.seeds},
            "overlap_absorbed": self.absorbed,
            "exercised_seeds": self.exercised,
            "liveness_lost": self.stuck.iter().map(|(word, rate)| json!({
                "word": word, "violating": rate.violating, "seeds": rate.seeds,
            })).collect::<Vec<_>>(),
        })
    }
}
