//! `locksim init`: for every topology the starter set it writes runs as written, from
//! another directory, and meets every expectation; the expectations say what the
//! published analyses say of those setups; it refuses to overwrite, and bad flags exit 2.
//!
//! Kept cheap for the debug build: a 1 s TTL (30 s of simulated time a file) and 2 seeds.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::cli::{locksim, scratch};

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// `locksim init DIR --ttl 1s --seeds 2 FLAGS…`, which must succeed.
fn init(dir: &Path, flags: &[&str]) {
    let dir = dir.to_str().unwrap();
    let out = locksim(&[&["init", dir, "--ttl", "1s", "--seeds", "2"], flags].concat());
    assert_eq!(out.status.code(), Some(0), "init {flags:?}: {}", text(&out));
}

/// The `expect` of `file` in `dir`.
fn expect_of(dir: &Path, file: &str) -> Value {
    let scenario: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
    scenario["expect"].clone()
}

#[test]
fn every_topology_s_starter_set_runs_as_written_and_meets_its_expectations() {
    let root = scratch("topologies");
    for topology in ["single", "replicated", "sentinel", "redlock"] {
        let dir = root.join(topology);
        init(&dir, &["--topology", topology]);
        for file in [
            "baseline.json",
            "pause-holder.json",
            "README.md",
            "scenario.schema.json",
        ] {
            assert!(dir.join(file).exists(), "{topology}: no {file}");
        }
        // Run from elsewhere, by its absolute path: nothing in the files points back.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_locksim"))
            .current_dir(std::env::temp_dir())
            .args(["run", dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{topology}: {}", text(&out));
        let baseline = expect_of(&dir, "baseline.json");
        assert_eq!(baseline["mutual_exclusion"], "holds", "{topology}: {baseline}");
        let pause = expect_of(&dir, "pause-holder.json");
        assert_eq!(
            pause["mutual_exclusion"], "violated",
            "{topology}: a pause of three TTLs breaks every auto-expiring lock: {pause}"
        );
        if topology == "replicated" {
            let failover = expect_of(&dir, "failover.json");
            assert_eq!(
                failover["mutual_exclusion"], "violated",
                "the replica promoted without the key grants it again: {failover}"
            );
        }
        if topology == "redlock" {
            let jump = expect_of(&dir, "clock-jump.json");
            assert_eq!(
                jump["mutual_exclusion"], "holds",
                "one master of five losing the key leaves the majority: {jump}"
            );
        } else {
            let jump = expect_of(&dir, "clock-jump.json");
            assert_eq!(jump["mutual_exclusion"], "violated", "{topology}: {jump}");
        }
    }
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn fencing_tokens_from_a_counter_keep_the_data_safe_under_the_pause() {
    let dir = scratch("fenced");
    init(&dir, &["--fencing", "counter"]);
    let pause = expect_of(&dir, "pause-holder.json");
    assert_eq!(pause["mutual_exclusion"], "violated", "{pause}");
    assert_eq!(pause["resource_safety"], "holds", "{pause}");
    assert_eq!(pause["stale_write"], "holds", "{pause}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn init_refuses_to_overwrite_and_bad_flags_exit_2() {
    let dir = scratch("overwrite");
    std::fs::write(dir.join("baseline.json"), "mine").unwrap();
    let out = locksim(&["init", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("baseline.json"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("baseline.json")).unwrap(),
        "mine"
    );
    let scratch_dir = dir.join("new");
    let scratch_dir = scratch_dir.to_str().unwrap();
    for (flags, says) in [
        (&["--topology", "cluster"][..], "expected one of"),
        (&["--ttl", "10 parsecs"][..], "unknown unit"),
        (&["--ttl", "10ms"][..], "out of range"),
        (&["--masters", "3"][..], "--masters is for --topology redlock"),
        (
            &["--topology", "redlock", "--profile", "redis-py"][..],
            "--profile",
        ),
        (&["--profile", "jedis"][..], "--profile"),
        (&["--fencing", "tokens"][..], "--fencing"),
    ] {
        let out = locksim(&[&["init", scratch_dir], flags].concat());
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{flags:?}: {}", text(&out));
        assert!(!Path::new(scratch_dir).exists(), "{flags:?} wrote files");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
