//! The safety matrix on a few cells of the shipped grid, with few seeds: it can find a
//! break, it can find a hold, fencing's absorbed overlap shows, and a written cell
//! replays its counterexample with `locksim replay`.

use crate::support;

use std::path::Path;
use std::process::Command;

use locksim::campaign::matrix;
use locksim::check;
use locksim::report::Finding;
use locksim::report::matrix_summary::MatrixSummary;
use locksim::scenario::grid::{GRID_FILE, Grid, cell_file};
use serde_json::Value;
use support::grid::shipped_grid_subset;

/// Seeds per cell: enough for each claim below, quick in CI.
const SEEDS: u64 = 6;

/// The shipped grid cut down to these setups and fault classes.
fn shipped_subset(setups: &[&str], faults: &[&str]) -> Grid {
    let grid = shipped_grid_subset(setups, faults);
    Grid::parse(Path::new(GRID_FILE), &grid.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn index(run: &MatrixSummary, setup: &str, fault: &str) -> (usize, usize) {
    let s = run.setups.iter().position(|row| row.name == setup).unwrap();
    let f = run.faults.iter().position(|column| column.name == fault).unwrap();
    (s, f)
}

#[test]
fn the_matrix_finds_breaks_holds_and_absorbed_overlaps() {
    let matrix = shipped_subset(
        &["lua-release", "lua-release-fencing", "redlock-5"],
        &["none", "holder-pause"],
    );
    let dir = std::env::temp_dir().join(format!("locksim-matrix-run-{}", std::process::id()));
    let cells = std::sync::atomic::AtomicU64::new(0);
    let run = matrix::run(&matrix, &dir, Some(SEEDS), 2, &|| {
        cells.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(cells.into_inner(), 6, "told of every cell");
    let mutex = check::mutual_exclusion::NAME;

    let (s, f) = index(&run, "lua-release", "holder-pause");
    let paused = run.cell(s, f).unwrap();
    assert_eq!(paused.finding(mutex), Finding::Violated);
    assert_eq!(paused.file, cell_file(&dir, "lua-release", "holder-pause"));
    assert!(
        !run.outcome(s, f).unwrap().absorbed,
        "not fenced: the update is lost"
    );

    let (s, f) = index(&run, "lua-release-fencing", "holder-pause");
    let fenced = run.cell(s, f).unwrap();
    assert_eq!(
        fenced.finding(mutex),
        Finding::Violated,
        "the leases still overlap"
    );
    assert_ne!(fenced.finding(check::resource_safety::NAME), Finding::Violated);
    assert!(run.outcome(s, f).unwrap().absorbed);

    let (s, f) = index(&run, "redlock-5", "none");
    let baseline = run.cell(s, f).unwrap();
    assert_eq!(baseline.finding(mutex), Finding::Holds);
    assert_eq!(baseline.exercised_seeds(), SEEDS);
    assert!(!run.outcome(s, f).unwrap().absorbed);

    assert_eq!(run.setups.len(), 3);
    assert_eq!(run.faults.len(), 2);
}

/// What Redlock buys over one node (anchors S4 and S8): one master of five forgetting the
/// key (its clock jumps, or it restarts empty) or dying leaves a holder of every key a
/// majority, so Redlock holds in nearly every seed (at 50 seeds the shipped matrix shows
/// 2/50 under the jump: a holder with a bare majority, a contender's key left on one
/// master, loses it through that master, as S4 says); the one node of a single-node
/// setup was the only key, so it breaks in every seed, and without the fault it holds.
#[test]
fn one_master_of_five_failing_breaks_a_single_node_but_not_redlock() {
    let one_master = ["one-master-clock-jump", "one-master-restart", "one-master-crash"];
    let faults: Vec<&str> = std::iter::once("none").chain(one_master).collect();
    let matrix = shipped_subset(&["lua-release", "redlock-5"], &faults);
    let dir = std::env::temp_dir().join(format!("locksim-matrix-minority-{}", std::process::id()));
    let run = matrix::run(&matrix, &dir, Some(SEEDS), 2, &|| {});
    let mutex = check::mutual_exclusion::NAME;
    for fault in one_master {
        let (s, f) = index(&run, "redlock-5", fault);
        let redlock = run.cell(s, f).unwrap();
        assert!(
            redlock.rate(mutex).violating <= 1,
            "Redlock under {fault}: nearly never"
        );
        assert_eq!(
            redlock.exercised_seeds(),
            SEEDS,
            "granted after {fault} in every seed"
        );
    }
    for fault in ["one-master-clock-jump", "one-master-restart"] {
        let (s, f) = index(&run, "lua-release", fault);
        let single = run.cell(s, f).unwrap();
        assert_eq!(
            single.rate(mutex).violating,
            SEEDS,
            "one node under {fault}: every seed"
        );
    }
    let (s, f) = index(&run, "lua-release", "none");
    assert_eq!(
        run.cell(s, f).unwrap().finding(mutex),
        Finding::Holds,
        "no fault, no break"
    );
}

#[test]
fn a_written_cell_replays_its_counterexample() {
    let matrix = shipped_subset(&["set-nx-px"], &["holder-pause"]);
    let dir = std::env::temp_dir().join(format!("locksim-matrix-replay-{}", std::process::id()));
    let written = matrix.write_scenarios(&dir).unwrap();
    assert_eq!(written, [cell_file(&dir, "set-nx-px", "holder-pause")]);
    let run = matrix::run(&matrix, &dir, Some(SEEDS), 2, &|| {});
    let report = run.cell(0, 0).unwrap();
    let seed = *report
        .violating_seeds()
        .first()
        .expect("tier 3 breaks under a pause");
    let replay = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "replay",
            written[0].to_str().unwrap(),
            "--seed",
            &seed.to_string(),
        ])
        .output()
        .unwrap();
    let output = String::from_utf8_lossy(&replay.stdout);
    assert!(output.contains("mutual_exclusion: VIOLATED"), "{output}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failover_applies_to_a_users_redlock_row_with_replicas() {
    let mut grid: Value = serde_json::from_str(&std::fs::read_to_string(GRID_FILE).unwrap()).unwrap();
    let row = r#"{ "name": "my-redlock", "label": "Redlock over 3 replicated groups",
        "topology": { "kind": "redlock", "masters": 3, "replicas": 1 },
        "lock": { "algorithm": "redlock", "ttl_ms": 5000 } }"#;
    grid["setups"] = Value::Array(vec![serde_json::from_str(row).unwrap()]);
    grid["comparisons"] = Value::Array(Vec::new());
    grid["clients_compared"] = Value::Array(Vec::new());
    let matrix = Grid::parse(Path::new(GRID_FILE), &grid.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        matrix.applicable_cells(),
        matrix.faults.len() as u64,
        "every class applies"
    );
}

/// A *holds* rests on enough seeds: Redlock, 5 masters when one master restarts empty
/// shows no violation in a few seeds by luck (a holder granted by a bare majority that
/// includes the restarted master loses it: S8), so the cell, run as the report runs a
/// compared setup's cell, is not reported as holding.
#[test]
fn redlock_5_when_one_master_restarts_empty_is_not_reported_as_holding() {
    let matrix = shipped_subset(&["redlock-5"], &["one-master-restart"]);
    let dir = std::env::temp_dir().join(format!("locksim-matrix-holds-{}", std::process::id()));
    let [sweep] = matrix::sweeps(&matrix, &dir, None, Some(300)).try_into().unwrap();
    assert_eq!(sweep.holds_at, None, "a setup nobody compares stays at its seeds");
    let mut sweep = sweep;
    sweep.holds_at = Some(300);
    let report = sweep.run(2);
    let outcome = locksim::report::outcome::Outcome::of(&report, false);
    assert_ne!(
        outcome.safety,
        locksim::report::outcome::Safety::Holds,
        "{outcome:?}"
    );
    assert!(outcome.overlap.violating > 0, "{outcome:?}");
}

/// A compared setup's cell that shows no safety violation goes on to `holds_seeds`, and
/// says *holds* there; one that broke stops at its seeds.
#[test]
fn a_compared_cell_with_no_violation_goes_on_to_enough_seeds() {
    let mut grid = shipped_grid_subset(
        &["lua-release", "lua-release-validity"],
        &["none", "holder-pause"],
    );
    grid["defaults"]["seeds"] = 4.into();
    grid["defaults"]["holds_seeds"] = 300.into();
    let matrix = Grid::parse(Path::new(GRID_FILE), &grid.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("locksim-matrix-more-{}", std::process::id()));
    let sweeps = matrix::sweeps(&matrix, &dir, None, matrix.holds_seeds);
    let reports: Vec<_> = sweeps.iter().map(|sweep| sweep.run(2)).collect();
    let run = matrix::results(&matrix, reports);
    let (s, f) = index(&run, "lua-release", "none");
    let calm = run.outcome(s, f).unwrap();
    assert_eq!((calm.overlap.violating, calm.overlap.seeds), (0, 300));
    assert_eq!(calm.safety, locksim::report::outcome::Safety::Holds);
    let (s, f) = index(&run, "lua-release", "holder-pause");
    let paused = run.outcome(s, f).unwrap();
    assert_eq!(paused.overlap.seeds, 4, "a violation needs no more seeds");
}
