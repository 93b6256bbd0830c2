//! The `locksim` command line: run scenarios over many seeds, replay one seed, run a
//! command under a lock on real Redis, or serve one fake Redis node on a real port.
//!
//! Exit codes of `run`, `replay`, `merge`, `report` and `check`: 0 when every expectation
//! is met, 1 when one is not (or a scenario expects nothing: *unchecked*), 2 on invalid
//! input or usage, 3 when a run panicked or hung (a harness error; the other seeds ran).
//! `lock` exits with its command's status, or one of the codes `locksim lock --help` lists
//! (cli/lock.rs). Signals sent to `lock` are passed on to its command.

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cli::bench::{BenchArgs, bench};
use cli::check::{CheckArgs, check};
use cli::compare::{CompareArgs, compare_live};
use cli::live::{WorkerArgs, run_live, worker};
use cli::lock::{LockArgs, lock_and_run};
use cli::merge::{MergeArgs, merge};
use cli::report::{ReportArgs, report};
use cli::serve::{ServeArgs, serve};
use cli::shrink::{ShrinkArgs, shrink};
use cli::simulate::{ReplayArgs, RunArgs, replay, run};

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
    Merge(MergeArgs),
    /// Sweep the scenarios and write the safety report: one self-contained page
    /// (DIR/index.html), every number as JSON (DIR/summary.json) and the catalogue as JSON
    /// lines (DIR/summary.jsonl); prints the verdict table.
    Report(ReportArgs),
    /// Run one seed and print its event trace, the verdicts and the trace digest; exits 1
    /// when the seed violates what the scenario expects.
    Replay(ReplayArgs),
    /// Shrink a violating seed to the smallest scenario that still violates the same
    /// checker; writes it (with `expect` set) and prints what each pass removed.
    Shrink(ShrinkArgs),
    /// Search a scenario template property-style: draw N cases (every `{"any": [lo, hi]}`
    /// and `{"one_of": [...]}` in the file drawn anew per case), run each once, and check
    /// the file's `expect` in every case. A counterexample is written, shrunk and told.
    Check(CheckArgs),
    /// Run a command while holding a lock on real Redis (Redlock with several addresses),
    /// renewing it until the command ends; exits with the command's status.
    #[command(after_help = cli::lock::LOCK_HELP)]
    Lock(LockArgs),
    /// Measure how fast the simulator runs seeds (seeds/s, simulated seconds per wall
    /// second, events per second) and its peak memory.
    Bench(BenchArgs),
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
    /// any client can talk to the node the simulator runs. Runs until SIGTERM or SIGINT.
    Serve(ServeArgs),
}

/// mimalloc: a run allocates and frees small objects at every message and timer, and
/// glibc's malloc took a fifth of a run's instructions (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(args) if args.live => run_live(args),
        Command::Run(args) => run(args),
        Command::Merge(args) => merge(args),
        Command::Report(args) => report(args),
        Command::Replay(args) => replay(args),
        Command::Shrink(args) => shrink(args),
        Command::Check(args) => check(args),
        Command::Lock(args) => lock_and_run(args),
        Command::Bench(args) => bench(args),
        Command::Worker(args) => worker(args),
        Command::CompareLive(args) => compare_live(args),
        Command::Serve(args) => serve(args),
        Command::Schema(args) => cli::schema::schema(args),
        Command::Init(args) => cli::init::init(args),
    }
}
