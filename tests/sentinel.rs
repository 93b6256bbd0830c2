//! Failover as Sentinel does it, seen through simulated runs: clients that follow a
//! demoted master (`lock.on_readonly`), the Sentinel quorum, and masters that refuse writes
//! without enough good replicas (`min-replicas-to-write`).

use std::sync::Arc;

use locksim::history::{EventKind, History};
use locksim::scenario::Scenario;
use locksim::sweep::run_seed;

fn load(text: &str) -> Arc<Scenario> {
    let scenario = locksim::scenario::load_str(std::path::Path::new("(test)"), text);
    Arc::new(scenario.expect("test scenario is valid"))
}

/// When a fault of the history began (true µs), by its kind's name in the history.
fn first_true_us(history: &History, matches: impl Fn(&EventKind) -> bool) -> u64 {
    history
        .events
        .iter()
        .find(|e| matches(&e.kind))
        .map(|e| e.true_us)
        .expect("the event happens")
}

/// Acquires refused with READONLY, and acquires granted, after `from_us`.
fn after(history: &History, from_us: u64) -> (usize, usize) {
    let later = history.events.iter().filter(|e| e.true_us > from_us);
    let (mut readonly, mut granted) = (0, 0);
    for event in later {
        match &event.kind {
            EventKind::AcquireFailed { reason, .. } if reason.contains("READONLY") => readonly += 1,
            EventKind::Acquired { .. } => granted += 1,
            _ => {}
        }
    }
    (readonly, granted)
}

/// The master is cut off from its replica and the failover controller (not from the
/// clients) long enough to be replaced; after the heal the controller makes it a replica,
/// and the clients' connections to it survive.
fn demoted_master(on_readonly: &str) -> Arc<Scenario> {
    load(&format!(
        r#"{{
          "name": "test", "duration_ms": 15000, "seeds": 1,
          "topology": {{ "kind": "replicated", "replicas": 1, "down_after_ms": 500 }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": 1000, "on_readonly": "{on_readonly}" }},
          "clients": {{ "count": 2, "work_ms": [50, 100] }},
          "faults": [ {{ "kind": "partition", "groups": [["redis-1"], ["redis-1-replica-1", "sentinel"]],
                         "at_ms": 3000, "duration_ms": 2000 }} ]
        }}"#
    ))
}

#[test]
fn a_client_that_retries_on_readonly_stays_on_the_demoted_master() {
    let s = demoted_master("retry");
    for seed in 0..3 {
        let history = run_seed(&s, seed).unwrap();
        let healed = first_true_us(&history, |k| matches!(k, EventKind::Failover { .. })) + 2_000_000;
        let (readonly, granted) = after(&history, healed);
        assert!(
            readonly >= 4,
            "seed {seed}: {readonly} acquires refused with READONLY after the heal"
        );
        assert_eq!(granted, 0, "seed {seed}: nobody reached the new master");
    }
}

#[test]
fn a_client_that_reconnects_on_readonly_finds_the_new_master() {
    let s = demoted_master("reconnect");
    for seed in 0..3 {
        let history = run_seed(&s, seed).unwrap();
        let healed = first_true_us(&history, |k| matches!(k, EventKind::Failover { .. })) + 2_000_000;
        let (readonly, granted) = after(&history, healed);
        assert_eq!(readonly, 0, "seed {seed}: a READONLY reached the lock");
        assert!(granted > 10, "seed {seed}: only {granted} grants after the heal");
    }
}
