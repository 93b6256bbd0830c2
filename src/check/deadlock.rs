//! Deadlock freedom: when a holder dies, the lock must become available again.
//!
//! After a client crashes while holding the lock, its key must expire within the TTL,
//! and a waiting client must notice within one retry cycle (`deadlock_slack_ms`). If
//! Redis still refuses acquires after that (it answers "held", so the key is there) and
//! nobody acquires, the lock is stuck — the defect of tiers 1 and 2 of the ladder, whose
//! key has no expiry. Attempts that got no answer (a partition, a dead node) say nothing
//! about the key and do not count: that is unavailability, not deadlock.

use super::mutual_exclusion::holdings;
use super::{CheckSettings, Verdict};
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "deadlock";

/// Finds the first crash of a holder after which the lock stayed unavailable too long.
pub fn check(history: &History, settings: &CheckSettings) -> Verdict {
    let bound_us = (settings.ttl_ms + settings.deadlock_slack_ms) * 1000;
    let holdings = holdings(history);
    let crashed_holders = history.events.iter().filter(|crash| {
        matches!(crash.kind, EventKind::Crashed)
            && holdings
                .iter()
                .any(|h| h.client == crash.node && h.to_us == crash.true_us)
    });
    let violation = crashed_holders.into_iter().find_map(|crash| {
        let deadline_us = crash.true_us + bound_us;
        let later = || history.events.iter().filter(|e| e.true_us > crash.true_us);
        let next_grant = later().find(|e| matches!(e.kind, EventKind::Acquired { .. }));
        let stuck_until_us = next_grant.map_or(history.end_us, |e| e.true_us);
        let refused_after_deadline = later().any(|e| {
            e.true_us > deadline_us
                && e.true_us <= stuck_until_us
                && matches!(e.kind, EventKind::AcquireFailed { contended: true, .. })
        });
        (stuck_until_us > deadline_us && refused_after_deadline).then(|| {
            format!(
                "{} crashed holding the lock at {} ms; Redis still refused other clients and nobody \
                 acquired it {}, past the TTL ({} ms) plus one retry cycle ({} ms)",
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
                refused(5000, "client-2"),
            ],
        );
        let violation = check(&history, &SETTINGS).violation.expect("stuck lock");
        assert!(violation.contains("client-1 crashed"), "{violation}");
    }

    #[test]
    fn a_crash_while_not_holding_or_an_unreachable_redis_is_no_deadlock() {
        let idle = history(10_000, vec![acquired(100, "client-1"), crashed(200, "client-1")]);
        assert_eq!(check(&idle, &SETTINGS).violation, None);
        let not_holding = history(
            10_000,
            vec![
                acquired(100, "client-1"),
                release(150, "client-1"),
                crashed(200, "client-1"),
                refused(5000, "client-2"),
            ],
        );
        assert_eq!(check(&not_holding, &SETTINGS).violation, None);
        let unreachable = history(
            10_000,
            vec![
                acquired(100, "client-1"),
                crashed(200, "client-1"),
                timed_out(5000, "client-2"),
            ],
        );
        assert_eq!(
            check(&unreachable, &SETTINGS).violation,
            None,
            "no answer is not a deadlock"
        );
    }
}
