//! `shrink`: from a violating seed, the smallest scenario that still breaks the same
//! checker, written as a file ready for scenarios/regressions/, with its replay command.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use locksim::search::shrink::{Budget, Deployment, MIN_SHRINK_RUNS, Progress, ShrinkError, shrink_within};

use super::{EXIT_UNMET, emit, invalid, write_json};

/// What `shrink` is asked: a violating seed to shrink, and how much to spend.
#[derive(clap::Args)]
pub struct ShrinkArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// The violating seed.
    #[arg(long)]
    pub seed: u64,
    /// The checker to keep violating (default: the first one the seed violates).
    #[arg(long)]
    pub checker: Option<String>,
    /// Where to write the minimal scenario (default: beside FILE).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The most simulated runs to spend, all told (at least 22: the search spends what
    /// the trial of its result on 20 other seeds and the replay of its story leave).
    #[arg(long, default_value_t = 400, value_parser = max_runs)]
    pub max_runs: u64,
    /// The most host time to spend, in seconds (the result then depends on the
    /// machine's speed; the run budget alone is deterministic).
    #[arg(long)]
    pub max_seconds: Option<u64>,
    /// Simulate locksim's own lock client even where a scenario names its own clients'
    /// command (`clients.command`, which only `--live` runs): refused otherwise, since its
    /// verdict would say nothing of that command's code.
    #[arg(long)]
    pub simulated_client: bool,
}

/// `shrink --max-runs`: enough for a shrink.
fn max_runs(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(runs) if runs >= MIN_SHRINK_RUNS => Ok(runs),
        _ => Err(format!(
            "at least {MIN_SHRINK_RUNS} runs (the first run, 20 other seeds and the story's replay)"
        )),
    }
}

/// `check --shrink-runs`: 0 (do not shrink), or enough for a shrink.
pub fn shrink_runs(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(runs) if runs == 0 || runs >= MIN_SHRINK_RUNS => Ok(runs),
        _ => Err(format!("0 (do not shrink) or at least {MIN_SHRINK_RUNS} runs")),
    }
}

/// `shrink`, from its arguments.
pub fn shrink(args: ShrinkArgs) -> ExitCode {
    shrink_file(
        &args.file,
        args.seed,
        args.checker.as_deref(),
        args.out,
        args.max_runs,
        args.max_seconds,
        args.simulated_client,
    )
}

/// Shrinks `file`'s run on `seed`; writes the result to `out` (default: beside the input,
/// `<stem>-shrunk-seed-<seed>.json`).
fn shrink_file(
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
