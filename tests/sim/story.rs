//! Stories told of simulated runs: a restart that loses the lock key says so, a fault's
//! end says which nodes another fault still holds, a liveness story says why each try
//! failed (the replies, a Redlock quorum not reached node by node, the Sentinel elections
//! that failed, the dead holder's key behind a deadlock) in a few steps, a Sentinel's
//! failover is told as that Sentinel's, and each story is headed by the checker it explains.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use locksim::check::check_all;
use locksim::history::{EventKind, History};
use locksim::scenario::load_str;
use locksim::search::story;
use locksim::sweep::run_seed;
use serde_json::{Value, json};

/// Runs `scenario` on `seed`; the story (rendered) of each checker it violates.
fn stories(scenario: &Value, seed: u64) -> (History, Vec<(String, Vec<String>)>) {
    let parsed = load_str(Path::new("(test)"), &scenario.to_string()).expect("a valid scenario");
    let history = run_seed(&Arc::new(parsed.clone()), seed).unwrap();
    let told = check_all(&history, &parsed.check_settings())
        .into_iter()
        .filter_map(|v| {
            let why = v.violation?;
            let steps = story::story(&history, v.checker, &why);
            Some((v.checker.to_string(), story::render(&steps, v.checker, &why)))
        })
        .collect();
    (history, told)
}

/// The story of `checker`, which the run must violate.
fn story_of<'s>(told: &'s [(String, Vec<String>)], checker: &str) -> &'s [String] {
    &told
        .iter()
        .find(|(c, _)| c == checker)
        .unwrap_or_else(|| panic!("{checker} is violated: {told:#?}"))
        .1
}

fn said(lines: &[String], text: &str) -> bool {
    lines.iter().any(|line| line.contains(text))
}

/// A catalogue scenario, as JSON.
fn catalogue(file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// A single Redis node crashing 100 ms into a grant, back 200 ms later, with `persistence`
/// (none if `None`).
fn restart(persistence: Option<&str>) -> Value {
    let mut topology = json!({ "kind": "single" });
    if let Some(persistence) = persistence {
        topology["persistence"] = persistence.into();
    }
    json!({
        "name": "restart", "duration_ms": 12000,
        "topology": topology,
        "lock": { "algorithm": "lua-release", "ttl_ms": 5000 },
        "clients": { "count": 3, "work_ms": [1000, 3000] },
        "faults": [ { "kind": "crash", "target": "redis-1", "on": "acquired", "at_ms": 5000,
                      "delay_ms": 100, "restart_after_ms": 200 } ]
    })
}

/// The client granted the lock last before the first crash.
fn holder_at_crash(history: &History) -> String {
    let crash = history
        .events
        .iter()
        .position(|e| e.node == "redis-1" && e.kind == EventKind::Crashed)
        .expect("redis-1 crashes");
    history.events[..crash]
        .iter()
        .rfind(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .expect("a grant before the crash")
        .node
        .to_string()
}

#[test]
fn a_restart_that_loses_the_key_says_whose_key_is_gone() {
    for seed in 0..3 {
        let (history, told) = stories(&restart(None), seed);
        let holder = holder_at_crash(&history);
        let lines = story_of(&told, "mutual_exclusion");
        let expected =
            format!("redis-1 restarts without the lock key: the lock key held by {holder} is gone");
        assert!(said(lines, &expected), "seed {seed}: {lines:#?}");
    }
}

#[test]
fn a_restart_that_reloads_the_key_from_its_aof_says_so_and_breaks_nothing() {
    let (history, told) = stories(&restart(Some("aof-always")), 0);
    assert!(
        !told.iter().any(|(checker, _)| checker == "mutual_exclusion"),
        "the key survives the restart: {told:#?}"
    );
    let holder = holder_at_crash(&history);
    let restarted_us = history
        .events
        .iter()
        .find(|e| e.node == "redis-1" && e.kind == EventKind::Restarted)
        .unwrap()
        .true_us;
    // Any story whose window holds the restart tells it.
    let violation = format!("{holder} wrote at {}.000 ms", restarted_us / 1000 + 1);
    let steps = story::story(&history, "resource_safety", &violation);
    let lines = story::render(&steps, "resource_safety", &violation);
    assert!(
        said(
            &lines,
            &format!("redis-1 restarts and reloads the lock key held by {holder} from disk")
        ),
        "{lines:#?}"
    );
}

#[test]
fn a_pause_that_ends_while_another_holds_the_client_does_not_say_it_is_over() {
    // The holder frozen 100 ms into a grant for 4 s, and again 600 ms in for 1 s: the
    // second ends first, and the holder sleeps on.
    let scenario = json!({
        "name": "overlapping-pauses", "duration_ms": 15000,
        "topology": { "kind": "single" },
        "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
        "clients": { "count": 2, "work_ms": [100, 300] },
        "faults": [
            { "kind": "pause", "target": "holder", "on": "acquired", "at_ms": 5000, "delay_ms": 100, "duration_ms": 4000 },
            { "kind": "pause", "target": "holder", "on": "acquired", "at_ms": 5000, "delay_ms": 600, "duration_ms": 1000 }
        ]
    });
    for seed in 0..3 {
        let (history, told) = stories(&scenario, seed);
        let lines = story_of(&told, "mutual_exclusion");
        let paused = history
            .events
            .iter()
            .find(|e| e.kind == EventKind::Paused)
            .expect("the holder is paused");
        let long_end = paused.true_us + 4_000_000;
        let expected = format!(
            "fault over: pause {0} for 1000 ms, but {0} is still paused by pause {0} for 4000 ms until {1}.{2:03} ms",
            paused.node,
            long_end / 1000,
            long_end % 1000
        );
        assert!(said(lines, &expected), "seed {seed}: {expected:?} in {lines:#?}");
        assert!(
            !lines
                .iter()
                .any(|l| l.ends_with("fault over: pause client-1 for 1000 ms.")
                    || l.ends_with("fault over: pause client-2 for 1000 ms.")),
            "seed {seed}: {lines:#?}"
        );
    }
}

/// The story of a liveness checker: one step summarises the tries, the whole stays short.
fn liveness_story(scenario: &Value, seed: u64, checker: &str) -> Vec<String> {
    let (_, told) = stories(scenario, seed);
    let lines = story_of(&told, checker).to_vec();
    assert!(lines.len() <= 20, "a short story: {lines:#?}");
    lines
}

#[test]
fn a_liveness_story_says_each_try_got_noreplicas() {
    let scenario = json!({
        "name": "noreplicas", "duration_ms": 14000,
        "topology": { "kind": "replicated", "replicas": 1, "down_after_ms": 60000,
                      "min_replicas_to_write": 1, "min_replicas_max_lag_s": 2 },
        "lock": { "algorithm": "lua-release", "ttl_ms": 1000 },
        "clients": { "count": 2, "work_ms": [50, 100] },
        "faults": [ { "kind": "partition", "groups": [["redis-1"], ["redis-1-replica-1"]],
                      "at_ms": 3000, "duration_ms": 6000 } ]
    });
    let lines = liveness_story(&scenario, 0, "liveness");
    assert!(
        said(
            &lines,
            "all get NOREPLICAS (Not enough good replicas to write) from redis-1"
        ),
        "{lines:#?}"
    );
}

#[test]
fn a_starved_redlock_client_is_told_each_node_answer_of_its_tries() {
    let scenario = catalogue("scenarios/redlock-contenders-lockstep.json");
    // Seed 0 starves client-5: every try falls short of three nodes of five. (Seed 2 did,
    // until sleeps stopped ending on a shared millisecond grid and every digest moved.)
    let lines = liveness_story(&scenario, 0, "starvation");
    let tries = lines
        .iter()
        .find(|l| l.contains(" tries by client-5 from "))
        .unwrap_or_else(|| panic!("client-5's tries in one step: {lines:#?}"));
    assert!(
        tries.contains("all fall short of a quorum (at most 2 of 5 nodes granted, 3 needed): redis-1..5 granted or refused (holding client-"),
        "{tries}"
    );
}

#[test]
fn a_liveness_story_tells_the_sentinel_elections_that_failed() {
    // The master dies while the three Sentinels are cut off from each other: each deems
    // it down alone (quorum 1) but none can win two votes of three until they meet again.
    let scenario = json!({
        "name": "split-votes", "duration_ms": 35000,
        "topology": { "kind": "replicated", "replicas": 1,
                      "sentinel": { "count": 3, "quorum": 1, "down_after_ms": 2000, "failover_timeout_ms": 3000 } },
        "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
        "clients": { "count": 2, "work_ms": [100, 300] },
        "faults": [ { "kind": "crash", "target": "master", "at_ms": 5000 },
                    { "kind": "partition", "groups": [["sentinel-1"], ["sentinel-2"], ["sentinel-3"]],
                      "at_ms": 4000, "duration_ms": 20000 } ]
    });
    let lines = liveness_story(&scenario, 0, "liveness");
    assert!(
        said(
            &lines,
            "elections by Sentinels sentinel-1..3 to fail over redis-1 from "
        ) && said(&lines, "all fail: none won more than 1 of the 2 votes needed"),
        "{lines:#?}"
    );
    assert!(
        said(&lines, "all get connection refused from redis-1"),
        "{lines:#?}"
    );
    assert!(
        said(&lines, "wins the election to fail over redis-1"),
        "{lines:#?}"
    );
}

#[test]
fn a_deadlock_story_says_every_try_was_refused_for_the_dead_holders_key() {
    for seed in 0..3 {
        let (history, told) = stories(&catalogue("scenarios/ladder-1-setnx-holder-crash.json"), seed);
        let dead = &history
            .events
            .iter()
            .find(|e| e.kind == EventKind::Crashed)
            .expect("a holder crashes")
            .node;
        let lines = story_of(&told, "deadlock");
        let expected = format!("are all refused by redis-1, which held {dead}'s key");
        assert!(said(lines, &expected), "seed {seed}: {expected:?} in {lines:#?}");
        assert!(lines.len() <= 20, "a short story: {lines:#?}");
    }
}

#[test]
fn a_sentinel_failover_is_told_as_the_sentinel_that_ran_it() {
    let (_, told) = stories(&catalogue("scenarios/sentinel-split-brain.json"), 0);
    let lines: Vec<&String> = told.iter().flat_map(|(_, lines)| lines).collect();
    let promotions: Vec<&&String> = lines.iter().filter(|l| l.contains(" promotes ")).collect();
    assert!(!promotions.is_empty(), "a story tells the promotion: {lines:#?}");
    for line in promotions {
        assert!(
            line.contains(": Sentinel sentinel-") && line.contains(" promotes redis-1-replica-"),
            "{line}"
        );
    }
    assert!(
        !lines.iter().any(|l| l.contains("failover controller")),
        "no failover controller ran: {lines:#?}"
    );
    // The second holder's grant comes from the promoted replica, promoted before the
    // first grant of the overlap.
    assert!(
        said(story_of(&told, "mutual_exclusion"), " promotes redis-1-replica-"),
        "{told:#?}"
    );
}

#[test]
fn each_story_replay_prints_is_headed_by_the_checker_it_explains() {
    let out = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "replay",
            "scenarios/single-node-restart-without-persistence.json",
            "--seed",
            "0",
            "--story",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let broken: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("However, "))
        .filter_map(|l| l.split_once(" is broken").map(|(checker, _)| checker))
        .collect();
    assert!(broken.len() >= 2, "several stories: {stdout}");
    let headings: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("Story of the "))
        .filter_map(|l| l.strip_suffix(" violation:"))
        .collect();
    assert_eq!(headings, broken, "{stdout}");
    // Each heading comes right before its story's first step.
    for (i, line) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("Story of the "))
    {
        assert!(
            lines[i + 1].starts_with(" 1. t=") || lines[i + 1].starts_with("However, "),
            "{line} then {}",
            lines[i + 1]
        );
    }
}
