//! Splitting a sweep: `run --shard K/N --seed-log` on each part, then `merge`, gives the
//! same per-scenario JSON as one run over all seeds; a seed logged twice or a malformed
//! line is invalid input (exit 2) naming the file and line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn locksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(args)
        .output()
        .expect("locksim runs")
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locksim-shard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

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
    let dir = scratch();
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
