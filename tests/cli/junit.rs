//! `--junit FILE` (issue 32, point 1): the verdicts as JUnit XML, read back with a real
//! XML parser — a testsuite per scenario file, a testcase per expectation, and a failure
//! that carries why, the replay command and the story.

use crate::support;

use support::cli::{locksim, scratch};

const GC_PAUSE: &str = "scenarios/single-node-gc-pause.json";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_writes_a_suite_per_file_and_a_failure_with_its_replay_and_story() {
    let dir = scratch("junit-run");
    // The shipped gc-pause, and the same scenario claiming mutual exclusion holds.
    let holds = dir.join("gc-pause-claims-safety.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(GC_PAUSE).unwrap()).unwrap();
    value["name"] = "gc-pause-claims-safety".into();
    value["expect"] = serde_json::json!({"mutual_exclusion": "holds", "deadlock": "holds"});
    std::fs::write(&holds, value.to_string()).unwrap();
    let junit = dir.join("junit.xml");
    let output = locksim(&[
        "run",
        GC_PAUSE,
        holds.to_str().unwrap(),
        "--seeds",
        "5",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("not XML: {e}\n{xml}"));
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("failures"), Some("1"), "{xml}");
    let suites: Vec<_> = root.children().filter(|n| n.has_tag_name("testsuite")).collect();
    assert_eq!(suites.len(), 2);
    assert_eq!(suites[0].attribute("name"), Some(GC_PAUSE));
    assert_eq!(suites[0].attribute("failures"), Some("0"));
    let cases = |suite: &roxmltree::Node| -> Vec<String> {
        suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|n| n.attribute("name").unwrap().to_string())
            .collect()
    };
    assert_eq!(cases(&suites[0]).len(), value_expectations(GC_PAUSE));
    assert!(cases(&suites[0]).contains(&"mutual_exclusion is violated".to_string()));
    assert_eq!(cases(&suites[1]), ["mutual_exclusion holds", "deadlock holds"]);
    let failure = suites[1]
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("the broken claim fails");
    assert_eq!(
        failure.parent().unwrap().attribute("name"),
        Some("mutual_exclusion holds")
    );
    assert!(
        failure
            .attribute("message")
            .unwrap()
            .starts_with("mutual_exclusion: expected to hold, but violated in 5 of 5"),
        "{xml}"
    );
    let body = failure.text().unwrap();
    assert!(body.contains("replay: locksim replay "), "{body}");
    assert!(body.contains("Story of the mutual_exclusion violation"), "{body}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// How many expectations a scenario file sets.
fn value_expectations(file: &str) -> usize {
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    value["expect"].as_object().unwrap().len()
}

#[test]
fn check_writes_a_case_per_property() {
    let dir = scratch("junit-check");
    let junit = dir.join("check.xml");
    let output = locksim(&[
        "check",
        GC_PAUSE,
        "--cases",
        "3",
        "--shrink-runs",
        "0",
        "--out",
        dir.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = document
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), value_expectations(GC_PAUSE), "{xml}");
    let failed = document
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    assert_eq!(
        output.status.code(),
        Some(if failed == 0 { 0 } else { 1 }),
        "{xml}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
