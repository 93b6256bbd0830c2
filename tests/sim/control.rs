//! The no-fault control: an expected violation counts only when the faults cause it.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use locksim::campaign::sweeps;
use locksim::check;
use locksim::report::ScenarioReport;
use locksim::report::control::Attribution;
use locksim::scenario::{self, Scenario};
use support::cli::{locksim, scratch};

const GC_PAUSE: &str = "scenarios/single-node-gc-pause.json";

fn gc_pause() -> Scenario {
    scenario::load(Path::new(GC_PAUSE)).unwrap_or_else(|e| panic!("{e}"))
}

fn sweep(scenario: Scenario, seeds: u64) -> ScenarioReport {
    sweeps::sweep(Path::new(GC_PAUSE), &Arc::new(scenario), 0, seeds, 2)
}

#[test]
fn a_violation_the_pause_causes_meets_its_expectation() {
    let report = sweep(gc_pause(), 4);
    let mutex = check::mutual_exclusion::NAME;
    assert_eq!(report.attribution(mutex), Some(Attribution::CausedByFaults));
    assert_eq!(report.control.as_ref().unwrap().seeds, [0, 1, 2, 3]);
    assert!(
        report.expect_met(),
        "{}",
        report
            .table_lines(locksim::report::table::TableStyle::default())
            .join("\n")
    );
    let json = report.to_json();
    assert_eq!(json["checkers"][mutex]["attribution"], "caused by the faults");
    assert_eq!(json["checkers"][mutex]["control"]["violating"], 0);
}

#[test]
fn a_violation_present_without_the_faults_does_not_meet_an_expectation_of_violated() {
    let mut scenario = gc_pause();
    // Work longer than the 2 s TTL breaks the lock before the pause at 5 s does.
    scenario.clients.work_ms = [3000, 3000];
    let report = sweep(scenario, 3);
    let mutex = check::mutual_exclusion::NAME;
    assert_eq!(report.attribution(mutex), Some(Attribution::PresentWithoutFaults));
    assert!(!report.expect_met());
    let reasons = report.unmet_reasons().join("\n");
    assert!(
        reasons.contains("mutual_exclusion: expected violated by the faults, but it is present without them")
            && reasons.contains("--without-faults"),
        "{reasons}"
    );
    let row = &report.table_lines(locksim::report::table::TableStyle::default())[0];
    assert!(row.contains(" 3/3  NOT MET"), "{row}");
}

#[test]
fn a_scenario_without_faults_is_the_workload_s_doing_and_runs_no_control() {
    let mut scenario = gc_pause();
    scenario.faults.clear();
    scenario.clients.work_ms = [3000, 3000];
    let report = sweep(scenario, 2);
    assert_eq!(report.control, None);
    assert_eq!(
        report.attribution(check::mutual_exclusion::NAME),
        Some(Attribution::Workload)
    );
    assert!(report.table_lines(locksim::report::table::TableStyle::default())[0].contains(" workload  "));
}

#[test]
fn replay_without_faults_runs_the_seed_with_no_fault() {
    let dir = scratch("without-faults");
    let file = dir.join("long-work.json");
    let text = std::fs::read_to_string(GC_PAUSE).unwrap().replacen(
        r#""work_ms": [100, 500]"#,
        r#""work_ms": [3000, 3000]"#,
        1,
    );
    std::fs::write(&file, text).unwrap();
    let out = locksim(&[
        "replay",
        file.to_str().unwrap(),
        "--seed",
        "0",
        "--without-faults",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The work outlasts the TTL, so the seed breaks mutual exclusion without any fault:
    // not what the scenario claims of its faults, so replay exits 1 and says why.
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("seed 0 violates what")
            && stderr.contains("mutual_exclusion")
            && stderr.contains("without its faults"),
        "{stderr}"
    );
    assert!(stdout.contains(", without its faults"), "{stdout}");
    assert!(!stdout.contains("fault-start"), "{stdout}");
    assert!(stdout.contains("mutual_exclusion: VIOLATED"), "{stdout}");
    let faulted = locksim(&["replay", GC_PAUSE, "--seed", "0", "--without-faults"]);
    let stdout = String::from_utf8_lossy(&faulted.stdout);
    assert!(stdout.contains("mutual_exclusion: holds"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
