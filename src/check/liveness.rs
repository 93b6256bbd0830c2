//! Liveness: the lock must not stay free for long while some client wants it.
//!
//! Mutual exclusion is easy to keep by never granting the lock; this checker catches the
//! opposite failure. The lock is *free* when no client holds it (no holding interval of
//! [`holdings`](super::mutual_exclusion::holdings) is active) and *wanted* while some
//! client waits for it (a [`Wait`]: from its `AcquireStarted`, through retries inside the
//! acquire and any further failed acquires, until it gets the lock or crashes). If the
//! lock stays free and wanted for longer than the bound, the clients made no progress:
//! Redlock contenders splitting the votes round after round (each takes a minority, all
//! release, all retry in lockstep), an unreachable Redis, a key that never expires.
//!
//! The bound must allow what an honest lock does: a holder that crashes leaves its key
//! for up to a TTL, and the waiters notice only at their next retry, so the default is
//! the TTL plus one retry cycle, as for `deadlock` ([`CheckSettings`]). A waiter frozen
//! by a pause fault still counts as wanting the lock: the history records a pause only
//! as the fault's text, and a pause longer than the bound of the only waiter is reported.

use super::by_node::ByNode;
use super::mutual_exclusion::Holding;
use super::{CheckSettings, Spans, Verdict};
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "liveness";

/// How a client's wait for the lock ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    Acquired,
    /// A crashed client wants nothing: its wait ends with it.
    Crashed,
    /// Still waiting when the run ended.
    RunEnded,
}

/// A span of true time during which one client wanted the lock and did not have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait<'h> {
    pub client: &'h str,
    pub from_us: u64,
    pub to_us: u64,
    pub end: WaitEnd,
}

/// Every client's waits, ordered by start. A wait opens at an `AcquireStarted` and stays
/// open through `AcquireFailed` and the next `AcquireStarted`: a client whose acquire gave
/// up pauses (its think time) and tries again, still wanting the lock.
pub fn waits(history: &History) -> Vec<Wait<'_>> {
    let mut open: ByNode<u64> = ByNode::default();
    let mut done = Vec::new();
    for event in &history.events {
        let end = match event.kind {
            EventKind::AcquireStarted => {
                open.or_insert_with(&event.node, || event.true_us);
                continue;
            }
            EventKind::Acquired { .. } => WaitEnd::Acquired,
            EventKind::Crashed => WaitEnd::Crashed,
            _ => continue,
        };
        if let Some(from_us) = open.remove(event.node.as_str()) {
            done.push(Wait {
                client: &event.node,
                from_us,
                to_us: event.true_us,
                end,
            });
        }
    }
    done.extend(open.into_sorted().into_iter().map(|(client, from_us)| Wait {
        client,
        from_us,
        to_us: history.end_us,
        end: WaitEnd::RunEnded,
    }));
    done.sort_by_key(|w| (w.from_us, w.to_us));
    done
}

/// The spans of true time during which some client waited and no client held the lock.
fn free_while_wanted(waits: &[Wait], holdings: &[Holding]) -> Vec<(u64, u64)> {
    // Each start and end: (instant, change in waiting clients, change in holders), summed
    // by instant once sorted.
    let mut changes: Vec<(u64, i64, i64)> = Vec::with_capacity(2 * (waits.len() + holdings.len()));
    for wait in waits {
        changes.extend([(wait.from_us, 1, 0), (wait.to_us, -1, 0)]);
    }
    for holding in holdings {
        changes.extend([(holding.from_us, 0, 1), (holding.to_us, 0, -1)]);
    }
    changes.sort_unstable_by_key(|&(at_us, ..)| at_us);
    let (mut waiting, mut holders) = (0, 0);
    let mut free_since = None;
    let mut spans = Vec::new();
    for (i, &(at_us, waiting_change, holders_change)) in changes.iter().enumerate() {
        waiting += waiting_change;
        holders += holders_change;
        if changes.get(i + 1).is_some_and(|&(next_us, ..)| next_us == at_us) {
            continue;
        }
        match (free_since, waiting > 0 && holders == 0) {
            (None, true) => free_since = Some(at_us),
            (Some(from_us), false) => {
                spans.push((from_us, at_us));
                free_since = None;
            }
            _ => {}
        }
    }
    spans
}

/// Finds the longest span the lock stayed free while wanted, if it exceeds the bound.
pub fn check(spans: &Spans, settings: &CheckSettings) -> Verdict {
    let bound_us = settings.liveness_bound_ms * 1000;
    let waits = &spans.waits;
    let longest = free_while_wanted(waits, &spans.holdings)
        .into_iter()
        .max_by_key(|&(from_us, to_us)| (to_us - from_us, std::cmp::Reverse(from_us)));
    let violation = longest
        .filter(|&(from_us, to_us)| to_us - from_us > bound_us)
        .map(|(from_us, to_us)| {
            let mut waiting: Vec<&str> = waits
                .iter()
                .filter(|w| w.from_us < to_us && w.to_us > from_us)
                .map(|w| w.client)
                .collect();
            waiting.sort_unstable();
            waiting.dedup();
            format!(
                "the lock stayed free for {} ms, from {} to {} ms, while {} wanted it; \
                 the bound is {} ms",
                fmt_ms((to_us - from_us) as i64),
                fmt_ms(from_us as i64),
                fmt_ms(to_us as i64),
                waiting.join(", "),
                settings.liveness_bound_ms,
            )
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

    fn verdict(end_ms: u64, events: Vec<crate::history::Event>) -> Option<String> {
        let history = history(end_ms, events);
        check(&Spans::of(&history), &SETTINGS).violation
    }

    #[test]
    fn contenders_taking_turns_keep_the_lock_live() {
        let events = vec![
            attempt(0, "client-1"),
            attempt(0, "client-2"),
            acquired(5, "client-1"),
            release(300, "client-1"),
            attempt(310, "client-1"),
            acquired(320, "client-2"),
            release(700, "client-2"),
            acquired(800, "client-1"),
        ];
        assert_eq!(verdict(1000, events), None);
    }

    #[test]
    fn split_votes_round_after_round_violate() {
        // Redlock contenders each take a minority, release, and retry in lockstep: every
        // attempt is inside one `acquire`, so no event shows between the start and the end.
        let events = vec![
            attempt(0, "client-1"),
            attempt(0, "client-2"),
            attempt(0, "client-3"),
            acquired(4000, "client-2"),
        ];
        let violation = verdict(5000, events).expect("no progress for 4 s");
        assert!(
            violation.contains("free for 4000.000 ms, from 0.000 to 4000.000"),
            "{violation}"
        );
        assert!(violation.contains("client-1, client-2, client-3"), "{violation}");
    }

    #[test]
    fn a_client_pausing_between_failed_acquires_still_wants_the_lock() {
        // One client, nobody holds the lock, every acquire gives up and it tries again.
        let events = vec![
            attempt(0, "client-1"),
            refused(1000, "client-1"),
            attempt(1050, "client-1"),
            timed_out(2050, "client-1"),
            attempt(2100, "client-1"),
            refused(3100, "client-1"),
        ];
        assert!(verdict(3150, events).is_some());
    }

    #[test]
    fn a_crashed_holders_key_living_out_its_ttl_is_within_the_bound() {
        // client-1 dies holding the lock; its key expires at 2100, client-2 notices at
        // its next retry and gets in at 2550: free 450..2550 = 2100 ms < 2500 ms.
        let events = vec![
            attempt(0, "client-1"),
            acquired(100, "client-1"),
            attempt(120, "client-2"),
            crashed(450, "client-1"),
            acquired(2550, "client-2"),
        ];
        assert_eq!(verdict(5000, events), None);
    }

    #[test]
    fn a_long_hold_is_no_loss_of_liveness() {
        // The lock is busy, not free: waiting behind a holder is starvation's business.
        let events = vec![
            attempt(0, "client-1"),
            acquired(10, "client-1"),
            attempt(20, "client-2"),
            release(9000, "client-1"),
            acquired(9010, "client-2"),
        ];
        assert_eq!(verdict(10_000, events), None);
    }

    #[test]
    fn nobody_wanting_the_lock_or_a_crashed_waiter_is_no_loss_of_liveness() {
        // Free for 9 s, but wanted only for 100 ms before the only waiter crashed.
        let events = vec![
            attempt(0, "client-1"),
            acquired(10, "client-1"),
            release(200, "client-1"),
            attempt(900, "client-2"),
            crashed(1000, "client-2"),
        ];
        assert_eq!(verdict(10_000, events), None);
    }

    #[test]
    fn a_wait_still_open_at_the_end_counts_up_to_the_end() {
        let events = vec![
            attempt(0, "client-1"),
            acquired(10, "client-1"),
            release(200, "client-1"),
            attempt(300, "client-2"),
        ];
        let violation = verdict(4000, events.clone()).expect("free and wanted 300..4000");
        assert!(violation.contains("from 300.000 to 4000.000"), "{violation}");
        assert_eq!(verdict(2500, events), None, "free and wanted only 2200 ms");
    }

    #[test]
    fn the_longest_free_span_is_reported() {
        let events = vec![
            attempt(0, "client-1"),
            acquired(2600, "client-1"),
            release(2700, "client-1"),
            attempt(2700, "client-1"),
            acquired(6000, "client-1"),
        ];
        let violation = verdict(7000, events).expect("two long free spans");
        assert!(violation.contains("from 2700.000 to 6000.000"), "{violation}");
    }

    #[test]
    fn waits_run_through_failed_acquires_and_end_at_a_grant_or_a_crash() {
        let events = vec![
            attempt(0, "client-1"),
            refused(100, "client-1"),
            attempt(150, "client-1"),
            acquired(200, "client-1"),
            attempt(300, "client-2"),
            crashed(400, "client-2"),
            attempt(500, "client-3"),
        ];
        let spans: Vec<(String, u64, u64, WaitEnd)> = waits(&history(1000, events))
            .into_iter()
            .map(|w| (w.client.to_string(), w.from_us / 1000, w.to_us / 1000, w.end))
            .collect();
        let expected = [
            ("client-1", 0, 200, WaitEnd::Acquired),
            ("client-2", 300, 400, WaitEnd::Crashed),
            ("client-3", 500, 1000, WaitEnd::RunEnded),
        ];
        assert_eq!(
            spans,
            expected.map(|(c, from, to, end)| (c.to_string(), from, to, end))
        );
    }
}
