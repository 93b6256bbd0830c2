//! Live mode with replicas: `locksim worker` processes on a master and its replica (locksim's
//! nodes, then real redis-server), every link through a proxy, and locksim's failover
//! controller promoting the replica when the master dies. The distlock page's race: the
//! replica is cut off, a lock is granted on the master, the master dies, and the promoted
//! replica grants the same lock again; with `WAIT 1` after every grant, no grant is counted
//! while the replica is cut off, and the lock holds. Each run takes six seconds of real time.

use crate::support;

use std::path::{Path, PathBuf};

use locksim::history::{EventKind, History};
use serde_json::json;

use support::cli::scratch;
use support::live::{Live, assert_held, assert_violated, count, one_live_test_at_a_time, scenario_file};

/// A master and one replica, two workers holding the lock 2-2.5 s of its 3 s TTL, the
/// replica cut off from 0.5 s, and `crash` (the master's) as given.
fn failover_scenario(dir: &Path, name: &str, lock: &str, crash: &str) -> PathBuf {
    let fields = json!({
        "duration_ms": 6000,
        "topology": { "kind": "replicated", "replicas": 1, "down_after_ms": 300 },
        "lock": support::live::json(lock),
        "clients": { "count": 2, "work_ms": [2000, 2500], "think_ms": [10, 30] },
        "faults": [
            { "kind": "partition", "groups": [["redis-1"], ["redis-1-replica-1"]], "at_ms": 500 },
            support::live::json(crash)
        ],
        "expect": {}
    });
    scenario_file(dir, name, fields)
}

/// The master dies 10 ms after the first grant from 0.5 s on: a grant that never reached
/// the replica.
const CRASH_ON_GRANT: &str =
    r#"{ "kind": "crash", "target": "master", "on": "acquired", "at_ms": 500, "delay_ms": 10 }"#;

/// The master dies at 3.2 s, while the second holder (from about 2 s on) works.
const CRASH_AT: &str = r#"{ "kind": "crash", "target": "master", "at_ms": 3200 }"#;

const LOCK: &str = r#"{ "algorithm": "lua-release", "ttl_ms": 3000 }"#;
const LOCK_WITH_WAIT: &str = r#"{ "algorithm": "lua-release", "ttl_ms": 3000, "wait_replicas": 1 }"#;

fn failed_over(history: &History) -> bool {
    count(
        history,
        |k| matches!(k, EventKind::Failover { promoted, .. } if promoted == "redis-1-replica-1"),
    ) == 1
}

/// The race breaks mutual exclusion, and with WAIT 1 it holds.
fn failover_before_replication(redis_server: bool) {
    let _serial = one_live_test_at_a_time();
    let kind = if redis_server { "redis-server" } else { "locksim" };
    let dir = scratch(&format!("failover-{kind}"));
    let live = Live::new(&dir, redis_server);
    let file = failover_scenario(&dir, "race", LOCK, CRASH_ON_GRANT);
    let history = live.run_file(&file);
    assert!(failed_over(&history), "{:#?}", history.events);
    assert_violated(&history, &file, "mutual_exclusion");
    let file = failover_scenario(&dir, "wait", LOCK_WITH_WAIT, CRASH_AT);
    let history = live.run_file(&file);
    assert!(failed_over(&history), "{:#?}", history.events);
    assert!(
        count(&history, |k| matches!(k, EventKind::Acquired { .. })) >= 1,
        "{:#?}",
        history.events
    );
    assert_held(&history, &file, "mutual_exclusion");
}

#[test]
fn failover_before_replication_breaks_the_lock_on_locksims_nodes_and_wait_keeps_it() {
    failover_before_replication(false);
}

#[test]
fn failover_before_replication_breaks_the_lock_on_redis_server_and_wait_keeps_it() {
    failover_before_replication(true);
}
