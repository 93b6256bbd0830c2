//! The `locksim` command line: run scenarios over many seeds, replay one seed, run a
//! command under a lock on real Redis, or serve one fake Redis node on a real port.
//!
//! Exit codes of `run` and `replay`: 0 when every expectation is met, 1 when one is not
//! (or a run failed), 2 on invalid input or usage. `lock` exits with its command's status,
//! 75 when the lock could not be had in time, 70 when the lock was lost while the command
//! ran. Signals sent to `lock` are passed on to its command.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{Parser, Subcommand};

use locksim::check::{CheckSettings, check_all};
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
    /// Run a command while holding a lock on real Redis (Redlock with several addresses),
    /// renewing it until the command ends; exits with the command's status.
    Lock {
        /// Redis address(es), HOST:PORT, comma-separated; several mean Redlock.
        #[arg(long, value_delimiter = ',', required = true)]
        redis: Vec<String>,
        /// The lock's key.
        #[arg(long)]
        key: String,
        /// Time to live of the key; renewed every third of it while the command runs.
        #[arg(long, default_value = "10s", value_parser = parse_duration_ms)]
        ttl: u64,
        /// How long to keep trying to acquire before giving up (exit 75).
        #[arg(long, default_value = "30s", value_parser = parse_duration_ms)]
        wait: u64,
        /// How long to wait for one Redis node's reply.
        #[arg(long, default_value = "1s", value_parser = parse_duration_ms)]
        node_timeout: u64,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
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
        Command::Lock {
            redis,
            key,
            ttl,
            wait,
            node_timeout,
            command,
        } => lock_and_run(&redis, &key, ttl, wait, node_timeout, &command),
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
    emit(ScenarioReport::table_legend());
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
    for verdict in check_all(&history, &CheckSettings::for_scenario(&scenario)) {
        match verdict.violation {
            None => emit(format_args!("{}: holds", verdict.checker)),
            Some(why) => emit(format_args!("{}: VIOLATED: {why}", verdict.checker)),
        }
    }
    emit(format_args!("digest: {}", history.digest()));
    ExitCode::SUCCESS
}

/// `lock`: the lock could not be had within `--wait` (sysexits' EX_TEMPFAIL, as `flock -w`).
const EXIT_NOT_ACQUIRED: u8 = 75;
/// `lock`: the lock was lost while the command ran (the command was sent SIGTERM).
const EXIT_LOCK_LOST: u8 = 70;
/// `lock`: the command could not be started (as a shell reports it).
const EXIT_CANNOT_RUN: u8 = 127;

/// A duration with its unit: `500ms`, `10s`, `2m`, `1h`.
fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}`: expected a number and a unit (500ms, 10s, 2m, 1h)"))?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("`{text}`: the unit must be ms, s, m or h")),
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}`: too long"))
}

fn lock_and_run(
    redis: &[String],
    key: &str,
    ttl_ms: u64,
    wait_ms: u64,
    node_timeout_ms: u64,
    command: &[String],
) -> ExitCode {
    use std::net::ToSocketAddrs;

    use locksim::client::{Algorithm, Lock, LockOptions, Retry};
    use locksim::platform::Clock;
    use locksim::real::{HostClock, TcpConnector};

    let mut connectors = Vec::new();
    for address in redis {
        match address.to_socket_addrs().map(|mut addrs| addrs.next()) {
            Ok(Some(addr)) => connectors.push(TcpConnector(addr)),
            Ok(None) | Err(_) => return invalid(format!("--redis: cannot resolve `{address}` (HOST:PORT)")),
        }
    }
    if ttl_ms < 3 {
        return invalid("--ttl: must be at least 3ms, to renew every third of it");
    }
    let algorithm = if connectors.len() > 1 {
        Algorithm::Redlock
    } else {
        Algorithm::LuaRelease
    };
    let options = LockOptions::new(algorithm, ttl_ms)
        .request_timeout_ms(node_timeout_ms)
        .watchdog()
        .retry(Retry {
            // Retry until --wait runs out (the deadline below), or not at all for --wait 0.
            count: if wait_ms == 0 { 0 } else { u32::MAX },
            delay_ms: 100,
            jitter_ms: 100,
        });
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return invalid(format!("cannot start the runtime: {e}")),
    };
    runtime.block_on(async {
        let clock = HostClock::new();
        // Tokens must be unguessable and unique across hosts: seed from the OS.
        let rng: rand_chacha::ChaCha20Rng = rand::make_rng();
        let mut lock = Lock::new(connectors, clock.clone(), rng, options);
        let acquired = tokio::select! {
            biased;
            acquired = lock.acquire(key.as_bytes()) => Some(acquired),
            () = clock.sleep_ms(wait_ms), if wait_ms > 0 => None,
        };
        let lease = match acquired {
            Some(Ok(lease)) => lease,
            Some(Err(e)) => {
                eprintln!("locksim: could not acquire lock `{key}`: {e}");
                return ExitCode::from(EXIT_NOT_ACQUIRED);
            }
            None => {
                eprintln!("locksim: could not acquire lock `{key}` within {wait_ms} ms");
                return ExitCode::from(EXIT_NOT_ACQUIRED);
            }
        };
        let mut child = match std::process::Command::new(&command[0]).args(&command[1..]).spawn() {
            Ok(child) => child,
            Err(e) => {
                eprintln!("locksim: cannot run `{}`: {e}", command[0]);
                let _ = lock.release(&lease).await;
                return ExitCode::from(EXIT_CANNOT_RUN);
            }
        };
        let pid = child.id() as libc::pid_t;
        forward_signals_to(pid);
        // The work is the command: on a lost lock it is sent SIGTERM, and `hold` reports the loss.
        let held = lock
            .hold(&lease, |mut guard| async move {
                let waiting = tokio::task::spawn_blocking(move || child.wait());
                tokio::pin!(waiting);
                tokio::select! {
                    biased;
                    status = &mut waiting => joined(status),
                    _ = guard.lost() => {
                        // SAFETY: kill(2) on the child we spawned and have not reaped yet.
                        unsafe { libc::kill(pid, libc::SIGTERM) };
                        joined(waiting.await)
                    }
                }
            })
            .await;
        if let Err(e) = lock.release(&lease).await {
            eprintln!("locksim: releasing lock `{key}` failed (it expires by itself): {e}");
        }
        match held {
            Ok(Ok(status)) => exit_code_of(status),
            Ok(Err(e)) => {
                eprintln!("locksim: waiting for `{}` failed: {e}", command[0]);
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!(
                    "locksim: {e} (lock `{key}`); `{}` was sent SIGTERM because it no longer runs under the lock",
                    command[0]
                );
                ExitCode::from(EXIT_LOCK_LOST)
            }
        }
    })
}

/// The command's pid, for the signal handler.
static COMMAND_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Passes SIGINT, SIGTERM and SIGHUP sent to locksim on to the command, so that stopping
/// locksim stops the command first: then locksim sees it end and releases the lock, instead
/// of dying and leaving the command running with nobody renewing its lock.
fn forward_signals_to(pid: libc::pid_t) {
    extern "C" fn forward(signal: libc::c_int) {
        let pid = COMMAND_PID.load(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: kill(2) is async-signal-safe; the pid is our unreaped child's.
        unsafe { libc::kill(pid, signal) };
    }
    COMMAND_PID.store(pid, std::sync::atomic::Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `forward` only reads an atomic and calls kill(2).
        unsafe { libc::signal(signal, forward as *const () as libc::sighandler_t) };
    }
}

/// The result of a blocking wait, with a join failure as an I/O error.
fn joined(
    result: Result<std::io::Result<std::process::ExitStatus>, tokio::task::JoinError>,
) -> std::io::Result<std::process::ExitStatus> {
    result.unwrap_or_else(|e| Err(std::io::Error::other(e)))
}

/// A command's status as ours: its exit code, or 128 + the signal that ended it (as shells do).
fn exit_code_of(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code as u8),
        (None, Some(signal)) => ExitCode::from(128 + signal as u8),
        (None, None) => ExitCode::FAILURE,
    }
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
