//! The fault schedule live as in the simulator (one schedule, `src/schedule/`, over both):
//! a live seed strikes the nodes the simulated seed of the same number strikes, and
//! overlapping faults compose live as they do simulated. Each case runs a second or two
//! of real time on locksim's nodes.

use crate::support;

use std::sync::Arc;

use locksim::history::EventKind;
use locksim::live;
use locksim::scenario;
use locksim::sweep::run_seed;
use serde_json::json;

use support::cli::scratch;
use support::live::{Live, one_live_test_at_a_time, scenario_file};

/// `duration_ms` of `clients` workers on one locksim node, with `faults` (JSON).
fn on_one_node(duration_ms: u64, clients: u64, faults: &str) -> serde_json::Value {
    json!({
        "duration_ms": duration_ms,
        "topology": { "kind": "single" },
        "lock": { "algorithm": "lua-release", "ttl_ms": 500, "fencing": "none" },
        "clients": { "count": clients, "work_ms": [50, 100], "think_ms": [10, 30] },
        "faults": support::live::json(faults),
        "expect": {}
    })
}

#[test]
fn a_live_seed_pauses_the_client_the_simulated_seed_pauses() {
    let _serial = one_live_test_at_a_time();
    let dir = scratch("live-faults-any-client");
    let pause = r#"[ { "kind": "pause", "target": "any-client", "at_ms": 300, "duration_ms": 100 } ]"#;
    let file = scenario_file(&dir, "any-client", on_one_node(1000, 5, pause));
    let scenario = scenario::load(&file).unwrap();
    let setup = Live::new(&dir, false).setup(&file);
    let shared = Arc::new(scenario.clone());
    for seed in 0..3 {
        let simulated = run_seed(&shared, seed).unwrap();
        let live = live::run(&scenario, seed, &setup).unwrap();
        assert_eq!(
            live.strikes[0].on.targets, simulated.strikes[0].on.targets,
            "seed {seed}: live struck otherwise than simulated"
        );
        let paused: Vec<&str> = live
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Paused)
            .map(|e| e.node.as_str())
            .collect();
        assert_eq!(
            paused,
            [simulated.strikes[0].on.targets[0].as_str()],
            "seed {seed}"
        );
    }
}

#[test]
fn overlapping_pauses_of_one_worker_hold_it_until_the_last_ends_live() {
    let _serial = one_live_test_at_a_time();
    let dir = scratch("live-faults-overlap");
    // client-1 paused over [300, 900] and [600, 1200] ms: frozen once, from 300 to 1200 ms,
    // as the simulator composes them (docs/faults.md), not woken at 900 ms by the first end.
    let pauses = r#"[ { "kind": "pause", "target": "client-1", "at_ms": 300, "duration_ms": 600 },
                      { "kind": "pause", "target": "client-1", "at_ms": 600, "duration_ms": 600 } ]"#;
    let file = scenario_file(&dir, "overlap", on_one_node(1600, 2, pauses));
    let history = Live::new(&dir, false).run_file(&file);
    let on_client_1 = |kind: EventKind| -> Vec<u64> {
        history
            .events
            .iter()
            .filter(|e| e.node == "client-1" && e.kind == kind)
            .map(|e| e.true_us)
            .collect()
    };
    assert_eq!(on_client_1(EventKind::Paused).len(), 1, "{:#?}", history.events);
    let resumed = on_client_1(EventKind::Resumed);
    assert_eq!(resumed.len(), 1, "{:#?}", history.events);
    assert!(resumed[0] >= 1_200_000, "resumed at {} us", resumed[0]);
}
