//! The lock client inside whole simulated runs: every algorithm selectable from a scenario
//! file, and fencing tokens turning a paused holder's stale write into a rejection.

use std::sync::Arc;

use locksim::check::{Verdict, check_all, resource_safety};
use locksim::history::{EventKind, History};
use locksim::scenario::{self, Scenario};
use locksim::sweep::run_seed;

/// A scenario from `lock` (a JSON object) and `faults` (a JSON array), 3 clients, 20 s.
fn scenario(name: &str, lock: &str, faults: &str) -> Arc<Scenario> {
    let text = format!(
        r#"{{ "name": "{name}", "duration_ms": 20000, "topology": {{ "kind": "single" }},
              "lock": {lock}, "clients": {{ "count": 3, "work_ms": [100, 500] }},
              "faults": {faults} }}"#
    );
    let dir = std::env::temp_dir().join(format!("locksim-client-world-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, text).unwrap();
    Arc::new(scenario::load(&file).expect("the scenario is valid"))
}

/// Every checker's verdict on one run.
fn judge(scenario: &Scenario, history: &History) -> Vec<Verdict> {
    check_all(history, &scenario.check_settings())
}

fn run(scenario: &Arc<Scenario>, seed: u64) -> History {
    run_seed(scenario, seed).expect("the run completes")
}

fn count(history: &History, kind: impl Fn(&EventKind) -> bool) -> usize {
    history.events.iter().filter(|e| kind(&e.kind)).count()
}

/// Whether the resource-safety checker finds a lost update in the run.
fn lost_update(history: &History) -> bool {
    resource_safety::check(history).violation.is_some()
}

#[test]
fn every_algorithm_runs_from_a_scenario_and_keeps_mutual_exclusion_without_faults() {
    for algorithm in [
        "setnx",
        "setnx-expire",
        "set-nx-px",
        "unique-get-del",
        "lua-release",
        "redlock",
    ] {
        let lock = format!(r#"{{ "algorithm": "{algorithm}", "ttl_ms": 2000 }}"#);
        let scenario = scenario(algorithm, &lock, "[]");
        for seed in 0..3 {
            let history = run(&scenario, seed);
            let acquired = count(&history, |k| matches!(k, EventKind::Acquired { .. }));
            assert!(
                acquired > 20,
                "{algorithm} seed {seed}: only {acquired} acquisitions"
            );
            let verdicts = judge(&scenario, &history);
            assert!(
                verdicts.iter().all(|v| v.violation.is_none()),
                "{algorithm} seed {seed}: {verdicts:?}"
            );
            assert!(!lost_update(&history), "{algorithm} seed {seed}");
        }
    }
}

/// The holder freezes for longer than the TTL, then resumes and writes.
const GC_PAUSE: &str = r#"[ { "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": 4000 } ]"#;

#[test]
fn without_fencing_a_paused_holder_loses_an_update() {
    let scenario = scenario(
        "unfenced",
        r#"{ "algorithm": "lua-release", "ttl_ms": 2000 }"#,
        GC_PAUSE,
    );
    let lost = (0..5).any(|seed| lost_update(&run(&scenario, seed)));
    assert!(lost, "the stale holder's write overwrote newer ones");
}

#[test]
fn fencing_tokens_turn_the_paused_holders_stale_access_into_a_rejection() {
    for source in ["master-incr", "counter"] {
        let lock = format!(r#"{{ "algorithm": "lua-release", "ttl_ms": 2000, "fencing": "{source}" }}"#);
        let scenario = scenario(&format!("fenced-{source}"), &lock, GC_PAUSE);
        let mut rejected = 0;
        for seed in 0..5 {
            let history = run(&scenario, seed);
            assert!(!lost_update(&history), "{source} seed {seed}");
            rejected += count(&history, |k| matches!(k, EventKind::ResourceRejected { .. }));
            let fences: Vec<u64> = history
                .events
                .iter()
                .filter_map(|e| match e.kind {
                    EventKind::Acquired { fence, .. } => fence,
                    _ => None,
                })
                .collect();
            assert!(
                fences.windows(2).all(|w| w[0] < w[1]),
                "{source} seed {seed}: tokens grow with every grant: {fences:?}"
            );
        }
        assert!(rejected > 0, "{source}: the stale holder was refused");
    }
}

#[test]
fn a_watchdog_keeps_the_lock_through_work_longer_than_the_ttl() {
    let long_work = |name: &str, lock: &str| {
        let text = lock.to_string();
        let scenario = scenario(name, &text, "[]");
        let scenario = Scenario {
            clients: locksim::scenario::ClientsSpec {
                work_ms: [1500, 2500],
                ..scenario.clients.clone()
            },
            ..(*scenario).clone()
        };
        Arc::new(scenario)
    };
    let renewed = long_work(
        "watchdog",
        r#"{ "algorithm": "lua-release", "ttl_ms": 1000, "watchdog": true }"#,
    );
    let unrenewed = long_work("no-watchdog", r#"{ "algorithm": "lua-release", "ttl_ms": 1000 }"#);
    for seed in 0..3 {
        let history = run(&renewed, seed);
        assert!(
            count(&history, |k| matches!(k, EventKind::Renewed { .. })) > 10,
            "seed {seed}"
        );
        assert!(
            judge(&renewed, &history).iter().all(|v| v.violation.is_none()),
            "seed {seed}"
        );
        assert!(!lost_update(&history), "seed {seed}");
        let history = run(&unrenewed, seed);
        assert!(
            judge(&unrenewed, &history).iter().any(|v| v.violation.is_some()),
            "seed {seed}: without renewal the key expires under the holder"
        );
    }
}

#[test]
fn a_process_pause_stops_the_watchdog_too() {
    let lock = r#"{ "algorithm": "lua-release", "ttl_ms": 2000, "watchdog": true }"#;
    let scenario = scenario("watchdog-gc-pause", lock, GC_PAUSE);
    for seed in 0..3 {
        let history = run(&scenario, seed);
        assert!(
            judge(&scenario, &history).iter().any(|v| v.violation.is_some()),
            "seed {seed}: the frozen holder's watchdog froze with it"
        );
        // On waking, its work ends before any renewal could tell it: it writes a stale
        // value, and only its release finds the key gone.
        assert!(lost_update(&history), "seed {seed}");
        assert!(
            count(&history, |k| matches!(k, EventKind::Released { owned: false })) > 0,
            "seed {seed}"
        );
    }
}

#[test]
fn runs_with_watchdog_fencing_and_a_profile_replay_to_the_same_digest() {
    let lock = r#"{ "algorithm": "redlock", "ttl_ms": 600, "profile": "node-redlock", "watchdog": true,
                   "fencing": "counter" }"#;
    let scenario = scenario("every-feature", lock, GC_PAUSE);
    let first = run(&scenario, 11);
    assert!(count(&first, |k| matches!(k, EventKind::Renewed { .. })) > 0);
    assert_eq!(first.digest(), run(&scenario, 11).digest());
    assert_ne!(first.digest(), run(&scenario, 12).digest());
}

#[test]
fn wait_for_one_replica_without_replicas_refuses_every_grant() {
    // `WAIT 1` on a master that has no replica can never be satisfied.
    let lock = r#"{ "algorithm": "lua-release", "ttl_ms": 2000, "wait_replicas": 1,
                   "retry": { "count": 0, "delay_ms": 0, "jitter_ms": 0 } }"#;
    let history = run(&scenario("wait-no-replica", lock, "[]"), 0);
    assert_eq!(count(&history, |k| matches!(k, EventKind::Acquired { .. })), 0);
    let refusals = count(
        &history,
        |k| matches!(k, EventKind::AcquireFailed { reason, .. } if reason.contains("only 0 of the 1 replicas")),
    );
    assert!(refusals > 10, "{refusals} refusals naming the missing replica");
}

#[test]
fn redisson_waits_only_for_the_replicas_it_sees() {
    // Redisson reads `connected_slaves` first: a master without replicas gets no WAIT.
    let lock = r#"{ "algorithm": "lua-release", "ttl_ms": 2000, "profile": "redisson" }"#;
    let history = run(&scenario("redisson-no-replica", lock, "[]"), 0);
    assert!(count(&history, |k| matches!(k, EventKind::Acquired { .. })) > 10);
    // `"wait_replicas": 0` turns the profile's WAIT off; `1` brings the refusals back.
    let lock = r#"{ "algorithm": "lua-release", "ttl_ms": 2000, "profile": "redisson", "wait_replicas": 1 }"#;
    let history = run(&scenario("redisson-wait-one", lock, "[]"), 0);
    assert_eq!(count(&history, |k| matches!(k, EventKind::Acquired { .. })), 0);
}
