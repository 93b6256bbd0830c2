//! The clients' workload and the resource the lock protects.
//!
//! Each client loops: acquire → critical section → release → think. The critical section
//! is a read-modify-write of a shared register that takes a random time, so a second
//! holder shows up as a lost update, not only as an overlap on paper.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::clock::SimClock;
use super::net::SimConnector;
use super::recorder::Recorder;
use crate::client::{Lock, LockError, LockOptions, Retry};
use crate::history::EventKind;
use crate::platform::Clock;
use crate::scenario::Scenario;

/// The key every client contends for.
pub const LOCK_KEY: &[u8] = b"locksim:lock";

/// The protected resource: a register the critical section reads and increments.
#[derive(Debug, Clone, Default)]
pub struct Register(Arc<Mutex<i64>>);

impl Register {
    fn read(&self) -> i64 {
        *self.0.lock().expect("register lock poisoned")
    }
    fn write(&self, value: i64) {
        *self.0.lock().expect("register lock poisoned") = value;
    }
}

/// Everything one client process needs.
#[derive(Clone)]
pub struct ClientProcess {
    pub name: String,
    pub clock: SimClock,
    pub recorder: Recorder,
    pub resource: Register,
    pub scenario: Arc<Scenario>,
    pub redis: SocketAddr,
    /// Seeds this process's random choices (tokens, jitter, work time).
    pub seed: u64,
}

impl ClientProcess {
    fn record(&self, kind: EventKind) {
        self.recorder.record(&self.name, self.clock.local_us(), kind);
    }

    /// The client's main loop; runs until the simulation ends.
    pub async fn run(self) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let spec = &self.scenario.lock;
        let options = LockOptions {
            ttl_ms: spec.ttl_ms,
            retry: Retry {
                count: spec.retry.count,
                delay_ms: spec.retry.delay_ms,
                jitter_ms: spec.retry.jitter_ms,
            },
            request_timeout_ms: spec.node_timeout_ms,
        };
        let lock_rng = ChaCha8Rng::seed_from_u64(rng.next_u64());
        let mut lock = Lock::new(SimConnector(self.redis), self.clock.clone(), lock_rng, options);
        loop {
            self.record(EventKind::AcquireStarted);
            match lock.acquire(LOCK_KEY).await {
                Ok(lease) => {
                    let validity_ms = lease.valid_until_ms.saturating_sub(self.clock.monotonic_ms());
                    self.record(EventKind::Acquired {
                        token: lease.token.clone(),
                        fence: None,
                        validity_ms,
                    });
                    let value = self.resource.read();
                    self.record(EventKind::ResourceRead { value, fence: None });
                    self.clock
                        .sleep_ms(draw(&mut rng, self.scenario.clients.work_ms))
                        .await;
                    self.resource.write(value + 1);
                    self.record(EventKind::ResourceWrite {
                        value: value + 1,
                        fence: None,
                    });
                    self.record(EventKind::ReleaseSent {
                        token: lease.token.clone(),
                    });
                    match lock.release(&lease).await {
                        Ok(owned) => self.record(EventKind::Released { owned }),
                        Err(e) => self.record(EventKind::ReleaseFailed {
                            reason: e.to_string(),
                        }),
                    }
                }
                Err(e) => self.record(EventKind::AcquireFailed {
                    contended: matches!(e, LockError::Contended { .. }),
                    reason: e.to_string(),
                }),
            }
            self.clock
                .sleep_ms(draw(&mut rng, self.scenario.clients.think_ms))
                .await;
        }
    }
}

/// A uniform draw from an inclusive `[min, max]` range.
pub fn draw<T: rand::distr::uniform::SampleUniform + PartialOrd + Copy>(
    rng: &mut impl Rng,
    [min, max]: [T; 2],
) -> T {
    rng.random_range(min..=max)
}
