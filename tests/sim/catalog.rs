//! The scenario catalogue: every file loads, says what it shows, expects something,
//! is indexed in scenarios/README.md, and meets its expectations on a CI-sized seed count,
//! each expected violation shown to be the faults' doing by the no-fault control.

use std::path::PathBuf;
use std::sync::Arc;

use locksim::report::ScenarioReport;
use locksim::scenario::load_paths;
use locksim::sweep::sweep;

/// Seeds per scenario in CI (`make run` uses each file's own `seeds`).
fn ci_seeds() -> u64 {
    std::env::var("LOCKSIM_CATALOG_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

#[test]
fn every_scenario_is_described_indexed_and_meets_its_expectations() {
    let index = std::fs::read_to_string("scenarios/README.md").unwrap();
    let scenarios = load_paths(&[PathBuf::from("scenarios")]).expect("every shipped scenario loads");
    assert!(!scenarios.is_empty());
    let mut unmet = Vec::new();
    for (file, scenario) in scenarios {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!scenario.description.is_empty(), "{name} has no description");
        assert!(!scenario.expect.entries().is_empty(), "{name} expects nothing");
        assert!(
            index.contains(&format!("| {name} |")),
            "{name} is missing from scenarios/README.md"
        );
        let scenario = Arc::new(scenario);
        let seeds = scenario.seeds.min(ci_seeds());
        let runs = sweep(&scenario, 0..seeds, 2);
        let mut report = ScenarioReport::new(&file, &scenario, 0, &runs, 0);
        // An expected violation must be the faults' doing (the no-fault control).
        locksim::campaign::control::judge(&mut report, &scenario, 2);
        if !report.expect_met() {
            unmet.push(
                report
                    .table_lines(locksim::report::table::TableStyle::default())
                    .join("\n"),
            );
        }
    }
    assert!(unmet.is_empty(), "expectations not met:\n{}", unmet.join("\n"));
}

#[test]
fn every_file_in_the_index_exists() {
    let index = std::fs::read_to_string("scenarios/README.md").unwrap();
    let listed = index
        .lines()
        .filter_map(|line| line.strip_prefix("| ")?.split(" |").next());
    for file in listed.filter(|name| name.ends_with(".json")) {
        assert!(
            PathBuf::from("scenarios").join(file).exists(),
            "scenarios/README.md lists {file}, which is not there"
        );
    }
}

#[test]
fn every_scenario_replays_bit_for_bit() {
    for (file, scenario) in load_paths(&[PathBuf::from("scenarios")]).unwrap() {
        let scenario = Arc::new(scenario);
        let first = locksim::sweep::run_seed(&scenario, 1).unwrap().digest();
        let second = locksim::sweep::run_seed(&scenario, 1).unwrap().digest();
        assert_eq!(first, second, "{} is not deterministic", file.display());
    }
}

#[test]
fn the_bench_workloads_are_not_in_the_catalogue() {
    let catalogue = load_paths(&[PathBuf::from("scenarios")]).unwrap();
    assert!(
        catalogue
            .iter()
            .all(|(file, _)| !file.starts_with("scenarios/bench")),
        "scenarios/bench/ is for `locksim bench`, not the verdict table"
    );
    assert_eq!(load_paths(&[PathBuf::from("scenarios/bench")]).unwrap().len(), 2);
}
