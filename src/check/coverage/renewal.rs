//! `renewal-racing-expiry`: a renewal (a watchdog's, or an explicit extend) that lost its
//! race with the key: it reached a granting node after the key had left it, or its answer
//! came back (or the client gave up on it) after the key there had expired or left, so the
//! client learns of its renewal when the lock it renews is already gone.
//!
//! The node's answer says when it came too late: "not ours" (an extend that compares found
//! nothing to extend), or "extended" over a key that had left that node during the hold or
//! expired before being set again (an extend that sets a missing key silently re-acquires).
//! When the answer came back is the true time the client recorded it, read on the node's
//! clock, against the key as the node then held it.

use super::{Change, Hold, KeyLog, LatestHolds, Stored, live};
use crate::history::{Answer, EventKind, History};

/// Whether some renewal reached or was answered by a granting node after the key left it.
pub(super) fn reached(history: &History, holds: &[Hold], keys: &KeyLog) -> bool {
    let mut latest = LatestHolds::new(holds);
    history.events.iter().enumerate().any(|(at, event)| {
        let EventKind::NodeAnswered {
            request: "extend",
            redis,
            answer,
            ..
        } = &event.kind
        else {
            return false;
        };
        let Some(hold) = latest
            .before(&event.node, at)
            .filter(|hold| hold.quorum.contains(&redis.as_str()))
        else {
            return false;
        };
        let landed_late = match answer {
            Answer::No => true,
            Answer::Yes => left_and_came_back(
                keys.before(redis, hold.from),
                keys.between(redis, hold.from, at),
                hold.token,
            ),
            Answer::Failed(_) => false,
        };
        let answered_late = !live(
            keys.before(redis, at),
            hold.token,
            keys.local_us(redis, event.true_us),
        );
        landed_late || answered_late
    })
}

/// Whether `token`'s key, stored as `first` on one node and then changed by `changes`, left
/// (deleted, expired, replaced) or expired, and was then set again.
fn left_and_came_back(first: Stored, changes: &[(usize, i64, Change)], token: &str) -> bool {
    let mut left = false;
    let mut expires_at_us = first.filter(|(held, _)| *held == token).and_then(|(_, at)| at);
    for &(_, stamped_us, change) in changes {
        match change {
            Change::Gone(gone) if gone == token => left = true,
            Change::Set(set, expiry) if set == token => {
                if left || expires_at_us.is_some_and(|at| stamped_us >= at) {
                    return true;
                }
                expires_at_us = expiry;
            }
            Change::Set(..) | Change::Gone(_) | Change::Wiped => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::{KeyLog, holds};
    use super::*;
    use crate::check::testing::*;
    use crate::history::Event;

    /// Redis node `redis-1` answered client-1's extend; the answer reached it at `t`.
    fn extend_answered(t: u64, answer: Answer) -> Event {
        at(
            t,
            "client-1",
            EventKind::NodeAnswered {
                request: "extend",
                redis: "redis-1".into(),
                answer,
                redis_local_us: (t * 1000) as i64,
            },
        )
    }

    /// client-1 granted at 1 ms with a 2000 ms TTL; `more` follow, in time order.
    fn run(more: Vec<Event>) -> bool {
        let mut events = granted_by_redis_1();
        events.extend(more);
        let run = history(10_000, events);
        reached(&run, &holds(&run), &KeyLog::of(&run))
    }

    #[test]
    fn a_renewal_in_time_answered_in_time_does_not_race() {
        assert!(!run(vec![
            key_set(700, "redis-1", "client-1-token", 2000),
            extend_answered(710, Answer::Yes),
        ]));
    }

    #[test]
    fn a_renewal_landing_after_the_key_left_races() {
        // It finds the key gone (compare-and-expire refuses) …
        assert!(run(vec![
            key_gone(2001, "redis-1", "client-1-token"),
            extend_answered(2600, Answer::No),
        ]));
        // … or sets it again, after it expired unseen or was deleted, and says yes.
        assert!(run(vec![
            key_set(2600, "redis-1", "client-1-token", 2000),
            extend_answered(2610, Answer::Yes),
        ]));
        assert!(run(vec![
            key_gone(2001, "redis-1", "client-1-token"),
            key_set(2600, "redis-1", "client-1-token", 2000),
            extend_answered(2610, Answer::Yes),
        ]));
    }

    #[test]
    fn a_renewal_answered_after_the_renewed_key_expired_races() {
        assert!(run(vec![
            key_set(700, "redis-1", "client-1-token", 1000),
            extend_answered(2200, Answer::Yes),
        ]));
    }
}
