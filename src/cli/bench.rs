//! `bench`: how fast the simulator runs seeds, and how much memory it takes. Speed and
//! memory are measured here, not asserted in tests: tests must pass on a loaded machine.
//!
//! With no paths it runs the reference workloads of scenarios/bench/ (kept out of the
//! catalogue: `run` and `report` read only a directory's own files, not its
//! subdirectories). With `--catalogue` it also times, for every catalogue scenario that
//! expects a violation, how long the search takes to find its first violating seed. With
//! `--shard K/N` it runs a share of each workload's seeds, for machines measured at once.
//! With `--pingpong` it also runs the design's speed limit ([`pingpong`]) before and after
//! the workloads, and prints each workload's events/s as a share of it; `--rounds` repeats
//! the workloads between ping-pongs and prints the median share ([`share`]).

mod pingpong;
mod share;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use locksim::scenario::Scenario;
use locksim::sweep::{Shard, sweep, sweep_seeds};
use locksim::world::events::EventCounts;

use super::{EXIT_HARNESS, emit, invalid, load_every_or_none};
use share::{Limits, Shares};

/// The reference workloads `bench` runs when given no paths.
pub const BENCH_DIR: &str = "scenarios/bench";

/// What `bench` is asked to measure.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Scenario files, or directories of them (default: the reference workloads in
    /// scenarios/bench/).
    pub paths: Vec<PathBuf>,
    /// Seeds per scenario (default: the scenario's own `seeds`).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Seeds run in parallel (default 1: the speed of one core).
    #[arg(long, default_value_t = 1, value_parser = super::at_least_one::<usize>)]
    pub jobs: usize,
    /// Also time, for every scenario of this catalogue that expects a violation, the
    /// search for its first violating seed (default DIR: scenarios).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "scenarios")]
    pub catalogue: Option<PathBuf>,
    /// Also write the numbers to this file as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Run only shard K of N of each workload's seeds (every Nth seed), to measure
    /// machines running at once; see docs/performance.md to combine their numbers.
    #[arg(long, value_name = "K/N", conflicts_with = "catalogue")]
    pub shard: Option<Shard>,
    /// Also run a bare madsim TCP ping-pong of ROUND_TRIPS request/reply exchanges (the
    /// design's speed limit) before and after the workloads, and print each workload's
    /// events/s as a share of its messages/s (default ROUND_TRIPS: 200000).
    #[arg(long, value_name = "ROUND_TRIPS", num_args = 0..=1, default_missing_value = "200000")]
    pub pingpong: Option<u64>,
    /// With --pingpong: run the workloads this many times, a ping-pong between each time
    /// and the next, and print each workload's median share of the limit over the rounds
    /// with their range (each round against the faster ping-pong beside it).
    #[arg(long, default_value_t = 1, value_parser = super::at_least_one::<usize>, requires = "pingpong")]
    pub rounds: usize,
}

/// Runs each scenario's seeds (or `seeds`) with `jobs` threads and prints the throughput;
/// then, with `--catalogue`, the time to each violating scenario's first violation.
pub fn bench(args: BenchArgs) -> ExitCode {
    let paths = match args.paths.is_empty() {
        true => vec![PathBuf::from(BENCH_DIR)],
        false => args.paths.clone(),
    };
    let scenarios = match load_every_or_none(&paths) {
        Ok(scenarios) => scenarios,
        Err(exit) => return exit,
    };
    let catalogue = match &args.catalogue {
        None => Vec::new(),
        Some(dir) => match load_every_or_none(std::slice::from_ref(dir)) {
            Ok(scenarios) => scenarios,
            Err(exit) => return exit,
        },
    };
    if let Some(shard) = args.shard {
        emit(format_args!(
            "shard {shard}: seeds {}, {}, {}, ... of each workload; shards run at once give seeds/s = the sum \
             of their seeds / the longest wall time",
            shard.index,
            shard.index + shard.count,
            shard.index + 2 * shard.count
        ));
    }
    let mut limits = args
        .pingpong
        .map(|round_trips| Limits::new(pingpong::run(round_trips)));
    emit(format_args!(
        "{:<44} {:>6} {:>5} {:>9} {:>9} {:>10} {:>14} {:>12}",
        "scenario", "seeds", "jobs", "wall s", "seeds/s", "ms/seed", "sim-s/wall-s", "events/s"
    ));
    let scenarios: Vec<Arc<Scenario>> = scenarios.into_iter().map(|(_, s)| Arc::new(s)).collect();
    let mut failed = 0;
    // Round-major: every workload of round 0, then of round 1, ...
    let mut throughputs = Vec::new();
    for round in 0..args.rounds {
        if args.rounds > 1 {
            emit(format_args!("round {} of {}", round + 1, args.rounds));
        }
        for scenario in &scenarios {
            let count = args.seeds.unwrap_or(scenario.seeds).max(1);
            let throughput = measure(Arc::clone(scenario), count, args.jobs, args.shard);
            failed += throughput.failed;
            emit(throughput.line());
            throughputs.push(throughput);
        }
        if let (Some(limits), Some(round_trips)) = (&mut limits, args.pingpong) {
            limits.push(pingpong::run(round_trips));
        }
    }
    // Each measurement's share of its round's limit, with `--pingpong`.
    let round_of = |index: usize| index / scenarios.len();
    let share_of: Vec<Option<f64>> = throughputs
        .iter()
        .enumerate()
        .map(|(index, throughput)| {
            let limits = limits.as_ref()?;
            Some(limits.share(round_of(index), throughput.events_per_s()))
        })
        .collect();
    let shares = limits
        .as_ref()
        .map(|limits| report_shares(limits, &scenarios, &throughputs, &share_of));
    let workloads: Vec<Value> = throughputs
        .iter()
        .enumerate()
        .map(|(index, throughput)| throughput.json(round_of(index), share_of[index]))
        .collect();
    let mut first_violations = Vec::new();
    if !catalogue.is_empty() {
        emit(format_args!(
            "\n{:<52} {:>6} {:>8} {:>12}",
            "catalogue scenario (expects a violation)", "seed", "seeds", "wall s"
        ));
    }
    for (file, scenario) in catalogue {
        if let Some(found) = first_violation(&file, Arc::new(scenario)) {
            emit(found.line());
            first_violations.push(found.json());
        }
    }
    let peak_kib = peak_memory_kib();
    if let Some(peak) = peak_kib {
        emit(format_args!(
            "peak memory (VmHWM): {:.1} MiB",
            peak as f64 / 1024.0
        ));
    }
    if let Some(path) = &args.json {
        let numbers = json!({
            "shard": args.shard.map(|shard| shard.to_string()),
            "pingpong": limits.as_ref().map(Limits::json),
            "workloads": workloads,
            "shares": shares,
            "first_violations": first_violations,
            "peak_memory_kib": peak_kib,
        });
        let text = serde_json::to_string_pretty(&numbers).expect("numbers serialise");
        if let Err(e) = std::fs::write(path, text + "\n") {
            return invalid(format!("cannot write {}: {e}", path.display()));
        }
    }
    if failed > 0 {
        eprintln!("error: {failed} runs hit a harness error (a panic or a hang inside the simulator)");
        return ExitCode::from(EXIT_HARNESS);
    }
    ExitCode::SUCCESS
}

/// Prints the ping-pong runs and each workload's share of the limit (its median over the
/// rounds), and returns those shares as JSON. `throughputs` and `share_of` are round-major.
fn report_shares(
    limits: &Limits,
    scenarios: &[Arc<Scenario>],
    throughputs: &[Throughput],
    share_of: &[Option<f64>],
) -> Vec<Value> {
    emit(format_args!("\n{}", limits.line()));
    scenarios
        .iter()
        .enumerate()
        .map(|(i, scenario)| {
            let by_round: Vec<(f64, f64)> = (i..throughputs.len())
                .step_by(scenarios.len())
                .filter_map(|index| Some((throughputs[index].events_per_s(), share_of[index]?)))
                .collect();
            let shares = Shares::of(&by_round);
            emit(shares.line(&scenario.name));
            shares.json(&scenario.name)
        })
        .collect()
}

/// One workload's speed.
struct Throughput {
    name: String,
    seeds: u64,
    jobs: usize,
    wall_s: f64,
    simulated_s: f64,
    events: EventCounts,
    failed: usize,
}

/// Sweeps `seeds` seeds of `scenario` (or `shard`'s share of them) and times the sweep.
fn measure(scenario: Arc<Scenario>, seeds: u64, jobs: usize, shard: Option<Shard>) -> Throughput {
    let owned: Vec<u64> = (0..seeds)
        .filter(|&seed| shard.is_none_or(|shard| shard.owns(seed)))
        .collect();
    let seeds = owned.len() as u64;
    let started = Instant::now();
    let runs = sweep_seeds(&scenario, &owned, jobs, |run| run);
    let wall_s = started.elapsed().as_secs_f64();
    let mut events = EventCounts::default();
    for summary in runs.iter().filter_map(|run| run.outcome.as_ref().ok()) {
        events.messages += summary.events.messages;
        events.timers += summary.events.timers;
    }
    Throughput {
        name: scenario.name.clone(),
        seeds,
        jobs,
        wall_s,
        simulated_s: seeds as f64 * scenario.duration_ms as f64 / 1000.0,
        events,
        failed: runs.iter().filter(|run| run.outcome.is_err()).count(),
    }
}

impl Throughput {
    fn seeds_per_s(&self) -> f64 {
        self.seeds as f64 / self.wall_s
    }

    /// Wall time of one seed on one job.
    fn ms_per_seed(&self) -> f64 {
        self.wall_s * 1000.0 * self.jobs as f64 / self.seeds as f64
    }

    fn line(&self) -> String {
        format!(
            "{:<44} {:>6} {:>5} {:>9.2} {:>9.1} {:>10.2} {:>14.0} {:>12.0}",
            self.name,
            self.seeds,
            self.jobs,
            self.wall_s,
            self.seeds_per_s(),
            self.ms_per_seed(),
            self.simulated_s / self.wall_s,
            self.events_per_s(),
        )
    }

    fn events_per_s(&self) -> f64 {
        self.events.total() as f64 / self.wall_s
    }

    /// `share`: of its round's limit, with `--pingpong`.
    fn json(&self, round: usize, share: Option<f64>) -> Value {
        json!({
            "share_of_limit": share,
            "round": round,
            "scenario": self.name,
            "seeds": self.seeds,
            "jobs": self.jobs,
            "wall_s": self.wall_s,
            "seeds_per_s": self.seeds_per_s(),
            "ms_per_seed": self.ms_per_seed(),
            "simulated_s_per_wall_s": self.simulated_s / self.wall_s,
            "messages": self.events.messages,
            "timer_firings": self.events.timers,
            "events_per_s": self.events_per_s(),
            "failed_runs": self.failed,
        })
    }
}

/// How long one violating scenario took to show its first violation.
struct FirstViolation {
    name: String,
    file: PathBuf,
    /// The first seed violating a checker the scenario expects violated, if any did.
    seed: Option<u64>,
    seeds_run: u64,
    wall_s: f64,
}

/// Runs `scenario`'s seeds one at a time from 0 until one violates a checker it expects
/// violated (at most its own seed count); `None` when it expects no violation.
fn first_violation(file: &Path, scenario: Arc<Scenario>) -> Option<FirstViolation> {
    let expected = scenario.expect.violated();
    if expected.is_empty() {
        return None;
    }
    let started = Instant::now();
    let mut found = FirstViolation {
        name: scenario.name.clone(),
        file: file.to_path_buf(),
        seed: None,
        seeds_run: 0,
        wall_s: 0.0,
    };
    for seed in 0..scenario.seeds {
        found.seeds_run += 1;
        let violates = sweep(&scenario, seed..seed + 1, 1).iter().any(|run| {
            run.outcome.as_ref().is_ok_and(|summary| {
                summary
                    .verdicts
                    .iter()
                    .any(|v| v.violation.is_some() && expected.contains(&v.checker))
            })
        });
        if violates {
            found.seed = Some(seed);
            break;
        }
    }
    found.wall_s = started.elapsed().as_secs_f64();
    Some(found)
}

impl FirstViolation {
    fn line(&self) -> String {
        let seed = self
            .seed
            .map_or_else(|| "none".to_string(), |seed| seed.to_string());
        format!(
            "{:<52} {:>6} {:>8} {:>12.4}",
            self.name, seed, self.seeds_run, self.wall_s
        )
    }

    fn json(&self) -> Value {
        json!({
            "scenario": self.name,
            "file": self.file.display().to_string(),
            "seed": self.seed,
            "seeds_run": self.seeds_run,
            "wall_s": self.wall_s,
        })
    }
}

/// The process's peak resident memory, from /proc (Linux).
fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
