//! The scenario schema. Field names carry their units (`ttl_ms`, `drift_ppm`).

use serde::Deserialize;

pub use crate::client::{Algorithm, Fencing, Profile};
use crate::client::{LockOptions, Retry, WaitReplicas};

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
}

/// The kinds of Redis deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// One master, no replica: `redis-1`.
    Single,
}

/// The lock algorithm under test and its settings. A `profile` fills in the settings of a
/// lock library; every field given here overrides it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// Which algorithm of the ladder, or `redlock`.
    pub algorithm: Algorithm,
    /// Time to live of the lock key.
    pub ttl_ms: u64,
    /// Copy the defaults and quirks of a lock library.
    #[serde(default)]
    pub profile: Option<Profile>,
    /// How a client retries a failed acquire.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// How long a client waits for one reply from one node before giving up on it.
    #[serde(default)]
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
    /// After each grant, `WAIT` (up to `node_timeout_ms`) for this many replicas; fewer
    /// acknowledgements fail the grant.
    #[serde(default)]
    pub wait_replicas: Option<u32>,
}

/// `lock.watchdog`: on with the usual interval, or with an explicit one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum WatchdogSpec {
    /// `true`: renew every TTL/3; `false`: no watchdog.
    Enabled(bool),
    /// Renew every `interval_ms`.
    Every { interval_ms: u64 },
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
        if let Some(ms) = self.node_timeout_ms {
            options.request_timeout_ms = ms;
        }
        if let Some(factor) = self.drift_factor {
            options.drift.factor = factor;
        }
        match self.watchdog {
            None => {}
            Some(WatchdogSpec::Enabled(true)) => options = options.watchdog(),
            Some(WatchdogSpec::Enabled(false)) => options.watchdog_interval_ms = None,
            Some(WatchdogSpec::Every { interval_ms }) => options.watchdog_interval_ms = Some(interval_ms),
        }
        if let Some(fencing) = self.fencing {
            options.fencing = fencing;
        }
        if let Some(replicas) = self.wait_replicas {
            options.wait_replicas = Some(WaitReplicas {
                replicas,
                timeout_ms: options.request_timeout_ms,
            });
        }
        options
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

/// A fault: what happens, to whom, and when.
///
/// In a file a fault is one flat object (`kind`, `target`, `at_ms` and the fields its
/// kind uses); loading checks that the kind's fields are there and no others.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "FaultFields")]
pub struct Fault {
    /// Whom it hits.
    pub target: Target,
    /// True time of the injection.
    pub at_ms: u64,
    pub action: FaultAction,
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Freeze a process (GC pause, VM stop, SIGSTOP): its tasks stop, time goes on.
    Pause { duration_ms: u64 },
    /// Step a node's wall clock by `by_ms` (forward if positive).
    ClockJump { by_ms: i64 },
}

/// The kinds of fault, as named in files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FaultKind {
    Pause,
    ClockJump,
}

/// A fault object as written in a file: every field any kind may use.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultFields {
    kind: FaultKind,
    target: Option<Target>,
    at_ms: Option<u64>,
    duration_ms: Option<u64>,
    by_ms: Option<i64>,
}

impl TryFrom<FaultFields> for Fault {
    /// "field `name`: reason", which the loader folds into the field's path.
    type Error = String;

    fn try_from(f: FaultFields) -> Result<Self, String> {
        let name = match f.kind {
            FaultKind::Pause => "pause",
            FaultKind::ClockJump => "clock_jump",
        };
        let required = |field: &str| format!("field `{field}`: required by kind `{name}`");
        let action = match f.kind {
            FaultKind::Pause => FaultAction::Pause {
                duration_ms: f.duration_ms.ok_or_else(|| required("duration_ms"))?,
            },
            FaultKind::ClockJump => FaultAction::ClockJump {
                by_ms: f.by_ms.ok_or_else(|| required("by_ms"))?,
            },
        };
        let used = match action {
            FaultAction::Pause { .. } => "duration_ms",
            FaultAction::ClockJump { .. } => "by_ms",
        };
        let optional = [
            ("duration_ms", f.duration_ms.is_some()),
            ("by_ms", f.by_ms.is_some()),
        ];
        if let Some((unused, _)) = optional.iter().find(|(field, set)| *set && *field != used) {
            return Err(format!("field `{unused}`: not used by kind `{name}`"));
        }
        Ok(Fault {
            target: f.target.ok_or_else(|| required("target"))?,
            at_ms: f.at_ms.ok_or_else(|| required("at_ms"))?,
            action,
        })
    }
}

/// Whom a fault hits.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum Target {
    /// The client holding the lock at that moment, or if none, the next one to acquire.
    Holder,
    /// A node by name: `redis-1`, `client-2`, …
    Node(String),
}

impl From<String> for Target {
    fn from(name: String) -> Self {
        match name.as_str() {
            "holder" => Target::Holder,
            _ => Target::Node(name),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Holder => f.write_str("holder"),
            Target::Node(name) => f.write_str(name),
        }
    }
}

/// Expected verdicts, one optional field per checker.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub mutual_exclusion: Option<Expectation>,
}

impl Expect {
    /// The expectations that are set, by checker name.
    pub fn entries(&self) -> Vec<(&'static str, Expectation)> {
        [("mutual_exclusion", self.mutual_exclusion)]
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
