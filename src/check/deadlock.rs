//! Deadlock freedom: when a holder dies, the lock must become available again.
//!
//! After a client crashes anywhere in the lock's life (acquiring — it may already have
//! set the key —, holding, or releasing), its key must expire within the TTL. The lock is
//! deadlocked when, after such a crash and before anyone is granted the lock again, Redis
//! keeps refusing acquires ("held": the key is there) over a span longer than the TTL plus
//! one retry cycle (`deadlock_slack_ms`) while no live client holds the lock — the defect
//! of tiers 1 and 2 of the ladder, and of a lock taken without TTL. A refusal is any node
//! answering an acquire that the key is held, not only an acquire that gave up: a client
//! that blocks for ever (redis-py's `blocking_timeout=None`) never fails, it is refused
//! every 100 ms until the run ends. The window is measured between refusals, not from the
//! crash: a request of the dead client still in flight may set its key later. It ends
//! where the first key left a node: the lock was free there, and refusals after that (late
//! requests racing for it once a paused Redis wakes) are contention, not the dead
//! client's key. Attempts that got no answer (a partition, a dead node) say nothing about
//! the key: unavailability, not deadlock.

use super::by_node::ByNode;
use super::mutual_exclusion::Holding;
use super::{CheckSettings, Verdict};
use crate::history::{Answer, Event, EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "deadlock";

/// Crashes of clients that were between starting an acquire and finishing a release.
fn crashes_in_the_lock(history: &History) -> Vec<&Event> {
    let mut busy: ByNode<()> = ByNode::default();
    let mut crashes = Vec::new();
    for event in &history.events {
        match event.kind {
            EventKind::AcquireStarted => {
                busy.insert(&event.node, ());
            }
            EventKind::AcquireFailed { .. }
            | EventKind::Released { .. }
            | EventKind::ReleaseFailed { .. } => {
                busy.remove(&event.node);
            }
            EventKind::Crashed if busy.remove(&event.node).is_some() => crashes.push(event),
            _ => {}
        }
    }
    crashes
}

/// Whether the event is Redis refusing an acquire because the key is held: a node's
/// answer, or an acquire that gave up for that reason.
fn is_refusal(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::AcquireFailed { contended: true, .. }
            | EventKind::NodeAnswered {
                request: "acquire",
                answer: Answer::No,
                ..
            }
    )
}

/// The events of `events` after true time `true_us`. A history's events are in the order
/// they happened, so their true times never go down: a binary search finds where they
/// start, where the checker scanned from the history's start at every crash (issue 33).
fn after(events: &[Event], true_us: u64) -> &[Event] {
    &events[events.partition_point(|e| e.true_us <= true_us)..]
}

/// The events of `events` up to true time `true_us`, inclusive (see [`after`]).
fn until(events: &[Event], true_us: u64) -> &[Event] {
    &events[..events.partition_point(|e| e.true_us <= true_us)]
}

/// Finds the first crash of a holder after which the lock stayed unavailable too long;
/// `holdings` are the history's.
pub fn check(history: &History, holdings: &[Holding], settings: &CheckSettings) -> Verdict {
    let bound_us = (settings.ttl_ms + settings.deadlock_slack_ms) * 1000;
    let violation = crashes_in_the_lock(history).into_iter().find_map(|crash| {
        let later = after(&history.events, crash.true_us);
        let next_grant = later
            .iter()
            .find(|e| matches!(e.kind, EventKind::Acquired { .. }));
        let stuck_until_us = next_grant.map_or(history.end_us, |e| e.true_us);
        let stuck = until(later, stuck_until_us);
        let first = stuck.iter().find(|e| is_refusal(&e.kind))?.true_us;
        // A key leaving a node freed the lock there: the refusals after it are another story.
        let freed_us = after(later, first)
            .iter()
            .find(|e| matches!(e.kind, EventKind::KeyGone { .. }))
            .map_or(stuck_until_us, |e| e.true_us);
        let last = until(stuck, freed_us)
            .iter()
            .rfind(|e| is_refusal(&e.kind))?
            .true_us;
        // A live client holding the lock explains the refusals (a watchdog may keep it).
        let live_holder = holdings.iter().any(|h| h.from_us < last && h.to_us > first);
        (last - first > bound_us && !live_holder).then(|| {
            format!(
                "{} crashed inside the lock at {} ms; Redis kept refusing every client from {} to {} ms \
                 with no holder alive, longer than the TTL ({} ms) plus one retry cycle ({} ms)",
                crash.node,
                fmt_ms(crash.true_us as i64),
                fmt_ms(first as i64),
                fmt_ms(last as i64),
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
    use crate::check::mutual_exclusion::holdings;
    use crate::check::testing::*;

    fn check(history: &History, settings: &CheckSettings) -> Verdict {
        super::check(history, &holdings(history), settings)
    }

    /// client-1 starts an acquire at 50 ms and is granted the lock at 100 ms.
    fn holder() -> Vec<Event> {
        vec![attempt(50, "client-1"), acquired(100, "client-1")]
    }

    #[test]
    fn a_lock_that_expires_after_its_holder_crashed_is_no_deadlock() {
        let mut events = holder();
        events.extend([
            crashed(200, "client-1"),
            refused(1500, "client-2"),
            acquired(2150, "client-2"),
        ]);
        assert_eq!(check(&history(10_000, events), &SETTINGS).violation, None);
    }

    #[test]
    fn a_lock_never_freed_after_its_holder_crashed_is_a_deadlock() {
        let mut events = holder();
        events.extend([
            crashed(200, "client-1"),
            refused(1000, "client-2"),
            refused(3000, "client-3"),
            refused(5000, "client-2"),
        ]);
        let violation = check(&history(10_000, events), &SETTINGS)
            .violation
            .expect("stuck lock");
        assert!(violation.contains("client-1 crashed"), "{violation}");
    }

    /// client-2 blocks for ever: every attempt refused by redis-1, none ever gives up.
    fn blocking_refusals(from_ms: u64, to_ms: u64) -> Vec<Event> {
        let attempts = (from_ms..=to_ms).step_by(100).enumerate();
        let mut events = vec![attempt(from_ms - 1, "client-2")];
        for (i, t) in attempts {
            events.push(answered(t, "client-2", "redis-1", Answer::No));
            let reason = "the lock is held by another client".to_string();
            let attempt = i as u32 + 1;
            events.push(at(t, "client-2", EventKind::AttemptFailed { attempt, reason }));
        }
        events
    }

    #[test]
    fn a_client_refused_for_ever_without_giving_up_is_deadlocked() {
        let mut events = holder();
        events.push(crashed(200, "client-1"));
        events.extend(blocking_refusals(300, 9_900));
        let violation = check(&history(10_000, events), &SETTINGS)
            .violation
            .expect("refused for ever");
        assert!(violation.contains("from 300.000 to 9900.000 ms"), "{violation}");
    }

    #[test]
    fn a_blocking_client_refused_only_while_the_key_lives_is_no_deadlock() {
        let mut events = holder();
        events.push(crashed(200, "client-1"));
        events.extend(blocking_refusals(300, 2_100));
        events.push(acquired(2_200, "client-2"));
        assert_eq!(check(&history(10_000, events), &SETTINGS).violation, None);
    }

    #[test]
    fn refusals_on_both_sides_of_the_key_leaving_are_no_deadlock() {
        // The dead client's key expires at 2100 ms; Redis then pauses, and requests that
        // waited for it race for the lock and refuse each other at 9000 ms.
        let mut events = holder();
        events.push(crashed(200, "client-1"));
        events.extend(blocking_refusals(300, 2_000));
        events.push(key_gone(2_100, "redis-1", "client-1-token"));
        events.extend(blocking_refusals(9_000, 9_000));
        assert_eq!(check(&history(10_000, events), &SETTINGS).violation, None);
    }

    #[test]
    fn a_crash_in_the_middle_of_an_acquire_counts() {
        // Tier 2: SETNX succeeded, the client died before EXPIRE and before "acquired".
        let events = vec![
            attempt(50, "client-1"),
            crashed(60, "client-1"),
            refused(100, "client-2"),
            refused(5000, "client-2"),
        ];
        assert!(check(&history(10_000, events), &SETTINGS).violation.is_some());
    }

    #[test]
    fn refusals_shorter_than_a_ttl_or_explained_by_a_live_holder_are_no_deadlock() {
        // The dead client's SET was applied late, so its key lived one TTL from then.
        let mut late_key = holder();
        late_key.extend([
            crashed(200, "client-1"),
            refused(6000, "client-2"),
            refused(7500, "client-3"),
        ]);
        assert_eq!(check(&history(10_000, late_key), &SETTINGS).violation, None);
        let mut renewed = vec![attempt(10, "client-3"), acquired(20, "client-3")];
        renewed.extend([attempt(50, "client-1"), crashed(60, "client-1")]);
        renewed.extend([refused(100, "client-2"), refused(5000, "client-2")]);
        assert_eq!(check(&history(10_000, renewed), &SETTINGS).violation, None);
    }

    #[test]
    fn a_crash_while_idle_or_an_unreachable_redis_is_no_deadlock() {
        let mut idle = holder();
        idle.extend([
            release(150, "client-1"),
            at(155, "client-1", EventKind::Released { owned: true }),
            crashed(200, "client-1"),
            refused(300, "client-2"),
            refused(5000, "client-2"),
        ]);
        assert_eq!(check(&history(10_000, idle), &SETTINGS).violation, None);
        let mut unreachable = holder();
        unreachable.extend([crashed(200, "client-1"), timed_out(5000, "client-2")]);
        let verdict = check(&history(10_000, unreachable), &SETTINGS);
        assert_eq!(verdict.violation, None, "no answer is not a deadlock");
    }
}
