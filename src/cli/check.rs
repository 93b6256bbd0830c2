//! `check`: a property-based search from a scenario template; prints each property's
//! outcome and, for a counterexample, writes the case, shrinks it and tells its story.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use locksim::report::junit::{self, Suite};
use locksim::report::mode::simulation_refused;
use locksim::report::rate::Rate;
use locksim::scenario::Expectation;
use locksim::search::check::{Case, CheckReport, Property, check_template};
use locksim::search::shrink::shrink;
use locksim::search::template::has_ranges;
use serde_json::{Value, json};

use super::output::progress_bar;
use super::{emit, invalid, verdict_exit, write_json};

/// How `check` runs.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The scenario template (a scenario file whose values may be ranges).
    pub file: PathBuf,
    /// Cases to draw and run.
    #[arg(long, default_value_t = 100, value_parser = super::at_least_one::<u64>)]
    pub cases: u64,
    /// The first case's number (its draw and run seed); cases are numbered on from it.
    #[arg(long, default_value_t = 0)]
    pub first_case: u64,
    /// Cases run in parallel (default: the number of cores).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    pub jobs: Option<usize>,
    /// Where to write a counterexample (default: beside FILE).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Simulated runs to spend shrinking a counterexample, all told (0: do not shrink;
    /// else at least 22, as `shrink --max-runs`).
    #[arg(long, default_value_t = 400, value_parser = super::shrink::shrink_runs)]
    pub shrink_runs: u64,
    /// Simulate locksim's own lock client even where the template names its own
    /// clients' command (`clients.command`): refused otherwise.
    #[arg(long)]
    pub simulated_client: bool,
    /// Also write the result as JUnit XML to this file: a testcase per property, the
    /// counterexample's replay command and story on the one it broke.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// Runs the search and reports it; exit 0 when every property is met.
pub fn check(args: CheckArgs) -> ExitCode {
    let template: Value = match std::fs::read_to_string(&args.file)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(template) => template,
        Err(e) => return invalid(format!("{}: {e}", args.file.display())),
    };
    let command: Option<Vec<String>> = template
        .pointer("/clients/command")
        .and_then(|command| serde_json::from_value(command.clone()).ok());
    if let Err(e) = simulation_refused(&args.file, command.as_deref(), args.simulated_client) {
        return invalid(e);
    }
    let progress = progress_bar(args.cases, "cases");
    let cases = args.first_case..args.first_case.saturating_add(args.cases);
    let jobs = super::jobs_or_all_cores(args.jobs);
    let report = check_template(&template, &args.file, cases, jobs, |so_far| {
        if let Some(bar) = &progress {
            bar.set_position(so_far.cases.len() as u64);
        }
    });
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let report = match report {
        Ok(report) => report,
        Err(e) => return invalid(e),
    };
    let ranges = if has_ranges(&template) {
        "a template"
    } else {
        "a plain scenario: only the seed varies"
    };
    emit(format_args!(
        "checked {} ({ranges}): {} case(s) run, {} exercised the lock after every fault",
        args.file.display(),
        report.cases.len(),
        report.exercised()
    ));
    for property in &report.properties {
        emit(property_line(property, &report));
    }
    for (case, error) in report.errors() {
        emit(format_args!(
            "harness error: case {case}: {error}; replay: locksim check {} --first-case {case} --cases 1",
            args.file.display()
        ));
    }
    if report.properties.is_empty() {
        emit("unchecked: the template has no `expect`, so nothing was checked");
    }
    let story = match report.counterexample() {
        Some((property, case)) => match explain(&args, property, case) {
            Ok(lines) => Some((property.checker, lines)),
            Err(e) => return invalid(e),
        },
        None => None,
    };
    for line in story.iter().flat_map(|(_, lines)| lines) {
        emit(line);
    }
    if let Some(path) = &args.junit {
        let suite = suite(&args.file, &template, &report, story);
        if let Err(e) = std::fs::write(path, junit::render(&[suite])) {
            return invalid(format!("--junit {}: {e}", path.display()));
        }
    }
    verdict_exit(
        !report.errors().is_empty(),
        report.passed() && !report.properties.is_empty(),
    )
}

/// The check as a JUnit suite: a case per property, the counterexample's story on the
/// one it broke, a harness error on every case when a run failed.
fn suite(file: &Path, template: &Value, report: &CheckReport, story: Option<(&str, Vec<String>)>) -> Suite {
    let errors = report.errors();
    let mut cases: Vec<junit::Case> = report
        .properties
        .iter()
        .map(|property| {
            let outcome = match (errors.first(), property.met()) {
                (Some((case, error)), _) => junit::Outcome::Error {
                    message: format!(
                        "{} case(s) failed inside the simulator; first, case {case}: {error}",
                        errors.len()
                    ),
                    detail: Vec::new(),
                },
                (None, true) if property.expectation == Expectation::Holds && report.exercised() == 0 => {
                    junit::Outcome::Failed {
                        message: property_line(property, report),
                        detail: Vec::new(),
                    }
                }
                (None, true) => junit::Outcome::Passed,
                (None, false) => junit::Outcome::Failed {
                    message: property_line(property, report),
                    detail: story
                        .as_ref()
                        .filter(|(checker, _)| *checker == property.checker)
                        .map(|(_, lines)| lines.clone())
                        .unwrap_or_default(),
                },
            };
            junit::Case {
                name: junit::case_name(property.checker, property.expectation),
                outcome,
            }
        })
        .collect();
    if report.properties.is_empty() {
        cases.push(junit::Case {
            name: "expect".into(),
            outcome: junit::Outcome::Failed {
                message: "unchecked: the template has no `expect`, so nothing was checked".into(),
                detail: Vec::new(),
            },
        });
    }
    Suite {
        name: template["name"].as_str().unwrap_or_default().to_string(),
        file: file.display().to_string(),
        time_s: 0.0,
        cases,
        system_out: Vec::new(),
    }
}

/// One line per property: met or not, with the cases behind it.
fn property_line(property: &Property, report: &CheckReport) -> String {
    let run = report.cases.len() as u64;
    let violating = property.violating.len() as u64;
    let rate = Rate {
        violating,
        seeds: run,
    }
    .sentence();
    match (property.expectation, property.violating.first()) {
        (Expectation::Holds, None) if report.exercised() == 0 => format!(
            "{}: expected to hold; not exercised: no case contended for the lock after its faults",
            property.checker
        ),
        (Expectation::Holds, None) => format!(
            "{}: holds in every case; violating cases: {rate}",
            property.checker
        ),
        (Expectation::Holds, Some(first)) => format!(
            "{}: expected to hold, VIOLATED in case {first}; violating cases: {rate}",
            property.checker
        ),
        (Expectation::Violated, Some(first)) => format!(
            "{}: violated, as expected: first in case {first}, after {} case(s); violating cases: {rate}",
            property.checker,
            first - report.cases[0].number + 1
        ),
        (Expectation::Violated, None) => format!(
            "{}: expected to be violated, but no case of {run} violated it",
            property.checker
        ),
    }
}

/// Writes the counterexample case and shrinks it; its story and replay commands, as lines
/// to print.
fn explain(args: &CheckArgs, property: &Property, case: &Case) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    let stem = args
        .file
        .file_stem()
        .map_or("template".into(), |s| s.to_string_lossy().into_owned());
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| args.file.parent().map_or(PathBuf::new(), Path::to_path_buf));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut scenario = case.scenario.clone();
    if let Some(name) = scenario["name"].as_str() {
        scenario["name"] = json!(format!("{name}-case-{}", case.number));
    }
    let case_file = dir.join(format!("{stem}-case-{}.json", case.number));
    write_json(&case_file, &scenario)?;
    lines.push(format!(
        "counterexample: case {} written to {}",
        case.number,
        case_file.display()
    ));
    lines.push(format!(
        "replay: locksim replay {} --seed {} --story",
        case_file.display(),
        case.number
    ));
    let violation = case.violation(property.checker).unwrap_or_default();
    if args.shrink_runs == 0 {
        lines.push(format!("{}: {violation}", property.checker));
        return Ok(lines);
    }
    let shrunk = shrink(&scenario, case.number, Some(property.checker), args.shrink_runs)
        .map_err(|e| format!("{}: {e}", case_file.display()))?;
    let shrunk_file = dir.join(format!("{stem}-case-{}-shrunk.json", case.number));
    write_json(&shrunk_file, &shrunk.scenario)?;
    lines.extend(shrunk.steps.iter().map(|step| format!("  shrinking: {step}")));
    lines.extend(shrunk.story());
    lines.push(format!(
        "minimal: {} (violates {} in {} of seeds 0–{}); replay: locksim replay {} --seed {} --story",
        shrunk_file.display(),
        shrunk.checker,
        shrunk.neighbours.0,
        shrunk.neighbours.1 - 1,
        shrunk_file.display(),
        case.number
    ));
    Ok(lines)
}
