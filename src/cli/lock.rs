//! `lock`: run a command under a lock on real Redis (Redlock with several addresses),
//! renewing it while the command runs, like `etcdctl lock` and `consul lock`.
//!
//! What makes it safe to put in a production script: a node that cannot be reached or
//! refuses the login fails at once with its own exit code; the command runs in its own
//! process group with a parent-death signal, so it never outlives locksim (not even a
//! SIGKILL of locksim); a lost lock signals it and, after a grace period, kills it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use locksim::client::{LockError, Observe, Request, RequestError};
use locksim::live::supervisor::{dies_with_us, signal_group};
use locksim::real::RedisConnector;
use locksim::redis::Frame;
use locksim::redis::connection::ConnectionError;
use locksim::scenario::limits::parse_duration;

use super::invalid;

/// `lock`: Redis cannot be reached (refused, reset, unresolvable): too few nodes for a quorum.
pub const EXIT_UNREACHABLE: u8 = 69;
/// `lock`: the lock was lost while the command ran (it was signalled, then killed).
pub const EXIT_LOCK_LOST: u8 = 70;
/// `lock`: another client held the lock until `--wait` ran out (sysexits' EX_TEMPFAIL).
pub const EXIT_HELD: u8 = 75;
/// `lock`: Redis refused the login or the database (wrong password or user, NOAUTH).
pub const EXIT_LOGIN_REFUSED: u8 = 77;
/// `lock`: Redis gave no usable answer (timeouts, errors) until `--wait` ran out, as
/// `timeout(1)` exits when its time runs out.
pub const EXIT_TIMED_OUT: u8 = 124;
/// `lock`: the command could not be started (as a shell reports it).
pub const EXIT_CANNOT_RUN: u8 = 127;

/// `locksim lock --help`, after the options: an example and every exit code.
pub const LOCK_HELP: &str = "\
Example: run a nightly job at most once at a time across hosts, waiting up to a minute
for another run to finish, with the password from the environment:

  export LOCKSIM_REDIS_PASSWORD=...
  locksim lock --redis redis://app@10.0.0.5:6379/0 --key jobs:nightly --wait 1m \\
      -- ./nightly.sh --full

The command sees LOCKSIM_LOCK_KEY, LOCKSIM_LOCK_TOKEN and, with --fence-counter,
LOCKSIM_FENCING_TOKEN (pass it to the resource you write to, so it can refuse a stale holder).

Exit codes:
  CMD's own    the command ran to its end under the lock (128+N when signal N ended it)
  2            invalid arguments
  69           Redis cannot be reached: connection refused, unresolvable, or a TLS
               handshake that failed (at once)
  70           the lock was lost while the command ran: it was sent --lost-signal, then
               SIGKILL after --lost-grace
  75           the lock was held by another client until --wait ran out (at once with --wait 0)
  77           Redis refused the login: wrong password or user, none given (NOAUTH), or a
               database it does not have (at once)
  124          Redis gave no usable answer (no reply within --node-timeout) until --wait ran out
  127          the command could not be started";

/// What `lock` is asked: the nodes, the lock, and the command to run under it.
#[derive(clap::Args)]
pub struct LockArgs {
    /// Redis nodes, comma-separated: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`,
    /// `rediss://…` for TLS, or `HOST:PORT`; several mean Redlock (a majority must grant). Prefer giving the password
    /// through LOCKSIM_REDIS_PASSWORD or --password-file: argv is visible to every user.
    #[arg(long, value_delimiter = ',', required = true, value_parser = RedisConnector::from_url)]
    pub redis: Vec<RedisConnector>,
    /// Check the certificates of `rediss://` nodes against the CA certificates (PEM) in this
    /// file instead of the public web's roots.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Read the password for nodes whose URL has none from this file (its first line);
    /// otherwise it comes from LOCKSIM_REDIS_PASSWORD, if set.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// The lock's key.
    #[arg(long)]
    pub key: String,
    /// Time to live of the key; renewed every third of it while the command runs.
    #[arg(long, default_value = "10s", value_parser = parse_duration_ms)]
    pub ttl: u64,
    /// How long to keep trying to acquire before giving up (exit 75); 0 tries once.
    #[arg(long, default_value = "30s", value_parser = parse_duration_ms)]
    pub wait: u64,
    /// How long to wait for one Redis node's reply.
    #[arg(long, default_value = "1s", value_parser = parse_duration_ms)]
    pub node_timeout: u64,
    /// Take a fencing token (INCR of KEY:fence) from this node at each acquire and pass it
    /// to the command as LOCKSIM_FENCING_TOKEN.
    #[arg(long, value_name = "URL", value_parser = RedisConnector::from_url)]
    pub fence_counter: Option<RedisConnector>,
    /// The signal the command gets when the lock is lost (TERM, INT, HUP, QUIT, USR1, USR2,
    /// KILL, or a number).
    #[arg(long, default_value = "TERM", value_parser = parse_signal)]
    pub lost_signal: libc::c_int,
    /// How long the command may run on after --lost-signal before it is sent SIGKILL.
    #[arg(long, default_value = "10s", value_parser = parse_duration_ms)]
    pub lost_grace: u64,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// A duration: a number (decimals allowed) and a unit, `250ms`, `1.5s`, `2m`, `1h`; or a
/// bare `0`. Whole milliseconds only (the scenario files' parser, with a unit required).
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let expected = || format!("`{text}`: expected a number and a unit (250ms, 1.5s, 2m, 1h)");
    match parse_duration(text)? {
        (0, _) => Ok(0),
        (_, false) => Err(expected()),
        (ms, true) => u64::try_from(ms).map_err(|_| format!("`{text}`: a duration cannot be negative")),
    }
}

/// A signal by name (`TERM`, `SIGTERM`) or number.
pub fn parse_signal(text: &str) -> Result<libc::c_int, String> {
    if let Ok(number) = text.parse::<libc::c_int>() {
        return if (1..=64).contains(&number) {
            Ok(number)
        } else {
            Err(format!("`{text}`: no such signal"))
        };
    }
    let name = text.strip_prefix("SIG").unwrap_or(text);
    Ok(match name {
        "TERM" => libc::SIGTERM,
        "INT" => libc::SIGINT,
        "HUP" => libc::SIGHUP,
        "QUIT" => libc::SIGQUIT,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "KILL" => libc::SIGKILL,
        _ => {
            return Err(format!(
                "`{text}`: expected TERM, INT, HUP, QUIT, USR1, USR2, KILL or a number"
            ));
        }
    })
}

/// A signal's name for messages (`SIGTERM`), or its number.
fn signal_name(signal: libc::c_int) -> String {
    match signal {
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGUSR1 => "SIGUSR1".into(),
        libc::SIGUSR2 => "SIGUSR2".into(),
        libc::SIGKILL => "SIGKILL".into(),
        other => format!("signal {other}"),
    }
}

/// One node's answer, sorted by what it means for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// Granted (or, for the check before acquiring, answered).
    Yes,
    /// The key holds another client's value.
    Held,
    /// The login or the database was refused.
    LoginRefused(String),
    /// Nothing listens there, or the connection broke.
    Unreachable(String),
    /// No reply in time, or an error reply.
    Unusable(String),
}

impl Answer {
    /// What a request's error means.
    fn of_error(error: &LockError) -> Answer {
        match error {
            LockError::Request(RequestError::Connection(ConnectionError::Io(e)))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::InvalidInput
                ) =>
            {
                Answer::LoginRefused(e.to_string())
            }
            LockError::Request(RequestError::Connection(e)) => Answer::Unreachable(e.to_string()),
            LockError::UnexpectedReply(Frame::Error(reason)) if is_login_error(reason) => {
                Answer::LoginRefused(reason.to_string())
            }
            other => Answer::Unusable(other.to_string()),
        }
    }
}

/// Redis's replies to a connection that has not logged in, or not as someone allowed.
fn is_login_error(reason: &str) -> bool {
    ["NOAUTH", "WRONGPASS", "NOPERM"]
        .iter()
        .any(|prefix| reason.starts_with(prefix))
}

/// The exit code and message when `answers` (one per node, `nodes` and the labels in the
/// same order) rule out getting the lock now: a refused login anywhere, or too many nodes
/// unreachable for a `quorum`.
fn fails_at_once(answers: &[Answer], nodes: &[String], quorum: usize) -> Option<(u8, String)> {
    let labelled = || answers.iter().zip(nodes);
    if let Some((Answer::LoginRefused(reason), node)) =
        labelled().find(|(answer, _)| matches!(answer, Answer::LoginRefused(_)))
    {
        return Some((
            EXIT_LOGIN_REFUSED,
            format!("Redis at {node} refused the login: {reason}"),
        ));
    }
    let unreachable: Vec<String> = labelled()
        .filter_map(|(answer, node)| match answer {
            Answer::Unreachable(reason) => Some(format!("{node} ({reason})")),
            _ => None,
        })
        .collect();
    (unreachable.len() > answers.len() - quorum).then(|| {
        (
            EXIT_UNREACHABLE,
            format!(
                "cannot reach Redis: {}; {quorum} of {} nodes are needed",
                unreachable.join(", "),
                answers.len()
            ),
        )
    })
}

/// Why the lock was not had when the wait ran out, from each node's last answer: as
/// [`fails_at_once`], else held by another, else no usable answer (with the nodes' errors,
/// or, when every node answered, why the last attempt failed: `last_failure`).
fn not_acquired(answers: &[Answer], nodes: &[String], quorum: usize, last_failure: &str) -> (u8, String) {
    if let Some(failure) = fails_at_once(answers, nodes, quorum) {
        return failure;
    }
    if answers.contains(&Answer::Held) {
        return (EXIT_HELD, "it is held by another client".into());
    }
    let reasons: Vec<String> = answers
        .iter()
        .zip(nodes)
        .filter_map(|(answer, node)| match answer {
            Answer::Unusable(reason) | Answer::Unreachable(reason) => Some(format!("{node}: {reason}")),
            _ => None,
        })
        .collect();
    let why = if reasons.is_empty() {
        last_failure.to_string()
    } else {
        reasons.join("; ")
    };
    (EXIT_TIMED_OUT, format!("Redis gave no usable answer ({why})"))
}

/// Keeps each node's latest answer to an acquire, and why the last attempt failed, to say
/// why the lock was not had.
struct LastAnswers {
    answers: Mutex<Vec<Answer>>,
    failure: Mutex<String>,
}

impl Observe for LastAnswers {
    fn answered(&self, request: Request, node: usize, answer: &Result<bool, LockError>) {
        if request != Request::Acquire {
            return;
        }
        let answer = match answer {
            Ok(true) => Answer::Yes,
            Ok(false) => Answer::Held,
            Err(e) => Answer::of_error(e),
        };
        self.answers.lock().expect("never poisoned")[node] = answer;
    }

    fn attempt_failed(&self, _attempt: u32, reason: &str) {
        *self.failure.lock().expect("never poisoned") = reason.to_string();
    }
}

/// Gives nodes whose URL has no password the one from `--password-file` or
/// LOCKSIM_REDIS_PASSWORD; an ACL user with no password anywhere is an error.
fn fill_passwords(nodes: &mut [&mut RedisConnector], password_file: Option<&PathBuf>) -> Result<(), String> {
    let fallback = match password_file {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("--password-file {}: {e}", file.display()))?;
            Some(text.lines().next().unwrap_or("").to_string())
        }
        None => std::env::var("LOCKSIM_REDIS_PASSWORD").ok(),
    };
    for node in nodes.iter_mut().filter(|node| node.password.is_none()) {
        node.password = fallback.clone();
        if node.password.is_none()
            && let Some(user) = &node.user
        {
            return Err(format!(
                "user `{user}` at {} has no password: set LOCKSIM_REDIS_PASSWORD or --password-file",
                node.addr
            ));
        }
    }
    Ok(())
}

/// Connects to a node, logs in and sends PING: a refused login or connection shows here
/// at once, instead of as a `--wait` of retries.
async fn check_node(node: RedisConnector, timeout_ms: u64) -> Answer {
    use locksim::client::Conn;
    let mut conn = Conn::new(node, locksim::real::HostClock::new(), timeout_ms);
    match conn
        .request(&locksim::redis::request::build([b"PING".to_vec()]))
        .await
    {
        Ok(Frame::Error(reason)) if is_login_error(&reason) => Answer::LoginRefused(reason.to_string()),
        Ok(_) => Answer::Yes,
        Err(e) => Answer::of_error(&LockError::Request(e)),
    }
}

/// Runs `lock`: acquires, runs the command under the renewed lock, releases.
pub fn lock_and_run(args: LockArgs) -> ExitCode {
    use locksim::client::{Algorithm, Fencing, Lock, LockOptions, Retry};
    use locksim::platform::Clock;
    use locksim::real::HostClock;

    let LockArgs {
        mut redis,
        tls_ca,
        password_file,
        key,
        ttl: ttl_ms,
        wait: wait_ms,
        node_timeout: node_timeout_ms,
        mut fence_counter,
        lost_signal,
        lost_grace: lost_grace_ms,
        command,
    } = args;
    if ttl_ms < 3 {
        return invalid("--ttl: must be at least 3ms, to renew every third of it");
    }
    let mut every_node: Vec<&mut RedisConnector> = redis.iter_mut().chain(fence_counter.as_mut()).collect();
    if let Err(e) = fill_passwords(&mut every_node, password_file.as_ref()) {
        return invalid(e);
    }
    if let Some(ca_file) = &tls_ca {
        for node in every_node.iter_mut() {
            if let Some(tls) = node.tls.take() {
                match tls.trusting(ca_file) {
                    Ok(tls) => node.tls = Some(tls),
                    Err(e) => return invalid(format!("--tls-ca {e}")),
                }
            }
        }
    }
    let labels: Vec<String> = redis.iter().map(|node| node.addr.to_string()).collect();
    let algorithm = if redis.len() > 1 {
        Algorithm::Redlock
    } else {
        Algorithm::LuaRelease
    };
    let options = LockOptions::new(algorithm, ttl_ms)
        .request_timeout_ms(node_timeout_ms)
        .watchdog()
        .fencing(if fence_counter.is_some() {
            Fencing::Counter
        } else {
            Fencing::None
        })
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
        let last_answers = std::sync::Arc::new(LastAnswers {
            answers: Mutex::new(Vec::new()),
            failure: Mutex::new(String::new()),
        });
        let checks = redis.clone().into_iter().map(|node| check_node(node, node_timeout_ms));
        let counter_check = fence_counter.clone();
        let mut lock = Lock::new(redis, clock.clone(), rng, options).with_observer(last_answers.clone());
        if let Some(counter) = fence_counter {
            lock = lock.with_fence_counter(counter);
        }
        let quorum = lock.quorum();
        let answers = futures::future::join_all(checks).await;
        if let Some((code, message)) = fails_at_once(&answers, &labels, quorum) {
            eprintln!("locksim: could not acquire lock `{key}`: {message}");
            return ExitCode::from(code);
        }
        *last_answers.answers.lock().expect("never poisoned") = answers;
        if let Some(counter) = counter_check {
            let label = [format!("{} (the fence counter)", counter.addr)];
            let answer = check_node(counter, node_timeout_ms).await;
            if let Some((code, message)) = fails_at_once(&[answer], &label, 1) {
                eprintln!("locksim: could not acquire lock `{key}`: {message}");
                return ExitCode::from(code);
            }
        }
        let acquired = tokio::select! {
            biased;
            acquired = lock.acquire(key.as_bytes()) => acquired.ok(),
            () = clock.sleep_ms(wait_ms), if wait_ms > 0 => None,
        };
        let Some(lease) = acquired else {
            let answers = last_answers.answers.lock().expect("never poisoned").clone();
            let failure = last_answers.failure.lock().expect("never poisoned").clone();
            let (code, reason) = not_acquired(&answers, &labels, quorum, &failure);
            let within = if wait_ms == 0 { String::new() } else { format!(" within {wait_ms} ms") };
            eprintln!("locksim: could not acquire lock `{key}`{within}: {reason}");
            return ExitCode::from(code);
        };
        let mut child = std::process::Command::new(&command[0]);
        child
            .args(&command[1..])
            .env("LOCKSIM_LOCK_KEY", &key)
            .env("LOCKSIM_LOCK_TOKEN", &lease.token);
        if let Some(fence) = lease.fence {
            child.env("LOCKSIM_FENCING_TOKEN", fence.to_string());
        }
        let mut child = match dies_with_us(&mut child).spawn() {
            Ok(child) => child,
            Err(e) => {
                eprintln!("locksim: cannot run `{}`: {e}", command[0]);
                let _ = lock.release(&lease).await;
                return ExitCode::from(EXIT_CANNOT_RUN);
            }
        };
        // The command leads its own process group: signals go to all it started.
        let group = child.id() as libc::pid_t;
        forward_signals_to(group);
        let killed = std::cell::Cell::new(false);
        let (killed_ref, grace_clock) = (&killed, clock.clone());
        // The work is the command: on a lost lock it is signalled, then killed after the
        // grace period, and `hold` reports the loss.
        let held = lock
            .hold(&lease, |mut guard| async move {
                let waiting = tokio::task::spawn_blocking(move || child.wait());
                tokio::pin!(waiting);
                tokio::select! {
                    biased;
                    status = &mut waiting => joined(status),
                    _ = guard.lost() => {
                        signal_group(group, lost_signal);
                        tokio::select! {
                            biased;
                            status = &mut waiting => joined(status),
                            () = grace_clock.sleep_ms(lost_grace_ms) => {
                                signal_group(group, libc::SIGKILL);
                                killed_ref.set(true);
                                joined(waiting.await)
                            }
                        }
                    }
                }
            })
            .await;
        // Nothing the command started may run on once the lock is given back.
        signal_group(group, libc::SIGKILL);
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
                let then = if killed.get() {
                    format!(", and SIGKILL {lost_grace_ms} ms later")
                } else {
                    String::new()
                };
                eprintln!(
                    "locksim: {e} (lock `{key}`); `{}` was sent {}{then} because it no longer runs under the lock",
                    command[0],
                    signal_name(lost_signal)
                );
                ExitCode::from(EXIT_LOCK_LOST)
            }
        }
    })
}

/// The command's process group, for the signal handler.
static COMMAND_GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Passes SIGINT, SIGTERM and SIGHUP sent to locksim on to the command's process group, so
/// that stopping locksim stops the command first: then locksim sees it end and releases
/// the lock, instead of dying and leaving the lock to expire.
fn forward_signals_to(group: libc::pid_t) {
    extern "C" fn forward(signal: libc::c_int) {
        let group = COMMAND_GROUP.load(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: kill(2) is async-signal-safe; the group is our command's.
        unsafe { libc::kill(-group, signal) };
    }
    COMMAND_GROUP.store(group, std::sync::atomic::Ordering::SeqCst);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_decimals_and_a_bare_zero() {
        assert_eq!(parse_duration_ms("0"), Ok(0));
        assert_eq!(parse_duration_ms("0s"), Ok(0));
        assert_eq!(parse_duration_ms("250ms"), Ok(250));
        assert_eq!(parse_duration_ms("1.5s"), Ok(1500));
        assert_eq!(parse_duration_ms(".5s"), Ok(500));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("0.25h"), Ok(900_000));
    }

    #[test]
    fn durations_without_unit_finer_than_a_millisecond_or_malformed_are_refused() {
        for bad in [
            "10", "1.5", "s", ".s", "1.2.3s", "1x", "-1s", "0.5ms", "1.0001s", "",
        ] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
        assert!(parse_duration_ms("99999999999999999999h").is_err());
    }

    #[test]
    fn signals_are_named_with_or_without_sig_or_numbered() {
        assert_eq!(parse_signal("TERM"), Ok(libc::SIGTERM));
        assert_eq!(parse_signal("SIGINT"), Ok(libc::SIGINT));
        assert_eq!(parse_signal("9"), Ok(libc::SIGKILL));
        assert!(parse_signal("NOPE").is_err());
        assert!(parse_signal("0").is_err());
    }

    fn nodes(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("node-{i}")).collect()
    }

    #[test]
    fn a_refused_login_anywhere_fails_at_once_with_77() {
        let answers = [Answer::Yes, Answer::LoginRefused("WRONGPASS".into()), Answer::Yes];
        let (code, message) = fails_at_once(&answers, &nodes(3), 2).unwrap();
        assert_eq!(code, EXIT_LOGIN_REFUSED);
        assert!(
            message.contains("node-1") && message.contains("WRONGPASS"),
            "{message}"
        );
    }

    #[test]
    fn unreachable_nodes_fail_at_once_only_when_no_quorum_is_left() {
        let down = || Answer::Unreachable("connection refused".into());
        let one_down = [down(), Answer::Yes, Answer::Yes];
        assert_eq!(fails_at_once(&one_down, &nodes(3), 2), None);
        let two_down = [down(), down(), Answer::Unusable("no reply".into())];
        let (code, message) = fails_at_once(&two_down, &nodes(3), 2).unwrap();
        assert_eq!(code, EXIT_UNREACHABLE);
        assert!(message.contains("node-0 (connection refused)"), "{message}");
    }

    #[test]
    fn a_wait_that_ran_out_is_held_when_a_node_refused_and_timed_out_when_none_answered() {
        let no_reply = || Answer::Unusable("no reply within 1000 ms".into());
        assert_eq!(not_acquired(&[Answer::Held], &nodes(1), 1, "").0, EXIT_HELD);
        assert_eq!(
            not_acquired(&[Answer::Held, no_reply(), no_reply()], &nodes(3), 2, "").0,
            EXIT_HELD
        );
        let (code, message) = not_acquired(&[no_reply()], &nodes(1), 1, "");
        assert_eq!(code, EXIT_TIMED_OUT);
        assert!(message.contains("node-0: no reply"), "{message}");
        let granted_but_failed = not_acquired(&[Answer::Yes], &nodes(1), 1, "no validity left");
        assert_eq!(granted_but_failed.0, EXIT_TIMED_OUT);
        assert!(
            granted_but_failed.1.contains("no validity left"),
            "{}",
            granted_but_failed.1
        );
    }

    #[test]
    fn login_errors_are_told_from_other_errors() {
        let io = |kind: std::io::ErrorKind| {
            LockError::Request(RequestError::Connection(ConnectionError::Io(kind.into())))
        };
        use std::io::ErrorKind;
        assert!(matches!(
            Answer::of_error(&io(ErrorKind::PermissionDenied)),
            Answer::LoginRefused(_)
        ));
        assert!(matches!(
            Answer::of_error(&io(ErrorKind::ConnectionRefused)),
            Answer::Unreachable(_)
        ));
        let noauth = LockError::UnexpectedReply(Frame::Error("NOAUTH Authentication required.".into()));
        assert!(matches!(Answer::of_error(&noauth), Answer::LoginRefused(_)));
        let timeout = LockError::Request(RequestError::Timeout(5));
        assert!(matches!(Answer::of_error(&timeout), Answer::Unusable(_)));
    }
}
