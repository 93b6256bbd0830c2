//! `locksim report` keeps the runs of its sweeps in DIR/.cache: a second report with the
//! same scenarios and the same binary simulates nothing and writes the same numbers; a
//! changed scenario runs again (and only it), and so does every run of another binary.
//! Its counterexamples' replays and shrinks are kept there too: the second report replays
//! and shrinks nothing and writes the same page. Sweeps side by side (`--jobs 2`) write
//! the report one at a time (`--jobs 1`) writes; without a cache (`--no-cache`) the
//! provisional page's shrinks still serve the final page.

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

/// (computed in this report, taken from the cache) of `what` ("seeds replayed", "shrinks
/// run"), as the report's last count of them on stderr says.
fn computed_and_kept(output: &Output, what: &str) -> (u64, u64) {
    let said = String::from_utf8_lossy(&output.stderr);
    let line = said
        .lines()
        .find(|line| line.starts_with("counterexamples replayed and shrunk: "))
        .unwrap_or_else(|| panic!("no counterexamples line in {said}"));
    let counts = line
        .split(&format!(" {what} in this report, "))
        .nth(1)
        .map(|rest| rest.split(" taken from the cache").next().unwrap());
    let computed = line
        .split(&format!(" {what} in this report"))
        .next()
        .and_then(|before| before.rsplit(' ').next());
    let number = |text: Option<&str>| {
        text.and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no count of {what} in {line}"))
    };
    (number(computed), number(counts))
}

/// How many counterexamples a report's numbers show: (replayed ones, minimal ones).
fn shown(numbers: &Value) -> (u64, u64) {
    let count = |key: &str| numbers[key].as_array().map_or(0, Vec::len) as u64;
    (
        count("counterexamples") + count("matrix_counterexamples"),
        count("minimal_counterexamples"),
    )
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
    let page = std::fs::read_to_string(Path::new(&out).join("index.html")).unwrap();
    let (replays, minimal) = shown(&before);
    assert!(replays > 0 && minimal > 0, "the plan has counterexamples");
    assert_eq!(computed_and_kept(&first, "seeds replayed"), (replays, 0));
    assert_eq!(computed_and_kept(&first, "shrinks run"), (minimal, 0));

    let again = report(&scenarios, &grid, &out, &[]);
    assert_eq!(seeds_run(&again), (0, simulated), "nothing runs twice");
    assert_eq!(numbers(&out), before, "the same numbers from the kept runs");
    assert_eq!(
        computed_and_kept(&again, "seeds replayed"),
        (0, replays),
        "no counterexample is replayed twice"
    );
    assert_eq!(
        computed_and_kept(&again, "shrinks run"),
        (0, minimal),
        "no counterexample is shrunk twice"
    );
    let page_again = std::fs::read_to_string(Path::new(&out).join("index.html")).unwrap();
    assert!(
        page_again == page,
        "the same page, figures and stories from the kept replays"
    );

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
    let side_by_side = report(&scenarios, &grid, &out, &["--jobs", "2", "--no-cache"]);
    assert_eq!(serial, numbers(&out));
    // The envelopes ran after a provisional page; its shrinks served the final page too.
    let said = String::from_utf8_lossy(&side_by_side.stderr);
    assert!(said.contains("a first report is ready: "), "{said}");
    let (replays, minimal) = shown(&serial);
    assert!(minimal > 0, "the plan has minimal counterexamples");
    assert_eq!(
        computed_and_kept(&side_by_side, "shrinks run"),
        (minimal, 0),
        "{said}"
    );
    assert_eq!(
        computed_and_kept(&side_by_side, "seeds replayed"),
        (replays, 0),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
