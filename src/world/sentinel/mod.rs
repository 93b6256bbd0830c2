//! Redis Sentinel as a quorum of simulated nodes `sentinel-1` … `sentinel-N`
//! (`topology.sentinel`), shaped as `src/sentinel.c` of Redis 7.0.
//!
//! Each Sentinel is a node of its own, so partitions, pauses and crashes reach it like any
//! other. It probes every instance of every replicated group each second (`ROLE`, which
//! says both "alive" and "master or replica of whom, at which offset"), deems one down
//! (SDOWN) after `down_after_ms` without an answer, and asks the other Sentinels
//! (`SENTINEL is-master-down-by-addr`) whether they agree: with `quorum` of them the master
//! is ODOWN. A Sentinel that sees ODOWN starts a failover under a new epoch and asks for
//! votes; each Sentinel votes once per epoch, for the first that asks; with a majority
//! (and at least `quorum`) it is the leader. The leader promotes the replica with the
//! most replication data (`REPLICAOF NO ONE`), repoints the old master's other replicas,
//! and so moves the group's configuration to a new config epoch, which the other Sentinels
//! learn from its hello messages. The old master is left alone: a Sentinel converts it
//! (`REPLICAOF`) only once it has reported the master role for more than 8 s, as it learns
//! at an `INFO` (every 10 s), so about ten seconds after it is seen again; a replica of
//! another node is repointed after `failover_timeout` (`sentinelRefreshInstanceInfo`,
//! [`Instance`](crate::world::failover::Instance)). Every reconfiguration also sends
//! `CLIENT KILL TYPE normal` and `TYPE pubsub`, so clients reconnect and ask for the
//! master, and the node's configuration is rewritten: it restarts in that role. Clients
//! ask the Sentinels in turn (`SENTINEL get-master-addr-by-name`, see [`discovery`]) each
//! time they connect.
//!
//! Simplifications, each named where it is made: hellos go straight from Sentinel to
//! Sentinel (Redis publishes them on the monitored instances' `__sentinel__:hello`
//! channel); `ROLE` stands for both PING and INFO (sent each tick; its role is taken as an
//! `INFO` reply only when one is due); the commands Sentinel wraps in `MULTI … CONFIG
//! REWRITE … EXEC` are sent one by one; a Sentinel keeps its whole state across a crash
//! (Redis keeps its configuration in sentinel.conf and relearns the rest).

pub mod discovery;
mod monitor;
mod server;
mod watch;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use self::monitor::State;
use super::clock::SimClock;
use super::net::{Nic, SimListener};
use super::recorder::Recorder;
use super::topology::Group;
use crate::platform::Clock;
use crate::scenario::{SentinelSettings, sentinel_name};

/// The port every Sentinel listens on (Redis's default).
pub const SENTINEL_PORT: u16 = 26379;

/// Sentinel `i`'s (0-based) address: 10.0.3.(i+1), beside the controller and the fencing
/// counter (10.0.2.x), apart from Redis nodes (10.0.0.x, 10.1.x.x) and clients (10.2.x.x).
pub fn address(i: usize) -> SocketAddr {
    let last = u8::try_from(i + 1).expect("at most MAX_SENTINELS Sentinels");
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 3, last)), SENTINEL_PORT)
}

/// One Sentinel process: what it monitors, and its state, which outlives its crashes.
#[derive(Clone)]
pub struct Sentinel {
    /// Its index among the Sentinels (0-based); its name is `sentinel-(index+1)`.
    pub index: usize,
    pub settings: SentinelSettings,
    /// The groups it monitors (those with replicas).
    pub groups: Vec<Group>,
    pub clock: SimClock,
    pub nic: Nic,
    pub recorder: Recorder,
    state: Arc<Mutex<State>>,
}

impl Sentinel {
    /// Sentinel `index` of a quorum with `settings`, monitoring `groups`; `seed` draws its
    /// random choices (the desynchronised start of its failovers).
    pub fn new(
        index: usize,
        settings: SentinelSettings,
        groups: Vec<Group>,
        clock: SimClock,
        nic: Nic,
        recorder: Recorder,
        seed: u64,
    ) -> Self {
        let name = sentinel_name(index as u32 + 1);
        let state = State::new(name, settings, &groups, ChaCha8Rng::seed_from_u64(seed));
        Sentinel {
            index,
            settings,
            groups,
            clock,
            nic,
            recorder,
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// This Sentinel's name in traces and in the votes it casts.
    pub fn name(&self) -> String {
        sentinel_name(self.index as u32 + 1)
    }

    /// Runs the Sentinel until its node dies: answers other Sentinels and clients, and
    /// watches the groups.
    pub async fn run(self) {
        let now_ms = self.clock.monotonic_ms();
        self.state
            .lock()
            .expect("sentinel state poisoned")
            .restart(now_ms);
        let listener = SimListener::bind(address(self.index), self.nic.clone())
            .await
            .expect("a fresh Sentinel's port is free");
        futures::future::join(
            server::serve(listener, self.state.clone(), self.clock.clone()),
            watch::watch(self),
        )
        .await;
    }
}
