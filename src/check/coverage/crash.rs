//! `crash-in-quorum`: a Redis node that granted the lock a client holds crashes (and may
//! restart, with what its persistence kept) while the client holds it.

use super::Hold;
use crate::history::{EventKind, History};

/// Whether a node of some hold's quorum crashed during the hold.
pub(super) fn reached(history: &History, holds: &[Hold]) -> bool {
    history.events.iter().enumerate().any(|(at, event)| {
        matches!(event.kind, EventKind::Crashed)
            && holds
                .iter()
                .any(|hold| hold.open_at(at) && hold.quorum.contains(&event.node.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::super::holds;
    use super::*;
    use crate::check::testing::*;
    use crate::history::Answer;

    fn run(crash: crate::history::Event) -> bool {
        let mut events = vec![
            attempt(0, "client-1"),
            answered(1, "client-1", "redis-1", Answer::Yes),
            acquired(1, "client-1"),
            release(1000, "client-1"),
            crash,
        ];
        events.sort_by_key(|e| e.true_us);
        let run = history(10_000, events);
        reached(&run, &holds(&run))
    }

    #[test]
    fn a_granting_node_crashing_while_held_is_reached() {
        assert!(run(crashed(500, "redis-1")));
    }

    #[test]
    fn a_crash_after_the_release_or_of_another_node_is_not() {
        assert!(!run(crashed(1500, "redis-1")));
        assert!(!run(crashed(500, "redis-2")));
    }
}
