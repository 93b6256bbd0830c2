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

use serde_json::{Value, json};

use locksim::check::{Verdict, mutual_exclusion, validity};
use locksim::history::{History, Strike};
use locksim::live::{self, LiveSetup};
use locksim::report::CHECKERS;
use locksim::report::control::Control;
use locksim::report::struck;
use locksim::report::{Finding, ScenarioReport};
use locksim::scenario::Scenario;
use locksim::search::story::last_time_named;
use locksim::sweep::{RunSummary, SeedRun, run_seed};
use locksim::world::events::EventCounts;

use locksim::report::junit::{self, Suite};

use super::account::{history_lines, write_lines};
use super::clock::{cpu_ms, wall_ms};
use super::live::{default_worker, live_runs, live_setup, redis_server_runs};
use super::{EXIT_HARNESS, EXIT_UNMET, emit, invalid, load_every_or_none};

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

/// The first violation one mode found: in which seed, when in that run, and how much host
/// time the mode had spent when it was found.
#[derive(Debug, Clone, Copy)]
struct FirstViolation {
    seed: u64,
    /// Into its run: simulated ms, or real ms since the live run's time 0 (every worker
    /// connected).
    at_ms: f64,
    /// Host time spent to find it: the simulator's CPU time over the seeds run up to and
    /// including this one; live, the wall time of the seeds before it plus `at_ms`.
    host_ms: f64,
}

/// One mode's runs of a scenario.
struct Side {
    mode: &'static str,
    report: ScenarioReport,
    first: Option<FirstViolation>,
    /// Host time per seed, on average (simulator: CPU; live: wall, with start and stop).
    host_ms_per_seed: f64,
    /// The faults each seed that ran struck, by seed.
    strikes: Vec<(u64, Vec<Strike>)>,
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

/// One scenario in every mode.
struct Row {
    sim: Side,
    lives: Vec<Side>,
    /// `(mode, seed, what differed)` of every fault a live seed struck otherwise than the
    /// simulated seed of the same number.
    faults_differ: Vec<(&'static str, u64, String)>,
}

impl Row {
    fn new(scenario: &Scenario, sim: Side, lives: Vec<Side>) -> Row {
        let mut faults_differ = Vec::new();
        for live in &lives {
            for (seed, live_strikes) in &live.strikes {
                let Some((_, sim_strikes)) = sim.strikes.iter().find(|(s, _)| s == seed) else {
                    continue;
                };
                let lines = struck::differences(scenario, (sim.mode, sim_strikes), (live.mode, live_strikes));
                faults_differ.extend(lines.into_iter().map(|line| (live.mode, *seed, line)));
            }
        }
        Row {
            sim,
            lives,
            faults_differ,
        }
    }

    fn sides(&self) -> impl Iterator<Item = &Side> {
        std::iter::once(&self.sim).chain(&self.lives)
    }

    /// The checkers compared: the scenario's expectations, but validity (live mode does
    /// not judge it).
    fn checkers(&self) -> Vec<&'static str> {
        self.sim
            .report
            .expectations
            .iter()
            .map(|(checker, _, _)| *checker)
            .filter(|checker| *checker != validity::NAME)
            .collect()
    }

    /// `(mode, checker)` of every live finding that differs from the simulator's on
    /// whether the checker was violated.
    fn disagreements(&self) -> Vec<(&'static str, &'static str)> {
        let violated = |side: &Side, checker| side.report.finding(checker) == Finding::Violated;
        self.lives
            .iter()
            .flat_map(|live| {
                self.checkers()
                    .into_iter()
                    .filter(|checker| violated(live, checker) != violated(&self.sim, checker))
                    .map(|checker| (live.mode, checker))
            })
            .collect()
    }

    /// The row as a JUnit suite: for each expected checker, whether every live mode's
    /// finding agrees with the simulator's; then whether the faults struck agree.
    fn suite(&self, scenario: &Scenario, file: &Path) -> Suite {
        let disagreements = self.disagreements();
        // A failed run's notes say what failed; with none, nothing is an error.
        let failed = self.sides().any(|side| !side.report.errors.is_empty());
        let errors: Vec<String> = if failed { self.notes() } else { Vec::new() };
        let outcome = |failed: Vec<String>, what: &str| match (errors.is_empty(), failed.is_empty()) {
            (false, _) => junit::Outcome::Error {
                message: "a run failed; nothing was compared".into(),
                detail: errors.clone(),
            },
            (true, true) => junit::Outcome::Passed,
            (true, false) => junit::Outcome::Failed {
                message: format!("{what} differ: {}", failed.join("; ")),
                detail: vec![self.line()],
            },
        };
        let mut cases: Vec<junit::Case> = self
            .checkers()
            .into_iter()
            .map(|checker| {
                let modes: Vec<String> = disagreements
                    .iter()
                    .filter(|(_, c)| *c == checker)
                    .map(|(mode, _)| format!("{mode} says otherwise than the simulator"))
                    .collect();
                junit::Case {
                    name: format!("{checker} agrees"),
                    outcome: outcome(modes, "the verdicts"),
                }
            })
            .collect();
        let faults = self
            .faults_differ
            .iter()
            .map(|(mode, seed, line)| format!("{mode}, seed {seed}: {line}"))
            .collect();
        cases.push(junit::Case {
            name: "the faults struck agree".into(),
            outcome: outcome(faults, "the faults struck"),
        });
        Suite {
            name: scenario.name.clone(),
            file: file.display().to_string(),
            time_s: 0.0,
            cases,
            system_out: self.notes(),
        }
    }

    /// The table row, in Markdown.
    fn line(&self) -> String {
        let verdicts = |mode: &str| {
            self.sides()
                .find(|side| side.mode == mode)
                .map_or_else(|| "not run".to_string(), |side| self.verdict_cell(side))
        };
        let mut differ: Vec<String> = self
            .disagreements()
            .iter()
            .map(|(mode, checker)| format!("{} {mode}", short(checker)))
            .collect();
        for (mode, _, _) in &self.faults_differ {
            let said = format!("faults {mode}");
            if !differ.contains(&said) {
                differ.push(said);
            }
        }
        let agree = match differ.is_empty() {
            true => "yes".to_string(),
            false => format!("no: {}", differ.join(", ")),
        };
        format!(
            "| {} | {} | {} | {} | {} | {} | {agree} |",
            self.sim.report.name,
            self.verdict_cell(&self.sim),
            verdicts("live locksim"),
            verdicts("live redis-server"),
            self.times_cell(),
            self.speed_up_cell(),
        )
    }

    fn verdict_cell(&self, side: &Side) -> String {
        let report = &side.report;
        let cells: Vec<String> = self
            .checkers()
            .into_iter()
            .map(|checker| {
                let letter = match report.finding(checker) {
                    Finding::Violated => "V",
                    Finding::Holds => "H",
                    Finding::NotExercised => "n/e",
                    Finding::NotJudged => "n/j",
                };
                let rate = report.rate(checker);
                let control = report
                    .control
                    .as_ref()
                    .filter(|_| report.attribution(checker).is_some())
                    .map(|control| {
                        let rate = control.rate(checker);
                        format!(" ({}/{} without faults)", rate.violating, rate.seeds)
                    })
                    .unwrap_or_default();
                format!(
                    "{} {letter} {}/{}{control}",
                    short(checker),
                    rate.violating,
                    rate.seeds
                )
            })
            .collect();
        let errors = match report.errors.len() {
            0 => String::new(),
            n => format!("; {n} failed"),
        };
        format!("{}{errors}", cells.join(", "))
    }

    fn times_cell(&self) -> String {
        let sides: Vec<String> = self
            .sides()
            .map(|side| match (side.mode, side.first) {
                (_, None) => "-".to_string(),
                ("sim", Some(first)) => format!("{:.0} ({:.0})", first.at_ms, first.host_ms),
                (_, Some(first)) => format!("{:.0}", first.host_ms),
            })
            .collect();
        sides.join(" / ")
    }

    /// Live real time over the simulator's CPU time: to the first violation when the
    /// simulator found one, else per seed.
    fn speed_up_cell(&self) -> String {
        let ratios: Vec<String> = self
            .lives
            .iter()
            .map(|live| match (self.sim.first, live.first) {
                (Some(sim), Some(live)) => format!("{:.0}x", live.host_ms / sim.host_ms),
                _ => format!(
                    "{:.0}x per seed",
                    live.host_ms_per_seed / self.sim.host_ms_per_seed
                ),
            })
            .collect();
        ratios.join(" / ")
    }

    /// Lines under the row: every run that failed, with its reason, and every fault a
    /// live seed struck otherwise than the simulated one.
    fn notes(&self) -> Vec<String> {
        let failed = self.sides().flat_map(|side| {
            side.report
                .errors
                .iter()
                .map(move |(seed, error)| format!("{} seed {seed} failed: {error}", side.mode))
        });
        let faults = self
            .faults_differ
            .iter()
            .map(|(mode, seed, line)| format!("{mode} seed {seed} struck otherwise: {line}"));
        failed.chain(faults).collect()
    }

    fn to_json(&self) -> Value {
        let side_json = |side: &Side| {
            let mut report = side.report.to_json();
            report["mode"] = side.mode.into();
            report["host_ms_per_seed"] = side.host_ms_per_seed.into();
            report["first_violation"] = side.first.map_or(
                Value::Null,
                |first| json!({"seed": first.seed, "at_ms": first.at_ms, "host_ms": first.host_ms}),
            );
            report
        };
        json!({
            "scenario": self.sim.report.name,
            "file": self.sim.report.file.display().to_string(),
            "sides": self.sides().map(side_json).collect::<Vec<_>>(),
            "disagreements": self.disagreements().iter().map(|(mode, checker)| json!({"mode": mode, "checker": checker})).collect::<Vec<_>>(),
            "fault_differences": self.faults_differ.iter().map(|(mode, seed, line)| json!({"mode": mode, "seed": seed, "difference": line})).collect::<Vec<_>>(),
        })
    }
}

/// A checker's short name, as the verdict table heads its column.
fn short(checker: &str) -> &str {
    CHECKERS
        .iter()
        .find(|(name, _)| *name == checker)
        .map_or(checker, |(_, short)| short)
}
