//! Shrinking: a violating run becomes a smaller scenario that still breaks the same
//! checker the same way (its mechanism: a failover's promotion, a Redlock grant's
//! majority), its nemesis made explicit, and the result is a valid scenario file.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use locksim::campaign::minimal::SHRINK_RUNS;
use locksim::check::{check_all, mutual_exclusion, resource_safety};
use locksim::history::{EventKind, History};
use locksim::scenario::grid::{Cell, GRID_FILE, Grid};
use locksim::scenario::load_str;
use locksim::search::mechanism::{Happening, Mechanism};
use locksim::search::shrink::{Budget, Deployment, ShrinkError, Shrunk, shrink, shrink_within};
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
    let verdict = mutual_exclusion::check(&mutual_exclusion::holdings(&history));
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

/// The shipped grid's cell of fault class `fault` on setup `setup`, as its file holds it.
fn grid_cell(setup: &str, fault: &str) -> Value {
    let matrix = Grid::load(Path::new(GRID_FILE)).unwrap_or_else(|e| panic!("{e}"));
    let row = matrix.setups.iter().position(|s| s.name == setup).unwrap();
    let column = matrix.faults.iter().position(|f| f.name == fault).unwrap();
    match &matrix.cells[row][column] {
        Cell::Generated { json, .. } => serde_json::from_str(json).unwrap(),
        Cell::NotApplicable { reason } => panic!("{setup} × {fault}: {reason}"),
    }
}

/// `checker`'s violation in the run of `scenario` on `seed`, if it fired.
fn violation(scenario: &Value, seed: u64, checker: &str) -> (History, Option<String>) {
    let parsed = load_str(Path::new("(test)"), &scenario.to_string()).expect("a valid scenario");
    let history = run_seed(&Arc::new(parsed.clone()), seed).unwrap();
    let violation = check_all(&history, &parsed.check_settings())
        .into_iter()
        .find(|v| v.checker == checker)
        .and_then(|v| v.violation);
    (history, violation)
}

/// Shrinks a grid cell as the report does (src/report/minimal.rs): toward a lost update if
/// one of the grid's 50 seeds lost one, else toward two holders; from the first seed that
/// violated it, on the cell's masters and replicas, within the report's budget.
fn shrink_as_the_report_does(cell: &Value) -> Shrunk {
    let (checker, seed) = [resource_safety::NAME, mutual_exclusion::NAME]
        .into_iter()
        .find_map(|checker| {
            let seed = (0..50).find(|&seed| violation(cell, seed, checker).1.is_some())?;
            Some((checker, seed))
        })
        .expect("the cell breaks the lock");
    let budget = Budget {
        max_runs: SHRINK_RUNS,
        max_wall: None,
    };
    shrink_within(cell, seed, Some(checker), budget, Deployment::Keep, &mut |_| {}).unwrap()
}

#[test]
fn a_shrunk_failover_before_replication_still_promotes_a_replica() {
    let cell = grid_cell("replicated", "failover");
    let shrunk = shrink_as_the_report_does(&cell);
    let history = run(&shrunk.scenario, shrunk.seed);
    assert!(
        history
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Failover { .. })),
        "a promotion in the replayed run: {:?}\n{}",
        shrunk.steps,
        shrunk.story().join("\n")
    );
    assert!(shrunk.mechanism.happenings.contains(&Happening::Promotion));
    assert_eq!(
        shrunk.scenario["topology"], cell["topology"],
        "the deployment is kept"
    );
    // Halving the restart delay below the controller's down_after brings the old master
    // back before any promotion: that still breaks the lock, and the shrink says it refused it.
    assert!(
        shrunk
            .steps
            .iter()
            .any(|s| s.contains("refused: they lost a promotion")),
        "{:?}",
        shrunk.steps
    );
}

#[test]
fn a_shrunk_redlock_counterexample_still_rests_on_a_majority_of_its_masters() {
    // Kleppmann's first example: one master's clock jumps under a bare-majority grant.
    let cell = grid_cell("redlock-5", "one-master-clock-jump");
    let shrunk = shrink_as_the_report_does(&cell);
    assert_eq!(
        shrunk.scenario["topology"]["masters"], 5,
        "the deployment is kept"
    );
    let history = run(&shrunk.scenario, shrunk.seed);
    let grant = story::first_overlap_grant(&history).expect("the shrunk run still overlaps");
    assert!(
        grant.granted >= 3 && grant.asked == 5,
        "{grant:?}: {}",
        shrunk.story().join("\n")
    );
    assert!(shrunk.mechanism.happenings.contains(&Happening::ClockJump));
}

#[test]
fn a_failover_turned_restart_still_breaks_the_lock_but_loses_its_mechanism() {
    let cell = grid_cell("replicated", "failover");
    let checker = mutual_exclusion::NAME;
    let seed = (0..50)
        .find(|&seed| violation(&cell, seed, checker).1.is_some())
        .expect("the failover breaks the lock");
    let (history, broken) = violation(&cell, seed, checker);
    let original = Mechanism::told(&history, checker, &broken.unwrap());
    assert!(original.happenings.contains(&Happening::Promotion), "{original}");
    let restarted_after = |ms: u64| {
        let mut candidate = cell.clone();
        candidate["faults"][0]["restart_after_ms"] = json!(ms);
        let (history, broken) = violation(&candidate, seed, checker);
        let broken = broken.unwrap_or_else(|| panic!("a restart after {ms} ms still breaks the lock"));
        Mechanism::shown(&history, checker, &broken)
    };
    // Back 1 ms after its crash, long before the controller's 500 ms down_after: the
    // checker fires, as it did when the report showed this under the failover heading, but
    // nothing was promoted.
    let restart_empty = restarted_after(1);
    assert_eq!(original.lost_in(&restart_empty), ["a promotion (failover)"]);
    // Back after the promotion, which still happens: the same mechanism.
    let later = restarted_after(2 * cell["topology"]["down_after_ms"].as_u64().unwrap());
    assert_eq!(original.lost_in(&later), Vec::<String>::new(), "{later}");
}

#[test]
fn only_a_shrink_told_to_keep_the_deployment_keeps_its_masters() {
    let cell = grid_cell("redlock-5", "holder-pause");
    let budget = |max_runs| Budget {
        max_runs,
        max_wall: None,
    };
    let kept = shrink_within(
        &cell,
        0,
        Some("mutual_exclusion"),
        budget(100),
        Deployment::Keep,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(kept.scenario["topology"]["masters"], 5);
    let fewer = shrink_within(
        &cell,
        0,
        Some("mutual_exclusion"),
        budget(100),
        Deployment::MayShrink,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(fewer.scenario["topology"]["masters"], 3, "{:?}", fewer.steps);
}
