//! The nemesis: faults at random times on random nodes, all drawn from the seed.
//!
//! Faults arrive as a Poisson process (exponential gaps of mean `1 / rate_per_s`); each
//! draws its kind from the allowed list, a node, and every field of its kind from the
//! scenario's ranges. A drawn partition isolates one node from all the others; a drawn
//! latency or loss slows that node's writes; a drawn stall stops a replica's stream.
//!
//! In swarm mode (TigerBeetle's VOPR) the seed first draws the nemesis itself: which of the
//! kinds are on, how much each weighs, how busy the nemesis is, which nodes it may hit.
//! Rare combinations — many partitions and no crashes, only clock faults — then get runs
//! of their own instead of being averaged away.
//!
//! Every fault struck is recorded as it would be written in a scenario file, with the
//! true time it struck, so a random run can be turned into an explicit fault list.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::{Backend, Schedule};
use crate::history::StruckOn;
use crate::scenario::{Draw, Fault, FaultAction, Nemesis, RandomKind, Trigger};

/// The nemesis one seed runs: in swarm mode a subset, otherwise all the scenario allows.
struct Plan {
    /// The kinds on, each with its weight.
    kinds: Vec<(RandomKind, f64)>,
    rate_per_s: f64,
    /// The nodes it may hit.
    nodes: Vec<String>,
}

/// How much a swarm seed may slow or speed the nemesis: its rate is multiplied by a
/// factor drawn from this range.
const SWARM_RATE_FACTOR: [f64; 2] = [0.25, 2.0];

impl Plan {
    fn draw(nemesis: &Nemesis, nodes: Vec<String>, rng: &mut ChaCha8Rng) -> Plan {
        if !nemesis.swarm {
            return Plan {
                kinds: nemesis.kinds.iter().map(|&kind| (kind, 1.0)).collect(),
                rate_per_s: nemesis.rate_per_s,
                nodes,
            };
        }
        let mut kinds: Vec<(RandomKind, f64)> = Vec::new();
        for &kind in &nemesis.kinds {
            if rng.random_bool(0.5) {
                kinds.push((kind, rng.random_range(0.1..1.0)));
            }
        }
        if kinds.is_empty() {
            kinds.push((nemesis.kinds[rng.random_range(0..nemesis.kinds.len())], 1.0));
        }
        let mut hit: Vec<String> = nodes.iter().filter(|_| rng.random_bool(0.5)).cloned().collect();
        if hit.is_empty() {
            hit.push(nodes[rng.random_range(0..nodes.len())].clone());
        }
        Plan {
            kinds,
            rate_per_s: nemesis.rate_per_s * rng.random_range(SWARM_RATE_FACTOR[0]..SWARM_RATE_FACTOR[1]),
            nodes: hit,
        }
    }

    /// A kind, by weight.
    fn kind(&self, rng: &mut ChaCha8Rng) -> RandomKind {
        let total: f64 = self.kinds.iter().map(|(_, weight)| weight).sum();
        let mut pick = rng.random_range(0.0..total);
        for &(kind, weight) in &self.kinds {
            if pick < weight {
                return kind;
            }
            pick -= weight;
        }
        self.kinds[self.kinds.len() - 1].0
    }
}

/// Strikes random faults until the run ends; the first is the strike of the scenario's
/// fault number `index`.
pub async fn run<B: Backend + 'static>(
    schedule: Arc<Schedule<B>>,
    index: usize,
    nemesis: Nemesis,
    mut rng: ChaCha8Rng,
) {
    let all = schedule.backend.nodes();
    let plan = Plan::draw(&nemesis, all.clone(), &mut rng);
    loop {
        let uniform: f64 = rng.random_range(f64::EPSILON..1.0);
        let gap_s = -uniform.ln() / plan.rate_per_s;
        schedule.backend.sleep(Duration::from_secs_f64(gap_s)).await;
        let kind = plan.kind(&mut rng);
        let Some(node) = pick_node(kind, &plan.nodes, &schedule.cast.replicas, &mut rng) else {
            continue; // nothing this kind can hit (a stall without replicas)
        };
        let duration_ms = rng.random_range(nemesis.duration_ms[0]..=nemesis.duration_ms[1]);
        let (action, target) = FaultAction::draw(
            kind,
            &mut Draw {
                nemesis: &nemesis,
                node: &node,
                all: &all,
                duration_ms,
                rng: &mut rng,
            },
        );
        let fault = Fault {
            trigger: Trigger::At {
                at_ms: schedule.backend.true_ns() / 1_000_000,
            },
            target,
            action: action.clone(),
        };
        let on = StruckOn {
            targets: vec![node.clone()],
            ..StruckOn::default()
        };
        schedule.backend.struck(index, on);
        schedule.backend.drawn(fault.to_json().to_string());
        let striking = schedule.clone();
        schedule
            .backend
            .spawn(async move { striking.strike(action, vec![node]).await });
    }
}

/// The node a fault of `kind` hits: any the plan allows; for a stall a replica.
fn pick_node(
    kind: RandomKind,
    nodes: &[String],
    replicas: &[String],
    rng: &mut ChaCha8Rng,
) -> Option<String> {
    let candidates: Vec<&String> = match kind.on_replicas() {
        true => nodes.iter().filter(|node| replicas.contains(*node)).collect(),
        false => nodes.iter().collect(),
    };
    (!candidates.is_empty()).then(|| candidates[rng.random_range(0..candidates.len())].clone())
}
