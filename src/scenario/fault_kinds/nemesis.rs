//! The nemesis as a scenario states it: which kinds of fault it may draw, how often, and
//! the range of every field it draws (the draws themselves are the schedule's,
//! `schedule/nemesis.rs`).

use schemars::JsonSchema;
use serde::Deserialize;

/// What the nemesis may draw: the kinds, how often, and a range for every field.
#[derive(Debug, Clone, PartialEq)]
pub struct Nemesis {
    /// Mean faults per second.
    pub rate_per_s: f64,
    pub kinds: Vec<RandomKind>,
    /// How long a pause, a partition, a crash before its restart, a drift, a latency, a
    /// loss or a stall lasts.
    pub duration_ms: [u64; 2],
    /// How far a clock jump steps the clock, either way.
    pub jump_ms: [u64; 2],
    /// How fast (or, negative, slow) a drifting clock runs.
    pub drift_ppm: [i64; 2],
    /// The extra one-way latency of a slowed node.
    pub latency_ms: [u64; 2],
    /// The fraction of packets a lossy node drops.
    pub loss_rate: [f64; 2],
    /// Swarm testing (TigerBeetle's VOPR): each seed first draws its own nemesis — which
    /// of `kinds` are on, how often, which nodes it may hit — so some seeds see many
    /// partitions and no crashes, others the reverse.
    pub swarm: bool,
}

/// The nemesis' ranges where a scenario gives none.
impl Nemesis {
    pub const DEFAULT_DRIFT_PPM: [i64; 2] = [-100_000, 100_000];
    pub const DEFAULT_LATENCY_MS: [u64; 2] = [50, 500];
    pub const DEFAULT_LOSS_RATE: [f64; 2] = [0.1, 0.5];
}

/// Makes [`RandomKind`] from the list's drawn kinds.
macro_rules! random_kinds {
    (
        kinds: { $( $variant:ident = $name:literal ),* $(,)? }
        drawn: { $( $drawn:ident ),* $(,)? }
    ) => {
        /// Kinds the nemesis can draw.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum RandomKind {
            $( $drawn, )*
        }
    };
}

super::list::with_fault_kinds!(random_kinds);
