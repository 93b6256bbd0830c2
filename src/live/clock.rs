//! The clock of a locksim node in a live run: the host's clocks, with a wall-clock offset
//! locksim can step, so clock faults need no libfaketime. Monotonic time and sleeps stay
//! the host's, as a stepped wall clock leaves them on a real machine.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::platform::Clock;
use crate::real::HostClock;

/// The host's clocks, the wall clock shifted by an offset that [`LiveClock::jump`] steps.
#[derive(Debug, Clone, Default)]
pub struct LiveClock {
    host: HostClock,
    offset_ms: Arc<AtomicI64>,
}

impl LiveClock {
    /// The host's clocks, the wall clock off by `offset_ms`.
    pub fn with_offset(offset_ms: i64) -> Self {
        LiveClock {
            host: HostClock::new(),
            offset_ms: Arc::new(AtomicI64::new(offset_ms)),
        }
    }

    /// Steps the wall clock by `by_ms` (forward if positive).
    pub fn jump(&self, by_ms: i64) {
        self.offset_ms.fetch_add(by_ms, Ordering::SeqCst);
    }
}

impl Clock for LiveClock {
    fn wall_ms(&self) -> u64 {
        let offset = self.offset_ms.load(Ordering::SeqCst);
        (self.host.wall_ms() as i64).saturating_add(offset).max(0) as u64
    }

    fn monotonic_ms(&self) -> u64 {
        self.host.monotonic_ms()
    }

    fn sleep_until_monotonic(&self, deadline_ms: u64) -> impl Future<Output = ()> + Send {
        self.host.sleep_until_monotonic(deadline_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jump_steps_the_wall_clock_and_leaves_monotonic_time_alone() {
        let clock = LiveClock::with_offset(0);
        let (wall, mono) = (clock.wall_ms(), clock.monotonic_ms());
        clock.jump(10_000);
        assert!(clock.wall_ms() >= wall + 10_000);
        assert!(clock.monotonic_ms() < mono + 1_000);
        clock.jump(-20_000);
        assert!(clock.wall_ms() < wall);
    }
}
