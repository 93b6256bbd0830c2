//! Measuring the starter set of `locksim init` (scenario/starter.rs builds its files):
//! each file runs over its own seeds, as `locksim run` will run it, and its `expect`
//! says what they showed, so every expectation is true of the user's setup as written
//! (profile, fencing and masters included) and `locksim run DIR` meets it, seed for seed.
//!
//! A checker is claimed `violated` only when some seed violated it and the no-fault
//! control does not (the file's fault is what breaks the lock), and `holds` only when
//! no seed violated it and every seed took the lock again after the fault; anything
//! else is left unclaimed, and the description says why.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{control, sweeps};
use crate::report::control::Attribution;
use crate::report::{Finding, ScenarioReport};
use crate::scenario::starter::StarterFile;
use crate::scenario::{Expectation, load_str};

/// `file` with its `expect` and `description` written from its seeds, run on `jobs`
/// threads; an error when a seed's run failed (a harness error, with its seed).
pub fn measure(file: &StarterFile, jobs: usize) -> Result<Value, String> {
    let mut scenario = file.scenario.clone();
    // Every checker is first expected violated, so the control runs for each that breaks.
    let provisional: Map<String, Value> = file
        .checkers
        .iter()
        .map(|checker| (checker.to_string(), json!("violated")))
        .collect();
    scenario["expect"] = Value::Object(provisional);
    let path = Path::new(&file.file_name);
    let loaded = load_str(path, &scenario.to_string()).map_err(|e| e.to_string())?;
    let seeds: Vec<u64> = (0..loaded.seeds).collect();
    let loaded = Arc::new(loaded);
    let mut report = sweeps::sweep_seeds(path, &loaded, &seeds, jobs, &|_| {});
    control::judge(&mut report, &loaded, jobs);
    if let Some((seed, message)) = report.errors.first() {
        return Err(format!("{}: seed {seed}: {message}", file.file_name));
    }
    let mut expect = Map::new();
    let mut findings = Vec::new();
    for &checker in &file.checkers {
        let (claim, words) = judged(&report, checker);
        if let Some(claim) = claim {
            let word = match claim {
                Expectation::Violated => "violated",
                Expectation::Holds => "holds",
            };
            expect.insert(checker.to_string(), json!(word));
        }
        findings.push(format!("{} {words}", checker.replace('_', " ")));
    }
    scenario["expect"] = Value::Object(expect);
    scenario["description"] = json!(format!(
        "{} {} Measured by `locksim init` over seeds 0-{}: {}.",
        file.tests,
        file.violation_means,
        seeds.len().saturating_sub(1),
        findings.join("; ")
    ));
    Ok(scenario)
}

/// What the seeds of `report` let a file claim of `checker`, and the words saying what
/// they showed.
fn judged(report: &ScenarioReport, checker: &str) -> (Option<Expectation>, String) {
    let rate = report.rate(checker);
    let without = report.control.as_ref().map(|control| control.rate(checker));
    match report.finding(checker) {
        Finding::Violated => {
            let control = without.map_or(String::new(), |r| {
                format!(" ({} of {} without the fault)", r.violating, r.seeds)
            });
            let counted = format!("violated in {} of {} seeds{control}", rate.violating, rate.seeds);
            match report.attribution(checker) {
                Some(Attribution::PresentWithoutFaults) => (
                    None,
                    format!("{counted}: the workload breaks it without the fault too, so nothing is claimed"),
                ),
                _ => (Some(Expectation::Violated), counted),
            }
        }
        Finding::Holds => (Some(Expectation::Holds), "holds".into()),
        Finding::NotExercised => (
            None,
            "not claimed: some seeds did not take the lock again after the fault".into(),
        ),
        Finding::NotJudged => (None, "not judged".into()),
    }
}
