//! One seeded run of a scenario: builds the simulated nodes, lets them run for the
//! scenario's duration under its faults, and returns the history.
//!
//! Every random choice of a run comes from its seed: madsim's own generator (network
//! latency, scheduling) and the world's ChaCha generator (clocks, per-client seeds).
//! Nothing here reads the host's clock or iterates an unordered map.

pub mod clock;
pub mod faults;
pub mod net;
pub mod recorder;
pub mod workload;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use madsim::runtime::{Handle, Runtime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::clock::{ClockModel, SimClock};
use self::faults::Reach;
use self::net::{REDIS_PORT, SimListener};
use self::recorder::Recorder;
use self::workload::{ClientProcess, Register, draw};
use crate::client::{Fencing, NoSteps};
use crate::history::History;
use crate::scenario::{ClocksSpec, Scenario};

/// The linearizable counter node fencing tokens come from with `lock.fencing: "counter"`.
pub const FENCE_COUNTER: &str = "fence-counter";
const FENCE_COUNTER_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1));

/// Runs one seed of a scenario on the current thread and returns its history.
///
/// Run each seed on a fresh thread: std's `HashMap` keys are seeded once per thread,
/// and madsim's runtime state is thread-local.
pub fn run(scenario: &Arc<Scenario>, seed: u64) -> History {
    let runtime = Runtime::with_seed_and_config(seed, net::net_config(&scenario.network));
    runtime.block_on(build_and_run(scenario.clone(), seed))
}

async fn build_and_run(scenario: Arc<Scenario>, seed: u64) -> History {
    let handle = Handle::current();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let recorder = Recorder::default();
    let resource = Register::default();
    let mut nodes = BTreeMap::new();
    let mut clocks = BTreeMap::new();

    let redis_names = scenario.redis_names();
    for (i, name) in redis_names.iter().enumerate() {
        let clock = new_clock(&mut rng, &scenario.clocks);
        let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, i as u8 + 1));
        let node_clock = clock.clone();
        let node = handle
            .create_node()
            .name(name)
            .ip(ip)
            .init(move || serve_redis(SocketAddr::new(ip, REDIS_PORT), node_clock.clone()))
            .build();
        nodes.insert(name.clone(), node.id());
        clocks.insert(name.clone(), clock);
    }
    let redis: Vec<SocketAddr> = (0..redis_names.len())
        .map(|i| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, i as u8 + 1)), REDIS_PORT))
        .collect();
    let fence_counter = (scenario.lock.options().fencing == Fencing::Counter).then(|| {
        // A single node that never fails over: INCR there never hands out a number twice.
        let clock = new_clock(&mut rng, &scenario.clocks);
        let addr = SocketAddr::new(FENCE_COUNTER_IP, REDIS_PORT);
        let node_clock = clock.clone();
        let node = handle
            .create_node()
            .name(FENCE_COUNTER)
            .ip(FENCE_COUNTER_IP)
            .init(move || serve_redis(addr, node_clock.clone()))
            .build();
        nodes.insert(FENCE_COUNTER.to_string(), node.id());
        clocks.insert(FENCE_COUNTER.to_string(), clock);
        addr
    });

    for (i, name) in scenario.client_names().into_iter().enumerate() {
        let clock = new_clock(&mut rng, &scenario.clocks);
        let process = ClientProcess {
            name: name.clone(),
            clock: clock.clone(),
            recorder: recorder.clone(),
            resource: resource.clone(),
            scenario: scenario.clone(),
            redis: redis.clone(),
            fence_counter,
            // Scenario-level crash points are not wired yet: nothing interrupts the steps.
            steps: Arc::new(NoSteps),
            seed: rng.next_u64(),
        };
        // A restarted process must not repeat its tokens: each incarnation gets its own seed.
        let incarnation = Arc::new(AtomicU64::new(0));
        let node = handle
            .create_node()
            .name(&name)
            .ip(IpAddr::V4(Ipv4Addr::new(10, 0, 1, i as u8 + 1)))
            .init(move || {
                let n = incarnation.fetch_add(1, Ordering::Relaxed);
                ClientProcess {
                    seed: process.seed.wrapping_add(n),
                    ..process.clone()
                }
                .run()
            })
            .build();
        nodes.insert(name.clone(), node.id());
        clocks.insert(name, clock);
    }

    let reach = Arc::new(Reach {
        nodes,
        clocks,
        recorder: recorder.clone(),
    });
    for fault in scenario.faults.iter().cloned() {
        let reach = reach.clone();
        madsim::task::spawn(async move { faults::inject(fault, &reach).await });
    }

    madsim::time::sleep(Duration::from_millis(scenario.duration_ms)).await;
    recorder.finish()
}

async fn serve_redis(addr: SocketAddr, clock: SimClock) {
    let listener = SimListener::bind(addr)
        .await
        .expect("a fresh node's port is free");
    // The loop ends only when accept fails, which madsim does not do to a live node.
    let _ = crate::redis::server::serve(listener, clock).await;
}

fn new_clock(rng: &mut ChaCha8Rng, spec: &ClocksSpec) -> SimClock {
    let offset_ms = draw(rng, spec.offset_ms);
    let drift_ppm = draw(rng, spec.drift_ppm);
    SimClock::new(ClockModel::new(offset_ms * 1_000_000, drift_ppm))
}
