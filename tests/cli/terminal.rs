//! What `run` and `replay` give a terminal, a pipe and a CI job (issue 32, point 6): a
//! table that fits 120 columns unless `--wide`, colour only on a terminal, `--json -` on
//! stdout with the table on stderr, `replay` exiting 1 on a seed that breaks an
//! expectation, and Ctrl-C stopping a sweep with exit 130 so that `--resume` goes on
//! from its seed log without running a logged seed again.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::cli::{locksim, scratch};

const GC_PAUSE: &str = "scenarios/single-node-gc-pause.json";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The seeds a seed log holds, with how many times each.
fn logged_seeds(log: &Path) -> BTreeMap<u64, usize> {
    let mut seeds = BTreeMap::new();
    for line in std::fs::read_to_string(log).unwrap().lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        *seeds.entry(value["seed"].as_u64().unwrap()).or_default() += 1;
    }
    seeds
}

#[test]
fn the_table_fits_120_columns_unless_wide_and_a_pipe_gets_no_colour() {
    let narrow = locksim(&["run", GC_PAUSE, "--seeds", "5"]);
    assert_eq!(narrow.status.code(), Some(0), "{}", text(&narrow.stderr));
    let stdout = text(&narrow.stdout);
    let table: Vec<&str> = stdout.lines().take(2).collect();
    assert!(table[0].starts_with("scenario") && table[1].starts_with("single-node-gc-pause"));
    for line in stdout.lines() {
        assert!(
            line.chars().count() <= 120,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(!stdout.contains('\x1b'), "colour in a pipe: {stdout}");
    let wide = locksim(&["run", GC_PAUSE, "--seeds", "5", "--wide"]);
    let row = text(&wide.stdout).lines().nth(1).unwrap().to_string();
    assert!(row.chars().count() > 120 && row.contains("5/5 57-100%"), "{row}");
}

#[test]
fn a_terminal_gets_colour_and_no_color_takes_it_away() {
    // `script` gives the command a pseudo-terminal, as a user's shell would.
    let binary = env!("CARGO_BIN_EXE_locksim");
    let on_a_terminal = |no_color: bool| {
        let mut command = Command::new("script");
        command
            .args(["-qec", &format!("{binary} run {GC_PAUSE} --seeds 3"), "/dev/null"])
            .env_remove("NO_COLOR")
            .env("TERM", "xterm");
        if no_color {
            command.env("NO_COLOR", "1");
        }
        let output = command.output().expect("script runs");
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
        text(&output.stdout)
    };
    assert!(on_a_terminal(false).contains("\x1b[32mmet\x1b[0m"));
    assert!(!on_a_terminal(true).contains("\x1b[32m"));
}

#[test]
fn json_dash_writes_the_json_lines_to_stdout_and_the_table_to_stderr() {
    let output = locksim(&["run", GC_PAUSE, "--seeds", "4", "--json", "-"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}")))
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["name"], "single-node-gc-pause");
    assert!(text(&output.stderr).contains("single-node-gc-pause"));
    assert!(!Path::new("-").exists(), "a file named `-` was written");
}

#[test]
fn replay_exits_1_when_the_seed_breaks_what_the_scenario_expects() {
    // gc-pause expects mutual exclusion violated: its violating seed is what it expects.
    let expected = locksim(&["replay", GC_PAUSE, "--seed", "0"]);
    assert_eq!(expected.status.code(), Some(0), "{}", text(&expected.stderr));
    assert!(text(&expected.stdout).contains("mutual_exclusion: VIOLATED"));
    // Without its faults the violation goes away, as the scenario expects: exit 0.
    let control = locksim(&["replay", GC_PAUSE, "--seed", "0", "--without-faults"]);
    assert_eq!(
        control.status.code(),
        Some(0),
        "the violation goes away without the faults"
    );
    // The same seed against a scenario that expects mutual exclusion to hold.
    let dir = scratch("replay-exit");
    let holds = dir.join("holds.json");
    let scenario = std::fs::read_to_string(GC_PAUSE).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&scenario).unwrap();
    value["expect"] = serde_json::json!({"mutual_exclusion": "holds"});
    std::fs::write(&holds, value.to_string()).unwrap();
    let broken = locksim(&["replay", holds.to_str().unwrap(), "--seed", "0"]);
    assert_eq!(broken.status.code(), Some(1), "{}", text(&broken.stdout));
    assert!(
        text(&broken.stderr).contains("seed 0 violates what")
            && text(&broken.stderr).contains("mutual_exclusion"),
        "{}",
        text(&broken.stderr)
    );
    assert!(
        text(&broken.stdout)
            .lines()
            .last()
            .unwrap()
            .starts_with("digest:"),
        "the digest stays the last line"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_stops_the_sweep_with_130_and_resume_runs_only_the_seeds_not_logged() {
    let dir = scratch("resume");
    let log = dir.join("seeds.jsonl");
    let seeds = "300";
    let child = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["run", GC_PAUSE, "--seeds", seeds, "--jobs", "1", "--seed-log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for a few seeds to be logged, then press Ctrl-C.
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(&log).map_or(0, |text| text.lines().count()) < 3 {
        assert!(Instant::now() < deadline, "no seed logged in two minutes");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let stopped = child.wait_with_output().unwrap();
    assert_eq!(stopped.status.code(), Some(130), "{}", text(&stopped.stderr));
    let stderr = text(&stopped.stderr);
    assert!(
        stderr.contains("interrupted: 0 of 1 scenarios ran to the end") && stderr.contains("--resume"),
        "{stderr}"
    );
    assert!(
        text(&stopped.stdout).contains("(interrupted: "),
        "{}",
        text(&stopped.stdout)
    );
    let before = logged_seeds(&log);
    assert!(before.len() < 300, "Ctrl-C stopped nothing");
    // A torn last line, as a kill mid-write leaves, is dropped.
    std::fs::write(&log, std::fs::read_to_string(&log).unwrap() + "{\"file\": \"scen").unwrap();
    let resumed = locksim(&[
        "run",
        GC_PAUSE,
        "--seeds",
        seeds,
        "--jobs",
        "2",
        "--seed-log",
        log.to_str().unwrap(),
        "--resume",
    ]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let after = logged_seeds(&log);
    assert_eq!(after.len(), 300, "every seed logged");
    assert!(after.values().all(|&times| times == 1), "a logged seed ran again");
    let whole = locksim(&["run", GC_PAUSE, "--seeds", seeds]);
    let row = |output: &std::process::Output| text(&output.stdout).lines().nth(1).unwrap().to_string();
    assert_eq!(
        row(&resumed),
        row(&whole),
        "the resumed table is the uninterrupted one"
    );
    // A log from another version of the scenario is refused, not mixed in.
    let changed = dir.join("changed.json");
    let scenario = std::fs::read_to_string(GC_PAUSE).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&scenario).unwrap();
    std::fs::write(&changed, value.to_string()).unwrap();
    let changed_log = dir.join("changed.jsonl");
    let first = locksim(&[
        "run",
        changed.to_str().unwrap(),
        "--seeds",
        "3",
        "--seed-log",
        changed_log.to_str().unwrap(),
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    value["lock"]["ttl_ms"] = serde_json::json!(value["lock"]["ttl_ms"].as_u64().unwrap() + 500);
    std::fs::write(&changed, value.to_string()).unwrap();
    let refused = locksim(&[
        "run",
        changed.to_str().unwrap(),
        "--seeds",
        "6",
        "--seed-log",
        changed_log.to_str().unwrap(),
        "--resume",
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("no longer gives the digest"),
        "{}",
        text(&refused.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
