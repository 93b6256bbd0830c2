//! `locksim report`'s provisional page: the catalogue and the matrix's cells at their
//! first seeds come first, and a page of them is written before any cell goes on to its
//! *holds* seeds; a cell still going on is never said to hold there; the final page
//! replaces it and is not provisional; and the two passes end on the numbers one pass
//! gives.

use crate::support;

use std::path::Path;
use std::sync::Mutex;

use locksim::campaign::cache::RunCache;
use locksim::campaign::plan::{Plan, Remaining, ReportOptions, Swept};
use locksim::report::outcome::Safety;
use locksim::report::page;
use locksim::report::summary::{Provenance, Provisional, Summary};
use serde_json::Value;
use support::cli::{locksim, scratch, without_wall_time};
use support::grid::shipped_grid_subset;

/// A grid of two setups, compared, and two fault classes: its cells that show no violation
/// in 2 seeds go on to 5.
fn small_grid(dir: &Path) -> String {
    let mut grid = shipped_grid_subset(&["set-nx-px", "lua-release-fencing"], &["none", "holder-pause"]);
    grid["comparisons"] = serde_json::json!([["lua-release-fencing", "set-nx-px"]]);
    let file = dir.join("grid.json");
    std::fs::write(&file, grid.to_string()).unwrap();
    file.to_str().unwrap().to_string()
}

fn plan(dir: &Path) -> Plan {
    let options = ReportOptions {
        paths: vec!["scenarios/single-node-gc-pause.json".into()],
        seeds: Some(2),
        envelope_seeds: 0,
        matrix: Some(small_grid(dir).into()),
        matrix_seeds: Some(2),
        holds_seeds: Some(5),
        simulated_client: false,
    };
    Plan::new(options, &dir.join("out")).unwrap_or_else(|e| panic!("{e}"))
}

/// A summary of `swept` alone (no counterexamples), for its page and its numbers.
fn summary(swept: Swept, provisional: Option<Provisional>) -> Summary {
    Summary {
        catalogue: swept.catalogue,
        matrix: swept.matrix,
        counterexamples: Vec::new(),
        matrix_counterexamples: Vec::new(),
        envelopes: swept.envelopes,
        minimal: Vec::new(),
        provenance: Provenance::default(),
        provisional,
    }
}

/// A summary's numbers without their host-time fields.
fn numbers(summary: &Summary) -> Value {
    without_wall_time(summary.to_json())
}

#[test]
fn the_first_seeds_come_first_and_the_two_passes_end_where_one_pass_does() {
    let dir = scratch("two-passes");
    let plan = plan(&dir);
    let cache = RunCache::off();
    let seen = Mutex::new(None);
    let rests = Mutex::new(Vec::new());
    let two = plan.sweep_in_two_passes(
        2,
        &cache,
        &|first_plan, sweep| first_plan.sweep_all(2, sweep, &|_, _, _| {}),
        &mut |first: Swept, remaining: &Remaining| {
            let simulated_so_far = cache.counts().1;
            *seen.lock().unwrap() = Some((first, remaining.clone(), simulated_so_far));
        },
        &|done| rests.lock().unwrap().push(done),
    );
    let (first, remaining, simulated_first) = seen
        .into_inner()
        .unwrap()
        .expect("the first pass was handed over");
    let first_matrix = first.matrix.as_ref().unwrap();
    let cells: Vec<_> = first_matrix.cells.iter().flatten().flatten().collect();
    assert!(
        cells.iter().all(|cell| cell.seeds == 2),
        "every cell at its first seeds"
    );
    assert!(
        !remaining.extending.is_empty(),
        "some compared cell shows no violation in 2 seeds"
    );
    assert_eq!(remaining.holds_seeds, 5);
    assert_eq!(
        remaining.sweeps,
        remaining.extending.len(),
        "no envelopes in this plan"
    );
    let mut done = rests.into_inner().unwrap();
    done.sort_unstable();
    assert_eq!(done, (1..=remaining.sweeps).collect::<Vec<_>>());
    let extended: u64 = remaining.extending.len() as u64 * 3;
    assert!(
        cache.counts().1 >= simulated_first + extended,
        "the cells went on after the first pass was handed over: {} then {}",
        simulated_first,
        cache.counts().1
    );

    // The provisional page says so, and a cell still going on is not said to hold.
    for &(setup, fault) in &remaining.extending {
        let outcome = first_matrix.outcome(setup, fault).unwrap();
        assert_ne!(outcome.safety, Safety::Holds, "2 seeds are not a holds");
    }
    let provisional = Provisional {
        extending: remaining.extending.clone(),
        holds_seeds: remaining.holds_seeds,
        done: 0,
        to_run: remaining.sweeps,
        envelopes_pending: false,
        minimal_pending: false,
    };
    let html = page::render(
        &summary(first.clone(), Some(provisional.clone())),
        &Default::default(),
    );
    assert!(html.contains("<h1>locksim safety report — provisional</h1>"));
    assert!(html.contains("<strong>Provisional.</strong>"), "the banner");
    assert_eq!(
        html.matches("so far: going on to 5 seeds").count(),
        remaining.extending.len(),
        "each cell going on is marked"
    );
    assert!(
        !html.contains(">holds ("),
        "no cell holds on the provisional page"
    );
    // Written before its minimal counterexamples are shrunk, it says so.
    let shrinking = Provisional {
        minimal_pending: true,
        ..provisional.clone()
    };
    let html = page::render(&summary(first.clone(), Some(shrinking)), &Default::default());
    assert!(html.contains("the minimal counterexamples are being shrunk"));
    assert!(html.contains("<a href=\"#minimal\">"), "listed in the contents");
    let html = page::render(&summary(first, Some(provisional)), &Default::default());
    assert!(
        !html.contains("being shrunk"),
        "once shrunk, not said to be shrinking"
    );

    // The final numbers are those of one pass, and its page is not provisional.
    let one = plan.sweep_all(2, &|sweep| sweep.run_from(2, &RunCache::off()), &|_, _, _| {});
    let (two, one) = (summary(two, None), summary(one, None));
    assert_eq!(numbers(&two), numbers(&one));
    let cell_seeds: Vec<u64> = two
        .matrix
        .as_ref()
        .unwrap()
        .cells
        .iter()
        .flatten()
        .flatten()
        .map(|c| c.seeds)
        .collect();
    assert!(
        cell_seeds.contains(&5),
        "cells went on to 5 seeds: {cell_seeds:?}"
    );
    let html = page::render(&two, &Default::default());
    assert!(!says_provisional(&html));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `locksim report` of the small plan into `out`, from the cache of runs it keeps there.
fn report_into(grid: &str, out: &str) -> std::process::Output {
    locksim(&[
        "report",
        "scenarios/single-node-gc-pause.json",
        "--seeds",
        "2",
        "--envelope-seeds",
        "0",
        "--matrix",
        grid,
        "--matrix-seeds",
        "2",
        "--holds-seeds",
        "5",
        "--jobs",
        "2",
        "--out",
        out,
    ])
}

/// The seeds a report says it replayed for its counterexamples.
fn seeds_replayed(said: &str) -> u64 {
    let line = said
        .lines()
        .find(|line| line.starts_with("counterexamples replayed and shrunk: "))
        .unwrap_or_else(|| panic!("no replays said: {said}"));
    let count = line
        .split(" seeds replayed in this report")
        .next()
        .and_then(|before| before.rsplit(' ').next());
    count
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn the_report_says_where_its_first_page_is_and_replaces_it() {
    let dir = scratch("report");
    let grid = small_grid(&dir);
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let output = report_into(&grid, out);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.code().is_some_and(|code| code <= 1), "{said}");
    let first = said
        .lines()
        .position(|line| line.starts_with("a first report is ready: "))
        .unwrap_or_else(|| panic!("no first report said: {said}"));
    let sweeps = said
        .lines()
        .position(|line| line.starts_with("sweeps: "))
        .unwrap();
    assert!(
        first < sweeps,
        "the first page comes before the sweeps end: {said}"
    );
    // It comes before the minimal counterexamples are shrunk, then shows them.
    let lines: Vec<&str> = said.lines().collect();
    assert!(
        lines[first].contains("its minimal counterexamples are being shrunk"),
        "{said}"
    );
    let shrunk = lines
        .iter()
        .position(|line| line.starts_with("the first report now shows its "))
        .unwrap_or_else(|| panic!("no page with the shrinks said: {said}"));
    assert!(first < shrunk && shrunk < sweeps, "{said}");
    let html = std::fs::read_to_string(Path::new(out).join("index.html")).unwrap();
    assert!(!says_provisional(&html), "the final page replaced it");
    assert!(!Path::new(out).join(".index.html.partial").exists());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("first report"), "stdout is unchanged: {stdout}");
    // Each counterexample the final page shows was replayed once, though the provisional
    // page showed it too.
    let numbers: Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(out).join("summary.json")).unwrap()).unwrap();
    let shown = ["counterexamples", "matrix_counterexamples"]
        .iter()
        .map(|key| numbers[key].as_array().map_or(0, Vec::len) as u64)
        .sum::<u64>();
    assert!(shown > 0, "the plan has counterexamples to replay: {numbers}");
    assert_eq!(seeds_replayed(&said), shown, "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_report_whose_runs_are_all_cached_writes_no_first_page() {
    let dir = scratch("cached");
    let grid = small_grid(&dir);
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let first = report_into(&grid, out);
    assert!(String::from_utf8_lossy(&first.stderr).contains("a first report is ready: "));
    let again = report_into(&grid, out);
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.code().is_some_and(|code| code <= 1), "{said}");
    assert!(
        said.contains(" 0 seeds simulated, "),
        "every run came from the cache: {said}"
    );
    assert!(!said.contains("a first report is ready"), "{said}");
    let html = std::fs::read_to_string(Path::new(out).join("index.html")).unwrap();
    assert!(!says_provisional(&html));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether a page carries any of the provisional page's marks: its title, its banner, a
/// section's note or a cell's "so far" (the stylesheet always styles them, and a path may
/// hold the word, so the word alone proves nothing).
fn says_provisional(html: &str) -> bool {
    [
        "(provisional)",
        "— provisional",
        "<strong>Provisional.</strong>",
        "Provisional: ",
        "so far: going on",
    ]
    .iter()
    .any(|mark| html.contains(mark))
}
