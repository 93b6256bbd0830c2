//! Shrinking: a violating run becomes a smaller scenario that still breaks the same
//! checker, its nemesis made explicit, and the result is a valid scenario file.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use locksim::check::mutual_exclusion;
use locksim::history::{EventKind, History};
use locksim::scenario::load_str;
use locksim::search::shrink::{ShrinkError, shrink};
use locksim::search::story;
use locksim::sweep::run_seed;
use serde_json::{Value, json};

fn file(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_gc_pause_shrinks_to_one_pause_in_a_shorter_run_that_still_overlaps() {
    let original = file("scenarios/single-node-gc-pause.json");
    let shrunk = shrink(&original, 0, Some("mutual_exclusion"), 200).unwrap();
    assert_eq!(shrunk.checker, "mutual_exclusion");
    let minimal = &shrunk.scenario;
    assert_eq!(minimal["faults"].as_array().unwrap().len(), 1);
    assert!(minimal["duration_ms"].as_u64().unwrap() < original["duration_ms"].as_u64().unwrap());
    assert!(minimal["clients"]["count"].as_u64().unwrap() <= 3);
    assert_eq!(minimal["expect"]["mutual_exclusion"], "violated");
    // The result is a scenario file like any other, and it violates on its seed.
    let scenario = load_str(Path::new("(shrunk)"), &minimal.to_string()).expect("a valid scenario");
    let history = locksim::sweep::run_seed(&std::sync::Arc::new(scenario.clone()), 0).unwrap();
    let verdicts = locksim::check::check_all(&history, &scenario.check_settings());
    assert!(
        verdicts
            .iter()
            .any(|v| v.checker == "mutual_exclusion" && v.violation.is_some())
    );
    assert!(
        shrunk.runs <= 200,
        "the budget counts every run, the story's replay included"
    );
}

/// Runs a scenario (its file's JSON) on `seed`.
fn run(scenario: &Value, seed: u64) -> History {
    let scenario = load_str(Path::new("(test)"), &scenario.to_string()).expect("a valid scenario");
    run_seed(&Arc::new(scenario), seed).unwrap()
}

#[test]
fn a_shrunk_gc_pause_has_no_lock_cycle_before_the_first_grant_the_violation_involves() {
    let original = file("scenarios/single-node-gc-pause.json");
    for seed in 0..3 {
        let shrunk = shrink(&original, seed, Some("mutual_exclusion"), 200).unwrap();
        assert!(
            shrunk.steps.iter().any(|s| s.starts_with("faults moved")),
            "{:?}",
            shrunk.steps
        );
        let history = run(&shrunk.scenario, seed);
        let (earlier, _) = mutual_exclusion::overlap(&history).expect("the shrunk run still overlaps");
        let cycles_before = history
            .events
            .iter()
            .filter(|e| e.true_us < earlier.from_us)
            .filter(|e| matches!(e.kind, EventKind::ReleaseSent { .. }))
            .count();
        assert_eq!(cycles_before, 0, "seed {seed}: {}", shrunk.scenario);
        // Its story starts at that grant (a round trip after the key is stored), and the
        // shrunk file replays to the same run.
        let steps = story::story(&history, &shrunk.checker, &shrunk.violation);
        assert!(steps.len() <= 8, "{steps:?}");
        assert!(
            steps.iter().take(2).any(|s| s.true_us == earlier.from_us),
            "{steps:?}"
        );
        assert_eq!(run(&shrunk.scenario, seed).digest(), history.digest());
    }
}

#[test]
fn a_pause_aimed_at_a_named_client_moves_to_its_first_lock_cycle() {
    // client-1's third grant, paused 20 ms into it past the TTL. A run is the same run
    // until its faults strike, so the third grant is read from a run whose one pause
    // comes at the very end.
    let mut scenario = file("scenarios/single-node-gc-pause.json");
    scenario["faults"] =
        json!([{ "kind": "pause", "target": "client-1", "at_ms": 29000, "duration_ms": 4000 }]);
    let quiet = run(&scenario, 0);
    let third_grant_ms = quiet
        .events
        .iter()
        .filter(|e| e.node == "client-1" && matches!(e.kind, EventKind::Acquired { .. }))
        .nth(2)
        .expect("client-1 is granted the lock three times")
        .true_us
        / 1000;
    scenario["faults"] =
        json!([{ "kind": "pause", "target": "client-1", "at_ms": third_grant_ms + 20, "duration_ms": 4000 }]);
    let shrunk = shrink(&scenario, 0, Some("mutual_exclusion"), 200).unwrap();
    let history = run(&shrunk.scenario, 0);
    let (earlier, _) = mutual_exclusion::overlap(&history).expect("the shrunk run still overlaps");
    assert_eq!(earlier.client, "client-1");
    let grants_before = history
        .events
        .iter()
        .filter(|e| e.node == "client-1" && e.true_us < earlier.from_us)
        .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .count();
    assert_eq!(grants_before, 0, "{:?}: {}", shrunk.steps, shrunk.scenario);
}

#[test]
fn a_violation_the_workload_alone_makes_shrinks_to_no_faults_and_is_told_from_its_first_grant() {
    // Work longer than the TTL breaks the lock in the first cycle; the fault comes later.
    let scenario = json!({
        "name": "work-outlives-the-ttl",
        "duration_ms": 12000,
        "topology": { "kind": "single" },
        "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
        "clients": { "count": 2, "work_ms": [2500, 3000] },
        "faults": [ { "kind": "pause", "target": "holder", "at_ms": 9000, "duration_ms": 100 } ]
    });
    let history = run(&scenario, 0);
    let verdict = mutual_exclusion::check(&history);
    let violation = verdict.violation.expect("work past the TTL overlaps");
    let (earlier, _) = mutual_exclusion::overlap(&history).unwrap();
    let steps = story::story(&history, mutual_exclusion::NAME, &violation);
    assert!(
        steps.iter().take(2).any(|s| s.true_us == earlier.from_us),
        "the story starts at the first grant, not around the fault: {steps:?}"
    );
    assert!(!steps.iter().any(|s| s.text.starts_with("fault")), "{steps:?}");
    let shrunk = shrink(&scenario, 0, Some("mutual_exclusion"), 100).unwrap();
    assert_eq!(shrunk.scenario["faults"], json!([]), "{:?}", shrunk.steps);
}

#[test]
fn a_nemesis_run_is_materialised_and_cut_down_to_a_few_explicit_faults() {
    let original = file("scenarios/replicated-swarm-nemesis.json");
    let shrunk = shrink(&original, 10, Some("mutual_exclusion"), 300).unwrap();
    let faults = shrunk.scenario["faults"].as_array().unwrap();
    assert!(
        faults.iter().all(|f| f["kind"] != "random"),
        "explicit faults only: {faults:?}"
    );
    assert!(faults.len() <= 3, "a few faults left: {faults:?}");
    assert!(
        shrunk.steps.iter().any(|s| s.starts_with("nemesis materialised")),
        "{:?}",
        shrunk.steps
    );
}

#[test]
fn a_seed_that_does_not_violate_the_checker_is_refused() {
    let baseline = file("scenarios/single-node-baseline.json");
    assert!(matches!(
        shrink(&baseline, 0, Some("mutual_exclusion"), 50),
        Err(ShrinkError::NoViolation { .. })
    ));
    assert!(matches!(
        shrink(&baseline, 0, None, 50),
        Err(ShrinkError::NothingViolated { .. })
    ));
}

#[test]
fn the_shrink_command_writes_the_file_and_tells_the_story() {
    let out = std::env::temp_dir().join(format!("locksim-shrink-{}.json", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "shrink",
            "scenarios/single-node-gc-pause.json",
            "--seed",
            "0",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(" 1. t="), "a numbered story: {stdout}");
    assert!(stdout.contains("However, mutual_exclusion is broken"), "{stdout}");
    assert!(stdout.contains("replay: locksim replay"), "{stdout}");
    let written = std::fs::read_to_string(&out).unwrap();
    load_str(&out, &written).expect("the written file loads");
    // A file that is not a scenario is refused as invalid input.
    let bad = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["shrink", "Cargo.toml", "--seed", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
