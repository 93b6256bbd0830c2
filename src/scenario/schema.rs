//! The scenario schema: the file's top level, the clients, the network, the clocks, the
//! checks' bounds, the run budget and the expectations. The Redis deployment is in
//! [`topology`](super::topology), the lock's settings in [`lock_spec`](super::lock_spec),
//! the faults in [`fault`](super::fault). Field names carry their units (`ttl_ms`,
//! `drift_ppm`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::fault::Fault;
use super::limits;
use super::lock_spec::LockSpec;
use super::schema_forms::{Duration, SignedDuration};
use super::topology::Topology;
use crate::check;

/// One scenario file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The JSON Schema the file follows (`locksim schema` writes it), so that an editor
    /// checks and completes the file; locksim itself reads nothing from it.
    #[serde(rename = "$schema", default)]
    pub schema: Option<String>,
    /// Short name shown in tables and reports.
    pub name: String,
    /// What the scenario shows, in a sentence or two.
    #[serde(default)]
    pub description: String,
    /// Simulated (true) time each seed runs for.
    #[serde(deserialize_with = "limits::ms")]
    #[schemars(with = "Duration")]
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
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChecksSpec {
    /// The longest the lock may stay free while some client wants it (default: one
    /// hand-over).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    pub liveness_bound_ms: Option<u64>,
    /// The longest one client may wait while others get the lock (default: five
    /// hand-overs).
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    pub starvation_bound_ms: Option<u64>,
    /// Grants of the lock needed after every fault for a seed to count as exercised: a
    /// seed with fewer is evidence of nothing, and a checker expected to hold is not met
    /// on such seeds (default 1).
    pub min_grants_after_fault: Option<u64>,
}

fn default_seeds() -> u64 {
    100
}

/// The clients: each loops acquire → critical section → release → think.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientsSpec {
    /// How many clients (`client-1` … `client-N`).
    pub count: u32,
    /// Duration of one critical section, drawn uniformly from `[min, max]`.
    #[serde(deserialize_with = "limits::ms_pair")]
    #[schemars(with = "[Duration; 2]")]
    pub work_ms: [u64; 2],
    /// Clients whose critical sections take a different time, by name (`"client-1":
    /// {"work_ms": [4000, 5000]}`): a long batch job among short requests.
    #[serde(default)]
    pub per_client: BTreeMap<String, ClientOverrides>,
    /// Pause between a release and the next acquire, drawn uniformly from `[min, max]`.
    #[serde(default = "default_think_ms", deserialize_with = "limits::ms_pair")]
    #[schemars(with = "[Duration; 2]")]
    pub think_ms: [u64; 2],
    /// Careful clients: a critical section ends when the validity the acquire reported
    /// runs out, as the distlock page asks ("work must finish within the validity time").
    #[serde(default)]
    pub stop_at_validity: bool,
    /// The write to the protected resource travels this long, drawn from `[min, max]`,
    /// before it lands (a slow network or queue between client and storage); the client
    /// waits for it, then releases.
    #[serde(default, deserialize_with = "limits::opt_ms_pair")]
    #[schemars(with = "Option<[Duration; 2]>")]
    pub write_delay_ms: Option<[u64; 2]>,
    /// Live mode (`locksim run --live`): the program each client runs, as an argument
    /// list (`["python3", "worker.py"]`), one process per client, started in the
    /// scenario file's directory. The simulator ignores it; live mode without it runs
    /// `locksim worker`, locksim's own client.
    #[serde(default)]
    pub command: Option<Vec<String>>,
}

/// The settings one client may have of its own.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientOverrides {
    /// This client's critical section length, `[min, max]`, in place of `clients.work_ms`.
    #[serde(default, deserialize_with = "limits::opt_ms_pair")]
    #[schemars(with = "Option<[Duration; 2]>")]
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
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way latency of every message, drawn uniformly from `[min, max]`.
    #[serde(deserialize_with = "limits::ms_pair")]
    #[schemars(with = "[Duration; 2]")]
    pub latency_ms: [u64; 2],
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec { latency_ms: [1, 5] }
    }
}

/// Clock error of every node at the start of a run, drawn per node from the seed.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClocksSpec {
    /// Wall-clock offset from true time, drawn uniformly from `[min, max]`.
    #[serde(default, deserialize_with = "limits::signed_ms_pair")]
    #[schemars(with = "[SignedDuration; 2]")]
    pub offset_ms: [i64; 2],
    /// Rate error in parts per million (+ runs fast), drawn uniformly from `[min, max]`.
    #[serde(default)]
    pub drift_ppm: [i64; 2],
}

/// Expected verdicts, one optional field per checker.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
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
}
