//! `locksim check`: a property-based search from a scenario template, for users without
//! Rust.
//!
//! Each case draws a concrete scenario from the template ([`template`]) with its own seed
//! and runs it once. The template's `expect` states the properties: a checker expected
//! to *hold* must hold in every case (the first case that breaks it is the counterexample,
//! as proptest reports the first failing input); a checker expected to be *violated* must
//! be violated by some case (the search must be able to fail). Cases run in batches and
//! the search stops after the batch that settles it, so the first counterexample is the
//! same whatever the number of jobs.
//!
//! [`template`]: super::template

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::template::{instantiate, validate};
use crate::scenario::{Expectation, Scenario, load_str};
use crate::sweep::{RunSummary, in_parallel, run_and_check};

/// One drawn case and what its run found.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case number: the seed of its draw and of its run.
    pub number: u64,
    /// The concrete scenario, as a file writes it.
    pub scenario: Value,
    /// The run's verdicts, or the message of the failure that ended it.
    pub outcome: Result<RunSummary, String>,
    /// Whether the run contended for the lock after every fault (see `check::evidence`).
    pub exercised: bool,
}

impl Case {
    /// Whether this case's run violated `checker`.
    pub fn violates(&self, checker: &str) -> bool {
        self.outcome.as_ref().is_ok_and(|summary| {
            summary
                .verdicts
                .iter()
                .any(|v| v.checker == checker && v.violation.is_some())
        })
    }

    /// What `checker` said of this case's run, if it fired.
    pub fn violation(&self, checker: &str) -> Option<&str> {
        let summary = self.outcome.as_ref().ok()?;
        let verdict = summary.verdicts.iter().find(|v| v.checker == checker)?;
        verdict.violation.as_deref()
    }
}

/// One property of the template: a checker and what it should do in the cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    pub checker: &'static str,
    pub expectation: Expectation,
    /// The cases that violated the checker, in order.
    pub violating: Vec<u64>,
}

impl Property {
    /// Whether the cases run so far satisfy the property.
    pub fn met(&self) -> bool {
        match self.expectation {
            Expectation::Holds => self.violating.is_empty(),
            Expectation::Violated => !self.violating.is_empty(),
        }
    }
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The cases run, in order (the search may stop before the last one asked for).
    pub cases: Vec<Case>,
    pub properties: Vec<Property>,
}

impl CheckReport {
    /// Cases that contended for the lock after every fault.
    pub fn exercised(&self) -> usize {
        self.cases.iter().filter(|case| case.exercised).count()
    }

    /// Cases whose run failed inside the simulator, with the message.
    pub fn errors(&self) -> Vec<(u64, &str)> {
        self.cases
            .iter()
            .filter_map(|case| case.outcome.as_ref().err().map(|e| (case.number, e.as_str())))
            .collect()
    }

    /// Every property met, no run failed, and, if any property says *holds*, some case
    /// exercised the lock (a "holds" over cases that never contended shows nothing).
    pub fn passed(&self) -> bool {
        let needs_exercise = self
            .properties
            .iter()
            .any(|p| p.expectation == Expectation::Holds);
        self.properties.iter().all(Property::met)
            && self.errors().is_empty()
            && (!needs_exercise || self.exercised() > 0)
    }

    /// The first case that broke a property expected to hold, with that property.
    pub fn counterexample(&self) -> Option<(&Property, &Case)> {
        self.properties
            .iter()
            .filter(|p| p.expectation == Expectation::Holds)
            .filter_map(|p| Some((p, *p.violating.first()?)))
            .min_by_key(|(_, case)| *case)
            .and_then(|(p, number)| Some((p, self.cases.iter().find(|c| c.number == number)?)))
    }

    /// Whether nothing more can change the outcome: a property expected to hold broke,
    /// or every property is one expected to be violated and each has been.
    fn settled(&self) -> bool {
        self.counterexample().is_some()
            || (!self.properties.is_empty()
                && self
                    .properties
                    .iter()
                    .all(|p| p.expectation == Expectation::Violated && p.met()))
    }
}

/// Cases drawn and run per batch, per job: the search looks at the outcome between batches.
const CASES_PER_JOB_AND_BATCH: u64 = 4;

/// Draws and runs the cases `cases` of `template` (the JSON of `file`), up to `jobs` at a
/// time, stopping after the batch that settles every property. An invalid template, or a
/// case that draws an invalid scenario, is an error naming the field (and the case).
pub fn check_template(
    template: &Value,
    file: &Path,
    cases: Range<u64>,
    jobs: usize,
    mut progress: impl FnMut(&CheckReport),
) -> Result<CheckReport, String> {
    validate(template).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut report = CheckReport {
        cases: Vec::new(),
        properties: Vec::new(),
    };
    let batch = CASES_PER_JOB_AND_BATCH * jobs.max(1) as u64;
    let mut next = cases.start;
    while next < cases.end && !report.settled() {
        let numbers = next..(next + batch).min(cases.end);
        next = numbers.end;
        let drawn = numbers
            .map(|number| draw_case(template, file, number))
            .collect::<Result<Vec<_>, _>>()?;
        if report.cases.is_empty() {
            report.properties = drawn[0]
                .2
                .expect
                .entries()
                .into_iter()
                .map(|(checker, expectation)| Property {
                    checker,
                    expectation,
                    violating: Vec::new(),
                })
                .collect();
        }
        let outcomes = in_parallel(0..drawn.len() as u64, jobs, |index| {
            let (number, _, parsed) = &drawn[index as usize];
            let settings = parsed.check_settings();
            let outcome = run_and_check(parsed, *number, &settings);
            let exercised = outcome.as_ref().is_ok_and(|summary| {
                summary
                    .evidence
                    .exercised(settings.min_grants_after_fault)
                    .is_ok()
            });
            (outcome, exercised)
        });
        for ((number, scenario, _), (outcome, exercised)) in drawn.into_iter().zip(outcomes) {
            let case = Case {
                number,
                scenario,
                outcome,
                exercised,
            };
            for property in &mut report.properties {
                if case.violates(property.checker) {
                    property.violating.push(number);
                }
            }
            report.cases.push(case);
        }
        progress(&report);
    }
    Ok(report)
}

/// Case `number` of `template`: the drawn scenario, as JSON and validated.
fn draw_case(template: &Value, file: &Path, number: u64) -> Result<(u64, Value, Arc<Scenario>), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(number);
    let scenario = instantiate(template, &mut rng).map_err(|e| format!("{}: {e}", file.display()))?;
    let parsed = load_str(file, &scenario.to_string())
        .map_err(|e| format!("case {number} drew an invalid scenario: {e}"))?;
    Ok((number, scenario, Arc::new(parsed)))
}
