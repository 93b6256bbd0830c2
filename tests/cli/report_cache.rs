//! `locksim report` keeps the runs of its sweeps in DIR/.cache: a second report with the
//! same scenarios and the same binary simulates nothing and writes the same numbers; a
//! changed scenario runs again (and only it), and so does every run of another binary.
//! Sweeps side by side (`--jobs 2`) write the report one at a time (`--jobs 1`) writes.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::cli::{locksim, scratch};
use support::grid::shipped_grid_subset;

/// The catalogue: one scenario that breaks (a control and a counterexample), one that
/// holds.
const SCENARIOS: [&str; 2] = ["single-node-gc-pause.json", "single-node-baseline.json"];

/// The catalogue copied into `dir/scenarios` (so a test may change one) and a grid of two
/// setups and two fault classes in `dir/grid.json`; returns their paths.
fn setup(dir: &Path) -> (String, String) {
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    for name in SCENARIOS {
        std::fs::copy(Path::new("scenarios").join(name), scenarios.join(name)).unwrap();
    }
    let grid = shipped_grid_subset(&["set-nx-px", "lua-release-fencing"], &["none", "holder-pause"]);
    let grid_file = dir.join("grid.json");
    std::fs::write(&grid_file, grid.to_string()).unwrap();
    let text = |path: &Path| path.to_str().unwrap().to_string();
    (text(&scenarios), text(&grid_file))
}

/// `locksim report` of `scenarios` with few seeds everywhere into `out`, then `extra`.
fn report(scenarios: &str, grid: &str, out: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "report",
        scenarios,
        "--seeds",
        "4",
        "--envelope-seeds",
        "1",
        "--matrix",
        grid,
        "--matrix-seeds",
        "3",
        "--holds-seeds",
        "0",
        "--out",
        out,
    ];
    args.extend(extra);
    let output = locksim(&args);
    assert!(
        output.status.code().is_some_and(|code| code <= 1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// (seeds simulated, seeds reused), as the report says on stderr.
fn seeds_run(output: &Output) -> (u64, u64) {
    let said = String::from_utf8_lossy(&output.stderr);
    let line = said
        .lines()
        .find(|line| line.starts_with("sweeps: "))
        .unwrap_or_else(|| panic!("no sweeps line in {said}"));
    let number_before = |word: &str| {
        let at = line.find(word).unwrap_or_else(|| panic!("{line}"));
        let digits = line[..at].trim_end().rsplit(' ').next().unwrap();
        digits.parse::<u64>().unwrap_or_else(|_| panic!("{line}"))
    };
    (number_before("seeds simulated"), number_before("reused"))
}

/// A report's summary.json without its host-time fields and without how it was made
/// (its command line).
fn numbers(out: &str) -> Value {
    fn without_wall_time(value: Value) -> Value {
        match value {
            Value::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .filter(|(key, _)| key != "wall_ms" && key != "provenance")
                    .map(|(key, value)| (key, without_wall_time(value)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(without_wall_time).collect()),
            other => other,
        }
    }
    let text = std::fs::read_to_string(Path::new(out).join("summary.json")).unwrap();
    without_wall_time(serde_json::from_str(&text).unwrap())
}

#[test]
fn a_second_report_reuses_every_run_until_a_scenario_or_the_binary_changes() {
    let dir = scratch("cache");
    let (scenarios, grid) = setup(&dir);
    let out = dir.join("report").to_str().unwrap().to_string();
    let first = report(&scenarios, &grid, &out, &[]);
    let (simulated, reused) = seeds_run(&first);
    assert!(simulated > 0 && reused == 0, "{simulated} {reused}");
    let before = numbers(&out);

    let again = report(&scenarios, &grid, &out, &[]);
    assert_eq!(seeds_run(&again), (0, simulated), "nothing runs twice");
    assert_eq!(numbers(&out), before, "the same numbers from the kept runs");

    // One scenario changed: its seeds run again, nothing else does.
    let changed = Path::new(&scenarios).join(SCENARIOS[1]);
    let mut scenario: Value = serde_json::from_str(&std::fs::read_to_string(&changed).unwrap()).unwrap();
    scenario["duration_ms"] = (scenario["duration_ms"].as_u64().unwrap() + 1000).into();
    std::fs::write(&changed, scenario.to_string()).unwrap();
    let after_edit = report(&scenarios, &grid, &out, &[]);
    assert_eq!(seeds_run(&after_edit), (4, simulated - 4));

    // Entries written by another binary are not read: every seed runs again.
    for entry in std::fs::read_dir(Path::new(&out).join(".cache")).unwrap() {
        let file = entry.unwrap().path();
        let text = std::fs::read_to_string(&file).unwrap();
        let (header, runs) = text.split_once('\n').unwrap();
        let mut header: Value = serde_json::from_str(header).unwrap();
        header["build"] = "another-binary".into();
        std::fs::write(&file, format!("{header}\n{runs}")).unwrap();
    }
    let rebuilt = report(&scenarios, &grid, &out, &[]);
    assert_eq!(seeds_run(&rebuilt), (simulated, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweeps_side_by_side_write_the_report_one_at_a_time_writes() {
    let dir = scratch("jobs");
    let (scenarios, grid) = setup(&dir);
    // Both write to the same directory: every file the report names is the same.
    let out = dir.join("report").to_str().unwrap().to_string();
    report(&scenarios, &grid, &out, &["--jobs", "1", "--no-cache"]);
    assert!(
        !Path::new(&out).join(".cache").exists(),
        "--no-cache keeps nothing"
    );
    let serial = numbers(&out);
    std::fs::remove_dir_all(&out).unwrap();
    report(&scenarios, &grid, &out, &["--jobs", "2", "--no-cache"]);
    assert_eq!(serial, numbers(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
