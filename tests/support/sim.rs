//! A small simulated world for client tests: fake Redis nodes and client nodes on madsim,
//! every clock perfect, and a [`Steps`] hook that crashes or pauses a client at one step.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use futures::future::BoxFuture;
use locksim::client::{Lock, LockOptions, Step, Steps};
use locksim::platform::Clock;
use locksim::world::clock::{ClockModel, SimClock};
use locksim::world::net::{REDIS_PORT, SimConnector, SimListener};
use madsim::runtime::{Handle, NodeHandle, Runtime};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The client type these tests drive.
pub type SimLock = Lock<SimConnector, SimClock, ChaCha8Rng>;

/// Runs `f` in a fresh simulation with madsim's default network (1–10 ms latency).
pub fn simulate<F: Future>(seed: u64, f: impl FnOnce() -> F) -> F::Output {
    Runtime::with_seed_and_config(seed, madsim::Config::default()).block_on(f())
}

/// A perfect clock.
pub fn clock() -> SimClock {
    SimClock::new(ClockModel::new(0, 0))
}

/// Starts fake Redis node `redis-<n>` (n from 1) and returns its address.
pub fn start_redis(n: u8) -> SocketAddr {
    start_redis_node(n).0
}

/// Starts fake Redis node `redis-<n>` (n from 1): its address, and its node, which a test
/// can pause (a frozen Redis: the network still delivers to it, it answers nothing).
pub fn start_redis_node(n: u8) -> (SocketAddr, madsim::task::NodeId) {
    let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, n));
    let addr = SocketAddr::new(ip, REDIS_PORT);
    let node = Handle::current()
        .create_node()
        .name(format!("redis-{n}"))
        .ip(ip)
        .init(move || async move {
            let listener = SimListener::bind(addr, Default::default()).await.unwrap();
            let _ = locksim::redis::server::serve(listener, clock()).await;
        })
        .build();
    (addr, node.id())
}

/// A client node `client-<n>` (n from 1), to spawn a client's tasks on.
pub fn client_node(n: u8) -> NodeHandle {
    Handle::current()
        .create_node()
        .name(format!("client-{n}"))
        .ip(IpAddr::V4(Ipv4Addr::new(10, 0, 1, n)))
        .build()
}

/// A client of `nodes` with its own seed and `steps` hook.
pub fn lock(nodes: &[SocketAddr], options: LockOptions, seed: u64, steps: StopAt) -> SimLock {
    lock_with_clock(nodes, options, seed, clock()).with_steps(std::sync::Arc::new(steps))
}

/// A client of `nodes` reading `clock` (a clone the test can jump or skew).
pub fn lock_with_clock(nodes: &[SocketAddr], options: LockOptions, seed: u64, clock: SimClock) -> SimLock {
    let connectors = nodes.iter().copied().map(SimConnector::to).collect();
    Lock::new(connectors, clock, ChaCha8Rng::seed_from_u64(seed), options)
}

/// Milliseconds of simulated time since the start of the run.
pub fn now_ms() -> u64 {
    clock().monotonic_ms()
}

/// A [`Steps`] hook: at `step`, the client crashes (never goes on) or pauses.
pub struct StopAt {
    step: Option<Step>,
    pause_ms: Option<u64>,
}

impl StopAt {
    /// Never stops.
    pub fn nowhere() -> Self {
        StopAt {
            step: None,
            pause_ms: None,
        }
    }

    /// The process dies at `step`: it never sends another command.
    pub fn crash(step: Step) -> Self {
        StopAt {
            step: Some(step),
            pause_ms: None,
        }
    }

    /// The process freezes at `step` for `ms` (a GC pause), then goes on.
    pub fn pause(step: Step, ms: u64) -> Self {
        StopAt {
            step: Some(step),
            pause_ms: Some(ms),
        }
    }
}

impl Steps for StopAt {
    fn reached(&self, step: Step) -> BoxFuture<'_, ()> {
        match (self.step == Some(step), self.pause_ms) {
            (false, _) => Box::pin(async {}),
            (true, None) => Box::pin(std::future::pending()),
            (true, Some(ms)) => Box::pin(async move { clock().sleep_ms(ms).await }),
        }
    }
}
