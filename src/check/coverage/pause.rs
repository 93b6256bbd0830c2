//! `holder-paused-past-validity`: a client is paused (a GC pause, a VM stop) after its
//! grant and before its write, and the validity it counts on runs out while it is frozen:
//! it wakes believing in a lock that may be someone else's, and writes.
//!
//! The pause must start once the client holds the lock (its validity is then what its
//! grant or last renewal said, counted in true time) and before its first write under the
//! grant. A pause can also strike inside the acquire, after a node said yes and before the
//! client recorded its grant (the `after_acquire` step): the grant recorded on waking then
//! says how much validity was left, and none left means it ran out while frozen.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Answer, EventKind, History};

/// What a client was doing when it froze.
#[derive(Clone, Copy)]
enum Frozen {
    /// Holding, unwritten, believing its lock lasts until this true time (µs; `None`: a
    /// lock without expiry).
    Holding { since_us: u64, until_us: Option<u64> },
    /// Inside an acquire that a node had already granted.
    Granting,
}

/// A client's belief in its lock while it holds it.
struct Belief {
    until_us: Option<u64>,
    wrote: bool,
}

/// The true time `validity_ms` after `at_us`; `None` for a lock without expiry.
fn until(at_us: u64, validity_ms: u64) -> Option<u64> {
    (validity_ms != u64::MAX).then(|| at_us.saturating_add(validity_ms.saturating_mul(1000)))
}

/// Whether a pause that began holding ran past the validity, if it ends at `end_us`.
fn ran_out(frozen: Frozen, end_us: u64) -> bool {
    matches!(frozen, Frozen::Holding { since_us, until_us: Some(until_us) }
        if since_us < until_us && until_us <= end_us)
}

/// Whether some holder was paused past its validity before its write.
pub(super) fn reached(history: &History) -> bool {
    let mut granted: BTreeSet<&str> = BTreeSet::new();
    let mut beliefs: BTreeMap<&str, Belief> = BTreeMap::new();
    let mut frozen: BTreeMap<&str, Frozen> = BTreeMap::new();
    let mut woke_granting: BTreeSet<&str> = BTreeSet::new();
    for event in &history.events {
        let (client, now_us) = (event.node.as_str(), event.true_us);
        match &event.kind {
            EventKind::AcquireStarted | EventKind::AttemptFailed { .. } | EventKind::AcquireFailed { .. } => {
                granted.remove(client);
                woke_granting.remove(client);
            }
            EventKind::NodeAnswered {
                request: "acquire",
                answer: Answer::Yes,
                ..
            } => {
                granted.insert(client);
            }
            EventKind::Acquired { validity_ms, .. } => {
                granted.remove(client);
                if woke_granting.remove(client) && *validity_ms == 0 {
                    return true;
                }
                let until_us = until(now_us, *validity_ms);
                beliefs.insert(
                    client,
                    Belief {
                        until_us,
                        wrote: false,
                    },
                );
            }
            EventKind::Renewed { validity_ms } => {
                if let Some(belief) = beliefs.get_mut(client) {
                    belief.until_us = until(now_us, *validity_ms);
                }
            }
            EventKind::ResourceWrite { .. } | EventKind::ResourceRejected { .. } => {
                if let Some(belief) = beliefs.get_mut(client) {
                    belief.wrote = true;
                }
            }
            EventKind::ReleaseSent { .. } => {
                beliefs.remove(client);
            }
            EventKind::Crashed => {
                beliefs.remove(client);
                frozen.remove(client);
            }
            EventKind::Paused => {
                let state = match beliefs.get(client) {
                    Some(belief) if !belief.wrote => Frozen::Holding {
                        since_us: now_us,
                        until_us: belief.until_us,
                    },
                    Some(_) => continue,
                    None if granted.contains(client) => Frozen::Granting,
                    None => continue,
                };
                frozen.insert(client, state);
            }
            EventKind::Resumed => match frozen.remove(client) {
                Some(Frozen::Granting) => {
                    woke_granting.insert(client);
                }
                Some(state) if ran_out(state, now_us) => return true,
                _ => {}
            },
            _ => {}
        }
    }
    frozen.into_values().any(|state| ran_out(state, history.end_us))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::*;
    use crate::history::Event;

    /// client-1 granted 2000 ms of validity at 1 ms; `more` follow, in time order.
    fn run(more: Vec<Event>) -> bool {
        let mut events = vec![
            attempt(0, "client-1"),
            answered(1, "client-1", "redis-1", Answer::Yes),
            acquired(1, "client-1"),
        ];
        events.extend(more);
        reached(&history(10_000, events))
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

    #[test]
    fn a_pause_inside_the_acquire_that_leaves_no_validity_is_reached() {
        let grant = |validity_ms| {
            at(
                2501,
                "client-1",
                EventKind::Acquired {
                    token: "client-1-token".into(),
                    fence: None,
                    validity_ms,
                },
            )
        };
        let inside = |validity_ms| {
            reached(&history(
                10_000,
                vec![
                    attempt(0, "client-1"),
                    answered(1, "client-1", "redis-1", Answer::Yes),
                    paused(1),
                    resumed(2501),
                    grant(validity_ms),
                ],
            ))
        };
        assert!(inside(0));
        assert!(!inside(500));
    }
}
