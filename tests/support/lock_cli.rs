//! Running `locksim lock` from a test, and a lock client of the test's own to contend
//! with it (tests/real/real_lock_cli.rs, tests/real/real_lock_process.rs).

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use locksim::client::{Algorithm, Lock, LockOptions, Retry};
use locksim::real::HostClock;
use locksim::real::TcpConnector;
use rand_chacha::ChaCha8Rng;

use super::{RedisServer, real_lock};

pub fn locksim_lock(server: &RedisServer, key: &str, args: &[&str]) -> Child {
    lock_at(&server.addr.to_string(), key, args)
}

/// `locksim lock --redis REDIS --key KEY ARGS`, with no password in its environment.
pub fn lock_at(redis: &str, key: &str, args: &[&str]) -> Child {
    lock_command(redis, key, args).spawn().unwrap()
}

pub fn lock_command(redis: &str, key: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_locksim"));
    command
        .args(["lock", "--redis", redis, "--key", key])
        .args(args)
        .env_remove("LOCKSIM_REDIS_PASSWORD")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `command` to its end; its status code, stderr, and how long it took.
pub fn run_timed(command: &mut Command) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr, started.elapsed())
}

pub fn other_client(server: &RedisServer, ttl_ms: u64) -> Lock<TcpConnector, HostClock, ChaCha8Rng> {
    let options = LockOptions::new(Algorithm::LuaRelease, ttl_ms).retry(Retry {
        count: 0,
        delay_ms: 0,
        jitter_ms: 0,
    });
    real_lock(&[server.addr], 9, options)
}

/// Polls `child` until it exits, calling `probe` every 100 ms meanwhile.
pub async fn until_exit(child: Child, mut probe: impl AsyncFnMut()) -> Output {
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        probe().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.wait_with_output().unwrap()
}
