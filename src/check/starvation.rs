//! Starvation: no client may be kept waiting for long while others keep getting the lock.
//!
//! A Redis lock has no queue: whoever's `SET NX` lands first after the key goes away wins.
//! A client that releases and asks again at once is usually first (its request follows
//! its own release), while the others poll on a fixed retry timer and keep finding the
//! key taken. The lock is live — `liveness` holds — yet one client never gets it.
//!
//! A client's wait ([`waits`](super::liveness::waits)) runs from its `AcquireStarted`
//! through any failed acquires until it is granted the lock; a crash ends it (a dead client wants nothing), and a
//! wait still open at the end of the run counts up to the end. What counts against the
//! bound is the part of the wait during which *other clients held the lock*: time the
//! lock stood free while the client waited is a loss of progress for everyone, which
//! `liveness` reports, not unfairness to this client.

use super::liveness::{Wait, WaitEnd};
use super::mutual_exclusion::Holding;
use super::{CheckSettings, Spans, Verdict};
use crate::history::fmt_ms;

/// The checker's name in scenario files and reports.
pub const NAME: &str = "starvation";

/// What other clients did while one waited.
struct Behind {
    /// How long some other client held the lock during the wait (overlaps counted once).
    held_us: u64,
    /// How many times other clients were granted it during the wait.
    grants: usize,
}

/// The holdings ordered by start, and how far they reach: `reach_us[i]` is the latest end
/// among the first `i + 1`, so a wait skips at once every holding that ended before it.
struct Timeline<'s, 'h> {
    holdings: &'s [Holding<'h>],
    reach_us: Vec<u64>,
}

impl<'s, 'h> Timeline<'s, 'h> {
    fn of(holdings: &'s [Holding<'h>]) -> Self {
        let reach_us = holdings
            .iter()
            .scan(0, |reach, holding| {
                *reach = holding.to_us.max(*reach);
                Some(*reach)
            })
            .collect();
        Timeline { holdings, reach_us }
    }

    /// The holdings that may touch `wait`: from the first not ended before it began, to
    /// the last begun before it ended (the others add no time and no grant).
    fn during(&self, wait: &Wait) -> impl Iterator<Item = &'s Holding<'h>> {
        let first = self.reach_us.partition_point(|&reach| reach < wait.from_us);
        let to_us = wait.to_us;
        self.holdings[first..]
            .iter()
            .take_while(move |holding| holding.from_us < to_us)
    }
}

/// The other clients' holdings during `wait`.
fn behind(wait: &Wait, timeline: &Timeline) -> Behind {
    let (mut held_us, mut grants, mut covered_to_us) = (0, 0, wait.from_us);
    for holding in timeline.during(wait).filter(|h| h.client != wait.client) {
        grants += usize::from((wait.from_us..wait.to_us).contains(&holding.from_us));
        let (from_us, to_us) = (holding.from_us.max(covered_to_us), holding.to_us.min(wait.to_us));
        if to_us > from_us {
            held_us += to_us - from_us;
            covered_to_us = to_us;
        }
    }
    Behind { held_us, grants }
}

/// Finds the wait spent longest behind other holders, if that is longer than the bound.
pub fn check(spans: &Spans, settings: &CheckSettings) -> Verdict {
    let timeline = Timeline::of(&spans.holdings);
    let violation = spans
        .waits
        .iter()
        .map(|wait| (behind(wait, &timeline), wait))
        .filter(|(behind, _)| behind.held_us > settings.starvation_bound_ms * 1000)
        .max_by_key(|(behind, wait)| (behind.held_us, std::cmp::Reverse(wait.from_us)))
        .map(|(behind, wait)| {
            let ending = match wait.end {
                WaitEnd::Acquired => "when it got the lock",
                WaitEnd::Crashed => "when it crashed",
                WaitEnd::RunEnded => "when the run ended, still waiting",
            };
            format!(
                "{} waited {} ms for the lock, from {} to {} ms ({ending}), {} ms of it while \
                 other clients held it (they acquired it {} times); the bound is {} ms",
                wait.client,
                fmt_ms((wait.to_us - wait.from_us) as i64),
                fmt_ms(wait.from_us as i64),
                fmt_ms(wait.to_us as i64),
                fmt_ms(behind.held_us as i64),
                behind.grants,
                settings.starvation_bound_ms,
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
    use crate::history::Event;

    fn verdict(end_ms: u64, events: Vec<Event>) -> Option<String> {
        let history = history(end_ms, events);
        check(&Spans::of(&history), &SETTINGS).violation
    }

    /// client-1 takes the lock for 500 ms and asks again at once, `rounds` times from
    /// `from_ms`, while client-2 started waiting at 0.
    fn greedy_holder(from_ms: u64, rounds: u64) -> Vec<Event> {
        let mut events = vec![attempt(0, "client-2")];
        for round in 0..rounds {
            let t = from_ms + round * 500;
            events.extend([
                attempt(t, "client-1"),
                acquired(t + 5, "client-1"),
                release(t + 500, "client-1"),
            ]);
        }
        events
    }

    #[test]
    fn a_client_that_never_gets_in_while_another_keeps_winning_starves() {
        let mut events = greedy_holder(0, 14);
        events.push(acquired(7100, "client-2"));
        let violation = verdict(8000, events).expect("client-2 waited 7.1 s");
        assert!(
            violation.contains("client-2 waited 7100.000 ms")
                && violation.contains("when it got the lock")
                && violation.contains("acquired it 14 times"),
            "{violation}"
        );
        assert!(
            violation.contains("6930.000 ms of it while other clients held it"),
            "{violation}"
        );
    }

    #[test]
    fn waiting_through_failed_acquires_is_one_wait() {
        // redis-py gives up after its retries and the workload asks again: still waiting.
        let mut events = greedy_holder(0, 14);
        events.extend([
            refused(3000, "client-2"),
            attempt(3050, "client-2"),
            refused(6050, "client-2"),
        ]);
        events.extend([attempt(6100, "client-2"), acquired(7100, "client-2")]);
        assert!(verdict(8000, events).is_some());
    }

    #[test]
    fn a_short_wait_or_a_wait_nobody_else_won_is_no_starvation() {
        let mut short = greedy_holder(0, 8);
        short.push(acquired(4100, "client-2"));
        assert_eq!(verdict(8000, short), None, "4.1 s is within the 5 s bound");
        // Nobody got the lock at all: no progress, which liveness reports.
        let stuck = vec![attempt(0, "client-1"), attempt(0, "client-2")];
        assert_eq!(verdict(10_000, stuck), None);
        // One grant, then the key outlived its crashed holder: an outage, not unfairness.
        let outage = vec![
            attempt(0, "client-2"),
            attempt(0, "client-1"),
            acquired(5, "client-1"),
            crashed(300, "client-1"),
            refused(9000, "client-2"),
        ];
        assert_eq!(verdict(10_000, outage), None);
    }

    #[test]
    fn holders_overlapping_each_other_count_once() {
        // client-1 and client-3 both believe they hold the lock over 1000..6000.
        let events = vec![
            attempt(0, "client-2"),
            acquired(1000, "client-1"),
            acquired(1000, "client-3"),
            release(6000, "client-3"),
            release(6000, "client-1"),
        ];
        assert_eq!(verdict(7000, events.clone()), None, "5 s behind others, not 10 s");
        let mut longer = events;
        longer.extend([acquired(6100, "client-1"), release(6300, "client-1")]);
        let violation = verdict(7000, longer).expect("5.2 s behind others");
        assert!(
            violation.contains("5200.000 ms of it") && violation.contains("3 times"),
            "{violation}"
        );
    }

    #[test]
    fn a_holding_begun_long_before_the_wait_counts_past_shorter_ones_ended_before_it() {
        // client-1 holds from 100 ms to the end; client-3's short hold ends before client-2
        // starts waiting, so the holdings' ends are not in order of their starts.
        let events = vec![
            acquired(100, "client-1"),
            acquired(200, "client-3"),
            release(300, "client-3"),
            attempt(1000, "client-2"),
        ];
        let violation = verdict(7000, events).expect("6 s behind client-1");
        assert!(
            violation.contains("6000.000 ms of it") && violation.contains("0 times"),
            "{violation}"
        );
    }

    #[test]
    fn a_crash_ends_the_wait() {
        let mut events = greedy_holder(0, 14);
        events.push(crashed(4000, "client-2"));
        assert_eq!(verdict(8000, events.clone()), None, "waited 4 s, then died");
        // Waiting again after a restart is a new wait.
        events.extend([
            at(4500, "client-2", crate::history::EventKind::Restarted),
            attempt(4510, "client-2"),
        ]);
        assert_eq!(verdict(8000, events), None, "3.5 s since the restart");
    }

    #[test]
    fn a_wait_still_open_at_the_end_counts_only_past_the_bound() {
        let events = greedy_holder(0, 20);
        let violation = verdict(10_000, events.clone()).expect("10 s and still waiting");
        assert!(violation.contains("still waiting"), "{violation}");
        assert_eq!(verdict(4900, events), None, "4.9 s is within the bound");
    }

    #[test]
    fn the_longest_starving_wait_is_reported() {
        let mut events = greedy_holder(0, 30);
        events.extend([acquired(5600, "client-2"), release(5700, "client-2")]);
        events.extend([attempt(5800, "client-2"), acquired(14_000, "client-2")]);
        let violation = verdict(15_000, events).expect("two long waits");
        assert!(violation.contains("from 5800.000 to 14000.000"), "{violation}");
    }
}
