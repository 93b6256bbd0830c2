//! The command-line contract: exit codes, error wording, the replay format.

use crate::support;

use std::path::Path;
use support::cli::{locksim, scratch};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const GC_PAUSE: &str = "scenarios/single-node-gc-pause.json";

/// The shipped gc-pause scenario with one substitution applied.
fn gc_pause_with(from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(GC_PAUSE).unwrap();
    assert!(text.contains(from), "fixture lacks {from}");
    text.replacen(from, to, 1)
}

#[test]
fn bad_scenarios_exit_2_with_one_line_naming_file_and_field() {
    let dir = scratch("bad");
    let cases = [
        (
            "missing.json",
            gc_pause_with(r#""topology": { "kind": "single" },"#, ""),
            "topology",
        ),
        (
            "unknown.json",
            gc_pause_with(r#""seeds": 100,"#, r#""seeds": 100, "colour": "red","#),
            "colour",
        ),
        (
            "type.json",
            gc_pause_with(r#""ttl_ms": 2000"#, r#""ttl_ms": true"#),
            "lock.ttl_ms",
        ),
        (
            "negative.json",
            gc_pause_with(r#""duration_ms": 30000"#, r#""duration_ms": -30000"#),
            "duration_ms",
        ),
        ("syntax.json", "{ \"name\": ".to_string(), ""),
    ];
    for (file, content, field) in cases {
        let path = dir.join(file);
        std::fs::write(&path, content).unwrap();
        let out = locksim(&["run", path.to_str().unwrap()]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{file}: {stderr}");
        assert!(stderr.contains(path.to_str().unwrap()), "{file}: {stderr}");
        assert!(
            stderr.contains(&format!("`{field}`")) || field.is_empty(),
            "{file}: {stderr}"
        );
        assert!(
            !stderr.contains("panicked") && out.stdout.is_empty(),
            "{file}: {stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_reports_violations_with_a_replay_line_and_json() {
    let dir = scratch("json");
    let json = dir.join("r.jsonl");
    let out = locksim(&["run", GC_PAUSE, "--seeds", "4", "--json", json.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("single-node-gc-pause") && l.ends_with("met")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("replay: locksim replay {GC_PAUSE} --seed 0")),
        "{stdout}"
    );
    let row: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&json).unwrap().trim()).unwrap();
    assert_eq!(row["name"], "single-node-gc-pause");
    assert_eq!(row["seeds"], 4);
    assert_eq!(row["violating_seeds"], 4);
    assert_eq!(row["first_violation_seed"], 0);
    assert_eq!(row["expect_met"], true);
    // The pause of the holder aims at a state every seed reached.
    assert_eq!(row["faults"][0]["aims"], "holder-paused-past-validity");
    assert_eq!(
        row["coverage"]["holder-paused-past-validity"],
        serde_json::json!({"seeds": 4, "first_seed": 0, "aimed": true})
    );
    assert_eq!(row["coverage"]["failover-unreplicated"]["seeds"], 0);
    assert!(!stdout.contains("reached by no seed"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_names_the_aimed_at_state_no_seed_reached_and_does_not_call_it_holding() {
    // A crash before replication on a single node: there is no replica to promote, so no
    // seed reaches the failover over an unreplicated key that the crash aims at.
    let dir = scratch("unreached");
    let path = dir.join("single-node-crash-before-replication.json");
    std::fs::write(
        &path,
        gc_pause_with(
            r#"{ "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": 4000 }"#,
            r#"{ "kind": "crash", "target": "master", "on": "write_before_replication", "at_ms": 5000, "delay_ms": 20, "restart_after_ms": 1000 }"#,
        ),
    )
    .unwrap();
    let out = locksim(&["run", path.to_str().unwrap(), "--seeds", "2"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("  aimed at by its faults, reached by no seed: failover-unreplicated"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("deadlock: expected to hold, but not exercised: no seed reached failover-unreplicated"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unmet_expectation_exits_1() {
    let dir = scratch("unmet");
    let path = dir.join("wrong.json");
    std::fs::write(&path, gc_pause_with(r#""violated""#, r#""holds""#)).unwrap();
    let out = locksim(&["run", path.to_str().unwrap(), "--seeds", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("NOT MET"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_shows_the_overlap_and_ends_with_the_digest() {
    let first = locksim(&["replay", GC_PAUSE, "--seed", "0"]);
    let second = locksim(&["replay", GC_PAUSE, "--seed", "0"]);
    assert_eq!(first.status.code(), Some(0));
    let stdout = text(&first.stdout);
    assert!(stdout.contains("fault-start pause client-"), "{stdout}");
    assert!(stdout.contains("mutual_exclusion: VIOLATED"), "{stdout}");
    let last = stdout.lines().last().unwrap();
    assert!(
        last.starts_with("digest: ") && last.len() == "digest: ".len() + 32,
        "{last}"
    );
    assert_eq!(first.stdout, second.stdout);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(locksim(&["run"]).status.code(), Some(2));
    assert_eq!(locksim(&["replay", GC_PAUSE]).status.code(), Some(2));
    assert_eq!(locksim(&["run", GC_PAUSE, "--seeds", "0"]).status.code(), Some(2));
    let missing = locksim(&["run", "no/such/file.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no/such/file.json"));
    assert!(Path::new(GC_PAUSE).exists());
}

/// `bench scenarios/bench/single-node.json ARGS --json FILE` in a scratch directory named
/// `name`, which must succeed: what it printed, and the numbers it wrote.
fn bench_single_node(name: &str, args: &[&str]) -> (String, serde_json::Value) {
    let json = scratch(name).join("bench.json");
    let mut all = vec!["bench", "scenarios/bench/single-node.json"];
    all.extend(args);
    all.extend(["--json", json.to_str().unwrap()]);
    let output = locksim(&all);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let numbers = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (text(&output.stdout), numbers)
}

#[test]
fn bench_reports_events_per_second_and_writes_its_numbers_as_json() {
    let (stdout, numbers) = bench_single_node("bench", &["--seeds", "2"]);
    assert!(stdout.lines().next().unwrap().contains("events/s"), "{stdout}");
    assert!(stdout.contains("bench-single-node"), "{stdout}");
    let workload = &numbers["workloads"][0];
    assert_eq!(workload["seeds"], 2);
    assert!(workload["messages"].as_u64().unwrap() > 0, "{workload}");
    assert!(workload["timer_firings"].as_u64().unwrap() > 0, "{workload}");
}

/// `bench --pingpong --rounds`: each round's workloads against the faster ping-pong beside
/// them, and the median of the rounds' shares (issue 33: the share of the limit).
#[test]
fn bench_judges_each_round_against_the_ping_pongs_beside_it_and_quotes_the_median() {
    let (stdout, numbers) = bench_single_node(
        "bench-rounds",
        &["--seeds", "1", "--pingpong", "2000", "--rounds", "3"],
    );
    assert!(
        stdout.contains("round 3 of 3") && stdout.contains("(medians of 3 rounds; shares "),
        "{stdout}"
    );
    let runs: Vec<f64> = numbers["pingpong"]["runs_messages_per_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rate| rate.as_f64().unwrap())
        .collect();
    assert_eq!(
        runs.len(),
        4,
        "one ping-pong before the rounds and one after each: {numbers}"
    );
    let workloads = numbers["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 3, "{numbers}");
    let mut shares = Vec::new();
    for (round, workload) in workloads.iter().enumerate() {
        assert_eq!(workload["round"], round as u64);
        let limit = runs[round].max(runs[round + 1]);
        let share = workload["share_of_limit"].as_f64().unwrap();
        let expected = workload["events_per_s"].as_f64().unwrap() / limit;
        assert!(
            (share - expected).abs() < 1e-9 * expected,
            "{workload} against {limit}"
        );
        shares.push(share);
    }
    shares.sort_by(f64::total_cmp);
    let summary = &numbers["shares"][0];
    assert_eq!(summary["rounds"], 3);
    assert_eq!(
        summary["median_share_of_limit"].as_f64().unwrap(),
        shares[1],
        "{summary}"
    );
    assert_eq!(
        summary["min_share_of_limit"].as_f64().unwrap(),
        shares[0],
        "{summary}"
    );
    assert_eq!(
        summary["max_share_of_limit"].as_f64().unwrap(),
        shares[2],
        "{summary}"
    );
    // Rounds mean nothing without the ping-pong to judge them by.
    let alone = locksim(&[
        "bench",
        "scenarios/bench/single-node.json",
        "--seeds",
        "1",
        "--rounds",
        "2",
    ]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(
        text(&alone.stderr).contains("--pingpong"),
        "{}",
        text(&alone.stderr)
    );
}

#[test]
fn bench_times_the_first_violation_of_a_violating_catalogue_scenario() {
    let dir = scratch("bench-catalogue");
    std::fs::copy(GC_PAUSE, dir.join("gc.json")).unwrap();
    std::fs::copy("scenarios/single-node-baseline.json", dir.join("baseline.json")).unwrap();
    let json = dir.join("numbers.json");
    let output = locksim(&[
        "bench",
        "scenarios/bench/single-node.json",
        "--seeds",
        "1",
        "--catalogue",
        dir.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let numbers: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let found = numbers["first_violations"].as_array().unwrap();
    // The baseline expects no violation, so only the gc pause is timed.
    assert_eq!(found.len(), 1, "{numbers}");
    assert_eq!(found[0]["scenario"], "single-node-gc-pause");
    assert_eq!(found[0]["seed"], 0);
}

/// The lines of `replay --commands` that show a frame going to or coming from a node.
fn wire_lines(scenario: &str, seed: &str) -> Vec<String> {
    let out = locksim(&["replay", scenario, "--seed", seed, "--commands"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plain = locksim(&["replay", scenario, "--seed", seed]);
    let digest = |stdout: &[u8]| text(stdout).lines().last().map(str::to_string);
    assert_eq!(
        digest(&out.stdout),
        digest(&plain.stdout),
        "watching the wire changed the run"
    );
    text(&out.stdout)
        .lines()
        .filter(|line| line.contains(" → ") || line.contains(" ← "))
        .map(str::to_string)
        .collect()
}

#[test]
fn replay_commands_lists_a_generic_clients_set_nx_px_and_its_release_script_with_replies() {
    let wire = wire_lines("scenarios/single-node-baseline.json", "0");
    let sent = |needle: &str| {
        wire.iter()
            .any(|l| l.contains("→ redis-1 ") && l.contains(needle))
    };
    assert!(sent("SET locksim:lock "), "{wire:#?}");
    assert!(
        wire.iter()
            .any(|l| l.contains("→ redis-1 SET locksim:lock ") && l.ends_with(" NX PX 2000")),
        "{wire:#?}"
    );
    assert!(sent("EVAL <script: get, del ("), "{wire:#?}");
    assert!(wire.iter().any(|l| l.contains("← redis-1 OK")), "{wire:#?}");
    assert!(wire.iter().any(|l| l.contains("← redis-1 (nil)")), "{wire:#?}");
    assert!(
        wire.iter().any(|l| l.contains("← redis-1 (integer) 1")),
        "{wire:#?}"
    );
}

#[test]
fn replay_commands_lists_redissons_hincrby_script_its_publish_and_the_waiters_message() {
    let wire = wire_lines("scenarios/profile-redisson-no-faults-holds.json", "0");
    let has = |needle: &str| wire.iter().any(|l| l.contains(needle));
    assert!(
        has("→ redis-1 EVAL <script: exists, hexists, hincrby, pexpire, pttl ("),
        "{wire:#?}"
    );
    assert!(
        wire.iter()
            .any(|l| l.contains("→ redis-1 EVAL <script: ") && l.contains(" publish ")),
        "{wire:#?}"
    );
    assert!(
        has("→ redis-1 SUBSCRIBE redisson_lock__channel:{locksim:lock}"),
        "{wire:#?}"
    );
    assert!(
        has(r#"← redis-1 ["message", "redisson_lock__channel:{locksim:lock}", "0"]"#),
        "{wire:#?}"
    );
}
