//! `locksim lock` never lets its command outlive it or the lock, against a real
//! redis-server: signals sent to locksim reach the command's group, what the command
//! leaves running is killed before the release, and when locksim itself is killed
//! (SIGKILL included) the command and everything it started die too. Every process a test
//! starts is stopped by it.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use locksim::client::Conn;
use locksim::real::{HostClock, TcpConnector};
use locksim::redis::cmd::Del;
use support::lock_cli::{locksim_lock, other_client, until_exit};
use support::{RedisServer, runtime, until_key_exists};

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn has_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
        Err(_) => true,
    }
}

/// Waits, polling, for up to `limit` until process `pid` has ended; panics otherwise
/// (after killing it, so that no test leaves it running).
fn until_ended(pid: u32, limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    while !has_ended(pid) {
        if Instant::now() > deadline {
            // SAFETY: kill(2); the process is one this test had started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("{what} (pid {pid}) still ran {limit:?} later");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits, polling for up to 10 s, until `file` holds a pid (written by a command), and
/// returns it.
fn until_pid_in(file: &std::path::Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "{} never held a pid", file.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The processes of process group `group` that have not ended: (pid, command name).
fn group_members(group: u32) -> Vec<(u32, String)> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // ended since the listing
        };
        // pid (comm) state ppid pgrp ...: the name is in parentheses and may hold spaces.
        let (Some(open), Some((before, rest))) = (stat.find('('), stat.rsplit_once(')')) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ended = matches!(fields.first(), Some(&("Z" | "X")));
        if !ended && fields.get(2).and_then(|pgrp| pgrp.parse::<u32>().ok()) == Some(group) {
            members.push((pid, before[open + 1..].to_string()));
        }
    }
    members
}

/// Waits, polling for up to `limit`, until every process of the command's group `group`
/// has ended; otherwise kills them (no test leaves them) and panics naming them.
fn until_group_is_gone(group: u32, limit: Duration) {
    let deadline = Instant::now() + limit;
    while !group_members(group).is_empty() {
        if Instant::now() > deadline {
            let left = group_members(group);
            // SAFETY: kill(2) on the group this test's command made.
            unsafe { libc::kill(-(group as libc::pid_t), libc::SIGKILL) };
            panic!("the command's group outlived locksim by {limit:?}: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits, polling for up to `limit`, until `done` holds; panics with `what` otherwise.
fn until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
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

#[test]
fn a_command_ignoring_the_lost_signal_is_killed_after_the_grace_period_with_all_it_started() {
    let server = RedisServer::start(&[]);
    let dir = support::cli::scratch("ignores");
    let pid_file = dir.join("pid");
    // The shell and its background sleep both ignore SIGHUP, the signal asked for.
    let script = "trap '' HUP; sleep 30 & echo $! > \"$1\"; wait";
    let args = [
        "--ttl",
        "600ms",
        "--lost-signal",
        "HUP",
        "--lost-grace",
        "300ms",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        pid_file.to_str().unwrap(),
    ];
    let child = locksim_lock(&server, "ignored", &args);
    let started = Instant::now();
    let output = runtime().block_on(async {
        until_key_exists(server.addr, b"ignored").await;
        let sleeper = until_pid_in(&pid_file);
        let mut admin = Conn::new(TcpConnector(server.addr), HostClock::new(), 1000);
        let del = Del {
            keys: vec![b"ignored".to_vec()],
        };
        admin.request(&del.into_frame()).await.unwrap();
        let output = until_exit(child, async || {}).await;
        until_ended(sleeper, Duration::from_secs(1), "the command's background sleep");
        output
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(70), "{stderr}");
    assert!(
        stderr.contains("lock lost") && stderr.contains("SIGHUP, and SIGKILL 300 ms later"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn killing_locksim_with_sigkill_or_sigquit_ends_the_command_within_a_second() {
    let server = RedisServer::start(&[]);
    for signal in ["-KILL", "-QUIT"] {
        let pid_file = support::cli::scratch(&format!("orphan{signal}")).join("pid");
        let args = [
            "--",
            "sh",
            "-c",
            "echo $$ > \"$1\"; exec sleep 30",
            "sh",
            pid_file.to_str().unwrap(),
        ];
        // Each its own key: the killed one's lock stays until its TTL runs out.
        let mut child = locksim_lock(&server, &format!("orphan{signal}"), &args);
        let command = until_pid_in(&pid_file);
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        child.wait().unwrap();
        until_ended(
            command,
            Duration::from_secs(1),
            &format!("the command after kill {signal}"),
        );
    }
}

#[test]
fn what_the_command_leaves_running_is_killed_before_the_lock_is_released() {
    let server = RedisServer::start(&[]);
    let pid_file = support::cli::scratch("leftover").join("pid");
    let args = [
        "--",
        "sh",
        "-c",
        "sleep 30 & echo $! > \"$1\"",
        "sh",
        pid_file.to_str().unwrap(),
    ];
    let output = locksim_lock(&server, "leftover", &args)
        .wait_with_output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    until_ended(
        until_pid_in(&pid_file),
        Duration::from_secs(1),
        "the background sleep",
    );
}

#[test]
fn sigkill_of_locksim_kills_everything_its_command_started() {
    let server = RedisServer::start(&[]);
    let pid_file = support::cli::scratch("guardian").join("pid");
    // A multi-line cron script: a background job and a foreground one, neither exec'd.
    let script = "echo $$ > \"$1\"; sleep 301 & sleep 302";
    let args = ["--", "sh", "-c", script, "sh", pid_file.to_str().unwrap()];
    let mut child = locksim_lock(&server, "guarded", &args);
    let group = until_pid_in(&pid_file);
    let sleeps = || {
        group_members(group)
            .iter()
            .filter(|(_, name)| name == "sleep")
            .count()
    };
    until(Duration::from_secs(10), "both sleeps start", || sleeps() == 2);
    let status = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait().unwrap();
    until_group_is_gone(group, Duration::from_secs(5));
}

#[test]
fn a_command_that_kills_locksim_as_it_starts_leaves_nothing_running() {
    // The earliest moment locksim can die with its command running: the command's own
    // first steps. The command's group is guarded before the command runs (the guardian
    // starts first), so the background job it started a moment before dies too.
    let server = RedisServer::start(&[]);
    let pid_file = support::cli::scratch("first-act").join("pid");
    let script = "sleep 305 & echo $$ > \"$1\"; kill -9 $PPID; sleep 306";
    let args = ["--", "sh", "-c", script, "sh", pid_file.to_str().unwrap()];
    let mut child = locksim_lock(&server, "first-act", &args);
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL),
        "the command killed locksim"
    );
    let group = until_pid_in(&pid_file);
    until_group_is_gone(group, Duration::from_secs(5));
}
