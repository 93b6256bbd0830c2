//! `locksim check`: a template searched case by case. A property that holds passes, one
//! that breaks yields the first counterexample (the same whatever the jobs), written and
//! shrunk; a property expected to be violated fails when no case violates it; a bad
//! template is an error naming the field, exit 2.

use crate::support;

use std::path::Path;
use std::process::Output;

use locksim::search::check::check_template;
use serde_json::{Value, json};
use support::cli::locksim;

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

fn template(expect: Value, pause_ms: Value) -> Value {
    json!({
        "name": "t",
        "duration_ms": 12000,
        "topology": { "kind": "single" },
        "lock": { "algorithm": "lua-release", "ttl_ms": { "any": [1000, 2000] } },
        "clients": { "count": 2, "work_ms": [50, 200] },
        "faults": [ { "kind": "pause", "target": "holder", "at_ms": { "any": [1000, 5000] }, "duration_ms": pause_ms } ],
        "expect": expect
    })
}

#[test]
fn a_broken_property_gives_the_same_first_counterexample_for_any_jobs() {
    let template = template(json!({"mutual_exclusion": "holds"}), json!({"any": [10, 5000]}));
    let file = Path::new("(template)");
    let one = check_template(&template, file, 0..40, 1, |_| {}).unwrap();
    let three = check_template(&template, file, 0..40, 3, |_| {}).unwrap();
    let (property, case) = one.counterexample().expect("long pauses break the lock");
    assert_eq!(property.checker, "mutual_exclusion");
    assert!(!one.passed());
    assert_eq!(three.counterexample().unwrap().1.number, case.number);
    assert_eq!(three.counterexample().unwrap().1.scenario, case.scenario);
    // The drawn pause of the counterexample is one the TTL cannot cover.
    let pause = case.scenario["faults"][0]["duration_ms"].as_u64().unwrap();
    let ttl = case.scenario["lock"]["ttl_ms"].as_u64().unwrap();
    assert!(pause > ttl / 2, "pause {pause} ms, TTL {ttl} ms");
}

#[test]
fn a_property_that_holds_passes_over_every_case() {
    // Pauses far shorter than any TTL drawn, by a holder that stops at its validity.
    let template = template(json!({"mutual_exclusion": "holds"}), json!({"any": [10, 100]}));
    let report = check_template(&template, Path::new("(template)"), 0..24, 2, |_| {}).unwrap();
    assert_eq!(report.cases.len(), 24);
    assert!(report.exercised() > 0);
    assert!(report.passed(), "{:?}", report.properties);
}

#[test]
fn an_expected_violation_that_never_comes_fails_the_search() {
    let template = template(json!({"mutual_exclusion": "violated"}), json!({"any": [10, 100]}));
    let report = check_template(&template, Path::new("(template)"), 0..8, 2, |_| {}).unwrap();
    assert!(!report.passed());
    let found = template_with_long_pauses();
    let report = check_template(&found, Path::new("(template)"), 0..100, 2, |_| {}).unwrap();
    assert!(report.passed());
    assert!(
        report.cases.len() < 100,
        "the search stops once the violation is found"
    );
}

fn template_with_long_pauses() -> Value {
    template(
        json!({"mutual_exclusion": "violated"}),
        json!({"any": [3000, 6000]}),
    )
}

#[test]
fn the_cli_writes_shrinks_and_tells_a_counterexample() {
    let dir = std::env::temp_dir().join(format!("locksim-check-{}", std::process::id()));
    let output = locksim(&[
        "check",
        "scenarios/templates/redlock-any-pause.json",
        "--cases",
        "20",
        "--shrink-runs",
        "60",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("mutual_exclusion: expected to hold, VIOLATED in case"),
        "{said}"
    );
    assert!(said.contains("However, mutual_exclusion is broken"), "{said}");
    assert!(said.contains("gets the lock from redis-"), "{said}");
    let written: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 2, "the case and its shrunk form: {written:?}");
    for file in &written {
        locksim::scenario::load(file).expect("a written case is a valid scenario");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_shipped_fenced_template_holds() {
    let output = locksim(&[
        "check",
        "scenarios/templates/redlock-nemesis-fenced.json",
        "--cases",
        "16",
    ]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(said.contains("resource_safety: holds in every case"), "{said}");
}

#[test]
fn a_bad_range_is_an_error_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("locksim-check-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.json");
    let bad = template(json!({"mutual_exclusion": "holds"}), json!({"any": [5000, 10]}));
    std::fs::write(&file, bad.to_string()).unwrap();
    let output = locksim(&["check", file.to_str().unwrap(), "--cases", "4"]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("faults[0].duration_ms"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    // A range that draws a value the scenario format refuses names the case and field.
    let invalid = template(json!({"mutual_exclusion": "holds"}), json!({"any": [-50, -10]}));
    std::fs::write(&file, invalid.to_string()).unwrap();
    let output = locksim(&["check", file.to_str().unwrap(), "--cases", "4"]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("case 0 drew an invalid scenario"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}
