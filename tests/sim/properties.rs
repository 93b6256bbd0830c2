//! Property-based checks over generated fault schedules (locksim::search::strategy):
//!
//! - P1 safe envelope: Redlock on independent masters, clock drift within the drift
//!   factor, pauses shorter than the remaining validity, Redis restarts delayed by the
//!   TTL, partitions, resets, latency and loss of any shape: mutual exclusion holds.
//! - P2 fencing: with tokens from a linearizable counter, the resource stays safe and no
//!   stale token is accepted under any schedule, even where mutual exclusion breaks.
//! - P3 detection: for unsafe classes (a pause longer than the TTL, a Redis restart without
//!   persistence or delay on one node, clock jumps on Redlock nodes, a failover before the
//!   grant was replicated, each defective tier of the ladder) the search finds a violation
//!   within its case budget: proof that these properties can fail.
//! - P4 determinism: a generated scenario run twice on one seed gives one digest.
//!
//! CI runs a few cases each; `PROPTEST_CASES` raises them. A failure prints the scenario
//! file and the seed, and proptest keeps it in `tests/sim/properties.proptest-regressions`
//! (commit that file so the case stays a test).

use std::path::Path;
use std::sync::Arc;

use locksim::check::check_all;
use locksim::scenario::load_str;
use locksim::search::story;
use locksim::search::strategy::{FaultSpace, Setup, scenario};
use locksim::sweep::run_seed;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestError, TestRunner};
use serde_json::Value;

/// The checkers that fired when `file` ran on `seed`, with their messages.
fn violations(file: &Value, seed: u64) -> Vec<(String, String)> {
    let scenario = Arc::new(
        load_str(Path::new("(generated)"), &file.to_string()).expect("generated scenarios are valid"),
    );
    let history = run_seed(&scenario, seed).expect("the run completes");
    check_all(&history, &scenario.check_settings())
        .into_iter()
        .filter_map(|v| v.violation.map(|why| (v.checker.to_string(), why)))
        .collect()
}

/// A failure message a person can act on: what broke, told as a story, and how to run it
/// again.
fn explain(file: &Value, seed: u64, broken: &[(String, String)]) -> String {
    let told = broken.first().map_or_else(Vec::new, |(checker, why)| {
        let scenario = Arc::new(load_str(Path::new("(generated)"), &file.to_string()).unwrap());
        let history = run_seed(&scenario, seed).unwrap();
        story::render(&story::story(&history, checker, why), checker, why)
    });
    format!(
        "{broken:?}\n{}\nreplay: save this as case.json and run `locksim replay case.json --seed {seed} --story` \
         (or `locksim shrink case.json --seed {seed}`):\n{}",
        told.join("\n"),
        serde_json::to_string_pretty(file).unwrap()
    )
}

/// Cases per property: `PROPTEST_CASES`, or `default` (sized for CI).
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn safe_envelope() -> (Setup, FaultSpace) {
    let setup = Setup::redlock(5, 3000).with_topology("restart_delay_ms", 3000.into());
    let space = FaultSpace {
        kinds: vec![
            "pause",
            "crash",
            "restart",
            "clock_drift",
            "partition",
            "reset",
            "latency",
            "loss",
        ],
        // Shorter than the TTL minus the longest critical section and a round trip.
        max_duration_ms: 1000,
        max_jump_ms: 1,
        // 0.5%, within the 1% drift factor.
        max_drift_ppm: 5000,
        clients: true,
        redis: true,
    };
    (setup, space)
}

/// CI-sized cases; found failures are kept in `tests/sim/properties.proptest-regressions`.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(12),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/sim/properties.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn p1_redlock_within_its_envelope_keeps_mutual_exclusion(
        file in { let (setup, space) = safe_envelope(); scenario(setup, space, 6) },
        seed in 0..1000u64,
    ) {
        let broken = violations(&file, seed);
        let mutex = broken.iter().filter(|(c, _)| c == "mutual_exclusion").cloned().collect::<Vec<_>>();
        prop_assert!(mutex.is_empty(), "{}", explain(&file, seed, &mutex));
    }

    #[test]
    fn p2_fencing_from_a_counter_keeps_the_resource_safe(
        file in prop_oneof![
            scenario(Setup::single(2000).with_lock("fencing", "counter".into()), any_fault(), 5),
            scenario(Setup::redlock(3, 2000).with_lock("fencing", "counter".into()), any_fault(), 5),
        ],
        seed in 0..1000u64,
    ) {
        let broken = violations(&file, seed);
        let unsafe_data: Vec<_> = broken
            .iter()
            .filter(|(c, _)| c == "resource_safety" || c == "stale_write")
            .cloned()
            .collect();
        prop_assert!(unsafe_data.is_empty(), "{}", explain(&file, seed, &unsafe_data));
    }

    #[test]
    fn p4_a_generated_scenario_replays_to_one_digest(
        file in scenario(Setup::redlock(3, 2000), any_fault(), 4),
        seed in 0..1000u64,
    ) {
        let scenario = Arc::new(load_str(Path::new("(generated)"), &file.to_string()).unwrap());
        let first = run_seed(&scenario, seed).unwrap().digest();
        prop_assert_eq!(first, run_seed(&scenario, seed).unwrap().digest());
    }
}

/// Every kind of fault, on clients and Redis nodes, long ones included.
fn any_fault() -> FaultSpace {
    FaultSpace {
        kinds: vec![
            "pause",
            "crash",
            "restart",
            "clock_jump",
            "clock_drift",
            "partition",
            "reset",
            "latency",
            "loss",
        ],
        max_duration_ms: 6000,
        max_jump_ms: 5000,
        max_drift_ppm: 100_000,
        clients: true,
        redis: true,
    }
}

/// Runs a "mutual exclusion holds" property over `strategy` and returns after how many
/// cases it first failed: the search must find the violation within `budget` cases.
fn cases_to_first_violation(strategy: impl Strategy<Value = (Value, u64)>, budget: u32) -> u32 {
    cases_to_first_failure(strategy, budget, &["mutual_exclusion"])
}

/// As [`cases_to_first_violation`], for a property that none of `checkers` fires.
fn cases_to_first_failure(
    strategy: impl Strategy<Value = (Value, u64)>,
    budget: u32,
    checkers: &[&str],
) -> u32 {
    let config = Config {
        cases: budget,
        failure_persistence: None,
        max_shrink_iters: 0,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let tried = std::cell::Cell::new(0u32);
    let outcome = runner.run(&strategy, |(file, seed)| {
        tried.set(tried.get() + 1);
        let broken = violations(&file, seed);
        prop_assert!(!broken.iter().any(|(c, _)| checkers.contains(&c.as_str())));
        Ok(())
    });
    match outcome {
        // The failing case must fail by a violation, not by anything else going wrong.
        Err(TestError::Fail(_, (file, seed))) => {
            let broken = violations(&file, seed);
            assert!(
                broken.iter().any(|(c, _)| checkers.contains(&c.as_str())),
                "case {} failed without violating {checkers:?}",
                tried.get()
            );
            tried.get()
        }
        other => panic!("no violation of {checkers:?} found within {budget} cases: {other:?}"),
    }
}

/// The fault space of one unsafe class: only `kinds`, on clients or on Redis nodes.
fn only(kinds: Vec<&'static str>, max_duration_ms: u64, max_jump_ms: u64, clients: bool) -> FaultSpace {
    FaultSpace {
        kinds,
        max_duration_ms,
        max_jump_ms,
        max_drift_ppm: 1,
        clients,
        redis: !clients,
    }
}

#[test]
fn p3_a_pause_longer_than_the_ttl_is_found() {
    let space = only(vec!["pause"], 8000, 1, true);
    let found = cases_to_first_violation((scenario(Setup::single(2000), space, 3), 0..1000u64), 64);
    eprintln!("P3 pause > TTL: first violation at case {found}");
}

#[test]
fn p3_restarts_without_persistence_are_found() {
    let space = only(vec!["restart", "crash"], 500, 1, false);
    let found = cases_to_first_violation((scenario(Setup::single(3000), space, 6), 0..1000u64), 64);
    eprintln!("P3 restart without persistence: first violation at case {found}");
}

#[test]
fn p3_clock_jumps_on_redlock_nodes_are_found() {
    let space = only(vec!["clock_jump"], 1, 6000, false);
    let found = cases_to_first_violation((scenario(Setup::redlock(3, 2000), space, 6), 0..1000u64), 64);
    eprintln!("P3 clock jump on Redlock nodes: first violation at case {found}");
}

/// A master that dies while a write waits to be streamed to its replica, then a failover
/// after any delay: the search must find the promotions that come before the lost key's
/// TTL has run out.
#[test]
fn p3_failover_before_replication_is_found() {
    let strategy =
        (0..20u64, 200..6000u64, 1000..10_000u64, 0..1000u64).prop_map(|(delay, down_after, at, seed)| {
            let file = serde_json::json!({
                "name": "generated-failover",
                "duration_ms": 20000,
                "seeds": 1,
                "topology": { "kind": "replicated", "replicas": 1, "down_after_ms": down_after },
                "lock": { "algorithm": "lua-release", "ttl_ms": 3000 },
                "clients": { "count": 3, "work_ms": [1500, 2500] },
                "faults": [ { "kind": "crash", "target": "master", "on": "write_before_replication",
                              "at_ms": at, "delay_ms": delay } ]
            });
            (file, seed)
        });
    let found = cases_to_first_violation(strategy, 64);
    eprintln!("P3 failover before replication: first violation at case {found}");
}

/// Each defective tier of the ladder, with a client crashed or paused at any of its named
/// steps: the search must find the defect (a lock nobody can take again, or two holders).
#[test]
fn p3_each_ladder_defect_is_found() {
    for algorithm in ["setnx", "setnx-expire", "set-nx-px", "unique-get-del"] {
        let strategy = (
            proptest::sample::select(vec!["crash", "pause"]),
            proptest::sample::select(vec![
                "after_setnx",
                "after_acquire",
                "before_release",
                "after_get",
            ]),
            1000..8000u64,
            500..5000u64,
            0..1000u64,
        )
            .prop_map(move |(kind, step, at, duration, seed)| {
                let file = serde_json::json!({
                    "name": format!("generated-{algorithm}"),
                    "duration_ms": 20000,
                    "seeds": 1,
                    "topology": { "kind": "single" },
                    "lock": { "algorithm": algorithm, "ttl_ms": 2000 },
                    "clients": { "count": 3, "work_ms": [100, 500] },
                    "faults": [ { "kind": kind, "target": "any-client", "on": "crash_point", "step": step,
                                  "at_ms": at } ]
                });
                let mut file = file;
                if kind == "pause" {
                    file["faults"][0]["duration_ms"] = duration.into();
                }
                (file, seed)
            });
        let found = cases_to_first_failure(strategy, 64, &["mutual_exclusion", "deadlock"]);
        eprintln!("P3 ladder defect of {algorithm}: first violation at case {found}");
    }
}

#[test]
fn a_failure_message_tells_the_story_and_the_replay_command() {
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string("scenarios/single-node-gc-pause.json").unwrap())
            .unwrap();
    let broken = violations(&file, 0);
    let message = explain(&file, 0, &broken);
    assert!(
        message.contains("However, mutual_exclusion is broken"),
        "{message}"
    );
    assert!(
        message.contains("locksim replay case.json --seed 0 --story"),
        "{message}"
    );
}
