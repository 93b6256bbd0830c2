//! Counts of a run's events for `locksim bench`: messages written on the simulated network
//! and timers that fired on a node's clock.
//!
//! The counters are thread-local, as a run is (madsim's runtime lives on one thread), and
//! are only ever counted and read back after the run: nothing in the simulation reads
//! them, so counting cannot change a run.

use std::cell::Cell;

thread_local! {
    static MESSAGES: Cell<u64> = const { Cell::new(0) };
    static TIMERS: Cell<u64> = const { Cell::new(0) };
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
}

/// Counts one timer fired.
pub fn timer() {
    TIMERS.with(|count| count.set(count.get() + 1));
}

/// The counts since the last `take` on this thread, and starts counting afresh.
pub fn take() -> EventCounts {
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
}
