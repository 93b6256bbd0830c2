//! Whether a run is evidence at all: a checker that found nothing proves something only
//! if the lock was actually contended for after the faults struck.
//!
//! A run where the scheduled fault never fired, or after which nobody was granted the lock
//! again (every acquire failing behind a WAIT no replica can satisfy, say), cannot have
//! broken mutual exclusion after the fault, so "holds" would say nothing. Such a run is
//! *not exercised*. This is not a checker: it judges the run, not the lock, and a
//! violation found in a run that is not exercised still counts.

use std::fmt;

use super::liveness::{Wait, WaitEnd};
use crate::history::{EventKind, History, fmt_ms};

/// What one run did with its faults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// Grants over the whole run.
    pub grants: u64,
    /// How long the run lasted (true time, µs): grants over it are the lock's throughput.
    pub run_us: u64,
    /// The longest any client waited for the lock and got it (through failed acquires,
    /// until the grant), in µs: a wait a crash or the run's end cut short measures the run,
    /// not the lock, and is left out.
    pub longest_wait_us: u64,
    /// One entry per scheduled fault, in the scenario's order.
    pub faults: Vec<FaultEvidence>,
}

/// One scheduled fault in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultEvidence {
    /// True time of its first strike; `None` when its trigger never fired.
    pub struck_us: Option<u64>,
    /// Grants of the lock recorded after that strike.
    pub grants_after: u64,
}

/// Why a run is not evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotExercised {
    /// Fault number `fault` (0-based) never struck.
    NeverStruck { fault: usize },
    /// Only `grants` grants followed the strike of fault number `fault` (or, without
    /// faults, the whole run had only that many), fewer than `needed`.
    TooFewGrants {
        fault: Option<usize>,
        grants: u64,
        needed: u64,
    },
}

impl fmt::Display for NotExercised {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NotExercised::NeverStruck { fault } => write!(f, "fault #{} never struck", fault + 1),
            NotExercised::TooFewGrants {
                fault: Some(fault),
                grants,
                needed,
            } => write!(
                f,
                "{grants} grant(s) of the lock after fault #{} struck, {needed} needed",
                fault + 1
            ),
            NotExercised::TooFewGrants {
                fault: None,
                grants,
                needed,
            } => write!(
                f,
                "{grants} grant(s) of the lock in the whole run, {needed} needed"
            ),
        }
    }
}

/// Counts the grants after each of the `faults` scheduled faults struck; `waits` are the
/// history's ([`waits`](super::liveness::waits)).
pub fn evidence(history: &History, waits: &[Wait], faults: usize) -> Evidence {
    // The position of each grant in the log: a grant follows a strike when it was recorded
    // after it, which tells apart events of the same microsecond.
    let grants: Vec<usize> = history
        .events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event.kind, EventKind::Acquired { .. }))
        .map(|(at, _)| at)
        .collect();
    let faults = (0..faults)
        .map(|fault| {
            let strike = history.strikes.iter().find(|strike| strike.fault == fault);
            FaultEvidence {
                struck_us: strike.map(|strike| strike.true_us),
                grants_after: strike.map_or(0, |strike| {
                    grants.iter().filter(|&&at| at >= strike.events_before).count() as u64
                }),
            }
        })
        .collect();
    let longest_wait_us = waits
        .iter()
        .filter(|wait| wait.end == WaitEnd::Acquired)
        .map(|wait| wait.to_us - wait.from_us)
        .max()
        .unwrap_or(0);
    Evidence {
        grants: grants.len() as u64,
        run_us: history.end_us,
        longest_wait_us,
        faults,
    }
}

impl Evidence {
    /// Whether every fault struck and at least `min_grants` grants followed each (the
    /// latest strike decides); without faults, whether the run had `min_grants` grants.
    pub fn exercised(&self, min_grants: u64) -> Result<(), NotExercised> {
        if let Some(fault) = self.faults.iter().position(|f| f.struck_us.is_none()) {
            return Err(NotExercised::NeverStruck { fault });
        }
        let fewest = self
            .faults
            .iter()
            .enumerate()
            .min_by_key(|(_, f)| f.grants_after)
            .map(|(i, f)| (Some(i), f.grants_after))
            .unwrap_or((None, self.grants));
        match fewest {
            (fault, grants) if grants < min_grants => Err(NotExercised::TooFewGrants {
                fault,
                grants,
                needed: min_grants,
            }),
            _ => Ok(()),
        }
    }

    /// One line per fault, for a replay: when it struck and how many grants followed.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("grants: {} in the whole run", self.grants)];
        for (i, fault) in self.faults.iter().enumerate() {
            lines.push(match fault.struck_us {
                None => format!("fault #{}: never struck", i + 1),
                Some(at) => format!(
                    "fault #{}: struck at {} ms, {} grant(s) after it",
                    i + 1,
                    fmt_ms(at as i64),
                    fault.grants_after
                ),
            });
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{acquired, history};
    use super::*;
    use crate::history::Strike;

    fn evidence(history: &History, faults: usize) -> Evidence {
        super::evidence(history, &super::super::liveness::waits(history), faults)
    }

    /// `history` with fault `fault` struck at `at_ms`, after every event before then.
    fn struck(mut history: History, fault: usize, at_ms: u64) -> History {
        let true_us = at_ms * 1000;
        history.strikes.push(Strike {
            fault,
            true_us,
            events_before: history.events.iter().filter(|e| e.true_us < true_us).count(),
            on: Default::default(),
        });
        history
    }

    #[test]
    fn the_grant_a_holder_fault_waited_for_is_not_a_grant_after_it() {
        // The fault struck in the microsecond of client-1's grant, after it was recorded.
        let mut run = history(10_000, vec![acquired(5000, "client-1")]);
        run.strikes.push(Strike {
            fault: 0,
            true_us: 5_000_000,
            events_before: 1,
            on: Default::default(),
        });
        assert_eq!(evidence(&run, 1).faults[0].grants_after, 0);
        assert!(evidence(&run, 1).exercised(1).is_err());
    }

    #[test]
    fn a_grant_after_every_fault_is_exercised() {
        let run = history(
            10_000,
            vec![acquired(1000, "client-1"), acquired(6000, "client-2")],
        );
        let run = struck(struck(run, 0, 2000), 1, 5000);
        let evidence = evidence(&run, 2);
        assert_eq!(evidence.grants, 2);
        assert_eq!(evidence.faults[0].grants_after, 1);
        assert_eq!(evidence.exercised(1), Ok(()));
        assert_eq!(
            evidence.exercised(2),
            Err(NotExercised::TooFewGrants {
                fault: Some(0),
                grants: 1,
                needed: 2
            })
        );
    }

    #[test]
    fn no_grant_after_the_fault_is_not_exercised() {
        let run = struck(history(10_000, vec![acquired(1000, "client-1")]), 0, 5000);
        let not = evidence(&run, 1).exercised(1).unwrap_err();
        assert_eq!(
            not,
            NotExercised::TooFewGrants {
                fault: Some(0),
                grants: 0,
                needed: 1
            }
        );
        assert_eq!(
            not.to_string(),
            "0 grant(s) of the lock after fault #1 struck, 1 needed"
        );
    }

    #[test]
    fn a_fault_that_never_struck_is_not_exercised() {
        let run = struck(history(10_000, vec![acquired(6000, "client-1")]), 0, 5000);
        assert_eq!(
            evidence(&run, 2).exercised(1),
            Err(NotExercised::NeverStruck { fault: 1 })
        );
    }

    #[test]
    fn without_faults_the_whole_run_counts() {
        let idle = history(10_000, vec![]);
        assert!(evidence(&idle, 0).exercised(1).is_err());
        let busy = history(10_000, vec![acquired(10, "client-1")]);
        assert_eq!(evidence(&busy, 0).exercised(1), Ok(()));
    }
}
