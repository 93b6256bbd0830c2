//! `release-after-expiry`: a release reaches a node that granted the lock after the
//! releasing client's key had already left it (expired, deleted, or replaced by another
//! client's), so whatever the release does there, it does to a lock that is not its own.
//!
//! Only the release of a hold counts (from its `release-sent` until the client's next
//! acquire; the clean-up of a failed attempt is not one), and only at a node of its quorum.
//! The node's answer says it: "not ours" means the key had left when the release came. A
//! release that deleted something came late too if the key was no longer the client's when
//! it was sent, or if, while it was on its way, the key expired or another client's key was
//! set there (a plain `DEL` then deletes the next holder's lock): the first change of the
//! key after the release was sent must be the release deleting it before its expiry. A
//! release that got no answer says nothing.

use super::super::by_node::ByNode;
use super::{Change, Hold, KeyLog, LatestHolds, live};
use crate::history::{Answer, EventKind, History};

/// Whether some release reached a granting node after the client's key had left it.
pub(super) fn reached(history: &History, holds: &[Hold], keys: &KeyLog) -> bool {
    // Each releasing client's release-sent event.
    let mut sent: ByNode<usize> = ByNode::default();
    let mut latest = LatestHolds::new(holds);
    history.events.iter().enumerate().any(|(at, event)| {
        let client = event.node.as_str();
        let (redis, answer) = match &event.kind {
            EventKind::ReleaseSent { .. } => {
                sent.insert(client, at);
                return false;
            }
            EventKind::AcquireStarted => {
                sent.remove(client);
                return false;
            }
            EventKind::NodeAnswered {
                request: "release",
                redis,
                answer,
                ..
            } => (redis.as_str(), answer),
            _ => return false,
        };
        let (Some(&sent_at), Some(hold)) = (sent.get(client), latest.before(client, at)) else {
            return false;
        };
        if !hold.quorum.contains(&redis) {
            return false;
        }
        match answer {
            Answer::No => true,
            Answer::Yes => {
                let sent_local_us = keys.local_us(redis, history.events[sent_at].true_us);
                let at_send = keys.before(redis, sent_at);
                if !live(at_send, hold.token, sent_local_us) {
                    return true;
                }
                let expires_at_us = at_send.and_then(|(_, at)| at);
                // The first change of the key since: the release deleting it in time, or
                // the key expiring, or another client's key set, before the release came.
                keys.between(redis, sent_at, at)
                    .iter()
                    .find(|(_, _, change)| !matches!(change, Change::Set(token, _) if *token == hold.token))
                    .is_some_and(|&(_, stamped_us, change)| match change {
                        Change::Gone(token) if token == hold.token => {
                            expires_at_us.is_some_and(|expiry| stamped_us >= expiry)
                        }
                        Change::Set(..) | Change::Gone(_) | Change::Wiped => true,
                    })
            }
            Answer::Failed(_) => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::{KeyLog, holds};
    use super::*;
    use crate::check::testing::*;
    use crate::history::Event;

    /// Redis node `redis-1` answered client-1's release at `t`.
    fn release_answered(t: u64, answer: Answer) -> Event {
        at(
            t,
            "client-1",
            EventKind::NodeAnswered {
                request: "release",
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
    fn a_release_in_time_deleting_its_own_key_is_not_late() {
        assert!(!run(vec![
            release(500, "client-1"),
            key_gone(505, "redis-1", "client-1-token"),
            release_answered(510, Answer::Yes),
        ]));
        // The next holder's key set while the answer is on its way changes nothing.
        assert!(!run(vec![
            release(500, "client-1"),
            key_gone(505, "redis-1", "client-1-token"),
            key_set(507, "redis-1", "client-2-token", 2000),
            release_answered(510, Answer::Yes),
        ]));
    }

    #[test]
    fn a_release_arriving_after_the_ttl_is_late() {
        assert!(run(vec![
            release(2500, "client-1"),
            release_answered(2510, Answer::No)
        ]));
    }

    #[test]
    fn a_release_deleting_the_next_holder_s_key_is_late() {
        // The key had gone before the release was sent …
        assert!(run(vec![
            key_gone(2001, "redis-1", "client-1-token"),
            key_set(2100, "redis-1", "client-2-token", 2000),
            release(2500, "client-1"),
            key_gone(2505, "redis-1", "client-2-token"),
            release_answered(2510, Answer::Yes),
        ]));
        // … or expired, and the next holder's came, while it was on its way.
        assert!(run(vec![
            release(1990, "client-1"),
            key_gone(2001, "redis-1", "client-1-token"),
            key_set(2100, "redis-1", "client-2-token", 2000),
            key_gone(2500, "redis-1", "client-2-token"),
            release_answered(2510, Answer::Yes),
        ]));
    }

    #[test]
    fn a_failed_attempt_s_clean_up_is_not_a_late_release() {
        assert!(!run(vec![
            release(500, "client-1"),
            key_gone(505, "redis-1", "client-1-token"),
            release_answered(510, Answer::Yes),
            attempt(600, "client-1"),
            release_answered(700, Answer::No),
        ]));
    }
}
