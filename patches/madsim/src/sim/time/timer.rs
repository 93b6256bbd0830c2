//! The runtime's timers (locksim's patch, in place of the `naive_timer` crate).
//!
//! The same binary heap as `naive_timer`'s, ordered by deadline alone, so timers fire in
//! exactly the order they did (`BinaryHeap` moves its elements by the outcomes of their
//! comparisons only, and a deadline in nanoseconds compares as the `Duration` did). What
//! changed is what the heap holds: a deadline and a slot number (16 bytes instead of 32,
//! one integer compared instead of seconds then nanoseconds), with the callbacks in slots
//! beside it; and a sleep's callback is its waker itself, not a boxed closure around it
//! (an allocation and a free per sleep). A simulated message costs ~1.5 timers.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::task::Waker;
use std::time::Duration;

/// What a timer does when its deadline comes.
pub(crate) enum Callback {
    /// Wakes a task (a `Sleep`).
    Wake(Waker),
    /// Anything else (a message's delivery, a node's restart).
    Call(Box<dyn FnOnce() + Send + Sync + 'static>),
}

impl Callback {
    fn run(self) {
        match self {
            Callback::Wake(waker) => waker.wake(),
            Callback::Call(call) => call(),
        }
    }
}

/// A timer on the heap: its deadline (ns since the runtime's start) and its callback's slot.
struct Entry {
    deadline_ns: u64,
    slot: u32,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline_ns == other.deadline_ns
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

// `BinaryHeap` is a max-heap: the earliest deadline must compare greatest.
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.deadline_ns.cmp(&self.deadline_ns)
    }
}

/// Timers that cannot be cancelled, fired in deadline order.
#[derive(Default)]
pub(crate) struct Timer {
    heap: BinaryHeap<Entry>,
    /// Callbacks by slot; `None` in a free slot.
    callbacks: Vec<Option<Callback>>,
    /// Free slots, reused before the list grows.
    free: Vec<u32>,
}

/// A deadline in ns (a `Duration` past 584 years saturates; nothing sleeps that long).
fn nanos(deadline: Duration) -> u64 {
    u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX)
}

impl Timer {
    /// Adds a timer that runs `callback` once the time passes `deadline`.
    pub fn add(&mut self, deadline: Duration, callback: Callback) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.callbacks[slot as usize] = Some(callback);
                slot
            }
            None => {
                self.callbacks.push(Some(callback));
                u32::try_from(self.callbacks.len() - 1).expect("fewer than 2^32 timers at once")
            }
        };
        self.heap.push(Entry {
            deadline_ns: nanos(deadline),
            slot,
        });
    }

    /// Runs and removes every timer whose deadline is `now` or before.
    pub fn expire(&mut self, now: Duration) {
        let now = nanos(now);
        while self.heap.peek().is_some_and(|next| next.deadline_ns <= now) {
            let Entry { slot, .. } = self.heap.pop().expect("peeked");
            let callback = self.callbacks[slot as usize].take().expect("a timer's slot holds its callback");
            self.free.push(slot);
            callback.run();
        }
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<Duration> {
        self.heap.peek().map(|next| Duration::from_nanos(next.deadline_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn fires_in_deadline_order_and_only_when_due() {
        let fired = Arc::new(Mutex::new(Vec::new()));
        let mut timer = Timer::default();
        for ms in [30u64, 10, 20, 10] {
            let fired = fired.clone();
            timer.add(
                Duration::from_millis(ms),
                Callback::Call(Box::new(move || fired.lock().unwrap().push(ms))),
            );
        }
        assert_eq!(timer.next(), Some(Duration::from_millis(10)));
        timer.expire(Duration::from_millis(19));
        assert_eq!(*fired.lock().unwrap(), [10, 10]);
        timer.expire(Duration::from_millis(30));
        assert_eq!(*fired.lock().unwrap(), [10, 10, 20, 30]);
        assert_eq!(timer.next(), None);
    }
}
