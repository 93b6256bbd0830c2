//! What live output claims (issue 31, point 5): only what it ran. A scenario naming the
//! user's own worker is not silently simulated with locksim's client; a checker live mode
//! cannot judge shows "not judged"; a live run that was not met keeps the workers' output,
//! a trace and the verdicts, and says where; `rerun:` reruns the same mode on the same kind
//! of node; a worker that dies is named as such, with its status and its last output.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use support::cli::{locksim, scratch};
use support::live::{one_live_test_at_a_time, scenario_file};

/// Runs `locksim args` with its temporary directory (where live runs keep their scratch
/// directories) in `tmp`.
fn locksim_in(tmp: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("locksim runs")
}

/// Four seconds, two workers on one node, a 500 ms TTL, and the first worker granted the
/// lock from 1.5 s on frozen at its grant for 1.5 s: mutual exclusion breaks; the scenario
/// expects it to hold (and validity too, which live mode cannot judge), so it is not met.
/// The pause strikes on the grant, not at a time: a worker frozen at a time can be one that
/// has just written and let go, and then nothing breaks (a run in 20 on a loaded machine).
fn frozen_holder_expected_safe() -> Value {
    json!({
        "duration_ms": 4000,
        "topology": { "kind": "single" },
        "lock": { "algorithm": "lua-release", "ttl_ms": 500, "fencing": "none" },
        "clients": { "count": 2, "work_ms": [50, 100], "think_ms": [10, 30] },
        "faults": [
            { "kind": "pause", "target": "holder", "on": "acquired", "at_ms": 1500, "duration_ms": 1500 }
        ],
        "expect": { "mutual_exclusion": "holds", "validity": "holds" }
    })
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_scenario_naming_its_own_worker_is_not_simulated_unless_asked() {
    let dir = scratch("own-worker");
    let mut fields = frozen_holder_expected_safe();
    fields["clients"]["command"] = json!(["python3", "worker.py"]);
    let file = scenario_file(&dir, "own-worker", fields);
    let file = file.to_str().unwrap();
    for args in [
        vec!["run", file],
        vec!["replay", file, "--seed", "0"],
        vec!["shrink", file, "--seed", "0"],
        vec!["check", file, "--cases", "1"],
        vec!["report", file, "--out", dir.join("report").to_str().unwrap()],
    ] {
        let output = locksim(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("clients.command")
                && stderr.contains("`python3 worker.py`")
                && stderr.contains("run your worker with `locksim run --live ")
                && stderr.contains("own-worker.json`")
                && stderr.contains("--simulated-client"),
            "{args:?}: {stderr}"
        );
    }
    // Asked for on purpose, the simulator runs its own client with the scenario's lock.
    let output = locksim(&["run", file, "--seeds", "2", "--simulated-client"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("replay: locksim replay"));
    // Its seed 0 breaks the mutual exclusion the scenario expects to hold: replay says so
    // with exit 1 (issue 32, point 6).
    let output = locksim(&["replay", file, "--seed", "0", "--simulated-client"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("seed 0 violates what"));
}

#[test]
fn a_live_run_that_is_not_met_keeps_its_output_trace_and_verdicts_and_says_what_ran() {
    let _serial = one_live_test_at_a_time();
    let dir = scratch("unmet");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let file = scenario_file(&dir, "unmet", frozen_holder_expected_safe());
    let json_file = dir.join("out.jsonl");
    let output = locksim_in(
        &tmp,
        &[
            "run",
            "--live",
            "--redis-server",
            file.to_str().unwrap(),
            "--json",
            json_file.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    // Validity is "not judged" (`n/j` in the narrow table), never a rate or "holds".
    let row = stdout.lines().find(|l| l.starts_with("unmet ")).unwrap();
    assert!(row.contains(" n/j ") && row.contains("NOT MET"), "{row}");
    assert!(stdout.contains("validity: not judged live"), "{stdout}");
    assert!(
        stdout.contains("ran live: clients `locksim worker`") && stdout.contains("nodes real redis-server"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "rerun: locksim run --live --redis-server {} --seed-start 0 --seeds 1",
            file.display()
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("replay: locksim replay"), "{stdout}");
    let report: Value = serde_json::from_str(std::fs::read_to_string(&json_file).unwrap().trim()).unwrap();
    assert_eq!(report["mode"], "live");
    assert_eq!(report["redis"], "redis-server");
    assert_eq!(
        report["checkers"]["validity"],
        json!({"finding": "not judged", "expect": null, "met": null})
    );
    assert_eq!(report["checkers"]["mutual_exclusion"]["finding"], "violated");
    // The violating seed's directory is kept, named, and holds what a reader needs.
    let kept = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("kept: seed 0: "))
        .unwrap_or_else(|| panic!("no kept run in\n{stdout}"));
    let kept = Path::new(kept.split(" (").next().unwrap());
    assert!(kept.starts_with(&tmp), "{}", kept.display());
    assert!(
        stdout.contains("mutual_exclusion: VIOLATED: client-"),
        "the violation is printed: {stdout}"
    );
    for worker in ["client-1", "client-2"] {
        assert!(
            kept.join("logs").join(format!("{worker}.log")).exists(),
            "{worker}"
        );
    }
    let trace = std::fs::read_to_string(kept.join("trace.txt")).unwrap();
    assert!(
        trace.contains("acquired token=") && trace.contains("end of run"),
        "{trace}"
    );
    let verdicts = std::fs::read_to_string(kept.join("verdicts.txt")).unwrap();
    assert!(
        verdicts.contains("However, mutual_exclusion is broken")
            && verdicts.contains("mutual_exclusion: VIOLATED")
            && verdicts.contains("validity: not judged"),
        "{verdicts}"
    );
}

#[test]
fn a_live_run_that_is_met_keeps_nothing() {
    let _serial = one_live_test_at_a_time();
    let dir = scratch("met");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut fields = frozen_holder_expected_safe();
    fields["expect"] = json!({ "mutual_exclusion": "violated" });
    let file = scenario_file(&dir, "met", fields);
    let output = locksim_in(&tmp, &["run", "--live", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!text(&output).contains("kept:"));
    let left: Vec<_> = std::fs::read_dir(tmp.join("locksim-live"))
        .map(|dir| dir.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_worker_that_dies_is_named_with_its_exit_status_and_last_output() {
    let _serial = one_live_test_at_a_time();
    let dir = scratch("crash");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut fields = frozen_holder_expected_safe();
    fields["clients"]["command"] = json!(["sh", "-c", "echo cannot import redis >&2; exit 3"]);
    let file = scenario_file(&dir, "crash", fields);
    let output = locksim_in(&tmp, &["run", "--live", file.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    assert!(stdout.contains("RUN ERROR (1 runs)"), "{stdout}");
    assert!(
        stdout.contains("ended before the run did (exit status: 3)")
            && stdout.contains("| cannot import redis"),
        "{stdout}"
    );
    assert!(stdout.contains("the scenario's clients.command"), "{stdout}");
    assert!(
        !stdout.contains("harness error")
            && !stdout.contains("inside the simulator")
            && !stdout.contains("replay:"),
        "a worker's death is not the simulator's: {stdout}"
    );
    assert!(stdout.contains(&format!("rerun: locksim run --live {}", file.display())));
}
