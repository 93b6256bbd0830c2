//! `lock`: run a command under a lock on real Redis (Redlock with several addresses),
//! renewing it while the command runs, like `etcdctl lock` and `consul lock`.

use std::net::SocketAddr;
use std::process::ExitCode;

use super::invalid;

/// `lock`: the lock could not be had within `--wait` (sysexits' EX_TEMPFAIL, as `flock -w`).
const EXIT_NOT_ACQUIRED: u8 = 75;
/// `lock`: the lock was lost while the command ran (the command was sent SIGTERM).
const EXIT_LOCK_LOST: u8 = 70;
/// `lock`: the command could not be started (as a shell reports it).
const EXIT_CANNOT_RUN: u8 = 127;

/// A duration with its unit: `500ms`, `10s`, `2m`, `1h`.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
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

pub fn lock_and_run(
    redis: &[SocketAddr],
    key: &str,
    ttl_ms: u64,
    wait_ms: u64,
    node_timeout_ms: u64,
    command: &[String],
) -> ExitCode {
    use locksim::client::{Algorithm, Lock, LockOptions, Retry};
    use locksim::platform::Clock;
    use locksim::real::{HostClock, TcpConnector};

    let connectors: Vec<TcpConnector> = redis.iter().copied().map(TcpConnector).collect();
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
