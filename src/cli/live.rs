//! `run --live` and `worker`: scenarios run in real time on real processes (src/live/),
//! judged and reported as `run` judges and reports simulated seeds.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use locksim::client::{Algorithm, LockOptions, Profile};
use locksim::live::worker::{WorkerEnv, run_worker};
use locksim::live::{self, LiveSetup};
use locksim::report::ScenarioReport;
use locksim::report::control::Control;
use locksim::report::mode::{NOT_JUDGED_LIVE, RunMode};
use locksim::scenario::{self, Scenario};
use locksim::sweep::{RunSummary, SeedRun, in_parallel};
use locksim::world::events::EventCounts;

use super::kept;
use super::output::Output;
use super::simulate::RunArgs;
use super::{EXIT_UNMET, invalid, load_every_or_none, verdict_exit};

/// What the table and the JSON say of every live run: its seed draws the faults and the
/// workload, but real timing decides the interleaving.
pub const LIVE_NOTE: &str = "live: real processes in real time; a seed draws the faults and the workload, but \
     timing is real, so running a seed again need not give the same verdicts";

/// Runs every scenario of `args.paths` live over its seeds and prints the verdict table.
pub fn run_live(args: RunArgs) -> ExitCode {
    let scenarios = match load_every_or_none(&args.paths) {
        Ok(scenarios) => scenarios,
        Err(exit) => return exit,
    };
    if args.seeds == Some(0) {
        return invalid("--seeds must be at least 1");
    }
    if args.redis_server
        && let Err(e) = redis_server_runs()
    {
        return invalid(e);
    }
    let worker = match default_worker() {
        Ok(worker) => worker,
        Err(e) => return invalid(e),
    };
    let setups: Vec<LiveSetup> = scenarios
        .iter()
        .map(|(file, _)| live_setup(file, args.redis_server, &worker))
        .collect();
    for ((file, scenario), setup) in scenarios.iter().zip(&setups) {
        if let Err(reason) = live::unsupported(scenario, setup) {
            return invalid(format!("{}: {reason}", file.display()));
        }
    }
    let mut out = match Output::open(args.json.as_deref(), args.wide, args.junit.as_deref()) {
        Ok(out) => out,
        Err(exit) => return exit,
    };
    // One seed at a time unless asked: each runs processes in real time on shared cores.
    let jobs = args.jobs.unwrap_or(1);
    out.header();
    let (mut all_met, mut any_error) = (true, false);
    for ((file, scenario), setup) in scenarios.iter().zip(&setups) {
        let count = args.seeds.unwrap_or(scenario.seeds);
        let Some(end) = args.seed_start.checked_add(count) else {
            return invalid("--seed-start + --seeds overflows");
        };
        let mode = RunMode::Live {
            redis_server: args.redis_server,
            command: scenario.clients.command.clone(),
        };
        let seeds: Vec<u64> = (args.seed_start..end).collect();
        let started = Instant::now();
        let (runs, leftovers) = live_runs_keeping(scenario, &seeds, setup, jobs);
        let mut report = ScenarioReport::new(
            file,
            scenario,
            args.seed_start,
            &runs,
            started.elapsed().as_millis(),
        )
        .ran_in(mode.clone());
        // The no-fault control, live too: does the violation go away without the faults?
        let control_seeds = Control::seeds_for(scenario, &report.violations);
        if !control_seeds.is_empty() {
            let runs = live_runs(&scenario.without_faults(), &control_seeds, setup, jobs);
            report.with_control(Control::from_runs(control_seeds, runs));
        }
        out.rows(&report);
        for (checker, why) in NOT_JUDGED_LIVE {
            if scenario.expect.entries().iter().any(|(c, _)| *c == checker) {
                out.say(format_args!(
                    "  {checker}: not judged live ({why}); its expectation is left out"
                ));
            }
        }
        let kept = kept::keep_unmet(&report, scenario, leftovers);
        for line in &kept {
            out.say(format_args!("  {line}"));
        }
        // A live seed does not replay: a failure names where its run was kept (the
        // workers' output, the trace and the verdicts).
        out.report_suite(&report, &|_| kept.clone());
        let mut json = report.to_json();
        json["note"] = LIVE_NOTE.into();
        if !out.json_line(&json) {
            return ExitCode::from(EXIT_UNMET);
        }
        all_met &= report.expect_met();
        any_error |= !report.errors.is_empty();
    }
    out.legend();
    out.say(LIVE_NOTE);
    if !out.write_junit() {
        return ExitCode::from(EXIT_UNMET);
    }
    verdict_exit(any_error, all_met)
}

/// `Err` says how to get `redis-server` when it cannot run (for `--redis-server`).
pub(super) fn redis_server_runs() -> Result<(), String> {
    match std::process::Command::new("redis-server")
        .arg("--version")
        .output()
    {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "--redis-server: cannot run `redis-server` ({e}); install it (apt-get install redis-server) or drop --redis-server to use locksim's nodes"
        )),
    }
}

/// The worker a live run starts when the scenario names none: this executable's `worker`.
pub(super) fn default_worker() -> Result<Vec<String>, String> {
    match std::env::current_exe() {
        Ok(exe) => Ok(vec![exe.display().to_string(), "worker".into()]),
        Err(e) => Err(format!(
            "cannot find the locksim executable for `locksim worker`: {e}"
        )),
    }
}

/// How the scenario in `file` runs live: on redis-server or locksim's nodes, with
/// `default_worker` unless it names its own clients' command.
pub(super) fn live_setup(file: &std::path::Path, redis_server: bool, default_worker: &[String]) -> LiveSetup {
    LiveSetup {
        scenario_file: file.to_path_buf(),
        default_worker: default_worker.to_vec(),
        redis_server,
        worker_env: Vec::new(),
        scratch: std::env::temp_dir().join("locksim-live"),
    }
}

/// Runs `seeds` of `scenario` live, up to `jobs` at a time, each judged as a simulated
/// seed is; a run's scratch directory is removed when it went well (a failed run's is
/// kept, and named in its error).
pub(super) fn live_runs(scenario: &Scenario, seeds: &[u64], setup: &LiveSetup, jobs: usize) -> Vec<SeedRun> {
    let (runs, leftovers) = live_runs_keeping(scenario, seeds, setup, jobs);
    for left in leftovers.iter().filter(|left| left.history.is_some()) {
        let _ = std::fs::remove_dir_all(&left.scratch);
    }
    runs
}

/// [`live_runs`], keeping every run's history and scratch directory for [`kept`] to
/// sort out once the scenario is judged.
fn live_runs_keeping(
    scenario: &Scenario,
    seeds: &[u64],
    setup: &LiveSetup,
    jobs: usize,
) -> (Vec<SeedRun>, Vec<kept::Leftovers>) {
    let settings = scenario.check_settings();
    in_parallel(0..seeds.len() as u64, jobs, |index| {
        let seed = seeds[index as usize];
        let scratch = live::scratch_dir(scenario, seed, setup);
        let outcome = live::run_in(scenario, seed, setup, &scratch);
        let run = SeedRun {
            seed,
            outcome: (outcome.as_ref())
                .map(|history| RunSummary::of(history, &settings, EventCounts::default()))
                .map_err(Clone::clone),
        };
        let left = kept::Leftovers {
            seed,
            history: outcome.ok(),
            scratch,
        };
        (run, left)
    })
    .into_iter()
    .unzip()
}

/// What `worker` is asked.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// Copy this lock library's defaults and quirks (over the scenario's, when
    /// LOCKSIM_SCENARIO names one): redisson, redsync, node-redlock or redis-py.
    #[arg(long, value_parser = parse_profile)]
    pub profile: Option<Profile>,
}

fn parse_profile(text: &str) -> Result<Profile, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| "one of redisson, redsync, node-redlock, redis-py, python-redis-lock".to_string())
}

/// `locksim worker`: locksim's lock client as a live worker, configured by the
/// environment live mode gives every worker (LOCKSIM_CLIENT, LOCKSIM_REDIS_URLS, …), with
/// the lock settings of LOCKSIM_SCENARIO's file when set. Runs until killed.
pub fn worker(args: WorkerArgs) -> ExitCode {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let env = match WorkerEnv::from_vars(&vars) {
        Ok(env) => env,
        Err(e) => return invalid(e),
    };
    let (mut options, stop_at_validity) = match vars.get("LOCKSIM_SCENARIO") {
        Some(file) => match scenario::load(std::path::Path::new(file)) {
            Ok(scenario) => (scenario.lock.options(), scenario.clients.stop_at_validity),
            Err(e) => return invalid(format!("LOCKSIM_SCENARIO: {e}")),
        },
        None => {
            let algorithm = if env.redis_urls.len() > 1 {
                Algorithm::Redlock
            } else {
                Algorithm::LuaRelease
            };
            let mut options = LockOptions::new(algorithm, env.ttl_ms);
            options.fencing = env.fencing;
            (options, false)
        }
    };
    if let Some(profile) = args.profile {
        options = options.profile(profile);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return invalid(format!("cannot start the runtime: {e}")),
    };
    match runtime.block_on(run_worker(env, options, stop_at_validity)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => invalid(e),
    }
}
