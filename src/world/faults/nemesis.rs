//! The nemesis: faults at random times on random nodes, all drawn from the seed.
//!
//! Faults arrive as a Poisson process (exponential gaps of mean `1 / rate_per_s`); each
//! draws its kind from the allowed list, a node from all nodes, and a duration from the
//! range. A drawn partition isolates one node from all the others.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::{Reach, apply};
use crate::scenario::{FaultAction, RandomKind};

/// Injects random faults until the run ends; the first is the strike of the scenario's
/// fault number `index`.
pub async fn run(
    index: usize,
    rate_per_s: f64,
    kinds: Vec<RandomKind>,
    duration_ms: [u64; 2],
    reach: Arc<Reach>,
    mut rng: ChaCha8Rng,
) {
    let nodes: Vec<String> = reach.nodes.keys().cloned().collect();
    loop {
        let uniform: f64 = rng.random_range(f64::EPSILON..1.0);
        let gap_s = -uniform.ln() / rate_per_s;
        madsim::time::sleep(Duration::from_secs_f64(gap_s)).await;
        let kind = kinds[rng.random_range(0..kinds.len())];
        let node = nodes[rng.random_range(0..nodes.len())].clone();
        let ms = rng.random_range(duration_ms[0]..=duration_ms[1]);
        let action = match kind {
            RandomKind::Pause => FaultAction::Pause { duration_ms: ms },
            RandomKind::Crash => FaultAction::Crash {
                restart_after_ms: Some(ms),
            },
            RandomKind::Restart => FaultAction::Restart,
            RandomKind::ClockJump => FaultAction::ClockJump {
                by_ms: if rng.random_bool(0.5) {
                    ms as i64
                } else {
                    -(ms as i64)
                },
            },
            RandomKind::Partition => FaultAction::Partition {
                groups: vec![
                    vec![node.clone()],
                    nodes.iter().filter(|n| **n != node).cloned().collect(),
                ],
                one_way: false,
                duration_ms: Some(ms),
            },
            RandomKind::Reset => FaultAction::Reset,
        };
        reach.recorder.struck(index);
        let reach = reach.clone();
        madsim::task::spawn(async move { apply(action, vec![node], &reach).await });
    }
}
