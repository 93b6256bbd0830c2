//! `failover-while-held` and `failover-unreplicated`: a replica promoted while a client
//! held a lock its old master granted, and, the dangerous case, one the promoted node never
//! stored (the grant was not yet replicated, so the new master will grant it again).

use super::{Hold, KeyLog};
use crate::history::{EventKind, History};

/// Whether some failover came while a lock the replaced master granted was held, and
/// whether some such failover promoted a node that never stored the holder's key.
pub(super) fn reached(history: &History, holds: &[Hold], keys: &KeyLog) -> (bool, bool) {
    let (mut while_held, mut unreplicated) = (false, false);
    for (at, event) in history.events.iter().enumerate() {
        let EventKind::Failover { promoted, replaced } = &event.kind else {
            continue;
        };
        for hold in holds
            .iter()
            .filter(|hold| hold.open_at(at) && hold.quorum.contains(&replaced.as_str()))
        {
            while_held = true;
            unreplicated |= !keys.ever_stored(promoted, hold.token, at);
        }
    }
    (while_held, unreplicated)
}

#[cfg(test)]
mod tests {
    use super::super::{KeyLog, holds};
    use super::*;
    use crate::check::testing::*;
    use crate::history::Answer;

    fn failover(t: u64) -> crate::history::Event {
        at(
            t,
            "world",
            EventKind::Failover {
                promoted: "redis-1-replica-1".into(),
                replaced: "redis-1".into(),
            },
        )
    }

    /// client-1 granted by redis-1 at 1 ms; the replica stores its key at `replicated_ms`
    /// if given; redis-1-replica-1 is promoted at 500 ms; client-1 releases at `release_ms`.
    fn run(replicated_ms: Option<u64>, release_ms: u64) -> (bool, bool) {
        let mut events = vec![
            attempt(0, "client-1"),
            key_set(1, "redis-1", "client-1-token", 2000),
            answered(1, "client-1", "redis-1", Answer::Yes),
            acquired(1, "client-1"),
        ];
        if let Some(t) = replicated_ms {
            events.push(key_set(t, "redis-1-replica-1", "client-1-token", 2000));
        }
        events.push(release(release_ms, "client-1"));
        events.push(failover(500));
        events.sort_by_key(|e| e.true_us);
        let run = history(10_000, events);
        reached(&run, &holds(&run), &KeyLog::of(&run))
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
    fn a_failover_after_the_release_reaches_neither() {
        assert_eq!(run(None, 400), (false, false));
    }
}
