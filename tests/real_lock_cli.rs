//! `locksim lock` against a real redis-server: the command runs under the lock, its
//! status comes back, and the two ways of not holding the lock have their own exits.

mod support;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use locksim::client::{Algorithm, Conn, Lock, LockOptions, Retry};
use locksim::real::{HostClock, TcpConnector};
use locksim::redis::cmd::Del;
use rand_chacha::ChaCha8Rng;
use support::{RedisServer, real_lock, runtime, until_key_exists};

fn locksim_lock(server: &RedisServer, key: &str, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["lock", "--redis", &server.addr.to_string(), "--key", key])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn other_client(server: &RedisServer, ttl_ms: u64) -> Lock<TcpConnector, HostClock, ChaCha8Rng> {
    let options = LockOptions::new(Algorithm::LuaRelease, ttl_ms).retry(Retry {
        count: 0,
        delay_ms: 0,
        jitter_ms: 0,
    });
    real_lock(&[server.addr], 9, options)
}

/// Polls `child` until it exits, calling `probe` every 100 ms meanwhile.
async fn until_exit(child: Child, mut probe: impl AsyncFnMut()) -> Output {
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        probe().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.wait_with_output().unwrap()
}

/// Waits, polling for up to 10 s, until `locksim lock` (process `pid`) catches SIGTERM: it
/// installs the handler that passes signals on once it holds the lock and has started
/// the command. A SIGTERM before that ends locksim itself.
async fn until_it_forwards_sigterm(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|line| line.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        if caught & (1 << (libc::SIGTERM - 1)) != 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "locksim lock never caught SIGTERM: {status}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn the_command_runs_under_the_renewed_lock_and_its_status_is_returned() {
    let server = RedisServer::start(&[]);
    // The TTL is half the command's run: only renewal keeps the lock. The command leaves
    // `done` behind as it ends; locksim releases after that.
    let done = std::env::temp_dir().join(format!("locksim-cli-done-{}", std::process::id()));
    let _ = std::fs::remove_file(&done);
    let script = "sleep 1.8; : > \"$1\"; exit 3";
    let child = locksim_lock(
        &server,
        "cli",
        &[
            "--ttl",
            "900ms",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            done.to_str().unwrap(),
        ],
    );
    let (output, grants) = runtime().block_on(async {
        let mut other = other_client(&server, 10_000);
        until_key_exists(server.addr, b"cli").await; // locksim has acquired
        let mut grants = 0;
        let output = until_exit(child, async || {
            if let Some(lease) = other.try_acquire(b"cli").await.unwrap() {
                // Ours while the command still ran: two holders. (Once it has ended,
                // locksim releases before it exits, and a grant then is no overlap.)
                if !done.exists() {
                    grants += 1;
                }
                other.release(&lease).await.unwrap();
            }
        })
        .await;
        let free = other.try_acquire(b"cli").await.unwrap().is_some();
        assert!(free, "released when the command ended");
        (output, grants)
    });
    let ended = done.exists();
    let _ = std::fs::remove_file(&done);
    assert!(ended, "the command ran to its end");
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(grants, 0, "nobody else held the lock while the command ran");
}

#[test]
fn a_lock_held_elsewhere_past_the_wait_exits_75() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let mut holder = other_client(&server, 10_000);
        holder.try_acquire(b"busy").await.unwrap().expect("granted");
        let started = Instant::now();
        let output = locksim_lock(&server, "busy", &["--wait", "300ms", "--", "true"])
            .wait_with_output()
            .unwrap();
        assert_eq!(output.status.code(), Some(75));
        assert!(String::from_utf8_lossy(&output.stderr).contains("could not acquire lock `busy`"));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    });
}

#[test]
fn a_lost_lock_signals_the_command_and_exits_70_with_a_message() {
    let server = RedisServer::start(&[]);
    let child = locksim_lock(&server, "lost", &["--ttl", "600ms", "--", "sleep", "30"]);
    let started = Instant::now();
    let output = runtime().block_on(async {
        until_key_exists(server.addr, b"lost").await; // locksim has acquired
        let mut admin = Conn::new(TcpConnector(server.addr), HostClock::new(), 1000);
        let del = Del {
            keys: vec![b"lost".to_vec()],
        };
        admin.request(&del.into_frame()).await.unwrap();
        until_exit(child, async || {}).await
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(70), "{stderr}");
    assert!(
        stderr.contains("lock lost") && stderr.contains("SIGTERM"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the 30 s command was stopped"
    );
}

#[test]
fn several_addresses_lock_with_redlock() {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start(&[])).collect();
    let addresses: Vec<String> = servers.iter().map(|s| s.addr.to_string()).collect();
    let output = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "lock",
            "--redis",
            &addresses.join(","),
            "--key",
            "many",
            "--",
            "sh",
            "-c",
            "exit 4",
        ])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    drop(servers.into_iter().take(2).collect::<Vec<_>>()); // two of three dead: no majority
    let output = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "lock",
            "--redis",
            &addresses.join(","),
            "--key",
            "many",
            "--wait",
            "500ms",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{stderr}");
}

#[test]
fn sigterm_to_locksim_stops_the_command_and_releases_the_lock() {
    let server = RedisServer::start(&[]);
    let child = locksim_lock(&server, "term", &["--ttl", "30s", "--", "sleep", "30"]);
    let started = Instant::now();
    runtime().block_on(async {
        let mut other = other_client(&server, 10_000);
        until_it_forwards_sigterm(child.id()).await;
        assert!(
            other.try_acquire(b"term").await.unwrap().is_none(),
            "locksim holds it"
        );
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let output = until_exit(child, async || {}).await;
        assert_eq!(
            output.status.code(),
            Some(128 + 15),
            "the command's status: killed by SIGTERM"
        );
        let lease = other.try_acquire(b"term").await.unwrap();
        assert!(lease.is_some(), "released at once, not after the 30 s TTL");
    });
    assert!(started.elapsed() < Duration::from_secs(10));
}
