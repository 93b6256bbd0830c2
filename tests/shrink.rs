//! Shrinking: a violating run becomes a smaller scenario that still breaks the same
//! checker, its nemesis made explicit, and the result is a valid scenario file.

use std::path::Path;
use std::process::Command;

use locksim::scenario::load_str;
use locksim::search::shrink::{ShrinkError, shrink};
use serde_json::Value;

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
