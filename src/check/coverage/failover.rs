//! `failover-while-held` and `failover-unreplicated`: a replica promoted while a client
//! held a lock its old master granted, and, the dangerous case, a replica promoted while
//! the old master held a live lock key whose last write the promoted node never stored: the
//! key itself (the grant was not yet replicated, so the new master will grant the lock
//! again) or its renewal (the new master's copy expires early).
//!
//! `failover-unreplicated` is read from the Redis side, not from any client's belief: the
//! danger is the promotion over an unreplicated key, and a correct lock (one that WAITs for
//! the replica and fails the grant it did not get) must reach it too for its "holds" to
//! mean anything. Whether a client then believed it held the lost key is what the checkers
//! judge.

use super::{Change, Hold, KeyLog, Stored, live};
use crate::history::{EventKind, History};

/// Whether some failover came while a lock the replaced master granted was held, and
/// whether some failover promoted a node that never stored the key the replaced master
/// then held.
pub(super) fn reached(history: &History, holds: &[Hold], keys: &KeyLog) -> (bool, bool) {
    let (mut while_held, mut unreplicated) = (false, false);
    for (at, event) in history.events.iter().enumerate() {
        let EventKind::Failover { promoted, replaced } = &event.kind else {
            continue;
        };
        while_held |= holds
            .iter()
            .any(|hold| hold.open_at(at) && hold.quorum.contains(&replaced.as_str()));
        let held = held_by(history, keys, replaced, at);
        unreplicated |= held.is_some_and(|(token, expires_at_us)| {
            live(held, token, keys.local_us(replaced, event.true_us))
                && !covers(keys.before(promoted, at), token, expires_at_us)
        });
    }
    (while_held, unreplicated)
}

/// Whether `stored`, the promoted node's key, is `token`'s lasting at least until
/// `expires_at_us` (replication carries the master's absolute expiry): the replaced
/// master's last write of the key reached it.
fn covers(stored: Stored, token: &str, expires_at_us: Option<i64>) -> bool {
    stored.is_some_and(|(held, expiry)| {
        held == token
            && match (expiry, expires_at_us) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(expiry), Some(needed)) => expiry >= needed,
            }
    })
}

/// The lock key `node` held just before event `at`. A crash does not take it away here:
/// the failover replaces a master that died with the key, and the key is lost precisely
/// because no replica has it. A restart does (whatever its AOF brought back is recorded as
/// set again).
fn held_by<'a>(history: &History, keys: &KeyLog<'a>, node: &str, at: usize) -> Stored<'a> {
    let mut held = None;
    for &(change_at, _, change) in keys.nodes.get(node).map_or(&[][..], Vec::as_slice) {
        if change_at >= at {
            break;
        }
        match change {
            Change::Set(token, expires_at_us) => held = Some((token, expires_at_us)),
            Change::Gone(token) if held.is_some_and(|(held, _)| held == token) => held = None,
            Change::Wiped if matches!(history.events[change_at].kind, EventKind::Restarted) => held = None,
            Change::Gone(_) | Change::Wiped => {}
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::super::{KeyLog, holds};
    use super::*;
    use crate::check::testing::*;
    use crate::history::{Answer, Event};

    fn failover(t: u64) -> Event {
        at(
            t,
            "world",
            EventKind::Failover {
                promoted: "redis-1-replica-1".into(),
                replaced: "redis-1".into(),
            },
        )
    }

    fn reached_by(mut events: Vec<Event>) -> (bool, bool) {
        events.sort_by_key(|e| e.true_us);
        let run = history(10_000, events);
        reached(&run, &holds(&run), &KeyLog::of(&run))
    }

    /// client-1 granted by redis-1 at 1 ms (a 2000 ms TTL); the replica stores its key at
    /// `replicated_ms` if given; redis-1-replica-1 is promoted at 500 ms; client-1 releases
    /// at `release_ms` (the key leaving redis-1 5 ms later).
    fn run(replicated_ms: Option<u64>, release_ms: u64) -> (bool, bool) {
        let mut events = vec![
            attempt(0, "client-1"),
            key_set(1, "redis-1", "client-1-token", 2000),
            answered(1, "client-1", "redis-1", Answer::Yes),
            acquired(1, "client-1"),
            release(release_ms, "client-1"),
            key_gone(release_ms + 5, "redis-1", "client-1-token"),
            failover(500),
        ];
        if let Some(t) = replicated_ms {
            events.push(key_set(t, "redis-1-replica-1", "client-1-token", 2000));
        }
        reached_by(events)
    }

    #[test]
    fn a_failover_before_replication_while_held_is_unreplicated() {
        assert_eq!(run(None, 1000), (true, true));
    }

    #[test]
    fn a_failover_after_replication_is_held_but_replicated() {
        assert_eq!(run(Some(2), 1000), (true, false));
    }

    #[test]
    fn a_failover_over_a_renewal_never_streamed_is_unreplicated() {
        // The replica has the grant (to 2002 ms) but not the renewal at 1500 ms (to 3500 ms).
        let renewed = key_set(1500, "redis-1", "client-1-token", 2000);
        assert_eq!(
            reached_by(vec![
                attempt(0, "client-1"),
                key_set(1, "redis-1", "client-1-token", 2000),
                key_set(2, "redis-1-replica-1", "client-1-token", 2000),
                answered(1, "client-1", "redis-1", Answer::Yes),
                acquired(1, "client-1"),
                renewed,
                crashed(1520, "redis-1"),
                failover(1800),
            ]),
            (true, true)
        );
    }

    #[test]
    fn a_failover_after_the_release_reaches_neither() {
        assert_eq!(run(None, 400), (false, false));
    }

    /// The WAIT race: redis-1 sets client-1's key, crashes before streaming it, client-1's
    /// WAIT fails so it never records a grant, and the replica is promoted while the key
    /// (lost with redis-1) is still within its TTL. Nobody believes it holds, yet the
    /// promotion over the unreplicated key happened.
    fn wait_failed(failover_ms: u64, restart_ms: Option<u64>) -> (bool, bool) {
        let mut events = vec![
            attempt(0, "client-1"),
            key_set(1, "redis-1", "client-1-token", 2000),
            crashed(21, "redis-1"),
            answered(1001, "client-1", "redis-1", Answer::Failed("WAIT: 0 of 1".into())),
            at(
                1001,
                "client-1",
                EventKind::AttemptFailed {
                    attempt: 1,
                    reason: "not replicated".into(),
                },
            ),
            failover(failover_ms),
        ];
        if let Some(t) = restart_ms {
            events.push(at(t, "redis-1", EventKind::Restarted));
        }
        reached_by(events)
    }

    #[test]
    fn a_failover_over_a_key_no_client_believes_in_is_unreplicated() {
        assert_eq!(wait_failed(1500, None), (false, true));
    }

    #[test]
    fn a_failover_after_the_lost_key_expired_or_the_master_came_back_empty_is_not() {
        assert_eq!(wait_failed(2500, None), (false, false));
        assert_eq!(wait_failed(1500, Some(1000)), (false, false));
    }
}
