//! The clients' workload and the resource the lock protects.
//!
//! Each client loops: acquire → critical section → release → think. The critical section
//! is a read-modify-write of a shared register that takes a random time, so a second
//! holder shows up as a lost update, not only as an overlap on paper.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::clock::SimClock;
use super::net::{Address, ByAddress, Nic, SimConnector};
use super::recorder::Recorder;
use super::sentinel::discovery::SentinelRoute;
use crate::client::{
    Held, Lease, Lock, LockError, LockGuard, Observe, RenewalStops, Request, Steps, Traffic,
};
use crate::history::{Answer, Direction, EventKind, NodeName};
use crate::platform::{Clock, Connect};
use crate::redis::text::{reply_text, request_text};
use crate::scenario::Scenario;

/// The key every client contends for.
pub const LOCK_KEY: &[u8] = b"locksim:lock";

/// The protected resource: a register the critical section reads and increments.
///
/// It is *fenced*: an access presenting a token below the highest token seen so far is
/// refused, reads included (lock-algorithms.md: a read must raise the bar too, or two
/// holders can read the same value and both write). Accesses without a token always pass.
#[derive(Debug, Clone, Default)]
pub struct Register(Arc<Mutex<RegisterState>>);

#[derive(Debug, Default)]
struct RegisterState {
    value: i64,
    highest_fence: u64,
}

/// The register refused an access whose token was below `highest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stale {
    pub fence: u64,
    pub highest: u64,
}

impl Register {
    /// The value, if `fence` (when given) is not below the highest token seen.
    pub fn read(&self, fence: Option<u64>) -> Result<i64, Stale> {
        self.access(fence, |state| state.value)
    }

    /// Stores `value`, if `fence` (when given) is not below the highest token seen.
    pub fn write(&self, value: i64, fence: Option<u64>) -> Result<(), Stale> {
        self.access(fence, |state| state.value = value)
    }

    fn access<T>(&self, fence: Option<u64>, f: impl FnOnce(&mut RegisterState) -> T) -> Result<T, Stale> {
        let mut state = self.0.lock().expect("register lock poisoned");
        if let Some(fence) = fence {
            if fence < state.highest_fence {
                return Err(Stale {
                    fence,
                    highest: state.highest_fence,
                });
            }
            state.highest_fence = fence;
        }
        Ok(f(&mut state))
    }
}

/// Everything one client process needs.
#[derive(Clone)]
pub struct ClientProcess {
    pub name: NodeName,
    pub clock: SimClock,
    pub recorder: Recorder,
    pub resource: Register,
    pub scenario: Arc<Scenario>,
    /// How to reach the Redis masters the lock lives on (one, or N for Redlock), wherever
    /// failovers have moved them.
    pub redis: Vec<Route>,
    /// Every Redis node's name, clock and NIC, by address: to say which node answered a
    /// request, and what its clock read when it answered.
    pub redis_nodes: Arc<ByAddress<(NodeName, SimClock, Nic)>>,
    /// The separate counter node, when fencing tokens come from one.
    pub fence_counter: Option<SocketAddr>,
    /// Called at each named step of acquire and release: where crash points strike.
    pub steps: Arc<dyn Steps>,
    /// This process's network interface: latency and loss on its writes, resets of its
    /// connections.
    pub nic: Nic,
    /// Seeds this process's random choices (tokens, jitter, work time).
    pub seed: u64,
}

impl ClientProcess {
    fn record(&self, kind: EventKind) {
        self.recorder.record_as(&self.name, self.clock.local_us(), kind);
    }

    /// A lock client of this process's Redis nodes, on connections of its own, whose every
    /// node answer goes into the history.
    fn new_lock(&self, seed: u64) -> Lock<PeerConnector, SimClock, ChaCha8Rng> {
        let connectors: Vec<PeerConnector> = self
            .redis
            .iter()
            .map(|route| PeerConnector::new(route.clone(), self.nic.clone(), self.clock.clone()))
            .collect();
        let fence_counter = self.fence_counter.map(|counter| {
            PeerConnector::new(
                Route::Direct(Address::new(counter)),
                self.nic.clone(),
                self.clock.clone(),
            )
        });
        // The fencing counter's traffic is observed as the node after the lock's nodes.
        let observed = || connectors.iter().chain(&fence_counter);
        let observer = Arc::new(TraceObserver {
            client: self.name.clone(),
            clock: self.clock.clone(),
            recorder: self.recorder.clone(),
            redis_nodes: self.redis_nodes.clone(),
            peers: observed().map(|c| c.peer.clone()).collect(),
            locals: observed().map(|c| c.local.clone()).collect(),
        });
        let lock = Lock::new(
            connectors,
            self.clock.clone(),
            ChaCha8Rng::seed_from_u64(seed),
            self.scenario.lock.options(),
        )
        .with_steps(self.steps.clone());
        let lock = match fence_counter {
            Some(counter) => lock.with_fence_counter(counter),
            None => lock,
        };
        lock.with_observer(observer)
    }

    /// The client's main loop; runs until the simulation ends.
    pub async fn run(self) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut lock = self.new_lock(rng.next_u64());
        loop {
            self.record(EventKind::AcquireStarted);
            match lock.acquire(LOCK_KEY).await {
                Ok(lease) => {
                    self.record(EventKind::Acquired {
                        token: lease.token.clone(),
                        fence: lease.fence,
                        validity_ms: lease.remaining_on(&self.clock),
                    });
                    let work_ms = draw(&mut rng, self.scenario.clients.work_ms_of(&self.name));
                    let write_delay_ms = self
                        .scenario
                        .clients
                        .write_delay_ms
                        .map_or(0, |range| draw(&mut rng, range));
                    let held = lock
                        .hold(&lease, |guard| {
                            self.critical_section(guard, work_ms, write_delay_ms)
                        })
                        .await;
                    if let Err(e) = held {
                        let reason = match e {
                            LockError::LockLost { reason } => reason,
                            other => other.to_string(),
                        };
                        self.record(EventKind::LockLost { reason });
                    }
                    self.record(EventKind::ReleaseSent {
                        token: lease.token.clone(),
                    });
                    match lock.release(&lease).await {
                        Ok(owned) => self.record(EventKind::Released { owned }),
                        Err(e) => {
                            self.record(EventKind::ReleaseFailed {
                                reason: e.to_string(),
                            });
                            if lock.options().renewal_stops == RenewalStops::OnSuccessfulRelease {
                                // The watchdog outlives the unlock, on connections of its own.
                                let mut watchdog = self.new_lock(rng.next_u64());
                                madsim::task::spawn(async move { watchdog.keep_renewing(&lease).await });
                            }
                        }
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

    /// Read, work for `work_ms`, write back the value plus one (the write landing
    /// `write_delay_ms` later), presenting the fencing token on both accesses. Records the
    /// watchdog's renewals, the write's flight included; stops early when it lost the lock.
    async fn critical_section(&self, mut guard: LockGuard, work_ms: u64, write_delay_ms: u64) {
        let fence = guard.fence();
        let value = match self.resource.read(fence) {
            Ok(value) => value,
            Err(stale) => return self.rejected(stale),
        };
        self.record(EventKind::ResourceRead { value, fence });
        let stop_at_validity = self.scenario.clients.stop_at_validity;
        let renewed = |lease: &Lease| {
            self.record(EventKind::Renewed {
                validity_ms: lease.remaining_on(&self.clock),
            })
        };
        if !guard.work(&self.clock, work_ms, stop_at_validity, renewed).await {
            return;
        }
        // The write is sent now, after any validity check, and lands when it lands; the
        // watchdog goes on renewing meanwhile, and its renewals are recorded as before.
        let lands_at = self.clock.monotonic_ms().saturating_add(write_delay_ms);
        loop {
            tokio::select! {
                biased;
                held = guard.changed() => if let Held::Valid(lease) = held {
                    self.record(EventKind::Renewed {
                        validity_ms: lease.remaining_on(&self.clock),
                    });
                },
                () = self.clock.sleep_until_monotonic(lands_at) => break,
            }
        }
        match self.resource.write(value + 1, fence) {
            Ok(()) => self.record(EventKind::ResourceWrite {
                value: value + 1,
                fence,
            }),
            Err(stale) => self.rejected(stale),
        }
    }

    fn rejected(&self, Stale { fence, highest }: Stale) {
        self.record(EventKind::ResourceRejected { fence, highest });
    }
}

/// How a client reaches one group's master: straight at the address the failover
/// controller moves, or by asking Sentinel before each connection.
#[derive(Debug, Clone)]
pub enum Route {
    Direct(Address),
    Sentinel(SentinelRoute),
}

/// A connector to a group's master that remembers where its last connection went: after a
/// failover an open connection still talks to the old master, so the master clients find
/// now need not be the node that answered. It remembers the connection's own address too,
/// which is how the node knows it.
#[derive(Debug, Clone)]
pub struct PeerConnector {
    route: Route,
    nic: Nic,
    clock: SimClock,
    peer: Arc<Mutex<SocketAddr>>,
    local: Arc<Mutex<Option<SocketAddr>>>,
}

impl PeerConnector {
    fn new(route: Route, nic: Nic, clock: SimClock) -> Self {
        let first = match &route {
            Route::Direct(address) => address.get(),
            // Nobody has asked yet: the first master until a connection says otherwise.
            Route::Sentinel(sentinel) => sentinel.first_master,
        };
        PeerConnector {
            route,
            nic,
            clock,
            peer: Arc::new(Mutex::new(first)),
            local: Arc::default(),
        }
    }
}

impl Connect for PeerConnector {
    type Stream = <SimConnector as Connect>::Stream;

    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send {
        self.open(true)
    }

    /// A subscription's connection: it must not pass for the request connection.
    fn connect_aside(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send {
        self.open(false)
    }
}

impl PeerConnector {
    /// Connects to the group's master; the request connection (`remember`) notes where it
    /// went and where it comes from.
    fn open(
        &self,
        remember: bool,
    ) -> impl Future<Output = io::Result<<Self as Connect>::Stream>> + Send + use<> {
        let (route, nic, clock, peer, local) = (
            self.route.clone(),
            self.nic.clone(),
            self.clock.clone(),
            self.peer.clone(),
            self.local.clone(),
        );
        async move {
            let master = match &route {
                Route::Direct(address) => address.get(),
                Route::Sentinel(sentinel) => sentinel.master(&clock, &nic).await?,
            };
            if remember {
                *peer.lock().expect("peer lock poisoned") = master;
            }
            let stream = SimConnector(Address::new(master), nic).connect().await?;
            if remember {
                *local.lock().expect("local lock poisoned") = stream.local_addr().ok();
            }
            Ok(stream)
        }
    }
}

/// Records what a client's lock hears: each node's answer with that node's clock, each
/// failed attempt and renewal.
struct TraceObserver {
    client: NodeName,
    clock: SimClock,
    recorder: Recorder,
    redis_nodes: Arc<ByAddress<(NodeName, SimClock, Nic)>>,
    /// Where each of the lock's connections goes, by node index.
    peers: Vec<Arc<Mutex<SocketAddr>>>,
    /// Where each comes from (once connected), by node index.
    locals: Vec<Arc<Mutex<Option<SocketAddr>>>>,
}

impl TraceObserver {
    fn record(&self, kind: EventKind) {
        self.recorder.record_as(&self.client, self.clock.local_us(), kind);
    }
}

impl Observe for TraceObserver {
    fn answered(&self, request: Request, node: usize, answer: &Result<bool, LockError>) {
        let peer = *self.peers[node].lock().expect("peer lock poisoned");
        let Some((redis, redis_clock, redis_nic)) = self.redis_nodes.get(&peer) else {
            return;
        };
        // An answer was given when the node began writing it; no answer is quoted at the
        // moment the client gave up.
        let local = *self.locals[node].lock().expect("local lock poisoned");
        let answered_ns = local
            .filter(|_| answer.is_ok())
            .and_then(|local| redis_nic.last_write_began(local));
        let redis_local_us =
            answered_ns.map_or_else(|| redis_clock.local_us(), |ns| redis_clock.local_us_at(ns));
        self.record(EventKind::NodeAnswered {
            request: request.name(),
            redis: redis.clone(),
            answer: match answer {
                Ok(true) => Answer::Yes,
                Ok(false) => Answer::No,
                Err(e) => Answer::Failed(e.to_string()),
            },
            redis_local_us,
        });
    }

    fn attempt_failed(&self, attempt: u32, reason: &str) {
        self.record(EventKind::AttemptFailed {
            attempt,
            reason: reason.to_string(),
        });
    }

    fn renewal_failed(&self, reason: &str) {
        self.record(EventKind::RenewalFailed {
            reason: reason.to_string(),
        });
    }

    fn keeps_wire(&self) -> bool {
        self.recorder.keeps_wire()
    }

    fn wire(&self, node: usize, traffic: Traffic<'_>) {
        if !self.recorder.keeps_wire() {
            return;
        }
        let peer = *self.peers[node].lock().expect("peer lock poisoned");
        let redis = self
            .redis_nodes
            .get(&peer)
            .map_or(crate::world::FENCE_COUNTER, |(name, _, _)| name.as_str());
        let (direction, text) = match traffic {
            Traffic::Sent(request) => (Direction::Sent, request_text(request)),
            Traffic::Received(reply) => (Direction::Received, reply_text(reply)),
            Traffic::NoReply(why) => (Direction::NoReply, format!("no reply: {why}")),
        };
        self.recorder
            .wire(&self.client, self.clock.local_us(), redis, direction, text);
    }
}

/// A uniform draw from an inclusive `[min, max]` range.
pub fn draw<T: rand::distr::uniform::SampleUniform + PartialOrd + Copy>(
    rng: &mut impl Rng,
    [min, max]: [T; 2],
) -> T {
    rng.random_range(min..=max)
}
