//! `holder-cut-off`: a holder is cut off from every node that granted its lock (each link
//! between them cut one way or both by a partition or a stall) while it holds the lock: it
//! can neither renew nor release, and learns nothing of the key's fate.

use std::collections::BTreeSet;

use super::Hold;
use crate::history::{EventKind, History};

/// Whether, at some instant, a holder's links to every node of its quorum were cut.
pub(super) fn reached(history: &History, holds: &[Hold]) -> bool {
    let mut cut: BTreeSet<(&str, &str)> = BTreeSet::new();
    history.events.iter().enumerate().any(|(at, event)| {
        match &event.kind {
            EventKind::LinkCut { to } => {
                cut.insert((&event.node, to));
            }
            EventKind::LinkHealed { to } => {
                cut.remove(&(event.node.as_str(), to.as_str()));
                return false;
            }
            // A grant with no link cut cannot leave a holder cut off: the common case, and
            // no need to look through the holds for it.
            EventKind::Acquired { .. } if !cut.is_empty() => {}
            _ => return false,
        }
        holds.iter().any(|hold| {
            (hold.open_at(at) || hold.from == at)
                && !hold.quorum.is_empty()
                && hold
                    .quorum
                    .iter()
                    .all(|node| cut.contains(&(hold.client, *node)) || cut.contains(&(*node, hold.client)))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::holds;
    use super::*;
    use crate::check::testing::*;
    use crate::history::{Answer, Event};

    fn cut(t: u64, from: &str, to: &str) -> Event {
        at(t, from, EventKind::LinkCut { to: to.into() })
    }

    /// client-1 holds redis-1's and redis-2's grant over [1, 1000] ms; `more` happen.
    fn run(more: Vec<Event>) -> bool {
        let mut events = vec![
            attempt(0, "client-1"),
            answered(1, "client-1", "redis-1", Answer::Yes),
            answered(1, "client-1", "redis-2", Answer::Yes),
            acquired(1, "client-1"),
            release(1000, "client-1"),
        ];
        events.extend(more);
        events.sort_by_key(|e| e.true_us);
        let run = history(10_000, events);
        reached(&run, &holds(&run))
    }

    #[test]
    fn a_holder_cut_from_its_whole_quorum_is_cut_off() {
        assert!(run(vec![
            cut(500, "client-1", "redis-1"),
            cut(500, "redis-2", "client-1")
        ]));
    }

    #[test]
    fn a_holder_cut_from_part_of_its_quorum_or_after_its_release_is_not() {
        assert!(!run(vec![cut(500, "client-1", "redis-1")]));
        assert!(!run(vec![
            cut(1500, "client-1", "redis-1"),
            cut(1500, "client-1", "redis-2")
        ]));
        let healed = at(600, "client-1", EventKind::LinkHealed { to: "redis-1".into() });
        assert!(!run(vec![
            cut(500, "client-1", "redis-1"),
            healed,
            cut(700, "client-1", "redis-2")
        ]));
    }
}
