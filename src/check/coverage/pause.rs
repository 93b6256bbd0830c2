//! `holder-paused-past-validity`: a client is paused (a GC pause, a VM stop) after a node
//! granted its acquire and before its next write, for longer than its lease had left: it
//! wakes with a lock that may be someone else's, and may write.
//!
//! The state is read from the Redis side and the schedule, not from the client's belief, so
//! that a careful client, which wakes, finds no validity left and records no grant, reaches
//! it too: a correct lock must survive the pause for its "holds" to mean anything. The
//! lease counts from the first node's yes, as the key's TTL on that node's clock (the
//! `key-set` just before the answer), until the client records its grant; from then on it
//! is the validity its grant or last renewal recorded, in true time. A pause counts if it
//! began while the lease still ran and before the client's first write under it, and ended
//! (or the run did) once the lease had run out.

use super::super::by_node::ByNode;
use super::KeyLog;
use crate::history::{Answer, EventKind, History};

/// When a client's lease runs out.
#[derive(Clone, Copy)]
enum Deadline<'a> {
    /// When this true time (µs) comes: the validity a grant or renewal recorded.
    True(u64),
    /// When this node's clock reads this (µs): the key's expiry on the first node that
    /// granted an acquire the client has not yet recorded.
    Node(&'a str, i64),
}

impl Deadline<'_> {
    /// Whether the lease had run out at true time `true_us`.
    fn passed(self, keys: &KeyLog, true_us: u64) -> bool {
        match self {
            Deadline::True(until_us) => until_us <= true_us,
            Deadline::Node(node, expires_at_us) => keys.local_us(node, true_us) >= expires_at_us,
        }
    }
}

/// A client's lease since a node granted its acquire: when it runs out (`None`: a lock
/// without expiry), and whether the client has written under it.
struct Lease<'a> {
    deadline: Option<Deadline<'a>>,
    wrote: bool,
}

/// The deadline of a grant or renewal of `validity_ms` recorded at `at_us`.
fn until(at_us: u64, validity_ms: u64) -> Option<Deadline<'static>> {
    (validity_ms != u64::MAX).then(|| Deadline::True(at_us.saturating_add(validity_ms.saturating_mul(1000))))
}

/// Whether some client was paused past its lease before its write.
pub(super) fn reached<'a>(history: &'a History, keys: &KeyLog<'a>) -> bool {
    let mut leases: ByNode<Lease> = ByNode::default();
    // Each frozen client's deadline.
    let mut frozen: ByNode<Deadline> = ByNode::default();
    for (at, event) in history.events.iter().enumerate() {
        let (client, now_us) = (event.node.as_str(), event.true_us);
        match &event.kind {
            EventKind::AcquireStarted
            | EventKind::AttemptFailed { .. }
            | EventKind::AcquireFailed { .. }
            | EventKind::ReleaseSent { .. } => {
                leases.remove(client);
            }
            EventKind::NodeAnswered {
                request: "acquire",
                redis,
                answer: Answer::Yes,
                ..
            } if leases.get(client).is_none() => {
                // The key the node said yes with; one already gone leaves no lease to outlast.
                if let Some((_, expires_at_us)) = keys.before(redis, at) {
                    let deadline = expires_at_us.map(|expiry| Deadline::Node(redis, expiry));
                    leases.insert(
                        client,
                        Lease {
                            deadline,
                            wrote: false,
                        },
                    );
                }
            }
            EventKind::Acquired { validity_ms, .. } => {
                leases.insert(
                    client,
                    Lease {
                        deadline: until(now_us, *validity_ms),
                        wrote: false,
                    },
                );
            }
            EventKind::Renewed { validity_ms } => {
                if let Some(lease) = leases.get_mut(client) {
                    lease.deadline = until(now_us, *validity_ms);
                }
            }
            EventKind::ResourceWrite { .. } | EventKind::ResourceRejected { .. } => {
                if let Some(lease) = leases.get_mut(client) {
                    lease.wrote = true;
                }
            }
            EventKind::Crashed => {
                leases.remove(client);
                frozen.remove(client);
            }
            EventKind::Paused => {
                if let Some(Lease {
                    deadline: Some(deadline),
                    wrote: false,
                }) = leases.get(client)
                    && !deadline.passed(keys, now_us)
                {
                    frozen.insert(client, *deadline);
                }
            }
            EventKind::Resumed => {
                let woke_past = frozen
                    .remove(client)
                    .is_some_and(|deadline| deadline.passed(keys, now_us));
                if woke_past {
                    return true;
                }
            }
            _ => {}
        }
    }
    frozen
        .values_mut()
        .any(|deadline| deadline.passed(keys, history.end_us))
}

#[cfg(test)]
mod tests {
    use super::super::KeyLog;
    use super::*;
    use crate::check::testing::*;
    use crate::history::Event;

    fn reached_by(events: Vec<Event>) -> bool {
        let run = history(10_000, events);
        reached(&run, &KeyLog::of(&run))
    }

    /// client-1 granted 2000 ms of validity at 1 ms; `more` follow, in time order.
    fn run(more: Vec<Event>) -> bool {
        let mut events = granted_by_redis_1();
        events.extend(more);
        reached_by(events)
    }

    fn paused(t: u64) -> Event {
        at(t, "client-1", EventKind::Paused)
    }

    fn resumed(t: u64) -> Event {
        at(t, "client-1", EventKind::Resumed)
    }

    #[test]
    fn a_pause_before_the_write_outlasting_the_validity_is_reached() {
        assert!(run(vec![paused(100), resumed(4100), write(4101, "client-1", 1)]));
        // Still frozen when the run ends.
        assert!(run(vec![paused(100)]));
    }

    #[test]
    fn a_short_pause_or_one_after_the_write_is_not() {
        assert!(!run(vec![paused(100), resumed(1100), write(1101, "client-1", 1)]));
        assert!(!run(vec![write(50, "client-1", 1), paused(100), resumed(4100)]));
    }

    #[test]
    fn a_renewal_before_the_pause_moves_the_validity() {
        let renewed = at(1900, "client-1", EventKind::Renewed { validity_ms: 2000 });
        assert!(!run(vec![renewed.clone(), paused(2000), resumed(3500)]));
        assert!(run(vec![renewed, paused(2000), resumed(4000)]));
    }

    /// The careful client's case: a node says yes to client-1 (its key set at 1 ms with a
    /// 2000 ms TTL), client-1 is paused inside the acquire until `resume_ms`, wakes, finds
    /// no validity left, records no grant and gives the lock back.
    fn inside_the_acquire(resume_ms: u64) -> bool {
        reached_by(vec![
            attempt(0, "client-1"),
            key_set(1, "redis-1", "client-1-token", 2000),
            answered(1, "client-1", "redis-1", Answer::Yes),
            paused(1),
            resumed(resume_ms),
            at(
                resume_ms + 1,
                "client-1",
                EventKind::AcquireFailed {
                    reason: "no validity left".into(),
                    contended: false,
                },
            ),
            release(resume_ms + 1, "client-1"),
        ])
    }

    #[test]
    fn a_pause_inside_the_acquire_past_the_ttl_is_reached_with_no_grant_recorded() {
        assert!(inside_the_acquire(2501));
    }

    #[test]
    fn a_pause_inside_the_acquire_within_the_ttl_is_not() {
        assert!(!inside_the_acquire(1501));
    }

    #[test]
    fn a_pause_of_a_client_no_node_said_yes_to_is_not() {
        assert!(!reached_by(vec![
            attempt(0, "client-1"),
            answered(1, "client-1", "redis-1", Answer::No),
            paused(1),
            resumed(4000),
        ]));
    }
}
