//! `run` and `replay`: scenarios on the simulated cluster.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use locksim::campaign::{self, sweeps};
use locksim::report::figures::timeline::Timeline;
use locksim::report::mode::{RunMode, simulation_refused};
use locksim::report::{ScenarioReport, harness_error};
use locksim::scenario::{self, Scenario};
use locksim::sweep::{SeedRun, Shard, run_seed, run_seed_keeping_wire};

use super::account::{history_lines, story_lines, trace_lines, verdict_lines, verdicts};
use super::{
    EXIT_HARNESS, EXIT_INVALID, EXIT_UNMET, emit, emit_report, invalid, load_reporting, verdict_exit,
};

/// What `run` is asked: run scenarios over many seeds and print the verdict table.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Scenario files, or directories of them (their *.json files).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Seeds per scenario (default: the scenario's own `seeds`).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    pub seed_start: u64,
    /// Also write one JSON object per scenario (JSON lines) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Seeds run in parallel (default: the number of cores).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    pub jobs: Option<usize>,
    /// Run only shard K of N of each scenario's seeds (every Nth seed), to split a sweep
    /// across machines; `locksim merge` combines the shards' seed logs.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Write one JSON line per seed to this file as each seed finishes.
    #[arg(long, value_name = "FILE")]
    pub seed_log: Option<PathBuf>,
    /// Run live: one real process per client (the scenario's `clients.command`, else
    /// `locksim worker`) in real time, against Redis nodes on loopback ports, with the
    /// faults struck through TCP proxies, signals and the nodes' clocks; judged as
    /// simulated seeds are. A live seed is not bit-exact. Seeds run one at a time unless
    /// --jobs says otherwise.
    #[arg(long, conflicts_with_all = ["shard", "seed_log"])]
    pub live: bool,
    /// With --live: real `redis-server` processes (on free ports, each in a scratch
    /// directory) instead of locksim's own nodes.
    #[arg(long, requires = "live")]
    pub redis_server: bool,
    /// Simulate locksim's own lock client even where a scenario names its own clients'
    /// command (`clients.command`, which only `--live` runs): refused otherwise, since its
    /// verdict would say nothing of that command's code.
    #[arg(long, conflicts_with = "live")]
    pub simulated_client: bool,
}

/// Runs every scenario of `paths` over its seeds (or a shard's share of them), prints the
/// verdict table, writes JSON. A shard's expectations are judged on its share only, so a
/// sharded run fails only when a run failed; `locksim merge` judges the whole.
/// (`--live` runs go to [`run_live`](super::live::run_live) instead; `main` decides.)
pub fn run(args: RunArgs) -> ExitCode {
    let RunArgs {
        paths,
        seeds,
        seed_start,
        json,
        jobs,
        shard,
        seed_log,
        simulated_client,
        ..
    } = args;
    // Every bad file is reported, and the good ones still run: the exit code says 2 at
    // the end.
    let (scenarios, refused) = match load_reporting(&paths) {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
    for (file, scenario) in &scenarios {
        if let Err(e) = simulation_refused(file, scenario.clients.command.as_deref(), simulated_client) {
            return invalid(e);
        }
    }
    if seeds == Some(0) {
        return invalid("--seeds must be at least 1");
    }
    let mut json_out = match json.as_ref().map(std::fs::File::create).transpose() {
        Ok(file) => file,
        Err(e) => return invalid(format!("{}: {e}", json.unwrap_or_default().display())),
    };
    let seed_log = match seed_log.as_ref().map(std::fs::File::create).transpose() {
        Ok(file) => file.map(std::sync::Mutex::new),
        Err(e) => {
            return invalid(format!(
                "--seed-log {}: {e}",
                seed_log.unwrap_or_default().display()
            ));
        }
    };
    let jobs = super::jobs_or_all_cores(jobs);
    emit(ScenarioReport::table_header());
    let mut all_met = true;
    let mut any_error = false;
    let scenarios_run = scenarios.len();
    for (file, scenario) in scenarios {
        let count = seeds.unwrap_or(scenario.seeds);
        if seed_start.checked_add(count).is_none() {
            return invalid("--seed-start + --seeds overflows");
        }
        let owned: Vec<u64> = (seed_start..seed_start + count)
            .filter(|&seed| shard.is_none_or(|shard| shard.owns(seed)))
            .collect();
        let name = file.display().to_string();
        let log_error = std::sync::Mutex::new(None);
        let log = |run: &SeedRun| {
            if let Some(out) = &seed_log {
                let mut out = out.lock().expect("seed log lock poisoned");
                if let Err(e) = writeln!(out, "{}", run.to_json(&name)) {
                    *log_error.lock().expect("lock poisoned") = Some(e);
                }
            }
        };
        let scenario = Arc::new(scenario);
        let mut report = sweeps::sweep_seeds(&file, &scenario, &owned, jobs, &log);
        if shard.is_none() {
            campaign::control::judge(&mut report, &scenario, jobs);
        }
        if let Some(e) = log_error.into_inner().expect("lock poisoned") {
            eprintln!("error: writing the seed log: {e}");
            return ExitCode::from(EXIT_UNMET);
        }
        if !emit_report(&report, json_out.as_mut()) {
            return ExitCode::from(EXIT_UNMET);
        }
        all_met &= report.expect_met();
        any_error |= !report.errors.is_empty();
    }
    emit(ScenarioReport::table_legend());
    if let Some(shard) = shard {
        emit(format_args!(
            "shard {}/{}: every {}th seed from {}; expectations judged on this share only (combine the shards' seed logs with locksim merge)",
            shard.index + 1,
            shard.count,
            shard.count,
            seed_start + shard.index
        ));
        all_met = true;
    }
    if refused > 0 {
        let ran = scenarios_run;
        eprintln!(
            "error: {refused} scenario file(s) refused (above); the other {ran} ran, their verdicts in the table"
        );
        return ExitCode::from(EXIT_INVALID);
    }
    verdict_exit(any_error, all_met)
}

/// Runs one seed and prints its trace (or, with `story`, each violation's story), the
/// evidence, the verdicts and the digest; with `plot`, also draws its lease timeline.
/// With `without_faults`, the seed runs with the scenario's faults taken away; with
/// `commands`, every frame each client wrote and read goes into the trace (after the
/// stories, with `story`).
pub fn replay(
    file: &Path,
    seed: u64,
    story: bool,
    plot: Option<&Path>,
    without_faults: bool,
    commands: bool,
    simulated_client: bool,
) -> ExitCode {
    let format = plot.map(|out| out.extension().and_then(|e| e.to_str()).unwrap_or_default());
    if let Some(format) = format
        && format != "svg"
        && format != "png"
    {
        return invalid(format!(
            "--plot: `{format}` is not a picture format: name an .svg or a .png file"
        ));
    }
    let scenario: Arc<Scenario> = match scenario::load(file) {
        Ok(s) if without_faults => Arc::new(s.without_faults()),
        Ok(s) => Arc::new(s),
        Err(e) => return invalid(e),
    };
    if let Err(e) = simulation_refused(file, scenario.clients.command.as_deref(), simulated_client) {
        return invalid(e);
    }
    let run = match commands {
        true => run_seed_keeping_wire(&scenario, seed),
        false => run_seed(&scenario, seed).map(|history| (history, Vec::new())),
    };
    let (history, wire) = match run {
        Ok(run) => run,
        Err(message) => {
            eprintln!("{}", harness_error(&scenario.name, file, seed, &message));
            return ExitCode::from(EXIT_HARNESS);
        }
    };
    emit(format_args!(
        "scenario {} ({}), seed {seed}{}",
        scenario.name,
        file.display(),
        if without_faults {
            ", without its faults"
        } else {
            ""
        }
    ));
    let verdicts = verdicts(&history, &scenario);
    if !story {
        for line in history_lines(&history, &wire) {
            emit(line);
        }
    } else {
        for line in story_lines(&history, &verdicts, &RunMode::Simulated) {
            emit(line);
        }
        if commands {
            for line in trace_lines(&[], &wire) {
                emit(line);
            }
        }
    }
    for line in verdict_lines(&history, &scenario, &verdicts, &RunMode::Simulated) {
        emit(line);
    }
    if let Some(out) = plot {
        let title = format!("{} — seed {seed}", scenario.name);
        let timeline = Timeline::of_violation(&history, &title, &verdicts, None);
        let written = match format {
            Some("png") => timeline.png(out),
            _ => std::fs::write(out, timeline.svg()),
        };
        if let Err(e) = written {
            return invalid(format!("--plot {}: {e}", out.display()));
        }
        emit(format_args!("plot: {}", out.display()));
    }
    ExitCode::SUCCESS
}
