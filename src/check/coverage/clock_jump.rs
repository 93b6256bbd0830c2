//! `clock-jump-in-quorum`: the wall clock of a Redis node that granted the lock a client
//! holds is stepped while it holds it, so the key there dies early (forward) or lives on
//! (backward) while the holder counts on it.
//!
//! Steps are read from the run's clock log, not from the faults' text: a step is a change
//! of a node's clock model after which the clock reads differently at the same instant (a
//! change of rate keeps the reading and is not one).

use super::Hold;
use crate::history::History;

/// Whether a node of some hold's quorum had its clock stepped during the hold.
pub(super) fn reached(history: &History, holds: &[Hold]) -> bool {
    history.clocks.iter().any(|(node, log)| {
        log.0.windows(2).any(|pair| {
            let ((_, before), (from_ns, after)) = (pair[0], pair[1]);
            before.wall_ns(from_ns) != after.wall_ns(from_ns)
                && holds.iter().any(|hold| {
                    hold.quorum.contains(&node.as_str()) && hold.open_at_us(history, from_ns / 1000)
                })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::holds;
    use super::*;
    use crate::check::testing::*;
    use crate::clock_model::{ClockLog, ClockModel};
    use crate::history::Answer;

    /// client-1 holds redis-1's grant over [1, 1000] ms; redis-1's clock changes at 500 ms
    /// by `change`.
    fn run(node: &str, change: impl Fn(&mut ClockModel)) -> bool {
        let mut run = history(
            10_000,
            vec![
                attempt(0, "client-1"),
                answered(1, "client-1", "redis-1", Answer::Yes),
                acquired(1, "client-1"),
                release(1000, "client-1"),
            ],
        );
        let mut log = ClockLog::new(ClockModel::new(0, 0));
        let mut model = log.current();
        change(&mut model);
        log.change(500_000_000, model);
        run.clocks.insert(node.into(), log);
        reached(&run, &holds(&run))
    }

    #[test]
    fn a_step_of_a_granting_node_while_held_is_reached() {
        assert!(run("redis-1", |m| m.jump(6_000_000_000)));
        assert!(run("redis-1", |m| m.jump(-6_000_000_000)));
    }

    #[test]
    fn a_change_of_rate_or_a_step_elsewhere_is_not() {
        assert!(!run("redis-1", |m| m.set_rate(500_000_000, 100_000)));
        assert!(!run("redis-2", |m| m.jump(6_000_000_000)));
    }
}
