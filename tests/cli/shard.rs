//! Splitting a sweep: `run --shard K/N --seed-log` on each part, then `merge`, gives the
//! same per-scenario JSON as one run over all seeds, and `report --shard K/N` then
//! `merge --report` the same report as one `locksim report`; a seed logged twice or
//! missing, a malformed line, or shards of different reports are invalid input (exit 2)
//! naming the file and line.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::cli::{locksim, scratch, without_wall_time};
use support::grid::shipped_grid_subset;

fn json_lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            value["wall_ms"] = Value::Null;
            value
        })
        .collect()
}

const SCENARIOS: [&str; 2] = [
    "scenarios/single-node-gc-pause.json",
    "scenarios/redlock-minority-down.json",
];

#[test]
fn merged_shards_equal_one_run_over_all_seeds() {
    let dir = scratch("run");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let mut logs = Vec::new();
    for k in 1..=3 {
        let log = path(&format!("shard-{k}.jsonl"));
        let shard = format!("{k}/3");
        let mut args = vec![
            "run",
            "--seeds",
            "10",
            "--jobs",
            "2",
            "--shard",
            &shard,
            "--seed-log",
            &log,
        ];
        args.extend(SCENARIOS);
        let output = locksim(&args);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        logs.push(log);
    }
    let merged = path("merged.jsonl");
    let mut args = vec!["merge", "--json", &merged];
    args.extend(logs.iter().map(String::as_str));
    let output = locksim(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let whole = path("whole.jsonl");
    let mut args = vec!["run", "--seeds", "10", "--jobs", "1", "--json", &whole];
    args.extend(SCENARIOS);
    assert!(locksim(&args).status.success());
    let by_name = |mut lines: Vec<Value>| {
        lines.sort_by_key(|v| v["name"].as_str().unwrap().to_string());
        lines
    };
    assert_eq!(
        by_name(json_lines(Path::new(&merged))),
        by_name(json_lines(Path::new(&whole)))
    );

    // The same log twice: every seed twice.
    let output = locksim(&["merge", &logs[0], &logs[0]]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("logged twice"));
    // A line that is not a seed record names its file and line.
    let bad = path("bad.jsonl");
    std::fs::write(&bad, "{\"file\": \"scenarios/single-node-gc-pause.json\"}\n").unwrap();
    let output = locksim(&["merge", &bad]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("bad.jsonl:1") && said.contains("seed"), "{said}");
    let output = locksim(&["run", "scenarios/single-node-gc-pause.json", "--shard", "4/3"]);
    assert_eq!(output.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The report's catalogue: one scenario that breaks (a counterexample to replay), one that
/// holds.
const REPORT_SCENARIOS: [&str; 2] = [
    "scenarios/single-node-gc-pause.json",
    "scenarios/single-node-baseline.json",
];

/// The shipped grid cut to three setups and three fault classes (one of which applies to
/// the replicated setup only), written into `dir`; two of the setups compared, so their
/// cells that show no violation in 3 seeds go on to 8 (a shard runs all 8, the merge keeps
/// what a single run keeps).
fn small_grid(dir: &Path) -> String {
    let mut grid = shipped_grid_subset(
        &["set-nx-px", "lua-release-fencing", "replicated"],
        &["none", "holder-pause", "failover"],
    );
    grid["comparisons"] = serde_json::json!([["lua-release-fencing", "set-nx-px"]]);
    grid["defaults"]["seeds"] = 3.into();
    grid["defaults"]["holds_seeds"] = 8.into();
    let file = dir.join("grid.json");
    std::fs::write(&file, grid.to_string()).unwrap();
    file.to_str().unwrap().to_string()
}

/// `locksim report` over [`REPORT_SCENARIOS`] with few seeds everywhere, then `extra`.
fn report(grid: &str, seeds: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "report",
        "--seeds",
        seeds,
        "--envelope-seeds",
        "2",
        "--matrix",
        grid,
        "--matrix-seeds",
        "3",
        "--jobs",
        "2",
    ];
    args.extend(extra);
    args.extend(REPORT_SCENARIOS);
    locksim(&args)
}

/// A page without the lines that say how it was made (its command line differs between a
/// report and a merge).
fn without_provenance(page: &str) -> String {
    let mut page = page.to_string();
    for (start, end) in [
        ("<p class=\"provenance\">", "</p>"),
        ("<section id=\"provenance\">", "</section>"),
    ] {
        let from = page.find(start).expect("the page says how it was made");
        let to = from + page[from..].find(end).unwrap() + end.len();
        page.replace_range(from..to, "");
    }
    page
}

fn read_json(file: &Path) -> Value {
    without_wall_time(serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap())
}

#[test]
fn a_report_merged_from_two_shards_is_the_unsharded_report() {
    let dir = scratch("report");
    let grid = small_grid(&dir);
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let out = path("report");
    let whole = report(&grid, "4", &["--out", &out]);
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    // The merge writes where the unsharded report did: every path in the report is the same.
    std::fs::rename(&out, path("whole")).unwrap();
    let logs = [path("shard-1.jsonl"), path("shard-2.jsonl")];
    for (k, log) in logs.iter().enumerate() {
        let shard = format!("{}/2", k + 1);
        let output = report(&grid, "4", &["--shard", &shard, "--seed-log", log]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains(&format!("shard {shard}: ")), "{stdout}");
    }
    assert!(!Path::new(&out).exists(), "a shard writes its seed log only");
    // Given in any order.
    let merged = locksim(&["merge", &logs[1], &logs[0], "--report", &out]);
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout).lines().next(),
        String::from_utf8_lossy(&whole.stdout).lines().next(),
        "the verdict table"
    );

    let (whole, merged) = (dir.join("whole"), Path::new(&out));
    let summary = read_json(&merged.join("summary.json"));
    let mut whole_summary = read_json(&whole.join("summary.json"));
    // How each was made (its command line) is the one thing that differs.
    assert_ne!(
        summary["provenance"]["command"],
        whole_summary["provenance"]["command"]
    );
    whole_summary["provenance"] = summary["provenance"].clone();
    assert_eq!(summary, whole_summary);
    let baseline = summary["matrix"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["setup"] == "set-nx-px" && c["fault"] == "none")
        .unwrap();
    assert_eq!(
        baseline["seeds"], 8,
        "a compared cell with no violation went on to 8 seeds"
    );
    assert!(
        summary["matrix_counterexamples"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
    assert!(
        summary["counterexamples"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
    assert_eq!(summary["envelopes"].as_array().map(Vec::len), Some(3));
    let jsonl = |dir: &Path| json_lines(&dir.join("summary.jsonl"));
    assert_eq!(jsonl(merged), jsonl(&whole));
    // The page shows no host time: byte for byte the same but for how it was made, and so
    // is every figure.
    let read = |file: PathBuf| std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let page = |dir: &Path| without_provenance(&String::from_utf8(read(dir.join("index.html"))).unwrap());
    assert!(page(merged) == page(&whole), "the page differs");
    for entry in std::fs::read_dir(whole.join("figures")).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            read(merged.join("figures").join(&name)) == read(whole.join("figures").join(&name)),
            "{name:?} differs"
        );
    }
    for cell in std::fs::read_dir(whole.join("matrix")).unwrap() {
        let name = cell.unwrap().file_name();
        assert_eq!(
            read(merged.join("matrix").join(&name)),
            read(whole.join("matrix").join(&name))
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_shards_that_do_not_make_one_report_are_named() {
    let dir = scratch("report-bad");
    let grid = small_grid(&dir);
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let merge = |logs: &[&str]| {
        let mut args = vec!["merge", "--report"];
        let out = path("out");
        args.push(&out);
        args.extend(logs);
        let output = locksim(&args);
        let said = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(!said.contains("panicked"), "{said}");
        said
    };
    let (first, second) = (path("shard-1.jsonl"), path("shard-2.jsonl"));
    let other = path("shard-2-of-another.jsonl");
    assert!(
        report(&grid, "4", &["--shard", "1/2", "--seed-log", &first])
            .status
            .success()
    );
    assert!(
        report(&grid, "4", &["--shard", "2/2", "--seed-log", &second])
            .status
            .success()
    );
    assert!(
        report(&grid, "3", &["--shard", "2/2", "--seed-log", &other])
            .status
            .success()
    );

    let said = merge(&[&first, &other]);
    assert!(
        said.contains("shard-2-of-another.jsonl:1:") && said.contains("--seeds 3 here, 4 in"),
        "{said}"
    );
    let said = merge(&[&first]);
    assert!(said.contains("no log of shard 2/2"), "{said}");
    // A shard cut short: its log ends before its last seeds.
    let text = std::fs::read_to_string(&first).unwrap();
    let cut = path("cut.jsonl");
    std::fs::write(&cut, text.lines().take(20).collect::<Vec<_>>().join("\n") + "\n").unwrap();
    let said = merge(&[&cut, &second]);
    assert!(said.contains("cut.jsonl:20: the log ends without seed"), "{said}");
    let said = merge(&[&first, &first]);
    assert!(said.contains("shard 1/2 again"), "{said}");
    let said = merge(&[&path("missing.jsonl")]);
    assert!(said.contains("missing.jsonl"), "{said}");
    assert!(!Path::new(&path("out")).exists(), "nothing written from bad logs");
    let _ = std::fs::remove_dir_all(&dir);
}
