//! What a holder has: the lease a grant gives (key, token, fence, until when it holds),
//! and the guard the work under [`Lock::hold`](super::Lock::hold) watches for a renewal or
//! the loss. Apart from the client so that code holding a lock need not see how it is taken.

use tokio::sync::watch;

use super::options::ValidityClock;
use crate::platform::Clock;

/// A granted lock: what the holder needs to release or extend it, and until when it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub key: Vec<u8>,
    /// The value stored in the key (`1` for tiers 1–3, random otherwise).
    pub token: String,
    /// The fencing token the protected resource must see, if fencing is on.
    pub fence: Option<u64>,
    /// Monotonic time (client clock) before the acquire was sent.
    pub requested_at_ms: u64,
    /// Time until which the key certainly lives: the instant the acquire was sent plus the
    /// TTL minus the drift allowance (as Redlock and redsync count it), so the round trip
    /// and every step after the grant (a pause, the fencing token) eat into it. Read on
    /// `validity_clock`; [`Lease::NO_EXPIRY`] for a key without TTL.
    pub valid_until_ms: u64,
    /// The clock `valid_until_ms` is read on: monotonic, or the wall clock for clients that
    /// measure validity with it (and so believe a clock stepped back).
    pub validity_clock: ValidityClock,
}

impl Lease {
    /// The deadline of a lock whose key has no TTL (tier 1, or TTL 0): it never runs out.
    pub const NO_EXPIRY: u64 = u64::MAX;

    /// Milliseconds of validity left when the validity clock reads `now_ms`
    /// ([`Lease::NO_EXPIRY`] for a key without TTL).
    pub fn remaining_ms(&self, now_ms: u64) -> u64 {
        match self.valid_until_ms {
            Lease::NO_EXPIRY => Lease::NO_EXPIRY,
            until => until.saturating_sub(now_ms),
        }
    }

    /// Milliseconds of validity left now, as the holder reads it on `clock`.
    pub fn remaining_on(&self, clock: &impl Clock) -> u64 {
        self.remaining_ms(self.validity_clock.read(clock))
    }
}

/// What the work running under [`Lock::hold`](super::Lock::hold) gets: the lease as the
/// watchdog keeps it, and a signal when the watchdog lost the lock, so the work can stop.
#[derive(Debug, Clone)]
pub struct LockGuard {
    state: watch::Receiver<Held>,
}

/// The holder's lock as the watchdog last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Held, valid until the lease's `valid_until_ms` (moved on by each renewal).
    Valid(Lease),
    /// A renewal failed, for this reason: stop working.
    Lost(String),
}

impl LockGuard {
    /// The guard of a holder whose watchdog reports on `state`.
    pub(super) fn new(state: watch::Receiver<Held>) -> Self {
        LockGuard { state }
    }

    /// The lock's state now.
    pub fn state(&self) -> Held {
        self.state.borrow().clone()
    }

    /// The fencing token to present to the protected resource.
    pub fn fence(&self) -> Option<u64> {
        match &*self.state.borrow() {
            Held::Valid(lease) => lease.fence,
            Held::Lost(_) => None,
        }
    }

    /// Whether the lock has been lost (a renewal failed).
    pub fn is_lost(&self) -> bool {
        matches!(*self.state.borrow(), Held::Lost(_))
    }

    /// The next change: a renewal or the loss. Never completes once the holder is done.
    pub async fn changed(&mut self) -> Held {
        if self.state.changed().await.is_err() {
            // The holder finished: nothing will change any more.
            std::future::pending::<()>().await;
        }
        self.state.borrow_and_update().clone()
    }

    /// Works for `work_ms` of `clock`'s monotonic time under the lock, telling `renewed`
    /// of every renewal's lease. With `stop_at_validity` the work stops early when the
    /// lease's validity runs out as the holder reads it on its own validity clock (a
    /// careful client; a wall clock stepped back makes it read more). Returns whether the
    /// lock is still held: `false` when the watchdog lost it (the work stops at once).
    pub async fn work(
        &mut self,
        clock: &impl Clock,
        work_ms: u64,
        stop_at_validity: bool,
        mut renewed: impl FnMut(&Lease),
    ) -> bool {
        let done_at = clock.monotonic_ms() + work_ms;
        loop {
            let mut wake_at = done_at;
            if stop_at_validity && let Held::Valid(lease) = self.state() {
                match lease.remaining_on(clock) {
                    0 => return true,
                    left => wake_at = wake_at.min(clock.monotonic_ms().saturating_add(left)),
                }
            }
            tokio::select! {
                biased;
                held = self.changed() => match held {
                    Held::Valid(lease) => renewed(&lease),
                    Held::Lost(_) => return false,
                },
                () = clock.sleep_until_monotonic(wake_at) => {
                    if wake_at == done_at {
                        return true;
                    }
                }
            }
        }
    }

    /// Completes, with the reason, once the lock is lost; never completes otherwise.
    pub async fn lost(&mut self) -> String {
        loop {
            if let Held::Lost(reason) = &*self.state.borrow_and_update() {
                return reason.clone();
            }
            self.changed().await;
        }
    }
}
