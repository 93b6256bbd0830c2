//! Live mode with replicas: `locksim worker` processes on a master and its replica (locksim's
//! nodes, then real redis-server), every link through a proxy, and locksim's failover
//! controller promoting the replica when the master dies. The distlock page's race: the
//! replica is cut off, a lock is granted on the master, the master dies, and the promoted
//! replica grants the same lock again; with `WAIT 1` after every grant, no grant is counted
//! while the replica is cut off, and the lock holds. Each run takes six seconds of real time.

mod support;

use std::path::{Path, PathBuf};

use locksim::check::check_all;
use locksim::history::{EventKind, History};
use locksim::live::{self, LiveSetup};
use locksim::scenario;

use support::cli::scratch;

/// A master and one replica, two workers holding the lock 2-2.5 s of its 3 s TTL, the
/// replica cut off from 0.5 s, and `crash` (the master's) as given.
fn failover_scenario(dir: &Path, name: &str, lock: &str, crash: &str) -> PathBuf {
    let file = dir.join(format!("{name}.json"));
    let text = format!(
        r#"{{
  "name": "{name}",
  "duration_ms": 6000,
  "seeds": 1,
  "topology": {{ "kind": "replicated", "replicas": 1, "down_after_ms": 300 }},
  "lock": {lock},
  "clients": {{ "count": 2, "work_ms": [2000, 2500], "think_ms": [10, 30] }},
  "faults": [
    {{ "kind": "partition", "groups": [["redis-1"], ["redis-1-replica-1"]], "at_ms": 500 }},
    {crash}
  ],
  "expect": {{}}
}}"#
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// The master dies 10 ms after the first grant from 0.5 s on: a grant that never reached
/// the replica.
const CRASH_ON_GRANT: &str =
    r#"{ "kind": "crash", "target": "master", "on": "acquired", "at_ms": 500, "delay_ms": 10 }"#;

/// The master dies at 3.2 s, while the second holder (from about 2 s on) works.
const CRASH_AT: &str = r#"{ "kind": "crash", "target": "master", "at_ms": 3200 }"#;

const LOCK: &str = r#"{ "algorithm": "lua-release", "ttl_ms": 3000 }"#;
const LOCK_WITH_WAIT: &str = r#"{ "algorithm": "lua-release", "ttl_ms": 3000, "wait_replicas": 1 }"#;

fn run_live(file: &Path, dir: &Path, redis_server: bool) -> History {
    let scenario = scenario::load(file).unwrap();
    let setup = LiveSetup {
        scenario_file: file.to_path_buf(),
        default_worker: vec![env!("CARGO_BIN_EXE_locksim").to_string(), "worker".into()],
        redis_server,
        worker_env: Vec::new(),
        scratch: dir.join("runs"),
    };
    live::unsupported(&scenario, &setup).unwrap();
    live::run(&scenario, 0, &setup).unwrap()
}

fn violated(history: &History, file: &Path, checker: &str) -> bool {
    let settings = scenario::load(file).unwrap().check_settings();
    check_all(history, &settings)
        .into_iter()
        .any(|v| v.checker == checker && v.violation.is_some())
}

fn count(history: &History, matches: impl Fn(&EventKind) -> bool) -> usize {
    history.events.iter().filter(|e| matches(&e.kind)).count()
}

fn failed_over(history: &History) -> bool {
    count(
        history,
        |k| matches!(k, EventKind::Failover { promoted, .. } if promoted == "redis-1-replica-1"),
    ) == 1
}

/// The race breaks mutual exclusion, and with WAIT 1 it holds.
fn failover_before_replication(redis_server: bool) {
    let kind = if redis_server { "redis-server" } else { "locksim" };
    let dir = scratch(&format!("failover-{kind}"));
    let file = failover_scenario(&dir, "race", LOCK, CRASH_ON_GRANT);
    let history = run_live(&file, &dir, redis_server);
    assert!(failed_over(&history), "{:#?}", history.events);
    assert!(
        violated(&history, &file, "mutual_exclusion"),
        "{:#?}",
        history.events
    );
    let file = failover_scenario(&dir, "wait", LOCK_WITH_WAIT, CRASH_AT);
    let history = run_live(&file, &dir, redis_server);
    assert!(failed_over(&history), "{:#?}", history.events);
    assert!(
        count(&history, |k| matches!(k, EventKind::Acquired { .. })) >= 1,
        "{:#?}",
        history.events
    );
    assert!(
        !violated(&history, &file, "mutual_exclusion"),
        "{:#?}",
        history.events
    );
}

#[test]
fn failover_before_replication_breaks_the_lock_on_locksims_nodes_and_wait_keeps_it() {
    failover_before_replication(false);
}

#[test]
fn failover_before_replication_breaks_the_lock_on_redis_server_and_wait_keeps_it() {
    failover_before_replication(true);
}
