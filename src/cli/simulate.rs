//! `run` and `replay`: scenarios on the simulated cluster.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use locksim::campaign::resume::Logged;
use locksim::campaign::unmet::unmet_story;
use locksim::campaign::{self, sweeps};
use locksim::report::figures::timeline::Timeline;
use locksim::report::harness_error;
use locksim::report::mode::{RunMode, simulation_refused};
use locksim::scenario::{self, Scenario};
use locksim::sweep::{SeedRun, Shard, run_seed, run_seed_keeping_wire};

use super::account::{
    history_lines, story_lines, trace_lines, unexpected_violations, verdict_lines, verdicts,
};
use super::interrupt;
use super::output::Output;
use super::{EXIT_HARNESS, EXIT_INVALID, EXIT_UNMET, emit, invalid, load_reporting, verdict_exit};

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
    /// Also write one JSON object per scenario (JSON lines) to this file; `-` writes them
    /// to stdout (the table then goes to stderr).
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
    /// Go on with a sweep that was stopped (Ctrl-C, a kill, a CI timeout): the seeds the
    /// --seed-log FILE already holds are not run again, the others are appended to it, and
    /// the table judges them all. A log written from another version of a scenario or of
    /// locksim is refused (its first seed is run again and must give its logged digest).
    #[arg(long, requires = "seed_log")]
    pub resume: bool,
    /// Every cell with its rate and 95% interval (~210 columns); by default the table fits
    /// 120 columns, each cell the count of violating seeds.
    #[arg(long)]
    pub wide: bool,
    /// Also write the verdicts as JUnit XML to this file (for GitHub Actions, GitLab,
    /// Jenkins): a testsuite per scenario file, a testcase per expectation; a failure
    /// carries why, the replay command and the story of the violation.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
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
/// sharded run fails only when a run failed; `locksim merge` judges the whole. Ctrl-C
/// stops the sweep: what ran is judged and printed, and the exit is 130.
/// (`--live` runs go to [`run_live`](super::live::run_live) instead; `main` decides.)
pub fn run(args: RunArgs) -> ExitCode {
    // Every bad file is reported, and the good ones still run: the exit code says 2 at
    // the end.
    let (scenarios, refused) = match load_reporting(&args.paths) {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
    for (file, scenario) in &scenarios {
        if let Err(e) = simulation_refused(file, scenario.clients.command.as_deref(), args.simulated_client) {
            return invalid(e);
        }
    }
    if args.seeds == Some(0) {
        return invalid("--seeds must be at least 1");
    }
    let mut plans = Vec::new();
    for (file, scenario) in scenarios {
        let count = args.seeds.unwrap_or(scenario.seeds);
        let Some(end) = args.seed_start.checked_add(count) else {
            return invalid("--seed-start + --seeds overflows");
        };
        let owned: Vec<u64> = (args.seed_start..end)
            .filter(|&seed| args.shard.is_none_or(|shard| shard.owns(seed)))
            .collect();
        plans.push((file, Arc::new(scenario), owned));
    }
    let logged = match (&args.seed_log, args.resume) {
        (Some(log), true) => match Logged::read(log) {
            Ok(logged) => logged,
            Err(e) => return invalid(e),
        },
        _ => Logged::default(),
    };
    let mut out = match Output::open(args.json.as_deref(), args.wide, args.junit.as_deref()) {
        Ok(out) => out,
        Err(exit) => return exit,
    };
    let seed_log = match args
        .seed_log
        .as_ref()
        .map(|log| open_seed_log(log, args.resume))
        .transpose()
    {
        Ok(file) => file.map(std::sync::Mutex::new),
        Err(e) => return invalid(e),
    };
    let stop = interrupt::catch_ctrl_c();
    let jobs = super::jobs_or_all_cores(args.jobs);
    let total: usize = plans.iter().map(|(_, _, seeds)| seeds.len()).sum();
    let progress = out.progress(total as u64, "seeds");
    out.header();
    let (mut all_met, mut any_error, mut ran_to_end) = (true, false, 0);
    for (file, scenario, owned) in &plans {
        let name = file.display().to_string();
        let previous = match logged.runs_of(&name, scenario) {
            Ok(runs) => runs,
            Err(e) => return invalid(e),
        };
        if let Some(bar) = &progress {
            bar.set_message(scenario.name.clone());
            // `owned` is in order: a binary search, not a scan per logged run.
            let reused = previous
                .iter()
                .filter(|run| owned.binary_search(&run.seed).is_ok());
            bar.inc(reused.count() as u64);
        }
        let log_error = std::sync::Mutex::new(None);
        let log = |run: &SeedRun| {
            if let Some(bar) = &progress {
                bar.inc(1);
            }
            if let Some(out) = &seed_log {
                let mut out = out.lock().expect("seed log lock poisoned");
                if let Err(e) = writeln!(out, "{}", run.to_json(&name)) {
                    *log_error.lock().expect("lock poisoned") = Some(e);
                }
            }
        };
        let (mut report, complete) =
            sweeps::sweep_seeds_resuming(file, scenario, owned, previous, jobs, &log, stop);
        if let Some(e) = log_error.into_inner().expect("lock poisoned") {
            eprintln!("error: writing the seed log: {e}");
            return ExitCode::from(EXIT_UNMET);
        }
        if !complete {
            out.end_progress();
            out.say(format_args!(
                "{} (interrupted: {} of its {} seeds ran; not judged)",
                scenario.name,
                report.seeds,
                owned.len()
            ));
            return interrupted(&out, &args, ran_to_end, plans.len());
        }
        if args.shard.is_none() {
            campaign::control::judge(&mut report, scenario, jobs);
        }
        if !out.report(&report) {
            return ExitCode::from(EXIT_UNMET);
        }
        out.report_suite(&report, &|checker| unmet_story(&report, scenario, checker));
        ran_to_end += 1;
        all_met &= report.expect_met();
        any_error |= !report.errors.is_empty();
        if interrupt::interrupted() {
            out.end_progress();
            return interrupted(&out, &args, ran_to_end, plans.len());
        }
    }
    out.end_progress();
    out.legend();
    if !out.write_junit() {
        return ExitCode::from(EXIT_UNMET);
    }
    if let Some(shard) = args.shard {
        out.say(format_args!(
            "shard {}/{}: every {}th seed from {}; expectations judged on this share only (combine the shards' seed logs with locksim merge)",
            shard.index + 1,
            shard.count,
            shard.count,
            args.seed_start + shard.index
        ));
        all_met = true;
    }
    if refused > 0 {
        eprintln!(
            "error: {refused} scenario file(s) refused (above); the other {} ran, their verdicts in the table",
            plans.len()
        );
        return ExitCode::from(EXIT_INVALID);
    }
    verdict_exit(any_error, all_met)
}

/// The seed log, made afresh, or — with `--resume` — opened to append to.
fn open_seed_log(log: &Path, resume: bool) -> Result<std::fs::File, String> {
    let opened = match resume {
        true => std::fs::OpenOptions::new().create(true).append(true).open(log),
        false => std::fs::File::create(log),
    };
    opened.map_err(|e| format!("--seed-log {}: {e}", log.display()))
}

/// After Ctrl-C: the legend, what ran, how to go on, and exit 130.
fn interrupted(out: &Output, args: &RunArgs, judged: usize, scenarios: usize) -> ExitCode {
    out.legend();
    out.write_junit();
    let how = match &args.seed_log {
        Some(log) => format!(
            "go on where it stopped with the same command and --resume (the seeds in {} are not run again)",
            log.display()
        ),
        None => "to be able to go on where a sweep stops, give it --seed-log FILE and rerun it with --resume"
            .into(),
    };
    eprintln!("interrupted: {judged} of {scenarios} scenarios ran to the end and are judged above; {how}");
    ExitCode::from(interrupt::EXIT_INTERRUPTED)
}

/// What `replay` is asked: one seed of one scenario, told in full.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// The seed to run.
    #[arg(long)]
    pub seed: u64,
    /// Print each violation as a numbered story of the events that matter, instead of
    /// the whole trace.
    #[arg(long)]
    pub story: bool,
    /// Also draw the run's lease timeline to this file (`.svg` or `.png`).
    #[arg(long, value_name = "OUT")]
    pub plot: Option<PathBuf>,
    /// Run the seed with the scenario's faults taken away (scheduled faults, crash
    /// points, nemesis): the control that tells whether a violation is the faults'
    /// doing.
    #[arg(long)]
    pub without_faults: bool,
    /// Also show every command each client sent, with the node it went to, and the
    /// reply it read (`→` sent, `←` read, `✗` no reply), in the trace where it happened
    /// (after the stories, with --story). Script bodies are cut.
    #[arg(long)]
    pub commands: bool,
    /// Simulate locksim's own lock client even where a scenario names its own clients'
    /// command (`clients.command`, which only `--live` runs): refused otherwise, since its
    /// verdict would say nothing of that command's code.
    #[arg(long)]
    pub simulated_client: bool,
}

/// Runs one seed and prints its trace (or, with `story`, each violation's story), the
/// evidence, the verdicts and the digest; with `plot`, also draws its lease timeline.
/// With `without_faults`, the seed runs with the scenario's faults taken away; with
/// `commands`, every frame each client wrote and read goes into the trace (after the
/// stories, with `story`).
pub fn replay(args: ReplayArgs) -> ExitCode {
    let ReplayArgs {
        file,
        seed,
        story,
        plot,
        without_faults,
        commands,
        simulated_client,
    } = args;
    let (file, plot) = (file.as_path(), plot.as_deref());
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
    let unexpected = unexpected_violations(&verdicts, &scenario, without_faults);
    if unexpected.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "seed {seed} violates what {} expects of {}{}",
        file.display(),
        unexpected.join(", "),
        if without_faults { " without its faults" } else { "" }
    );
    ExitCode::from(EXIT_UNMET)
}
