//! The kinds of fault, in one list: each kind's name in files, whether it needs a target,
//! and its fields. [`fault_kinds!`] generates from the list what every kind needs alike —
//! the [`FaultAction`] enum, the names files use, the fields a file may set for each kind
//! (loading refuses any other), and the kind's fields written back as JSON — as `commands!`
//! does for Redis commands (src/redis/cmd/mod.rs). A field's name is its name in files.
//!
//! What stays per kind elsewhere: building it from a file's fields (`fault.rs`), the
//! checks of its values (`validate/fault.rs`) and its strike (`schedule/`).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::nemesis::Nemesis;

/// The fields a `random` fault (the nemesis) may set.
const NEMESIS_FIELDS: &[&str] = &[
    "rate_per_s",
    "kinds",
    "duration_ms",
    "jump_ms",
    "drift_ppm",
    "latency_ms",
    "loss_rate",
    "swarm",
];

macro_rules! fault_kinds {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, needs_target: $needs_target:literal
            $({ $($field:ident : $type:ty),* $(,)? })?
    ),* $(,)?) => {
        /// What a fault does.
        #[derive(Debug, Clone, PartialEq)]
        pub enum FaultAction {
            $( $(#[$doc])* $variant $({ $($field: $type),* })?, )*
            /// The nemesis: faults of the given kinds at random times (a Poisson process),
            /// on random nodes, each with its fields drawn from the ranges given.
            Random(Nemesis),
        }

        /// The kinds of fault, as named in files.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
        pub(super) enum FaultKind {
            $( #[serde(rename = $name)] $variant, )*
            #[serde(rename = "random")]
            Random,
        }

        impl FaultKind {
            /// The kind's name in files.
            pub(super) fn name(self) -> &'static str {
                match self {
                    $( FaultKind::$variant => $name, )*
                    FaultKind::Random => "random",
                }
            }

            /// The fields a fault of this kind may set (beside its target and trigger), and
            /// whether it needs a target.
            pub(super) fn fields(self) -> (&'static [&'static str], bool) {
                match self {
                    $( FaultKind::$variant => (&[$($(stringify!($field)),*)?], $needs_target), )*
                    FaultKind::Random => (NEMESIS_FIELDS, false),
                }
            }
        }

        impl FaultAction {
            /// The fault's `kind`, as scenario files spell it.
            pub fn kind(&self) -> &'static str {
                let kind = match self {
                    $( FaultAction::$variant { .. } => FaultKind::$variant, )*
                    FaultAction::Random(_) => FaultKind::Random,
                };
                kind.name()
            }

            /// The kind's own fields as a scenario file writes them (a concrete fault: the
            /// nemesis draws only those).
            pub(super) fn fields_json(&self) -> Value {
                match self {
                    $( FaultAction::$variant $({ $($field),* })? => json!({ $($(stringify!($field): $field),*)? }), )*
                    FaultAction::Random(_) => unreachable!("the nemesis draws only concrete faults"),
                }
            }
        }
    };
}

fault_kinds! {
    /// Freeze a process (GC pause, VM stop, SIGSTOP): its tasks stop, time goes on.
    Pause = "pause", needs_target: true { duration_ms: u64 },
    /// Kill a process: tasks, sockets and memory are gone; a Redis node without
    /// persistence forgets every key. Restarts after `restart_after_ms` if given.
    Crash = "crash", needs_target: true { restart_after_ms: Option<u64> },
    /// The node's machine fails (power cut, OS crash): a crash that also loses what the
    /// OS had not yet written to disk (an `everysec` AOF's last second). A process crash
    /// loses none of it: Redis writes the AOF before it replies.
    PowerLoss = "power_loss", needs_target: true { restart_after_ms: Option<u64> },
    /// Kill and start again at once (a deploy, an OOM kill with a supervisor).
    Restart = "restart", needs_target: true,
    /// Step a node's wall clock by `by_ms` (forward if positive); monotonic time is unmoved.
    ClockJump = "clock_jump", needs_target: true { by_ms: i64 },
    /// Make a node's clock run `rate_ppm` fast (or slow, if negative), for `duration_ms`
    /// or for the rest of the run.
    ClockDrift = "clock_drift", needs_target: true { rate_ppm: i64, duration_ms: Option<u64> },
    /// Cut the links between the groups (only from the first group to the others when
    /// `one_way`), for `duration_ms` or until a `heal`. Nodes in no group keep their links.
    /// A group may name nodes by a target's word (`holder`, `master` …), resolved when the
    /// fault strikes.
    Partition = "partition", needs_target: false {
        groups: Vec<Vec<String>>,
        one_way: bool,
        duration_ms: Option<u64>,
    },
    /// Restore every link cut by partitions.
    Heal = "heal", needs_target: false,
    /// Add latency, for `duration_ms` or for good: on the links between `groups` (from the
    /// first group only, when `one_way`), on every write of the fault's target nodes, or,
    /// with neither, to every message of the network.
    Latency = "latency", needs_target: false {
        latency_ms: [u64; 2],
        groups: Option<Vec<Vec<String>>>,
        one_way: bool,
        duration_ms: Option<u64>,
    },
    /// Drop this fraction of packets, for `duration_ms` or for good: on the links between
    /// `groups`, on every write of the fault's target nodes, or, with neither, on every
    /// message of the network. TCP resends, so for lock traffic loss shows up as delay,
    /// as on a real network.
    Loss = "loss", needs_target: false {
        rate: f64,
        groups: Option<Vec<Vec<String>>>,
        one_way: bool,
        duration_ms: Option<u64>,
    },
    /// Close every TCP connection of a node (a load balancer or NAT dropping them).
    Reset = "reset", needs_target: true,
    /// A replica stops receiving its master's stream (a slow or stuck link), for
    /// `duration_ms` or for good; the master goes on acknowledging writes.
    ReplicationStall = "replication_stall", needs_target: true { duration_ms: Option<u64> },
}
