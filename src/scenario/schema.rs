//! The scenario schema. Field names carry their units (`ttl_ms`, `drift_ppm`).

use serde::Deserialize;

use super::fault::Fault;
use crate::check;

/// One scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name shown in tables and reports.
    pub name: String,
    /// What the scenario shows, in a sentence or two.
    #[serde(default)]
    pub description: String,
    /// Simulated (true) time each seed runs for.
    pub duration_ms: u64,
    /// How many seeds `locksim run` tries unless `--seeds` says otherwise.
    #[serde(default = "default_seeds")]
    pub seeds: u64,
    /// The Redis nodes.
    pub topology: Topology,
    /// The lock algorithm and its settings.
    pub lock: LockSpec,
    /// The clients competing for the lock.
    pub clients: ClientsSpec,
    /// The simulated network.
    #[serde(default)]
    pub network: NetworkSpec,
    /// Clock offset and drift of every node, drawn per node from the seed.
    #[serde(default)]
    pub clocks: ClocksSpec,
    /// Faults injected during the run.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// The verdicts the user expects, per checker.
    #[serde(default)]
    pub expect: Expect,
}

fn default_seeds() -> u64 {
    100
}

/// The Redis deployment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Which deployment.
    pub kind: TopologyKind,
    /// A crashed Redis node stays down at least this long before it serves again: the
    /// distlock page's countermeasure for restarts without persistence (≥ the max TTL).
    #[serde(default)]
    pub restart_delay_ms: u64,
}

/// The kinds of Redis deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// One master, no replica: `redis-1`.
    Single,
}

/// The lock algorithm under test.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// Which algorithm of the ladder.
    pub algorithm: Algorithm,
    /// Time to live of the lock key.
    pub ttl_ms: u64,
    /// How a client retries a failed acquire.
    #[serde(default)]
    pub retry: RetrySpec,
    /// How long a client waits for one reply from one node before giving up on it.
    #[serde(default = "default_node_timeout_ms")]
    pub node_timeout_ms: u64,
}

fn default_node_timeout_ms() -> u64 {
    1000
}

/// The lock algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// `SET key <random> NX PX ttl`, released by a compare-and-delete Lua script.
    LuaRelease,
}

/// Retries of a failed acquire: up to `count` more attempts, each after
/// `delay_ms` plus a random `0..=jitter_ms` so contenders do not retry in lockstep.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    pub count: u32,
    pub delay_ms: u64,
    pub jitter_ms: u64,
}

impl Default for RetrySpec {
    fn default() -> Self {
        RetrySpec {
            count: 10,
            delay_ms: 100,
            jitter_ms: 100,
        }
    }
}

/// The clients: each loops acquire → critical section → release → think.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientsSpec {
    /// How many clients (`client-1` … `client-N`).
    pub count: u32,
    /// Duration of one critical section, drawn uniformly from `[min, max]`.
    pub work_ms: [u64; 2],
    /// Pause between a release and the next acquire, drawn uniformly from `[min, max]`.
    #[serde(default = "default_think_ms")]
    pub think_ms: [u64; 2],
}

fn default_think_ms() -> [u64; 2] {
    [10, 100]
}

/// The simulated network.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way latency of every message, drawn uniformly from `[min, max]`.
    pub latency_ms: [u64; 2],
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec { latency_ms: [1, 5] }
    }
}

/// Clock error of every node at the start of a run, drawn per node from the seed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClocksSpec {
    /// Wall-clock offset from true time, drawn uniformly from `[min, max]`.
    #[serde(default)]
    pub offset_ms: [i64; 2],
    /// Rate error in parts per million (+ runs fast), drawn uniformly from `[min, max]`.
    #[serde(default)]
    pub drift_ppm: [i64; 2],
}

/// Expected verdicts, one optional field per checker.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Two clients believed they held the lock at once.
    pub mutual_exclusion: Option<Expectation>,
    /// The protected register lost an update.
    pub resource_safety: Option<Expectation>,
    /// The fenced resource accepted a stale token, or a token was granted twice.
    pub stale_write: Option<Expectation>,
    /// The lock stayed unavailable past TTL + one retry cycle after its holder died.
    pub deadlock: Option<Expectation>,
    /// A holder touched the resource after its own validity deadline.
    pub validity: Option<Expectation>,
}

impl Expect {
    /// The expectations that are set, by checker name.
    pub fn entries(&self) -> Vec<(&'static str, Expectation)> {
        [
            (check::mutual_exclusion::NAME, self.mutual_exclusion),
            (check::resource_safety::NAME, self.resource_safety),
            (check::stale_write::NAME, self.stale_write),
            (check::deadlock::NAME, self.deadlock),
            (check::validity::NAME, self.validity),
        ]
        .into_iter()
        .filter_map(|(name, e)| e.map(|e| (name, e)))
        .collect()
    }
}

/// What a checker should report over all seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expectation {
    /// At least one seed violates the invariant.
    Violated,
    /// No seed violates it.
    Holds,
}

impl Scenario {
    /// Names of the Redis nodes, in order.
    pub fn redis_names(&self) -> Vec<String> {
        match self.topology.kind {
            TopologyKind::Single => vec!["redis-1".to_string()],
        }
    }

    /// Names of the clients, in order.
    pub fn client_names(&self) -> Vec<String> {
        (1..=self.clients.count).map(|i| format!("client-{i}")).collect()
    }
}
