//! `shrink`: from a violating seed, the smallest scenario that still breaks the same
//! checker, written as a file ready for scenarios/regressions/, with its replay command.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use locksim::search::shrink::{Budget, Deployment, Progress, ShrinkError, shrink_within};

use super::{EXIT_UNMET, emit, invalid, write_json};

/// Shrinks `file`'s run on `seed`; writes the result to `out` (default: beside the input,
/// `<stem>-shrunk-seed-<seed>.json`).
pub fn shrink_file(
    file: &Path,
    seed: u64,
    checker: Option<&str>,
    out: Option<PathBuf>,
    max_runs: u64,
    max_seconds: Option<u64>,
    simulated_client: bool,
) -> ExitCode {
    if let Some(name) = checker
        && !locksim::check::NAMES.contains(&name)
    {
        return invalid(format!(
            "--checker `{name}`: no such checker{} (checkers: {})",
            locksim::scenario::limits::did_you_mean(name, locksim::check::NAMES),
            locksim::check::NAMES.join(", ")
        ));
    }
    // Load through the validator first, so a bad file gets the usual one-line error.
    match locksim::scenario::load(file) {
        Err(e) => return invalid(e),
        Ok(scenario) => {
            if let Err(e) = locksim::report::mode::simulation_refused(
                file,
                scenario.clients.command.as_deref(),
                simulated_client,
            ) {
                return invalid(e);
            }
        }
    }
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => return invalid(format!("{}: {e}", file.display())),
    };
    let scenario: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => return invalid(format!("{}: {e}", file.display())),
    };
    let budget = Budget {
        max_runs,
        max_wall: max_seconds.map(Duration::from_secs),
    };
    let tty = std::io::stderr().is_terminal();
    let mut show = |progress: &Progress| {
        if tty {
            eprint!(
                "\r\x1b[Kshrinking: {} — {}/{} runs, {} fault(s)",
                progress.pass, progress.runs, progress.max_runs, progress.faults
            );
            let _ = std::io::stderr().flush();
        }
    };
    let shrunk = shrink_within(&scenario, seed, checker, budget, Deployment::MayShrink, &mut show);
    if tty {
        eprintln!();
    }
    let shrunk = match shrunk {
        Ok(shrunk) => shrunk,
        Err(e @ ShrinkError::Invalid(_)) => return invalid(e),
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(EXIT_UNMET);
        }
    };
    let out = out.unwrap_or_else(|| {
        let stem = file
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        file.with_file_name(format!("{stem}-shrunk-seed-{seed}.json"))
    });
    if let Err(e) = write_json(&out, &shrunk.scenario) {
        return invalid(e);
    }
    emit(format_args!(
        "shrinking {} seed {seed}: {}",
        file.display(),
        shrunk.checker
    ));
    emit(format_args!("  kept throughout: {}", shrunk.mechanism));
    for step in &shrunk.steps {
        emit(format_args!("  {step}"));
    }
    let faults = shrunk.scenario["faults"].as_array().map_or(0, Vec::len);
    emit(format_args!(
        "minimal: {faults} fault(s), {} runs spent; violates {} in {} of seeds 0–{}",
        shrunk.runs,
        shrunk.checker,
        shrunk.neighbours.0,
        shrunk.neighbours.1 - 1
    ));
    for line in shrunk.story() {
        emit(line);
    }
    emit(format_args!("written: {}", out.display()));
    emit(format_args!(
        "replay: locksim replay {} --seed {seed}",
        out.display()
    ));
    ExitCode::SUCCESS
}
