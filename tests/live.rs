//! Live mode end to end: `locksim worker` processes on locksim's nodes, in real time,
//! judged by the same checkers as the simulator. A pause of the holder longer than the TTL
//! breaks mutual exclusion; without the pause it holds; with fencing tokens the resource
//! refuses the paused holder's stale write. Each case runs five seconds of real time;
//! `run --live` also runs a violating seed again without its faults, live.

mod support;

use std::path::{Path, PathBuf};

use locksim::check::check_all;
use locksim::history::{EventKind, History};
use locksim::live::{self, LiveSetup};
use locksim::scenario;

use support::cli::{locksim, scratch};

/// Five seconds, two workers on one locksim node, a 500 ms TTL, critical sections of
/// 50-100 ms; `faults` and `fencing` as given.
fn scenario_file(dir: &Path, name: &str, fencing: &str, faults: &str, expect: &str) -> PathBuf {
    scenario_file_working(dir, name, fencing, faults, expect, "[50, 100]")
}

/// The same, with critical sections of `work_ms` (`[min, max]`).
fn scenario_file_working(
    dir: &Path,
    name: &str,
    fencing: &str,
    faults: &str,
    expect: &str,
    work_ms: &str,
) -> PathBuf {
    let file = dir.join(format!("{name}.json"));
    let text = format!(
        r#"{{
  "name": "{name}",
  "duration_ms": 5000,
  "seeds": 1,
  "topology": {{ "kind": "single" }},
  "lock": {{ "algorithm": "lua-release", "ttl_ms": 500, "fencing": "{fencing}" }},
  "clients": {{ "count": 2, "work_ms": {work_ms}, "think_ms": [10, 30] }},
  "faults": {faults},
  "expect": {expect}
}}"#
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// The holder freezes for 2 s, four TTLs, at 1.5 s: late enough for both workers to be
/// running on a loaded machine, and long enough for the other to get in.
const PAUSE_HOLDER: &str =
    r#"[ { "kind": "pause", "target": "holder", "at_ms": 1500, "duration_ms": 2000 } ]"#;

fn run_live(file: &Path, dir: &Path) -> History {
    let scenario = scenario::load(file).unwrap();
    let setup = LiveSetup {
        scenario_file: file.to_path_buf(),
        default_worker: vec![env!("CARGO_BIN_EXE_locksim").to_string(), "worker".into()],
        redis_server: false,
        worker_env: Vec::new(),
        scratch: dir.join("runs"),
    };
    live::unsupported(&scenario, &setup).unwrap();
    live::run(&scenario, 0, &setup).unwrap()
}

fn violated(history: &History, file: &Path, checker: &str) -> bool {
    let settings = scenario::load(file).unwrap().check_settings();
    check_all(history, &settings)
        .into_iter()
        .any(|v| v.checker == checker && v.violation.is_some())
}

fn count(history: &History, matches: impl Fn(&EventKind) -> bool) -> usize {
    history.events.iter().filter(|e| matches(&e.kind)).count()
}

#[test]
fn a_pause_longer_than_the_ttl_lets_a_second_worker_in() {
    let dir = scratch("pause");
    let file = scenario_file(&dir, "pause", "none", PAUSE_HOLDER, "{}");
    let history = run_live(&file, &dir);
    assert_eq!(count(&history, |k| matches!(k, EventKind::Paused)), 1);
    assert!(
        violated(&history, &file, "mutual_exclusion"),
        "{:#?}",
        history.events
    );
}

#[test]
fn without_the_pause_the_workers_take_turns() {
    let dir = scratch("no-fault");
    let file = scenario_file(&dir, "no-fault", "none", "[]", "{}");
    let history = run_live(&file, &dir);
    let grants = count(&history, |k| matches!(k, EventKind::Acquired { .. }));
    assert!(grants >= 4, "only {grants} grants in 5 s");
    assert!(count(&history, |k| matches!(k, EventKind::ResourceWrite { .. })) >= 4);
    for checker in ["mutual_exclusion", "resource_safety"] {
        assert!(
            !violated(&history, &file, checker),
            "{checker}: {:#?}",
            history.events
        );
    }
}

#[test]
fn with_fencing_the_resource_refuses_the_paused_holders_stale_write() {
    let dir = scratch("fencing");
    // Long critical sections: the pause must catch the holder before its write (between
    // its write and its release it would have nothing stale left to send).
    let file = scenario_file_working(&dir, "fencing", "master-incr", PAUSE_HOLDER, "{}", "[250, 300]");
    let history = run_live(&file, &dir);
    assert!(violated(&history, &file, "mutual_exclusion"));
    assert!(
        count(&history, |k| matches!(k, EventKind::ResourceRejected { .. })) >= 1,
        "{:#?}",
        history.events
    );
    for checker in ["resource_safety", "stale_write"] {
        assert!(
            !violated(&history, &file, checker),
            "{checker}: {:#?}",
            history.events
        );
    }
}

#[test]
fn run_live_prints_the_verdict_table_and_meets_the_expectation() {
    let dir = scratch("cli");
    let file = scenario_file(
        &dir,
        "cli-pause",
        "none",
        PAUSE_HOLDER,
        r#"{ "mutual_exclusion": "violated" }"#,
    );
    let json = dir.join("out.jsonl");
    let output = locksim(&[
        "run",
        "--live",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("cli-pause") && stdout.contains("live:"),
        "{stdout}"
    );
    assert!(stdout.contains("rerun: locksim run --live"), "{stdout}");
    let line = std::fs::read_to_string(&json).unwrap();
    let report: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(report["mode"], "live");
    // The violating seed ran again live without the pause, and held.
    let control = &report["checkers"]["mutual_exclusion"]["control"];
    assert!(!control.is_null(), "{report}");
    assert_eq!(report["checkers"]["mutual_exclusion"]["met"], true, "{report}");
}

#[test]
fn a_scenario_live_mode_cannot_run_is_refused_naming_the_field() {
    let dir = scratch("unsupported");
    let file = scenario_file(
        &dir,
        "drift",
        "none",
        r#"[ { "kind": "clock_drift", "target": "redis-1", "at_ms": 100, "rate_ppm": 1000 } ]"#,
        "{}",
    );
    let output = locksim(&["run", "--live", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("faults[0]") && stderr.contains("clock_drift"),
        "{stderr}"
    );
}

/// Installs redis-py (pip) when python3 cannot import it; panics saying so if that fails.
fn redis_py() {
    let imports = || {
        std::process::Command::new("python3")
            .args(["-c", "import redis"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if imports() {
        return;
    }
    let _ = std::process::Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "redis"])
        .status();
    assert!(
        imports(),
        "the redis-py worker needs python3 with redis-py: `python3 -m pip install redis` failed"
    );
}

#[test]
fn the_redis_py_worker_breaks_under_a_pause_and_holds_without_it() {
    redis_py();
    let dir = scratch("redis-py");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workers/redis-py/pause.json");
    let history = run_live(&file, &dir);
    assert!(
        count(&history, |k| matches!(k, EventKind::Acquired { .. })) >= 2,
        "{:#?}",
        history.events
    );
    assert!(
        violated(&history, &file, "mutual_exclusion"),
        "{:#?}",
        history.events
    );
    // The same workers without the pause: the control that the pause broke it.
    let scenario = locksim::report::control::without_faults(&scenario::load(&file).unwrap());
    let setup = LiveSetup {
        scenario_file: file.clone(),
        default_worker: Vec::new(),
        redis_server: false,
        worker_env: Vec::new(),
        scratch: dir.join("runs"),
    };
    let history = live::run(&scenario, 0, &setup).unwrap();
    let settings = scenario.check_settings();
    let verdicts = check_all(&history, &settings);
    assert!(verdicts.iter().all(|v| v.violation.is_none()), "{verdicts:?}");
    assert!(count(&history, |k| matches!(k, EventKind::ResourceWrite { .. })) >= 4);
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn processes_a_worker_starts_die_when_locksim_is_killed() {
    let dir = scratch("orphans");
    // Each worker starts a process of its own and writes down its pid: PR_SET_PDEATHSIG
    // reaches the worker, not that process; the supervisor's watchdog must.
    let file = dir.join("orphans.json");
    let text = r#"{
  "name": "orphans",
  "duration_ms": 60000,
  "seeds": 1,
  "topology": { "kind": "single" },
  "lock": { "algorithm": "lua-release", "ttl_ms": 500 },
  "clients": { "count": 2, "work_ms": [50, 100],
               "command": ["sh", "-c", "sleep 600 & echo $! >> grandchildren; wait"] },
  "faults": [],
  "expect": {}
}"#;
    std::fs::write(&file, text).unwrap();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["run", "--live", file.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pids = dir.join("grandchildren");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let grandchildren: Vec<i32> = loop {
        let text = std::fs::read_to_string(&pids).unwrap_or_default();
        let found: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if found.len() == 2 {
            break found;
        }
        if std::time::Instant::now() > deadline {
            let _ = run.kill();
            let _ = run.wait();
            panic!("the workers never wrote their children's pids: {text:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(grandchildren.iter().all(|&pid| running(pid)));
    run.kill().unwrap(); // SIGKILL: locksim cleans nothing up itself
    run.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while grandchildren.iter().any(|&pid| running(pid)) {
        if std::time::Instant::now() > deadline {
            for &pid in &grandchildren {
                // SAFETY: kill(2) of the processes this test had started; stop them anyway.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            panic!("a worker's own process outlived a SIGKILLed locksim");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
