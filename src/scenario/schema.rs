//! The scenario schema. Field names carry their units (`ttl_ms`, `drift_ppm`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::fault::Fault;
use super::limits;
use crate::check;
pub use crate::client::{
    Algorithm, AttemptCleanup, ExtendMode, Fencing, OnReadonly, Profile, RenewalOnError, RenewalStops,
    RetryToken,
};
use crate::client::{LockOptions, Retry, WaitFor, WaitReplicas};
use crate::redis::persistence::{DEFAULT_SAVE_POINTS, SavePoint};

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
    #[serde(deserialize_with = "limits::ms")]
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
    /// Bounds of the liveness checkers, where their defaults do not fit.
    #[serde(default)]
    pub checks: ChecksSpec,
    /// The verdicts the user expects, per checker.
    #[serde(default)]
    pub expect: Expect,
    /// How much one run may spend before it is stopped as a harness error (a livelock, a
    /// hang): simulated events, and host time.
    #[serde(default)]
    pub budget: BudgetSpec,
}

/// `budget`: the most one run may spend. The event budget is deterministic (a run stopped
/// by it is stopped on every machine); the wall-time budget is the last resort for a run
/// that stops advancing simulated time, and generous enough never to cut a sound run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    /// Simulated events (messages and timer firings) per simulated second of the run
    /// (default: [`DEFAULT_EVENTS_PER_NODE_S`] per node).
    pub events_per_s: Option<u64>,
    /// Host seconds one run may take (default [`DEFAULT_WALL_S`]).
    pub wall_s: Option<u64>,
}

/// Events per node and simulated second a run may process unless `budget.events_per_s`
/// says otherwise: the busiest catalogue scenario (five contenders on five Redlock
/// masters) processes about 60 per node and second, so this is over 150 times that.
pub const DEFAULT_EVENTS_PER_NODE_S: u64 = 10_000;

/// The fewest events a run may process by default, however short: room for its start-up.
pub const MIN_EVENT_BUDGET: u64 = 100_000;

/// Host seconds one run may take unless `budget.wall_s` says otherwise. A sound run of the
/// longest allowed duration takes seconds; only a run stuck in a busy loop gets here.
pub const DEFAULT_WALL_S: u64 = 300;

/// `checks`: the time bounds of the liveness checkers. Each defaults to a multiple of one
/// worst-case hand-over, the TTL plus one retry cycle (see [`check::CheckSettings`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecksSpec {
    /// The longest the lock may stay free while some client wants it (default: one
    /// hand-over).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    pub liveness_bound_ms: Option<u64>,
    /// The longest one client may wait while others get the lock (default: five
    /// hand-overs).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    pub starvation_bound_ms: Option<u64>,
    /// Grants of the lock needed after every fault for a seed to count as exercised: a
    /// seed with fewer is evidence of nothing, and a checker expected to hold is not met
    /// on such seeds (default 1).
    pub min_grants_after_fault: Option<u64>,
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
    /// How many independent masters (`redlock` only; default 5, as the distlock page
    /// recommends).
    pub masters: Option<u32>,
    /// Replicas of each master (`replicated`: default 1; `redlock`: default 0, each
    /// "instance" may itself be a replicated group).
    pub replicas: Option<u32>,
    /// The failover controller declares a master down after it has not answered for this
    /// long, and promotes its most up-to-date replica (Sentinel's `down-after-milliseconds`).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    pub down_after_ms: Option<u64>,
    /// What a Redis node keeps across a crash: `none` (the default), `aof-everysec` (an
    /// append-only file fsynced every second: a power loss loses up to the last second),
    /// `aof-always` (fsynced before each reply: nothing acknowledged is lost) or `rdb`
    /// (snapshots at the `save` points: a restart loses every write since the last one).
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
    pub restart_delay_ms: u64,
    /// How long a master's writes wait in its output buffer to each replica before they go
    /// on the wire (a replica slow to read, a busy master): replication lag that dies with
    /// the master's process, as Redis's does. Latency on the replication link is not that:
    /// bytes on the wire arrive even if their sender dies.
    #[serde(default, deserialize_with = "limits::ms")]
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
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SentinelSpec {
    /// How many Sentinels (3).
    pub count: Option<u32>,
    /// Sentinels that must agree the master is down before a failover (a majority of `count`).
    pub quorum: Option<u32>,
    /// A Sentinel deems an instance down after it has not answered for this long
    /// (`down-after-milliseconds`; `topology.down_after_ms`, or 5000).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    pub down_after_ms: Option<u64>,
    /// `failover-timeout`: how long an election or a promotion may take, and a failover is
    /// not tried again for twice this long (180000, Sentinel's default).
    #[serde(default, deserialize_with = "limits::opt_ms")]
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
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOverrides {
    pub persistence: Option<PersistenceMode>,
    pub redis_version: Option<u8>,
    #[serde(default, deserialize_with = "limits::opt_ms")]
    pub restart_delay_ms: Option<u64>,
}

/// The kinds of Redis deployment, ordered simplest first (as a report lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PersistenceMode {
    #[default]
    None,
    AofEverysec,
    AofAlways,
    Rdb,
}

/// Sentinel's usual `down-after-milliseconds` when the scenario does not say.
pub const DEFAULT_DOWN_AFTER_MS: u64 = 5000;

/// Masters of a Redlock deployment when the scenario does not say.
pub const DEFAULT_REDLOCK_MASTERS: u32 = 5;

/// The lock algorithm under test and its settings. A `profile` fills in the settings of a
/// lock library; every field given here overrides it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// Which algorithm of the ladder, or `redlock`.
    pub algorithm: Algorithm,
    /// Time to live of the lock key; 0 for a lock held until released (redis-py's
    /// `timeout=None`, single-node tiers 3–5 only).
    #[serde(deserialize_with = "limits::ms")]
    pub ttl_ms: u64,
    /// Copy the defaults and quirks of a lock library.
    #[serde(default)]
    pub profile: Option<Profile>,
    /// How a client retries a failed acquire.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// How long a client waits for one reply from one node before giving up on it.
    #[serde(default, deserialize_with = "limits::opt_ms")]
    pub node_timeout_ms: Option<u64>,
    /// Clock-drift allowance as a fraction of the TTL, subtracted from the validity.
    #[serde(default)]
    pub drift_factor: Option<f64>,
    /// Renew the TTL while the holder works: `true` (every TTL/3) or `{"interval_ms": n}`.
    #[serde(default)]
    pub watchdog: Option<WatchdogSpec>,
    /// Where fencing tokens come from: `none`, `master-incr` or `counter`.
    #[serde(default)]
    pub fencing: Option<Fencing>,
    /// After each grant (and renewal), `WAIT` up to `node_timeout_ms`: for this many
    /// replicas, fewer acknowledgements failing it (`0`: no WAIT, even where the profile
    /// has one); or `"connected"`, Redisson's check: for the replicas `INFO replication`
    /// lists, failing only when none acknowledged.
    #[serde(default)]
    pub wait_replicas: Option<WaitSpec>,
    /// How an extend treats the key: `compare-and-expire` (the default), `reacquire`
    /// (redis-py: `PEXPIRE` even with TTL 0, which deletes the key) or `set-if-missing`
    /// (go-redsync's `WithSetNXOnExtend`: a lost key is silently taken again).
    #[serde(default)]
    pub extend: Option<ExtendMode>,
    /// Refuse a grant or an extend that took the whole TTL (Redlock step 3; on by default
    /// for `redlock`). Without it a client trusts every reply for a whole TTL.
    #[serde(default)]
    pub validity_check: Option<bool>,
    /// What the watchdog does after a renewal got no answer: `retry` (the default) or
    /// `give-up` (old Redisson: no more renewals after a reconnect, and nobody is told).
    #[serde(default)]
    pub renewal_on_error: Option<RenewalOnError>,
    /// When the watchdog stops: `with-work` (the default) or `on-successful-release` (a
    /// failed release leaves it renewing for good: "renewal outlives unlock").
    #[serde(default)]
    pub renewal_stops: Option<RenewalStops>,
    /// The value each retry of one acquire stores: `fresh` (a new one per attempt, the
    /// default), `reused` (node-redlock, redsync, redis-py: one per acquire, refused by its
    /// own leftover key)
    /// or `reused-refreshing` (node-redlock PR #369: its own key is taken again).
    #[serde(default)]
    pub retry_token: Option<RetryToken>,
    /// Which nodes a failed attempt releases: `every-node` that did not refuse (the
    /// default), `granted-nodes` only (a node whose reply was lost keeps the key for a
    /// TTL), `after-final-failure` (node-redlock v5) or `never` (redis-py).
    #[serde(default)]
    pub attempt_cleanup: Option<AttemptCleanup>,
    /// What a client does when a node answers `READONLY` (its connection outlived the
    /// master's demotion): `retry` on the same connection (the default; Redisson, ioredis)
    /// or `reconnect` and ask for the master again (redis-py, go-redis).
    #[serde(default)]
    pub on_readonly: Option<OnReadonly>,
}

/// `lock.wait_replicas`: a number of replicas, or `"connected"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum WaitSpec {
    /// `WAIT n`; 0 turns WAIT off.
    Replicas(u32),
    /// Redisson's synced-slaves check.
    Connected(ConnectedReplicas),
}

/// The one word `lock.wait_replicas` takes besides a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectedReplicas {
    Connected,
}

/// `lock.watchdog`: on with the usual interval, or with an explicit one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum WatchdogSpec {
    /// `true`: renew every TTL/3; `false`: no watchdog.
    Enabled(bool),
    /// Renew every `interval_ms`.
    Every {
        #[serde(deserialize_with = "limits::ms")]
        interval_ms: u64,
    },
}

/// Retries of a failed acquire: up to `count` more attempts, each after
/// `delay_ms` plus a random `0..=jitter_ms` so contenders do not retry in lockstep.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    pub count: u32,
    #[serde(deserialize_with = "limits::ms")]
    pub delay_ms: u64,
    #[serde(deserialize_with = "limits::ms")]
    pub jitter_ms: u64,
}

impl LockSpec {
    /// The client settings: plain defaults for the algorithm, then the profile, then every
    /// field the scenario sets.
    pub fn options(&self) -> LockOptions {
        let mut options = LockOptions::new(self.algorithm, self.ttl_ms);
        if let Some(profile) = self.profile {
            options = options.profile(profile);
        }
        if let Some(retry) = &self.retry {
            options.retry = Retry {
                count: retry.count,
                delay_ms: retry.delay_ms,
                jitter_ms: retry.jitter_ms,
            };
        }
        override_with(&mut options.request_timeout_ms, self.node_timeout_ms);
        override_with(&mut options.drift.factor, self.drift_factor);
        match self.watchdog {
            None => {}
            Some(WatchdogSpec::Enabled(true)) => options = options.watchdog(),
            Some(WatchdogSpec::Enabled(false)) => options.watchdog_interval_ms = None,
            Some(WatchdogSpec::Every { interval_ms }) => options.watchdog_interval_ms = Some(interval_ms),
        }
        override_with(&mut options.fencing, self.fencing);
        override_with(&mut options.extend, self.extend);
        override_with(&mut options.validity_check, self.validity_check);
        override_with(&mut options.renewal_on_error, self.renewal_on_error);
        override_with(&mut options.renewal_stops, self.renewal_stops);
        override_with(&mut options.retry_token, self.retry_token);
        override_with(&mut options.attempt_cleanup, self.attempt_cleanup);
        override_with(&mut options.on_readonly, self.on_readonly);
        let wait = |replicas| WaitReplicas {
            replicas,
            timeout_ms: options.request_timeout_ms,
        };
        match self.wait_replicas {
            None => {}
            Some(WaitSpec::Replicas(0)) => options.wait_replicas = None,
            Some(WaitSpec::Replicas(n)) => options.wait_replicas = Some(wait(WaitFor::Exactly(n))),
            Some(WaitSpec::Connected(_)) => options.wait_replicas = Some(wait(WaitFor::Connected)),
        }
        options
    }
}

/// Sets `setting` to the scenario's `value`, when the scenario gives one.
fn override_with<T>(setting: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *setting = value;
    }
}

/// The clients: each loops acquire → critical section → release → think.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientsSpec {
    /// How many clients (`client-1` … `client-N`).
    pub count: u32,
    /// Duration of one critical section, drawn uniformly from `[min, max]`.
    #[serde(deserialize_with = "limits::ms_pair")]
    pub work_ms: [u64; 2],
    /// Clients whose critical sections take a different time, by name (`"client-1":
    /// {"work_ms": [4000, 5000]}`): a long batch job among short requests.
    #[serde(default)]
    pub per_client: BTreeMap<String, ClientOverrides>,
    /// Pause between a release and the next acquire, drawn uniformly from `[min, max]`.
    #[serde(default = "default_think_ms", deserialize_with = "limits::ms_pair")]
    pub think_ms: [u64; 2],
    /// Careful clients: a critical section ends when the validity the acquire reported
    /// runs out, as the distlock page asks ("work must finish within the validity time").
    #[serde(default)]
    pub stop_at_validity: bool,
    /// The write to the protected resource travels this long, drawn from `[min, max]`,
    /// before it lands (a slow network or queue between client and storage); the client
    /// waits for it, then releases.
    #[serde(default, deserialize_with = "limits::opt_ms_pair")]
    pub write_delay_ms: Option<[u64; 2]>,
    /// Live mode (`locksim run --live`): the program each client runs, as an argument
    /// list (`["python3", "worker.py"]`), one process per client, started in the
    /// scenario file's directory. The simulator ignores it; live mode without it runs
    /// `locksim worker`, locksim's own client.
    #[serde(default)]
    pub command: Option<Vec<String>>,
}

/// The settings one client may have of its own.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientOverrides {
    #[serde(default, deserialize_with = "limits::opt_ms_pair")]
    pub work_ms: Option<[u64; 2]>,
}

impl ClientsSpec {
    /// How long `client`'s critical sections take (its override, or everyone's).
    pub fn work_ms_of(&self, client: &str) -> [u64; 2] {
        self.per_client
            .get(client)
            .and_then(|o| o.work_ms)
            .unwrap_or(self.work_ms)
    }

    /// The longest critical section any client may draw.
    pub fn longest_work_ms(&self) -> u64 {
        let overrides = self.per_client.values().filter_map(|o| o.work_ms);
        overrides
            .chain([self.work_ms])
            .map(|[_, max]| max)
            .max()
            .unwrap_or(0)
    }
}

fn default_think_ms() -> [u64; 2] {
    [10, 100]
}

/// The simulated network.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way latency of every message, drawn uniformly from `[min, max]`.
    #[serde(deserialize_with = "limits::ms_pair")]
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
    #[serde(default, deserialize_with = "limits::signed_ms_pair")]
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
    /// After its holder died, the lock kept being refused past TTL + one retry cycle.
    pub deadlock: Option<Expectation>,
    /// A holder touched the resource when the key that granted it had expired (on the
    /// node's clock), been deleted or replaced on enough nodes that the grant no longer stood.
    pub validity: Option<Expectation>,
    /// The lock stayed free longer than `checks.liveness_bound_ms` while clients wanted it.
    pub liveness: Option<Expectation>,
    /// A client waited longer than `checks.starvation_bound_ms` while others got the lock.
    pub starvation: Option<Expectation>,
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
            (check::liveness::NAME, self.liveness),
            (check::starvation::NAME, self.starvation),
        ]
        .into_iter()
        .filter_map(|(name, e)| e.map(|e| (name, e)))
        .collect()
    }

    /// The checkers expected violated, by name.
    pub fn violated(&self) -> Vec<&'static str> {
        self.entries()
            .into_iter()
            .filter(|(_, expectation)| *expectation == Expectation::Violated)
            .map(|(checker, _)| checker)
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
    /// The same scenario with no faults: no schedule, no crash point, no nemesis; clocks,
    /// network and workload stay. The no-fault control runs it.
    pub fn without_faults(&self) -> Scenario {
        Scenario {
            faults: Vec::new(),
            ..self.clone()
        }
    }

    /// What the checkers need of this scenario. The slack is one full retry cycle (the
    /// longest retry sleep, a timed-out request, the longest think time) after the key
    /// expired. The bounds are the scenario's `checks`, or else: liveness, one worst-case
    /// hand-over (the holder died, its key lives out the TTL, a waiter notices within the
    /// slack); starvation, [`check::STARVATION_CYCLES`] of the longest lock cycles (the
    /// longer of the TTL and the longest critical section, then the slack).
    pub fn check_settings(&self) -> check::CheckSettings {
        let options = self.lock.options();
        let deadlock_slack_ms = options.retry.delay_ms
            + options.retry.jitter_ms
            + options.request_timeout_ms
            + self.clients.think_ms[1];
        let clients = &self.clients;
        let longest_section_ms = clients.longest_work_ms() + clients.write_delay_ms.map_or(0, |[_, max]| max);
        let longest_cycle_ms = options.ttl_ms.max(longest_section_ms) + deadlock_slack_ms;
        check::CheckSettings {
            ttl_ms: options.ttl_ms,
            deadlock_slack_ms,
            liveness_bound_ms: self
                .checks
                .liveness_bound_ms
                .unwrap_or(options.ttl_ms + deadlock_slack_ms),
            starvation_bound_ms: self
                .checks
                .starvation_bound_ms
                .unwrap_or(check::STARVATION_CYCLES * longest_cycle_ms),
            faults: self.faults.len(),
            min_grants_after_fault: self.checks.min_grants_after_fault.unwrap_or(1),
        }
    }

    /// The Redis nodes by group: each group is a master followed by its replicas.
    pub fn redis_groups(&self) -> Vec<Vec<String>> {
        let (masters, replicas) = match self.topology.kind {
            TopologyKind::Single => (1, 0),
            TopologyKind::Replicated => (1, self.topology.replicas.unwrap_or(1)),
            TopologyKind::Redlock => (
                self.topology.masters.unwrap_or(DEFAULT_REDLOCK_MASTERS),
                self.topology.replicas.unwrap_or(0),
            ),
        };
        (1..=masters)
            .map(|i| {
                std::iter::once(format!("redis-{i}"))
                    .chain((1..=replicas).map(|j| format!("redis-{i}-replica-{j}")))
                    .collect()
            })
            .collect()
    }

    /// Names of every Redis node (masters and replicas), in order.
    pub fn redis_names(&self) -> Vec<String> {
        self.redis_groups().into_iter().flatten().collect()
    }

    /// Names of the masters at the start, in order: where the lock lives.
    pub fn master_names(&self) -> Vec<String> {
        self.redis_groups()
            .into_iter()
            .map(|group| group[0].clone())
            .collect()
    }

    /// A Redis node's persistence (its override, or the topology's).
    pub fn persistence_of(&self, node: &str) -> PersistenceMode {
        self.override_of(node, |o| o.persistence)
            .unwrap_or(self.topology.persistence)
    }

    /// A Redis node's version (its override, or the topology's; 7 when neither says).
    pub fn redis_version_of(&self, node: &str) -> u8 {
        self.override_of(node, |o| o.redis_version)
            .or(self.topology.redis_version)
            .unwrap_or(7)
    }

    /// How long a crashed Redis node stays down (its override, or the topology's).
    pub fn restart_delay_ms_of(&self, node: &str) -> u64 {
        self.override_of(node, |o| o.restart_delay_ms)
            .unwrap_or(self.topology.restart_delay_ms)
    }

    fn override_of<T>(&self, node: &str, field: impl Fn(&NodeOverrides) -> Option<T>) -> Option<T> {
        self.topology.nodes.get(node).and_then(field)
    }

    /// How long the failover controller waits before promoting a replica.
    pub fn down_after_ms(&self) -> u64 {
        self.topology.down_after_ms.unwrap_or(DEFAULT_DOWN_AFTER_MS)
    }

    /// The Sentinel quorum's settings, when the scenario has one (`topology.sentinel`).
    pub fn sentinel(&self) -> Option<SentinelSettings> {
        let spec = self.topology.sentinel.as_ref()?;
        let count = spec.count.unwrap_or(DEFAULT_SENTINELS);
        Some(SentinelSettings {
            count,
            quorum: spec.quorum.unwrap_or(count / 2 + 1),
            down_after_ms: spec.down_after_ms.unwrap_or(self.down_after_ms()),
            failover_timeout_ms: spec.failover_timeout_ms.unwrap_or(DEFAULT_FAILOVER_TIMEOUT_MS),
        })
    }

    /// Names of the Sentinels (none without `topology.sentinel`).
    pub fn sentinel_names(&self) -> Vec<String> {
        let count = self.sentinel().map_or(0, |s| s.count);
        (1..=count).map(sentinel_name).collect()
    }

    /// The RDB save points of `rdb` nodes (`topology.save`, or Redis's defaults).
    pub fn save_points(&self) -> Vec<SavePoint> {
        match &self.topology.save {
            Some(points) => points
                .iter()
                .map(|&[seconds, changes]| SavePoint { seconds, changes })
                .collect(),
            None => DEFAULT_SAVE_POINTS.to_vec(),
        }
    }

    /// Masters' `min-replicas-to-write` and `min-replicas-max-lag` (s): `None` when off.
    pub fn min_replicas(&self) -> Option<(u32, u64)> {
        let topology = &self.topology;
        let lag_s = topology
            .min_replicas_max_lag_s
            .unwrap_or(DEFAULT_MIN_REPLICAS_MAX_LAG_S);
        (topology.min_replicas_to_write > 0).then_some((topology.min_replicas_to_write, lag_s))
    }

    /// The most simulated events one run may process: `budget.events_per_s` times the
    /// simulated seconds, or by default [`DEFAULT_EVENTS_PER_NODE_S`] per node and second
    /// and at least [`MIN_EVENT_BUDGET`].
    pub fn event_budget(&self) -> u64 {
        let seconds = self.duration_ms.div_ceil(1000);
        match self.budget.events_per_s {
            Some(per_s) => per_s.saturating_mul(seconds),
            None => {
                let nodes = self.node_names().len() as u64;
                (DEFAULT_EVENTS_PER_NODE_S * nodes * seconds).max(MIN_EVENT_BUDGET)
            }
        }
    }

    /// The most host time one run may take.
    pub fn wall_budget(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.budget.wall_s.unwrap_or(DEFAULT_WALL_S))
    }

    /// Names of the clients, in order.
    pub fn client_names(&self) -> Vec<String> {
        (1..=self.clients.count).map(|i| format!("client-{i}")).collect()
    }

    /// Every node a fault may name: the Redis nodes, the clients, the failover controller
    /// where a group has replicas, and the fencing counter where there is one.
    pub fn node_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .redis_names()
            .into_iter()
            .chain(self.client_names())
            .collect();
        if self.sentinel().is_some() {
            names.extend(self.sentinel_names());
        } else if self.redis_groups().iter().any(|group| group.len() > 1) {
            names.push(SENTINEL.to_string());
        }
        if self.lock.options().fencing == Fencing::Counter {
            names.push(FENCE_COUNTER.to_string());
        }
        names
    }
}

/// The failover controller's node name, for groups with replicas (without `topology.sentinel`).
pub const SENTINEL: &str = "sentinel";

/// The name of Sentinel `i` (1-based) of `topology.sentinel`.
pub fn sentinel_name(i: u32) -> String {
    format!("sentinel-{i}")
}

/// The linearizable counter node fencing tokens come from with `lock.fencing: "counter"`.
pub const FENCE_COUNTER: &str = "fence-counter";
