//! No input crashes locksim, and every limit is stated: each malformed or extreme file of
//! tests/fixtures/bad-scenarios/ is refused with its expected message (exit 2), the flags
//! that used to be accepted and do nothing are refused, a run that panics or spends its
//! budget is a harness error (exit 3), a scenario without `expect` is unchecked, and
//! scenario files mutated at random never panic the loader or a run.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use serde_json::{Value, json};
use support::cli::{locksim, scratch};

const FIXTURES: &str = "tests/fixtures/bad-scenarios";
const GC_PAUSE: &str = "scenarios/single-node-gc-pause.json";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The fixtures: each `NAME.json` with the message of its `NAME.expected`.
fn fixtures() -> Vec<(PathBuf, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let expected = std::fs::read_to_string(file.with_extension("expected"))
                .unwrap_or_else(|_| panic!("{} has no .expected file", file.display()));
            (file, expected.trim_end().to_string())
        })
        .collect()
}

#[test]
fn every_bad_scenario_is_refused_with_its_message_naming_the_file_and_field() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 40, "only {} fixtures", fixtures.len());
    for (file, expected) in fixtures {
        let file = file.to_str().unwrap();
        let output = locksim(&["run", file]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{file}: {stderr}");
        assert_eq!(stderr, format!("error: {file}: {expected}\n"), "{file}");
        assert!(output.stdout.is_empty(), "{file}: {}", text(&output.stdout));
    }
}

#[test]
fn a_directory_without_scenarios_is_named_in_the_error() {
    let dir = scratch("empty-dir");
    let output = locksim(&["run", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: {}: no scenario files (*.json) in this directory\n",
            dir.display()
        )
    );
}

#[test]
fn flags_that_would_do_nothing_are_refused() {
    for (args, says) in [
        (
            &[
                "check",
                "scenarios/templates/redlock-any-pause.json",
                "--cases",
                "0",
            ][..],
            "'--cases <CASES>': must be at least 1",
        ),
        (
            &["run", GC_PAUSE, "--jobs", "0"][..],
            "'--jobs <JOBS>': must be at least 1",
        ),
        (
            &["bench", "--jobs", "0"][..],
            "'--jobs <JOBS>': must be at least 1",
        ),
        (
            &["shrink", GC_PAUSE, "--seed", "0", "--max-runs", "21"][..],
            "at least 22 runs",
        ),
        (
            &["shrink", GC_PAUSE, "--seed", "0", "--checker", "mutex"][..],
            "--checker `mutex`: no such checker",
        ),
        (
            &["shrink", GC_PAUSE, "--seed", "0", "--checker", "mutual_exlusion"][..],
            "did you mean `mutual_exclusion`? (checkers: mutual_exclusion, resource_safety,",
        ),
    ] {
        let output = locksim(args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn shrink_spends_no_more_runs_than_its_budget() {
    let dir = scratch("shrink-budget");
    let out = dir.join("shrunk.json");
    let output = locksim(&[
        "shrink",
        GC_PAUSE,
        "--seed",
        "0",
        "--max-runs",
        "25",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("25 runs spent"), "{stdout}");
}

/// `scenarios/single-node-gc-pause.json` with `change` applied, written to `dir/name`.
fn variant(dir: &Path, name: &str, change: impl FnOnce(&mut Value)) -> PathBuf {
    let mut scenario: Value = serde_json::from_str(&std::fs::read_to_string(GC_PAUSE).unwrap()).unwrap();
    change(&mut scenario);
    let file = dir.join(name);
    std::fs::write(&file, scenario.to_string()).unwrap();
    file
}

#[test]
fn a_scenario_without_expect_is_unchecked_and_fails_even_when_every_seed_broke_the_lock() {
    let dir = scratch("unchecked");
    let file = variant(&dir, "no-expect.json", |s| {
        s.as_object_mut().unwrap().remove("expect");
    });
    let output = locksim(&["run", file.to_str().unwrap(), "--seeds", "4", "--wide"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("4/4 51-100%"), "every seed overlapped: {stdout}");
    let row = stdout.lines().nth(1).unwrap();
    assert!(
        row.ends_with("  unchecked"),
        "the verdict is unchecked, not met: {row}"
    );
    assert!(stdout.contains("the scenario has no `expect`"), "{stdout}");
}

#[test]
fn a_run_past_its_event_budget_is_a_harness_error_with_a_replay_and_the_sweep_goes_on() {
    let dir = scratch("harness-error");
    let file = variant(&dir, "tiny-budget.json", |s| {
        s["budget"] = json!({ "events_per_s": 1 });
    });
    let file = file.to_str().unwrap();
    let json_out = dir.join("out.json");
    let output = locksim(&[
        "run",
        file,
        GC_PAUSE,
        "--seeds",
        "3",
        "--json",
        json_out.to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{stdout}");
    for seed in 0..3 {
        assert!(
            stdout.contains(&format!(
                "harness error: scenario single-node-gc-pause seed {seed}: the run exceeded its budget of 30 \
                 simulated events (budget.events_per_s): a livelock?; replay: locksim replay {file} --seed {seed}"
            )),
            "{stdout}"
        );
    }
    assert!(stdout.contains("HARNESS ERROR (3 runs)"), "{stdout}");
    let rows: Vec<Value> = std::fs::read_to_string(&json_out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(rows[0]["verdict"], "harness error");
    assert_eq!(rows[1]["verdict"], "met", "the next scenario still ran");
    let replay = locksim(&["replay", file, "--seed", "1"]);
    assert_eq!(replay.status.code(), Some(3));
    assert!(text(&replay.stderr).contains("harness error: scenario single-node-gc-pause seed 1:"));
}

#[test]
fn a_byte_order_mark_before_the_object_is_skipped() {
    let dir = scratch("bom");
    let file = dir.join("bom.json");
    let scenario = std::fs::read_to_string(GC_PAUSE).unwrap();
    std::fs::write(&file, format!("\u{feff}{scenario}")).unwrap();
    let output = locksim(&["run", file.to_str().unwrap(), "--seeds", "2"]);
    let stderr = text(&output.stderr);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
}

#[test]
fn a_megabyte_name_is_refused_in_one_line_naming_the_field() {
    let dir = scratch("huge-name");
    let file = variant(&dir, "huge-name.json", |s| s["name"] = json!("n".repeat(1 << 20)));
    let output = locksim(&["run", file.to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: {}: field `name`: is 1048576 characters long: at most 100 (a name heads a row of the \
             verdict table; say the rest in `description`)\n",
            file.display()
        )
    );
    assert!(output.stdout.is_empty(), "the table is not flooded");
}

#[test]
fn fractional_seconds_and_a_ttl_of_one_ms_are_taken_as_redis_takes_them() {
    let dir = scratch("short-ttl");
    for (name, ttl) in [("fraction.json", json!("0.05s")), ("one-ms.json", json!(1))] {
        let file = variant(&dir, name, |s| {
            s["lock"]["ttl_ms"] = ttl.clone();
            s.as_object_mut().unwrap().remove("expect");
        });
        let output = locksim(&["run", file.to_str().unwrap(), "--seeds", "2"]);
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(
            output.status.code(),
            Some(1),
            "{ttl}: unchecked, not refused: {stderr}{stdout}"
        );
        assert!(stderr.is_empty(), "{ttl}: {stderr}");
        // The client asks Redis for exactly that TTL.
        let replay = locksim(&["replay", file.to_str().unwrap(), "--seed", "0", "--commands"]);
        let px = if ttl == json!(1) { "PX 1" } else { "PX 50" };
        let trace = text(&replay.stdout);
        assert!(trace.contains(px), "{ttl}: no `{px}` in the trace");
    }
}

/// `scenarios/single-node-gc-pause.json` turned into: two clients, the first to acquire
/// holds the lock 60 s under a 65 s TTL, and its node loses power `power_loss_at_ms` in
/// and comes back at once, with `persistence`; the verdict `expected` of mutual exclusion.
/// (The holder's release then finds its connection reset, and the other client gets the
/// lock when the key expires.)
fn power_loss(dir: &Path, persistence: &str, power_loss_at_ms: u64, expected: &str) -> PathBuf {
    let name = format!("{persistence}-at-{power_loss_at_ms}.json");
    variant(dir, &name, |s| {
        s["duration_ms"] = json!(100_000);
        s["topology"] = json!({ "kind": "single", "persistence": persistence });
        s["lock"]["ttl_ms"] = json!("65s");
        s["clients"] = json!({ "count": 2, "work_ms": ["60s", "60s"] });
        s["faults"] = json!([{
            "kind": "power_loss", "target": "redis-1", "at_ms": power_loss_at_ms, "restart_after_ms": 100
        }]);
        s["expect"] = json!({ "mutual_exclusion": expected });
    })
}

#[test]
fn appendfsync_no_loses_on_a_power_loss_what_the_os_had_not_yet_written_back() {
    let dir = scratch("appendfsync-no");
    let cases = [
        // The grant (~0 s) is still only in the page cache 10 s later: lost, and the other
        // client takes the lock from under the holder.
        power_loss(&dir, "aof-no", 10_000, "violated"),
        // Linux wrote the AOF back at the 35 s flusher wake-up (dirtied at ~0 s, expired
        // after 30 s): a power loss at 40 s keeps the grant.
        power_loss(&dir, "aof-no", 40_000, "holds"),
        // `everysec` had fsynced it within the second.
        power_loss(&dir, "aof-everysec", 10_000, "holds"),
    ];
    for file in &cases {
        let output = locksim(&["run", file.to_str().unwrap(), "--seeds", "3"]);
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}: {stderr}{stdout}",
            file.display()
        );
    }
}

#[test]
fn the_holder_can_be_cut_off_by_name_in_a_partitions_groups() {
    let dir = scratch("holder-groups");
    let file = variant(&dir, "holder-groups.json", |s| {
        s["faults"] = json!([{
            "kind": "partition", "groups": [["holder"], ["redis-1", "client-1", "client-2", "client-3"]],
            "at_ms": 5000, "duration_ms": 4000
        }]);
        s.as_object_mut().unwrap().remove("expect");
    });
    let replay = locksim(&["replay", file.to_str().unwrap(), "--seed", "0"]);
    let (trace, stderr) = (text(&replay.stdout), text(&replay.stderr));
    assert!(stderr.is_empty(), "{stderr}");
    let struck = trace
        .lines()
        .find(|line| line.contains("fault-start partition"))
        .unwrap_or_else(|| panic!("no partition in the trace:\n{trace}"));
    // `partition [client-N] | [redis-1,<the other clients>]`: the holder alone, by name,
    // and not in the other group.
    let groups = &struck[struck.find("partition ").unwrap() + "partition ".len()..];
    let (holder, others) = groups.split_once(" | ").expect("two groups");
    let holder = holder.trim_start_matches('[').trim_end_matches(']');
    assert!(holder.starts_with("client-") && !holder.contains(','), "{struck}");
    assert!(
        others.starts_with("[redis-1,") && !others.contains(holder),
        "{struck}"
    );
    assert!(
        trace.contains(&format!("{holder:<22}5000.000  link-cut to=redis-1")),
        "the holder's link to Redis is cut:\n{trace}"
    );
}

/// A directory holding the gc-pause scenario and two bad variants of it, before and after
/// it in name order; and the stderr lines naming the two, in that order.
fn directory_with_two_bad_files(name: &str) -> (PathBuf, [String; 2]) {
    let dir = scratch(name);
    variant(&dir, "b-good.json", |_| {});
    let bad = [
        variant(&dir, "a-bad.json", |s| s["seeds"] = json!(0)),
        variant(&dir, "c-bad.json", |s| s["lock"]["ttl_ms"] = json!("2h")),
    ];
    let lines = [
        format!("error: {}: field `seeds`", bad[0].display()),
        format!("error: {}: field `lock.ttl_ms`", bad[1].display()),
    ];
    (dir, lines)
}

#[test]
fn run_of_a_directory_reports_every_bad_file_runs_the_good_ones_and_exits_2() {
    let (dir, refused) = directory_with_two_bad_files("mixed-dir");
    let output = locksim(&["run", dir.to_str().unwrap(), "--seeds", "2"]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(2), "{stderr}{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(lines[0].starts_with(&refused[0]), "{stderr}");
    assert!(lines[1].starts_with(&refused[1]), "{stderr}");
    assert_eq!(
        lines[2],
        "error: 2 scenario file(s) refused (above); the other 1 ran, their verdicts in the table"
    );
    assert!(
        stdout.contains("single-node-gc-pause"),
        "b-good.json ran: {stdout}"
    );
}

#[test]
fn live_runs_comparisons_benchmarks_and_reports_of_a_directory_report_every_bad_file_and_run_none() {
    let (dir, refused) = directory_with_two_bad_files("mixed-dir-all-or-none");
    let out = dir.join("report");
    let dir = dir.to_str().unwrap();
    for command in [
        vec!["run", "--live", dir, "--seeds", "1"],
        vec!["compare-live", dir],
        vec!["bench", dir, "--seeds", "1"],
        vec!["report", dir, "--seeds", "1", "--out", out.to_str().unwrap()],
    ] {
        let output = locksim(&command);
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(2), "{command:?}: {stderr}{stdout}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 3, "{command:?}: {stderr}");
        assert!(lines[0].starts_with(&refused[0]), "{command:?}: {stderr}");
        assert!(lines[1].starts_with(&refused[1]), "{command:?}: {stderr}");
        assert_eq!(lines[2], "error: 2 scenario file(s) refused (above); nothing ran");
        assert!(stdout.is_empty(), "{command:?}: nothing ran: {stdout}");
    }
}

/// Cases of the fuzz: `PROPTEST_CASES`, or a CI-sized default (more find more: the
/// seed, `PROPTEST_RNG_SEED`, picks which).
fn fuzz_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

/// Numbers that break loaders: edges of integer types, huge and negative ones, fractions.
fn any_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            json!(-1),
            json!(0),
            json!(1),
            json!(2),
            json!(3),
            json!(8),
            json!(255),
            json!(256),
            json!(257),
            json!(4_000_000_000u64),
            json!(1e13),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(0.5),
            json!(-0.0),
            json!(1e300),
        ]),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6..1e6f64).prop_map(|x| json!(x)),
    ]
}

/// Strings a scenario holds: durations with units, names of targets, kinds and values.
fn any_string() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        "",
        "8s",
        "250ms",
        "-3s",
        "1h",
        "2m",
        "x",
        "holder",
        "minority",
        "majority",
        "master",
        "any-redis",
        "any-client",
        "sentinel",
        "fence-counter",
        "redis-1",
        "client-1",
        "redlock",
        "replicated",
        "single",
        "lua-release",
        "counter",
        "connected",
        "pause",
        "crash",
        "latency",
        "loss",
        "partition",
        "random",
        "clock_jump",
        "after_acquire",
        "acquired",
        "holds",
        "violated",
    ])
    .prop_map(|s| json!(s))
}

/// Any JSON value, leaning to the ones that break loaders.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any_number(),
        any_string(),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Every place in `value`: the path to each object field and array element.
fn places(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => return,
    };
    for (key, child) in children {
        at.push(key);
        out.push(at.clone());
        places(child, at, out);
        at.pop();
    }
}

/// The value at `path` in `root`.
fn at_path<'a>(root: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(root, |value, key| match value {
        Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
        other => &mut other[key.as_str()],
    })
}

/// One change to a scenario file: set a field to a value (any, or one of the same type),
/// add a field (a real name from elsewhere, or a new one), or remove one.
#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, Value),
    /// The number or the string, whichever the place holds (a bool is flipped).
    Alike(usize, Value, Value),
    Add(usize, String, Value),
    Remove(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let names = prop_oneof![
        prop::sample::select(vec![
            "ttl_ms",
            "duration_ms",
            "count",
            "masters",
            "replicas",
            "target",
            "kind",
            "by_ms",
            "at_ms",
            "latency_ms",
            "rate",
            "groups",
            "expect",
            "budget",
            "events_per_s",
            "wall_s",
            "seeds",
            "watchdog",
            "fencing",
            "wait_replicas",
            "offset_ms",
            "drift_ppm",
            "retry",
            "per_client",
            "nodes",
        ])
        .prop_map(String::from),
        "[a-z_]{1,10}",
    ];
    prop_oneof![
        (any::<usize>(), any_json()).prop_map(|(at, value)| Mutation::Set(at, value)),
        (any::<usize>(), any_number(), any_string())
            .prop_map(|(at, number, string)| Mutation::Alike(at, number, string)),
        (any::<usize>(), names, any_json()).prop_map(|(at, name, value)| Mutation::Add(at, name, value)),
        any::<usize>().prop_map(Mutation::Remove),
    ]
}

/// Applies `mutation` to `scenario` (places chosen modulo the places there are; the
/// root is an object, which a second mutation may still find emptied).
fn apply(scenario: &mut Value, mutation: &Mutation) {
    let mut all = Vec::new();
    places(scenario, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return;
    }
    match mutation {
        Mutation::Set(at, value) => *at_path(scenario, &all[at % all.len()]) = value.clone(),
        Mutation::Alike(at, number, string) => {
            let place = at_path(scenario, &all[at % all.len()]);
            let alike = match &*place {
                Value::Number(_) => number.clone(),
                Value::String(_) => string.clone(),
                Value::Bool(b) => Value::Bool(!b),
                other => other.clone(),
            };
            *place = alike;
        }
        Mutation::Add(at, name, value) => {
            let mut objects: Vec<Vec<String>> = vec![Vec::new()];
            objects.extend(
                all.iter()
                    .filter(|path| at_path(&mut scenario.clone(), path).is_object())
                    .cloned(),
            );
            let path = &objects[at % objects.len()];
            at_path(scenario, path)[name.as_str()] = value.clone();
        }
        Mutation::Remove(at) => {
            let path = &all[at % all.len()];
            let (last, parent) = path.split_last().unwrap();
            match at_path(scenario, parent) {
                Value::Object(map) => {
                    map.remove(last);
                }
                Value::Array(items) => {
                    items.remove(last.parse::<usize>().unwrap());
                }
                _ => unreachable!("a place's parent holds it"),
            }
        }
    }
}

/// The longest simulated time a fuzz case runs, so the fuzz stays quick.
const FUZZ_RUN_MS: u64 = 5_000;

#[test]
fn scenario_files_mutated_anywhere_never_panic_the_loader_or_exceed_a_run_budget() {
    let base: Value = serde_json::from_str(
        r#"{
          "name": "fuzz",
          "duration_ms": 5000,
          "seeds": 3,
          "topology": { "kind": "redlock", "masters": 3, "replicas": 1 },
          "lock": { "algorithm": "redlock", "ttl_ms": 1000, "retry": { "count": 3, "delay_ms": 50, "jitter_ms": 50 } },
          "clients": { "count": 3, "work_ms": [10, 200], "think_ms": [10, 50] },
          "network": { "latency_ms": [1, 5] },
          "clocks": { "offset_ms": [-10, 10], "drift_ppm": [-100, 100] },
          "faults": [
            { "kind": "pause", "target": "holder", "at_ms": 1000, "duration_ms": 1500 },
            { "kind": "partition", "groups": [["redis-1"], ["redis-2", "redis-3"]], "at_ms": 2000, "duration_ms": 500 },
            { "kind": "clock_jump", "target": "minority", "at_ms": 2500, "by_ms": 300 },
            { "kind": "random", "rate_per_s": 1, "kinds": ["crash", "reset"], "duration_ms": [100, 300] }
          ],
          "checks": { "min_grants_after_fault": 0 },
          "expect": { "mutual_exclusion": "holds" }
        }"#,
    )
    .unwrap();
    assert!(locksim::scenario::load_str(Path::new("(base)"), &base.to_string()).is_ok());
    // The same cases on every run (PROPTEST_RNG_SEED picks others), so CI cannot flake.
    let rng_seed = match std::env::var("PROPTEST_RNG_SEED") {
        Ok(_) => Config::default().rng_seed,
        Err(_) => RngSeed::Fixed(18),
    };
    let mut runner = TestRunner::new(Config {
        cases: fuzz_cases(),
        failure_persistence: None,
        rng_seed,
        ..Config::default()
    });
    let strategy = prop::collection::vec(mutation(), 1..=2);
    let loaded = std::cell::Cell::new(0);
    runner
        .run(&strategy, |mutations| {
            let mut scenario = base.clone();
            for mutation in &mutations {
                apply(&mut scenario, mutation);
            }
            let text = scenario.to_string();
            let Ok(mut parsed) = locksim::scenario::load_str(Path::new("(fuzz)"), &text) else {
                return Ok(());
            };
            loaded.set(loaded.get() + 1);
            parsed.duration_ms = parsed.duration_ms.min(FUZZ_RUN_MS);
            let outcome = locksim::sweep::run_seed(&Arc::new(parsed), 0);
            prop_assert!(outcome.is_ok(), "{text}: {}", outcome.unwrap_err());
            Ok(())
        })
        .unwrap();
    assert!(
        loaded.get() > 0,
        "no mutated scenario loaded: the fuzz ran nothing"
    );
}
