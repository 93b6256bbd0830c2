//! The `locksim` command line: run scenarios over many seeds, replay one seed, run a
//! command under a lock on real Redis, or serve one fake Redis node on a real port.
//!
//! Exit codes of `run`, `replay`, `merge`, `report` and `check`: 0 when every expectation
//! is met, 1 when one is not (or a scenario expects nothing: *unchecked*), 2 on invalid
//! input or usage, 3 when a run panicked or hung (a harness error; the other seeds ran).
//! `lock` exits with its command's status, or one of the codes `locksim lock --help` lists
//! (cli/lock.rs). Signals sent to `lock` are passed on to its command.

mod cli;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use locksim::search::shrink::MIN_SHRINK_RUNS;
use locksim::sweep::Shard;

use cli::bench::{BenchArgs, bench};
use cli::check::{CheckArgs, check};
use cli::compare::{CompareArgs, compare_live};
use cli::live::{WorkerArgs, run_live, worker};
use cli::lock::{LockArgs, lock_and_run};
use cli::merge::{merge, merge_report};
use cli::parse_address;
use cli::report::{ReportArgs, report};
use cli::serve::serve;
use cli::shrink::shrink_file;
use cli::simulate::{RunArgs, replay, run};

#[derive(Parser)]
#[command(
    name = "locksim",
    version,
    about = "Is your Redis lock safe? Deterministic simulation of Redis distributed locks."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenarios over many seeds and print the verdict table.
    Run(RunArgs),
    /// Combine seed logs (`run --seed-log`, from shards run anywhere) into one verdict
    /// table and per-scenario JSON, as one run over all their seeds would give; with
    /// `--report DIR`, the logs of `report --shard` into the report one `locksim report`
    /// would write.
    Merge {
        /// Seed logs.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Also write one JSON object per scenario (JSON lines) to this file.
        #[arg(long, conflicts_with = "report")]
        json: Option<PathBuf>,
        /// The logs are every shard's of `locksim report --shard K/N --seed-log FILE`:
        /// write the report (index.html, summary.json, summary.jsonl, figures/, matrix/)
        /// into DIR.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
    },
    /// Sweep the scenarios and write the safety report: one self-contained page
    /// (DIR/index.html), every number as JSON (DIR/summary.json) and the catalogue as JSON
    /// lines (DIR/summary.jsonl); prints the verdict table.
    Report(ReportArgs),
    /// Run one seed and print its event trace, the verdicts and the trace digest.
    Replay {
        /// The scenario file.
        file: PathBuf,
        /// The seed to run.
        #[arg(long)]
        seed: u64,
        /// Print each violation as a numbered story of the events that matter, instead of
        /// the whole trace.
        #[arg(long)]
        story: bool,
        /// Also draw the run's lease timeline to this file (`.svg` or `.png`).
        #[arg(long, value_name = "OUT")]
        plot: Option<PathBuf>,
        /// Run the seed with the scenario's faults taken away (scheduled faults, crash
        /// points, nemesis): the control that tells whether a violation is the faults'
        /// doing.
        #[arg(long)]
        without_faults: bool,
        /// Also show every command each client sent, with the node it went to, and the
        /// reply it read (`→` sent, `←` read, `✗` no reply), in the trace where it happened
        /// (after the stories, with --story). Script bodies are cut.
        #[arg(long)]
        commands: bool,
        /// Simulate locksim's own lock client even where a scenario names its own clients'
        /// command (`clients.command`, which only `--live` runs): refused otherwise, since its
        /// verdict would say nothing of that command's code.
        #[arg(long)]
        simulated_client: bool,
    },
    /// Shrink a violating seed to the smallest scenario that still violates the same
    /// checker; writes it (with `expect` set) and prints what each pass removed.
    Shrink {
        /// The scenario file.
        file: PathBuf,
        /// The violating seed.
        #[arg(long)]
        seed: u64,
        /// The checker to keep violating (default: the first one the seed violates).
        #[arg(long)]
        checker: Option<String>,
        /// Where to write the minimal scenario (default: beside FILE).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The most simulated runs to spend, all told (at least 22: the search spends what
        /// the trial of its result on 20 other seeds and the replay of its story leave).
        #[arg(long, default_value_t = 400, value_parser = max_runs)]
        max_runs: u64,
        /// The most host time to spend, in seconds (the result then depends on the
        /// machine's speed; the run budget alone is deterministic).
        #[arg(long)]
        max_seconds: Option<u64>,
        /// Simulate locksim's own lock client even where a scenario names its own clients'
        /// command (`clients.command`, which only `--live` runs): refused otherwise, since its
        /// verdict would say nothing of that command's code.
        #[arg(long)]
        simulated_client: bool,
    },
    /// Search a scenario template property-style: draw N cases (every `{"any": [lo, hi]}`
    /// and `{"one_of": [...]}` in the file drawn anew per case), run each once, and check
    /// the file's `expect` in every case. A counterexample is written, shrunk and told.
    Check {
        /// The scenario template (a scenario file whose values may be ranges).
        file: PathBuf,
        /// Cases to draw and run.
        #[arg(long, default_value_t = 100, value_parser = cli::at_least_one::<u64>)]
        cases: u64,
        /// The first case's number (its draw and run seed); cases are numbered on from it.
        #[arg(long, default_value_t = 0)]
        first_case: u64,
        /// Cases run in parallel (default: the number of cores).
        #[arg(long, value_parser = cli::at_least_one::<usize>)]
        jobs: Option<usize>,
        /// Where to write a counterexample (default: beside FILE).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Simulated runs to spend shrinking a counterexample, all told (0: do not shrink;
        /// else at least 22, as `shrink --max-runs`).
        #[arg(long, default_value_t = 400, value_parser = shrink_runs)]
        shrink_runs: u64,
        /// Simulate locksim's own lock client even where the template names its own
        /// clients' command (`clients.command`): refused otherwise.
        #[arg(long)]
        simulated_client: bool,
    },
    /// Run a command while holding a lock on real Redis (Redlock with several addresses),
    /// renewing it until the command ends; exits with the command's status.
    #[command(after_help = cli::lock::LOCK_HELP)]
    Lock(LockArgs),
    /// Measure how fast the simulator runs seeds (seeds/s, simulated seconds per wall
    /// second, events per second) and its peak memory.
    Bench {
        /// Scenario files, or directories of them (default: the reference workloads in
        /// scenarios/bench/).
        paths: Vec<PathBuf>,
        /// Seeds per scenario (default: the scenario's own `seeds`).
        #[arg(long)]
        seeds: Option<u64>,
        /// Seeds run in parallel (default 1: the speed of one core).
        #[arg(long, default_value_t = 1, value_parser = cli::at_least_one::<usize>)]
        jobs: usize,
        /// Also time, for every scenario of this catalogue that expects a violation, the
        /// search for its first violating seed (default DIR: scenarios).
        #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "scenarios")]
        catalogue: Option<PathBuf>,
        /// Also write the numbers to this file as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Run only shard K of N of each workload's seeds (every Nth seed), to measure
        /// machines running at once; see docs/performance.md to combine their numbers.
        #[arg(long, value_name = "K/N", conflicts_with = "catalogue")]
        shard: Option<Shard>,
    },
    /// Run locksim's lock client as a live worker (what `run --live` starts per client
    /// when the scenario names no `clients.command`): reads LOCKSIM_CLIENT,
    /// LOCKSIM_REDIS_URLS, LOCKSIM_LOCK_KEY, LOCKSIM_TTL_MS, LOCKSIM_RESOURCE,
    /// LOCKSIM_WORK_MS, LOCKSIM_THINK_MS, LOCKSIM_SEED, LOCKSIM_FENCING (with
    /// LOCKSIM_FENCE_COUNTER when it is `counter`) and LOCKSIM_SCENARIO, and loops
    /// acquire → report held → read and write the resource → report released → release.
    Worker(WorkerArgs),
    /// Check the simulator against the real thing: run each scenario simulated, live on
    /// locksim's nodes and live on real redis-server (same `locksim worker` client), and
    /// print one Markdown table row per scenario: each expected checker's verdict in every
    /// mode, whether they agree, the time to the first violation and the speed-up. Exits
    /// 0 when they agree, 1 when some verdict differs, 3 when a run failed.
    CompareLive(CompareArgs),
    /// Write a starter set of scenarios for your lock setup (a baseline and a fault sweep, each expectation measured), with a README.
    Init(cli::init::InitArgs),
    /// Write the JSON Schema of scenario files (with --template, of `check` templates).
    Schema(cli::schema::SchemaArgs),
    /// Serve one fake Redis node on real TCP (127.0.0.1) and the host clock, so redis-cli or
    /// any client can talk to the node the simulator runs. Runs until killed.
    Serve {
        /// The TCP port to listen on.
        #[arg(long)]
        port: u16,
        /// Start as a replica of this master.
        #[arg(long, value_name = "HOST:PORT", value_parser = parse_address)]
        replicaof: Option<SocketAddr>,
    },
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
fn shrink_runs(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(runs) if runs == 0 || runs >= MIN_SHRINK_RUNS => Ok(runs),
        _ => Err(format!("0 (do not shrink) or at least {MIN_SHRINK_RUNS} runs")),
    }
}

/// mimalloc: a run allocates and frees small objects at every message and timer, and
/// glibc's malloc took a fifth of a run's instructions (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) if args.live => run_live(args),
        Command::Run(args) => run(args),
        Command::Merge {
            logs,
            json,
            report: None,
        } => merge(&logs, json.as_deref()),
        Command::Merge {
            logs,
            report: Some(dir),
            ..
        } => merge_report(&logs, &dir),
        Command::Replay {
            file,
            seed,
            story,
            plot,
            without_faults,
            commands,
            simulated_client,
        } => replay(
            &file,
            seed,
            story,
            plot.as_deref(),
            without_faults,
            commands,
            simulated_client,
        ),
        Command::Report(args) => report(args),
        Command::Lock(args) => lock_and_run(args),
        Command::Worker(args) => worker(args),
        Command::CompareLive(args) => compare_live(args),
        Command::Serve { port, replicaof } => serve(port, replicaof),
        Command::Schema(args) => cli::schema::schema(args),
        Command::Init(args) => cli::init::init(args),
        Command::Shrink {
            file,
            seed,
            checker,
            out,
            max_runs,
            max_seconds,
            simulated_client,
        } => shrink_file(
            &file,
            seed,
            checker.as_deref(),
            out,
            max_runs,
            max_seconds,
            simulated_client,
        ),
        Command::Bench {
            paths,
            seeds,
            jobs,
            catalogue,
            json,
            shard,
        } => bench(BenchArgs {
            paths,
            seeds,
            jobs,
            catalogue,
            json,
            shard,
        }),
        Command::Check {
            file,
            cases,
            first_case,
            jobs,
            out,
            shrink_runs,
            simulated_client,
        } => check(CheckArgs {
            file,
            cases,
            first_case,
            jobs: cli::jobs_or_all_cores(jobs),
            out,
            shrink_runs,
            simulated_client,
        }),
    }
}
