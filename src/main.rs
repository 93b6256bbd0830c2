//! The `locksim` command line: run scenarios over many seeds, replay one seed, or serve one
//! fake Redis node on a real port.
//!
//! Exit codes: 0 when every expectation is met, 1 when one is not (or a run failed),
//! 2 on invalid input or usage.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{Parser, Subcommand};

use locksim::check::check_all;
use locksim::history::fmt_ms;
use locksim::real::{HostClock, TcpDialer, TcpListener};
use locksim::redis::cmd::REDIS_VERSION;
use locksim::redis::server::{self, ServeOptions};
use locksim::report::ScenarioReport;
use locksim::scenario::{self, Scenario};
use locksim::sweep::{run_seed, sweep};

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
    Run {
        /// Scenario files, or directories of them (their *.json files).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Seeds per scenario (default: the scenario's own `seeds`).
        #[arg(long)]
        seeds: Option<u64>,
        /// First seed.
        #[arg(long, default_value_t = 0)]
        seed_start: u64,
        /// Also write one JSON object per scenario (JSON lines) to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Seeds run in parallel (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Run one seed and print its event trace, the verdicts and the trace digest.
    Replay {
        /// The scenario file.
        file: PathBuf,
        /// The seed to run.
        #[arg(long)]
        seed: u64,
    },
    /// Serve one fake Redis node on real TCP (127.0.0.1) and the host clock, so redis-cli or
    /// any client can talk to the node the simulator runs. Runs until killed.
    Serve {
        /// The TCP port to listen on.
        #[arg(long)]
        port: u16,
        /// Start as a replica of this master (IP:PORT).
        #[arg(long, value_name = "HOST:PORT")]
        replicaof: Option<std::net::SocketAddr>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            paths,
            seeds,
            seed_start,
            json,
            jobs,
        } => run(&paths, seeds, seed_start, json, jobs),
        Command::Replay { file, seed } => replay(&file, seed),
        Command::Serve { port, replicaof } => serve(port, replicaof),
    }
}

const EXIT_UNMET: u8 = 1;
const EXIT_INVALID: u8 = 2;

/// Prints a line to stdout; a closed pipe (`locksim replay … | head`) is not an error.
fn emit(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

fn invalid(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_INVALID)
}

fn run(
    paths: &[PathBuf],
    seeds: Option<u64>,
    seed_start: u64,
    json: Option<PathBuf>,
    jobs: Option<usize>,
) -> ExitCode {
    let scenarios = match scenario::load_paths(paths) {
        Ok(s) if s.is_empty() => return invalid("no scenario files found"),
        Ok(s) => s,
        Err(e) => return invalid(e),
    };
    if seeds == Some(0) {
        return invalid("--seeds must be at least 1");
    }
    let mut json_out = match json.as_ref().map(std::fs::File::create).transpose() {
        Ok(file) => file,
        Err(e) => return invalid(format!("{}: {e}", json.unwrap_or_default().display())),
    };
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    emit(ScenarioReport::table_header());
    let mut all_met = true;
    for (file, scenario) in scenarios {
        let count = seeds.unwrap_or(scenario.seeds);
        let Some(seed_end) = seed_start.checked_add(count) else {
            return invalid("--seed-start + --seeds overflows");
        };
        let scenario = Arc::new(scenario);
        let started = Instant::now();
        let runs = sweep(&scenario, seed_start..seed_end, jobs);
        let report = ScenarioReport::new(&file, &scenario, seed_start, &runs, started.elapsed().as_millis());
        for line in report.table_lines() {
            emit(line);
        }
        if let Some(out) = json_out.as_mut()
            && let Err(e) = writeln!(out, "{}", report.to_json())
        {
            eprintln!("error: writing the JSON report: {e}");
            return ExitCode::from(EXIT_UNMET);
        }
        all_met &= report.expect_met();
    }
    if all_met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_UNMET)
    }
}

fn replay(file: &Path, seed: u64) -> ExitCode {
    let scenario: Arc<Scenario> = match scenario::load(file) {
        Ok(s) => Arc::new(s),
        Err(e) => return invalid(e),
    };
    let history = match run_seed(&scenario, seed) {
        Ok(history) => history,
        Err(message) => {
            eprintln!("error: seed {seed}: the run failed: {message}");
            return ExitCode::from(EXIT_UNMET);
        }
    };
    emit(format_args!(
        "scenario {} ({}), seed {seed}",
        scenario.name,
        file.display()
    ));
    emit(format_args!(
        "{:>12}  {:<10} {:>12}  event",
        "true ms", "node", "local ms"
    ));
    for event in &history.events {
        emit(format_args!(
            "{:>12}  {:<10} {:>12}  {}",
            fmt_ms(event.true_us as i64),
            event.node,
            fmt_ms(event.local_us),
            event.kind
        ));
    }
    emit(format_args!("{:>12}  end of run", fmt_ms(history.end_us as i64)));
    for verdict in check_all(&history) {
        match verdict.violation {
            None => emit(format_args!("{}: holds", verdict.checker)),
            Some(why) => emit(format_args!("{}: VIOLATED: {why}", verdict.checker)),
        }
    }
    emit(format_args!("digest: {}", history.digest()));
    ExitCode::SUCCESS
}

/// Runs the simulator's node code on real TCP: the serve loop is single-task and !Send by
/// design, so it runs on a current-thread runtime.
fn serve(port: u16, replicaof: Option<std::net::SocketAddr>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_UNMET);
        }
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        emit(format_args!(
            "fake Redis {REDIS_VERSION} node listening on {}",
            listener.local_addr()?
        ));
        let options = ServeOptions {
            replicaof,
            announce: listener.local_addr()?,
            ..ServeOptions::default()
        };
        server::serve_node(TcpListener(listener), HostClock::new(), TcpDialer, options).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => invalid(format!("serving on {addr}: {e}")),
    }
}
