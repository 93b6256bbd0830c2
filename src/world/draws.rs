//! Every draw a run makes from its seed before its faults start, in the order the world
//! has always made them: each Redis node's clock, the fencing counter's, each client's
//! clock and seed, each Sentinel's (or the failover controller's clock), then one seed per
//! scheduled fault. Drawn in one place so that live mode can take the same fault seeds
//! ([`Draws::fault_seeds`]): a seed then draws the same targets (`any-redis`, `majority`
//! …) simulated and live, and `compare-live` can hold the two to it.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::workload::draw;
use crate::client::Fencing;
use crate::scenario::Scenario;

/// One node's clock as drawn: its offset from true time and its rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockDraw {
    pub offset_ms: i64,
    pub drift_ppm: i64,
}

/// A run's draws, in the order they were made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draws {
    /// Each Redis node's clock, group by group.
    pub redis_clocks: Vec<ClockDraw>,
    /// The fencing counter's clock, when tokens come from one.
    pub counter_clock: Option<ClockDraw>,
    /// Each client's clock and seed.
    pub clients: Vec<(ClockDraw, u64)>,
    /// Each Sentinel's clock and seed.
    pub sentinels: Vec<(ClockDraw, u64)>,
    /// The failover controller's clock (replicated groups without Sentinel).
    pub controller_clock: Option<ClockDraw>,
    /// Each scheduled fault's own seed.
    pub fault_seeds: Vec<u64>,
}

impl Draws {
    /// The draws of `scenario`'s run of `seed`.
    pub fn of(scenario: &Scenario, seed: u64) -> Draws {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let clock = |rng: &mut ChaCha8Rng| ClockDraw {
            offset_ms: draw(rng, scenario.clocks.offset_ms),
            drift_ppm: draw(rng, scenario.clocks.drift_ppm),
        };
        let groups = scenario.redis_groups();
        let redis_clocks = groups.iter().flatten().map(|_| clock(&mut rng)).collect();
        let counter_clock = (scenario.lock.options().fencing == Fencing::Counter).then(|| clock(&mut rng));
        let clients = scenario
            .client_names()
            .iter()
            .map(|_| (clock(&mut rng), rng.next_u64()))
            .collect();
        let (sentinels, controller_clock) = match scenario.sentinel() {
            Some(_) => {
                let sentinels = scenario
                    .sentinel_names()
                    .iter()
                    .map(|_| (clock(&mut rng), rng.next_u64()))
                    .collect();
                (sentinels, None)
            }
            None if groups.iter().any(|group| group.len() > 1) => (Vec::new(), Some(clock(&mut rng))),
            None => (Vec::new(), None),
        };
        let fault_seeds = scenario.faults.iter().map(|_| rng.next_u64()).collect();
        Draws {
            redis_clocks,
            counter_clock,
            clients,
            sentinels,
            controller_clock,
            fault_seeds,
        }
    }
}
