//! The Redis deployment of a scenario (`topology`): its kind, replicas, persistence,
//! Sentinel and per-node exceptions, and the names of the nodes it adds (`nodes.rs` reads
//! them for a run).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::limits;
use super::schema_forms::Duration;

/// The Redis deployment.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Which deployment.
    pub kind: TopologyKind,
    /// How many independent masters (`redlock` only; default 5, as the distlock page
    /// recommends).
    pub masters: Option<u32>,
    /// Replicas of each master (`replicated`: default 1; `redlock`: default 0, each
    /// "instance" may itself be a replicated group).
    pub replicas: Option<u32>,
    /// The failover controller declares a master down after it has not answered for this
    /// long, and promotes its most up-to-date replica (Sentinel's `down-after-milliseconds`).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    pub down_after_ms: Option<u64>,
    /// What a Redis node keeps across a crash: `none` (the default), `aof-everysec` (an
    /// append-only file fsynced every second: a power loss loses up to the last second),
    /// `aof-always` (fsynced before each reply: nothing acknowledged is lost), `aof-no`
    /// (never fsynced by Redis: a power loss loses what the OS had not yet written back,
    /// up to ~35 s of writes) or `rdb` (snapshots at the `save` points: a restart loses
    /// every write since the last one). A process crash loses nothing with an AOF.
    #[serde(default)]
    pub persistence: PersistenceMode,
    /// The RDB save points of `rdb` nodes, each `[seconds, changes]`: a snapshot once at
    /// least `changes` writes were made and more than `seconds` passed since the last one
    /// (Redis's `save`; by default Redis 7.0's `[[3600, 1], [300, 100], [60, 10000]]`; `[]`
    /// takes none).
    pub save: Option<Vec<[u64; 2]>>,
    /// The Redis version whose rules the nodes follow where versions differ: 7 (the
    /// default) replicates TTLs as absolute times (PXAT), 6 as the time left.
    pub redis_version: Option<u8>,
    /// A crashed Redis node stays down at least this long before it serves again: the
    /// distlock page's countermeasure for restarts without persistence (≥ the max TTL).
    #[serde(default, deserialize_with = "limits::ms")]
    #[schemars(with = "Duration")]
    pub restart_delay_ms: u64,
    /// How long a master's writes wait in its output buffer to each replica before they go
    /// on the wire (a replica slow to read, a busy master): replication lag that dies with
    /// the master's process, as Redis's does. Latency on the replication link is not that:
    /// bytes on the wire arrive even if their sender dies.
    #[serde(default, deserialize_with = "limits::ms")]
    #[schemars(with = "Duration")]
    pub replication_lag_ms: u64,
    /// Per-node exceptions to `persistence`, `redis_version` and `restart_delay_ms`, by
    /// node name (`"redis-3": {"persistence": "aof-always"}`).
    #[serde(default)]
    pub nodes: BTreeMap<String, NodeOverrides>,
    /// A quorum of Sentinels (`sentinel-1` …) fails the groups over, and clients ask them
    /// for the master, instead of the one controller that never fails.
    #[serde(default)]
    pub sentinel: Option<SentinelSpec>,
    /// Masters refuse writes (`NOREPLICAS`) while fewer than this many replicas acknowledged
    /// within `min_replicas_max_lag_s` (Redis's `min-replicas-to-write`; 0, the default, is off).
    #[serde(default)]
    pub min_replicas_to_write: u32,
    /// The longest a replica may go without acknowledging and still count as good, in whole
    /// seconds as Redis counts them (`min-replicas-max-lag`; 10).
    pub min_replicas_max_lag_s: Option<u64>,
}

/// `topology.sentinel`: Sentinel's own settings (sentinel.conf), each with Sentinel's name.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SentinelSpec {
    /// How many Sentinels (3).
    pub count: Option<u32>,
    /// Sentinels that must agree the master is down before a failover (a majority of `count`).
    pub quorum: Option<u32>,
    /// A Sentinel deems an instance down after it has not answered for this long
    /// (`down-after-milliseconds`; `topology.down_after_ms`, or 5000).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    pub down_after_ms: Option<u64>,
    /// `failover-timeout`: how long an election or a promotion may take, and a failover is
    /// not tried again for twice this long (180000, Sentinel's default).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    pub failover_timeout_ms: Option<u64>,
}

/// The Sentinel settings of a run, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentinelSettings {
    pub count: u32,
    pub quorum: u32,
    pub down_after_ms: u64,
    pub failover_timeout_ms: u64,
}

/// Sentinels when `topology.sentinel` does not say.
pub const DEFAULT_SENTINELS: u32 = 3;

/// Sentinel's default `failover-timeout` (3 minutes).
pub const DEFAULT_FAILOVER_TIMEOUT_MS: u64 = 180_000;

/// Redis's default `min-replicas-max-lag`, in seconds.
pub const DEFAULT_MIN_REPLICAS_MAX_LAG_S: u64 = 10;

/// The settings one Redis node may have of its own.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeOverrides {
    /// This node's persistence, in place of `topology.persistence`.
    pub persistence: Option<PersistenceMode>,
    /// This node's Redis version (6 or 7), in place of `topology.redis_version`.
    pub redis_version: Option<u8>,
    /// How long this node stays down after a crash, in place of `topology.restart_delay_ms`.
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    pub restart_delay_ms: Option<u64>,
}

/// The kinds of Redis deployment, ordered simplest first (as a report lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// One master, no replica: `redis-1`.
    Single,
    /// One master `redis-1` with `replicas` asynchronous replicas `redis-1-replica-1` …,
    /// and a failover controller (like Sentinel) that promotes one when the master dies.
    Replicated,
    /// `masters` independent masters `redis-1` … `redis-N` (each with `replicas` replicas).
    Redlock,
}

impl TopologyKind {
    /// Every kind, simplest first: what a report goes through kind by kind.
    pub const ALL: [TopologyKind; 3] = [
        TopologyKind::Single,
        TopologyKind::Replicated,
        TopologyKind::Redlock,
    ];

    /// The kind as grid and scenario files spell it, the word a report shows.
    pub fn name(self) -> &'static str {
        match self {
            TopologyKind::Single => "single",
            TopologyKind::Replicated => "replicated",
            TopologyKind::Redlock => "redlock",
        }
    }
}

/// Persistence of every Redis node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PersistenceMode {
    /// Nothing: a restarted node is empty.
    #[default]
    None,
    /// An append-only file fsynced every second: a power loss loses up to the last second.
    AofEverysec,
    /// An append-only file fsynced before each reply: nothing acknowledged is lost.
    AofAlways,
    /// `appendfsync no`: Redis never fsyncs; the OS writes the AOF back on its own.
    AofNo,
    /// Snapshots at the `save` points: a restart loses every write since the last one.
    Rdb,
}

/// Sentinel's usual `down-after-milliseconds` when the scenario does not say.
pub const DEFAULT_DOWN_AFTER_MS: u64 = 5000;

/// Masters of a Redlock deployment when the scenario does not say.
pub const DEFAULT_REDLOCK_MASTERS: u32 = 5;

/// The failover controller's node name, for groups with replicas (without `topology.sentinel`).
pub const SENTINEL: &str = "sentinel";

/// The name of Sentinel `i` (1-based) of `topology.sentinel`.
pub fn sentinel_name(i: u32) -> String {
    format!("sentinel-{i}")
}

/// The linearizable counter node fencing tokens come from with `lock.fencing: "counter"`.
pub const FENCE_COUNTER: &str = "fence-counter";
