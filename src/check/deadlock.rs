//! Deadlock freedom: when a holder dies, the lock must become available again.
//!
//! After a client crashes while holding the lock, its key must expire within the TTL,
//! and a waiting client must notice within one retry cycle (`deadlock_slack_ms`). If
//! clients keep trying and nobody acquires by then, the lock is stuck — the defect of
//! tiers 1 and 2 of the ladder, whose key has no expiry.

use super::mutual_exclusion::holdings;
use super::{CheckSettings, Verdict};
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "deadlock";

/// Finds the first crash of a holder after which the lock stayed unavailable too long.
pub fn check(history: &History, settings: &CheckSettings) -> Verdict {
    let bound_us = (settings.ttl_ms + settings.deadlock_slack_ms) * 1000;
    let crashed_holders = history.events.iter().filter(|crash| {
        matches!(crash.kind, EventKind::Crashed)
            && holdings(history)
                .iter()
                .any(|h| h.client == crash.node && h.to_us == crash.true_us)
    });
    let violation = crashed_holders.into_iter().find_map(|crash| {
        let deadline_us = crash.true_us + bound_us;
        let after = |e: &&crate::history::Event| e.true_us > crash.true_us;
        let next_grant = history
            .events
            .iter()
            .filter(after)
            .find(|e| matches!(e.kind, EventKind::Acquired { .. }));
        let stuck_until_us = next_grant.map_or(history.end_us, |e| e.true_us);
        let someone_waited = history.events.iter().filter(after).any(|e| {
            e.true_us > deadline_us
                && e.true_us <= stuck_until_us
                && matches!(
                    e.kind,
                    EventKind::AcquireStarted | EventKind::AcquireFailed { .. }
                )
        });
        (stuck_until_us > deadline_us && someone_waited).then(|| {
            format!(
                "{} crashed holding the lock at {} ms; clients kept trying but nobody acquired it {}, \
                 past the TTL ({} ms) plus one retry cycle ({} ms)",
                crash.node,
                fmt_ms(crash.true_us as i64),
                match next_grant {
                    Some(grant) => format!("until {} ms", fmt_ms(grant.true_us as i64)),
                    None => "before the run ended".to_string(),
                },
                settings.ttl_ms,
                settings.deadlock_slack_ms,
            )
        })
    });
    Verdict {
        checker: NAME,
        violation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::*;

    const SETTINGS: CheckSettings = CheckSettings {
        ttl_ms: 2000,
        deadlock_slack_ms: 500,
    };

    #[test]
    fn a_lock_that_expires_after_its_holder_crashed_is_no_deadlock() {
        let history = history(
            10_000,
            vec![
                acquired(100, "client-1"),
                crashed(200, "client-1"),
                attempt(300, "client-2"),
                acquired(2150, "client-2"),
            ],
        );
        assert_eq!(check(&history, &SETTINGS).violation, None);
    }

    #[test]
    fn a_lock_never_freed_after_its_holder_crashed_is_a_deadlock() {
        let history = history(
            10_000,
            vec![
                acquired(100, "client-1"),
                crashed(200, "client-1"),
                attempt(300, "client-2"),
                attempt(5000, "client-2"),
            ],
        );
        let violation = check(&history, &SETTINGS).violation.expect("stuck lock");
        assert!(violation.contains("client-1 crashed"), "{violation}");
    }

    #[test]
    fn a_crash_while_not_holding_or_a_lock_nobody_wants_is_no_deadlock() {
        let idle = history(10_000, vec![acquired(100, "client-1"), crashed(200, "client-1")]);
        assert_eq!(check(&idle, &SETTINGS).violation, None);
        let not_holding = history(
            10_000,
            vec![
                acquired(100, "client-1"),
                release(150, "client-1"),
                crashed(200, "client-1"),
                attempt(5000, "client-2"),
            ],
        );
        assert_eq!(check(&not_holding, &SETTINGS).violation, None);
    }
}
