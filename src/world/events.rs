//! Counts of a run's events for `locksim bench`: messages written on the simulated network
//! and timers that fired on a node's clock.
//!
//! The counters are thread-local, as a run is (madsim's runtime lives on one thread).
//! Nothing in the simulation reads them, so counting cannot change a run; the one thing
//! they do is stop a run that spends more than its budget (a livelock), with a panic that
//! the sweep reports as a harness error.

use std::cell::Cell;

thread_local! {
    static MESSAGES: Cell<u64> = const { Cell::new(0) };
    static TIMERS: Cell<u64> = const { Cell::new(0) };
    static BUDGET: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// What one run did, in events a discrete-event simulator processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Writes to a simulated TCP stream (requests, replies, replication).
    pub messages: u64,
    /// Sleeps on a node's clock that ended because their time came.
    pub timers: u64,
}

impl EventCounts {
    /// Messages and timer firings together.
    pub fn total(&self) -> u64 {
        self.messages + self.timers
    }
}

/// Counts one message written.
pub fn message() {
    MESSAGES.with(|count| count.set(count.get() + 1));
    spend();
}

/// Counts one timer fired.
pub fn timer() {
    TIMERS.with(|count| count.set(count.get() + 1));
    spend();
}

/// Starts counting a run afresh, allowing it `budget` events.
pub fn start(budget: u64) {
    take();
    BUDGET.with(|b| b.set(budget));
}

/// Panics once the run has processed more events than its budget: a run that keeps
/// exchanging messages or firing timers far beyond any sound run is stuck.
fn spend() {
    let budget = BUDGET.with(Cell::get);
    if MESSAGES.with(Cell::get) + TIMERS.with(Cell::get) > budget {
        // Unwinding drops tasks that may count more events: panic only once.
        BUDGET.with(|b| b.set(u64::MAX));
        panic!("the run exceeded its budget of {budget} simulated events (budget.events_per_s): a livelock?");
    }
}

/// The counts since the last `take` on this thread, and starts counting afresh (with no
/// budget: [`start`] sets one).
pub fn take() -> EventCounts {
    BUDGET.with(|b| b.set(u64::MAX));
    EventCounts {
        messages: MESSAGES.with(|count| count.replace(0)),
        timers: TIMERS.with(|count| count.replace(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_returns_the_counts_and_resets_them() {
        take();
        message();
        message();
        timer();
        assert_eq!(
            take(),
            EventCounts {
                messages: 2,
                timers: 1
            }
        );
        assert_eq!(take().total(), 0);
    }

    #[test]
    fn a_run_past_its_budget_panics_once_and_one_within_it_does_not() {
        start(2);
        message();
        timer();
        let overrun = std::panic::catch_unwind(message).unwrap_err();
        let message_text = overrun.downcast_ref::<String>().unwrap();
        assert!(
            message_text.contains("budget of 2 simulated events"),
            "{message_text}"
        );
        timer();
        assert_eq!(
            take().total(),
            4,
            "counting goes on after the panic, without another"
        );
    }
}
