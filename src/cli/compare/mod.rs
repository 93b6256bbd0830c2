//! `compare-live`: the simulator checked against the real thing. Each scenario runs
//! simulated over its seeds, then live on locksim's own nodes and live on real
//! `redis-server`, with the same `locksim worker` client, and one table row says, for
//! every checker the scenario expects, what each mode found, whether they agree, how long
//! each took to the first violation (the simulated ms and the host CPU the simulator spent
//! to reach it; the real ms live) and the speed-up. The faults each mode struck are
//! compared too, seed by seed ([`locksim::report::struck`]): two modes that agree on a
//! verdict after striking different nodes do not agree. docs/real-vs-sim.md holds the
//! measured table and the reasons behind every difference.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use locksim::check::{Verdict, mutual_exclusion};
use locksim::history::History;
use locksim::live::{self, LiveSetup};
use locksim::report::ScenarioReport;
use locksim::report::control::Control;
use locksim::report::struck;
use locksim::scenario::Scenario;
use locksim::search::story::last_time_named;
use locksim::sweep::{RunSummary, SeedRun, run_seed};
use locksim::world::events::EventCounts;

use locksim::report::junit;

use super::account::{history_lines, write_lines};
use super::clock::{cpu_ms, wall_ms};
use super::live::{default_worker, live_runs, live_setup, redis_server_runs};
use super::{EXIT_HARNESS, EXIT_UNMET, emit, invalid, load_every_or_none};
use row::{FirstViolation, Row, Side};

mod row;

/// Which nodes the live runs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LiveNodes {
    /// locksim's own nodes, served on loopback ports.
    Locksim,
    /// Real `redis-server` processes.
    RedisServer,
    /// Both, one after the other.
    Both,
}

/// What `compare-live` is asked.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// Scenario files, or directories of them (their *.json files).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Simulated seeds per scenario (default: the scenario's own `seeds`), run one at a
    /// time so that the host CPU time is the simulator's alone.
    #[arg(long, value_parser = super::at_least_one::<u64>)]
    pub sim_seeds: Option<u64>,
    /// Live seeds per scenario and kind of node, one at a time in real time.
    #[arg(long, default_value_t = 1, value_parser = super::at_least_one::<u64>)]
    pub live_seeds: u64,
    /// The nodes of the live runs.
    #[arg(long, value_enum, default_value_t = LiveNodes::Both)]
    pub nodes: LiveNodes,
    /// Also write one JSON object per scenario (JSON lines) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write each live run's history, one event a line, into this directory (a
    /// simulated seed's trace is `locksim replay FILE --seed N`).
    #[arg(long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
    /// Also write the comparison as JUnit XML to this file: a testsuite per scenario file,
    /// a testcase per expected checker (do the modes agree?) and one for the faults struck.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// Runs every scenario of `args.paths` simulated and live and prints the comparison table;
/// exits 0 when every mode agrees on every expected checker, 1 when some differ, 3 when a
/// run failed.
pub fn compare_live(args: CompareArgs) -> ExitCode {
    let scenarios = match load_every_or_none(&args.paths) {
        Ok(scenarios) => scenarios,
        Err(exit) => return exit,
    };
    let redis_servers: &[bool] = match args.nodes {
        LiveNodes::Locksim => &[false],
        LiveNodes::RedisServer => &[true],
        LiveNodes::Both => &[false, true],
    };
    if redis_servers.contains(&true)
        && let Err(e) = redis_server_runs()
    {
        return invalid(e);
    }
    let worker = match default_worker() {
        Ok(worker) => worker,
        Err(e) => return invalid(e),
    };
    for (file, scenario) in &scenarios {
        for &redis_server in redis_servers {
            if let Err(reason) = live::unsupported(scenario, &live_setup(file, redis_server, &worker)) {
                return invalid(format!("{}: {reason}", file.display()));
            }
        }
    }
    let mut json_out = match args.json.as_ref().map(std::fs::File::create).transpose() {
        Ok(file) => file,
        Err(e) => return invalid(format!("{}: {e}", args.json.unwrap_or_default().display())),
    };
    emit(TABLE_HEADER);
    let (mut all_agree, mut any_error) = (true, false);
    let mut suites = Vec::new();
    for (file, scenario) in &scenarios {
        let sim = simulated(file, scenario, args.sim_seeds.unwrap_or(scenario.seeds));
        let lives: Vec<Side> = redis_servers
            .iter()
            .map(|&redis_server| {
                let setup = live_setup(file, redis_server, &worker);
                live_side(file, scenario, args.live_seeds, &setup, args.trace.as_deref())
            })
            .collect();
        let row = Row::new(scenario, sim, lives);
        emit(row.line());
        for note in row.notes() {
            emit(format_args!("  {note}"));
        }
        suites.push(row.suite(scenario, file));
        all_agree &= row.disagreements().is_empty() && row.faults_differ.is_empty();
        any_error |= row.sides().any(|side| !side.report.errors.is_empty());
        if let Some(out) = json_out.as_mut()
            && let Err(e) = writeln!(out, "{}", row.to_json())
        {
            eprintln!("error: writing the JSON report: {e}");
            return ExitCode::from(EXIT_UNMET);
        }
    }
    emit(table_legend());
    if let Some(path) = &args.junit
        && let Err(e) = std::fs::write(path, junit::render(&suites))
    {
        eprintln!("error: writing --junit {}: {e}", path.display());
        return ExitCode::from(EXIT_UNMET);
    }
    match (any_error, all_agree) {
        (true, _) => ExitCode::from(EXIT_HARNESS),
        (false, false) => ExitCode::from(EXIT_UNMET),
        (false, true) => ExitCode::SUCCESS,
    }
}

const TABLE_HEADER: &str = "| scenario | sim verdict (seeds) | live, locksim's nodes | live, redis-server | first violation: sim ms (host CPU ms) / live real ms | speed-up | agree |\n|---|---|---|---|---|---|---|";

/// What the table's cells mean, printed under it.
fn table_legend() -> String {
    format!(
        "Verdict cells: each expected checker as V (some seed violated it), H (it held in every exercised seed) or n/e (not exercised), with violating/seeds; for an expected violation, the same seeds without the faults in parentheses (0/N: the faults caused it). Validity is not judged live. First violation: in the first violating seed, the simulated ms and the host CPU the simulator spent on every seed up to it; live, the real ms into the run (after the seeds before it). Speed-up: live real time over simulator CPU time, to the first violation, or per seed when nothing is expected violated. Agree: the verdicts, and the faults each live seed struck against the simulated seed of the same number (kind, nodes with the holder as `holder`, and a time set in advance within {} ms); a line under the row names each fault struck otherwise.",
        struck::TOLERANCE_MS
    )
}

/// Runs `seeds` seeds of `scenario` in the simulator, one at a time, timing each on the
/// process's CPU clock.
fn simulated(file: &Path, scenario: &Scenario, seeds: u64) -> Side {
    let shared = Arc::new(scenario.clone());
    let mut report_seeds = Vec::new();
    let mut clock = Spent::new(cpu_ms);
    let mut first = None;
    let mut strikes = Vec::new();
    for seed in 0..seeds {
        let outcome = run_seed(&shared, seed);
        clock.lap();
        let spent = clock.total();
        let run = judged(scenario, seed, outcome, &mut |history, verdicts| {
            strikes.push((seed, history.strikes.clone()));
            if first.is_none() {
                first = first_violation_at(scenario, history, verdicts).map(|at_ms| FirstViolation {
                    seed,
                    at_ms,
                    host_ms: spent,
                });
            }
        });
        report_seeds.push(run);
    }
    let mut report = ScenarioReport::new(file, scenario, 0, &report_seeds, clock.total() as u128);
    locksim::campaign::control::judge(&mut report, scenario, 1);
    Side {
        mode: "sim",
        report,
        first,
        host_ms_per_seed: clock.total() / seeds as f64,
        strikes,
    }
}

/// Runs `seeds` seeds of `scenario` live, one at a time, timing each on the wall clock,
/// then the violating ones again without the faults.
fn live_side(file: &Path, scenario: &Scenario, seeds: u64, setup: &LiveSetup, trace: Option<&Path>) -> Side {
    let mut scenario = scenario.clone();
    scenario.expect.validity = None;
    let mut runs = Vec::new();
    let mut clock = Spent::new(wall_ms);
    let mut first = None;
    let mut strikes = Vec::new();
    let mode = live_mode(setup);
    for seed in 0..seeds {
        let before = clock.total();
        let outcome = live::run(&scenario, seed, setup);
        clock.lap();
        if let (Some(dir), Ok(history)) = (trace, &outcome) {
            let file = dir.join(format!(
                "{}-{}-seed-{seed}.txt",
                scenario.name,
                mode.replace(' ', "-")
            ));
            if let Err(e) = write_lines(&file, &history_lines(history, &[])) {
                eprintln!("warning: {}: {e}", file.display());
            }
        }
        let run = judged(&scenario, seed, outcome, &mut |history, verdicts| {
            strikes.push((seed, history.strikes.clone()));
            if first.is_none() {
                first = first_violation_at(&scenario, history, verdicts).map(|at_ms| FirstViolation {
                    seed,
                    at_ms,
                    host_ms: before + at_ms,
                });
            }
        });
        runs.push(run);
    }
    let mut report = ScenarioReport::new(file, &scenario, 0, &runs, clock.total() as u128);
    let control_seeds = Control::seeds_for(&scenario, &report.violations);
    if !control_seeds.is_empty() {
        let runs = live_runs(&scenario.without_faults(), &control_seeds, setup, 1);
        report.with_control(Control::from_runs(control_seeds, runs));
    }
    Side {
        mode,
        report,
        first,
        host_ms_per_seed: clock.total() / seeds as f64,
        strikes,
    }
}

/// The mode a live setup runs in, as the table names it.
fn live_mode(setup: &LiveSetup) -> &'static str {
    if setup.redis_server {
        "live redis-server"
    } else {
        "live locksim"
    }
}

/// A seed's run judged as a sweep judges it, with its history and verdicts shown to
/// `look` first.
fn judged(
    scenario: &Scenario,
    seed: u64,
    outcome: Result<History, String>,
    look: &mut dyn FnMut(&History, &[Verdict]),
) -> SeedRun {
    let settings = scenario.check_settings();
    SeedRun {
        seed,
        outcome: outcome.map(|history| {
            let summary = RunSummary::of(&history, &settings, EventCounts::default());
            look(&history, &summary.verdicts);
            summary
        }),
    }
}

/// When, in ms into the run, the earliest violation of a checker the scenario expects
/// violated happened (of any checker when it expects none): the second holder's grant for
/// mutual exclusion, else the latest instant the checker's message names.
fn first_violation_at(scenario: &Scenario, history: &History, verdicts: &[Verdict]) -> Option<f64> {
    let expected = scenario.expect.violated();
    verdicts
        .iter()
        .filter(|v| expected.is_empty() || expected.contains(&v.checker))
        .filter_map(|verdict| {
            let message = verdict.violation.as_deref()?;
            Some(match verdict.checker {
                mutual_exclusion::NAME => {
                    mutual_exclusion::overlap(history).map_or(history.end_us, |(_, later)| later.from_us)
                }
                _ => last_time_named(message).unwrap_or(history.end_us),
            })
        })
        .min()
        .map(|us| us as f64 / 1000.0)
}

/// A stopwatch on one of the host's clocks, in ms.
struct Spent {
    read: fn() -> f64,
    started: f64,
    last: f64,
}

impl Spent {
    fn new(read: fn() -> f64) -> Self {
        let now = read();
        Spent {
            read,
            started: now,
            last: now,
        }
    }

    /// The time since the previous lap.
    fn lap(&mut self) -> f64 {
        let now = (self.read)();
        let lap = now - self.last;
        self.last = now;
        lap
    }

    /// The time up to the last lap.
    fn total(&self) -> f64 {
        self.last - self.started
    }
}
