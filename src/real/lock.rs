//! Runs a command under a lock on real Redis (Redlock with several nodes), renewing it
//! while the command runs, like `etcdctl lock` and `consul lock`: the body of
//! `locksim lock`, whose arguments and exit codes live in the binary's `cli/lock.rs`.
//!
//! What makes it safe to put in a production script: a node that cannot be reached (a
//! refused port, a host that does not resolve) or refuses the login is known at once and
//! counted per node, so Redlock goes on with a majority; URLs are only shown with their
//! password masked; the command runs in its own process group with a parent-death signal
//! and a guardian, so neither it nor anything it started outlives locksim (not even a
//! SIGKILL of locksim); a lost lock signals the group and, after a grace period, kills it.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};

use super::process::{Guarded, forward_signals_to, signal_group, signal_name, stop_guardian};
use super::{HostClock, RedisConnector, RedisStream, RedisUrl};
use crate::client::{
    Algorithm, Conn, Fencing, Lock, LockError, LockOptions, Observe, Request, RequestError, Retry,
};
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::connection::ConnectionError;

/// What `locksim lock` asks: the nodes, the lock, and the command to run under it.
#[derive(Debug, Clone)]
pub struct LockRequest {
    /// The nodes; several mean Redlock.
    pub redis: Vec<RedisUrl>,
    /// CA certificates (PEM) for `rediss://` nodes instead of the public web's roots.
    pub tls_ca: Option<PathBuf>,
    /// Where the password of nodes whose URL has none is (its first line); otherwise
    /// LOCKSIM_REDIS_PASSWORD.
    pub password_file: Option<PathBuf>,
    /// The lock's key.
    pub key: String,
    /// The key's time to live, renewed every third of it.
    pub ttl_ms: u64,
    /// How long to keep trying to acquire; 0 tries once.
    pub wait_ms: u64,
    /// How long to wait for one node's reply.
    pub node_timeout_ms: u64,
    /// The node to take a fencing token from (INCR KEY:fence) at each acquire.
    pub fence_counter: Option<RedisUrl>,
    /// The signal the command's group gets when the lock is lost.
    pub lost_signal: libc::c_int,
    /// How long after `lost_signal` the group gets SIGKILL.
    pub lost_grace_ms: u64,
    /// The command and its arguments.
    pub command: Vec<String>,
}

/// Why the command did not run to its end under the lock; each has its own exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The request itself is wrong (a bad `--tls-ca`, a user with no password).
    Invalid,
    /// Too few nodes can be reached (refused, reset, unresolvable) for a majority.
    Unreachable,
    /// The lock was lost while the command ran; it was signalled, then killed.
    LockLost,
    /// Another client held the lock until the wait ran out.
    Held,
    /// A node refused the login or the database.
    LoginRefused,
    /// Redis gave no usable answer until the wait ran out.
    TimedOut,
    /// The command (or its guardian) could not be started.
    CannotRun,
    /// Waiting for the command failed.
    WaitFailed,
}

/// A [`Failure`] and the message that says what happened (URLs shown without passwords).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRun {
    pub failure: Failure,
    pub message: String,
}

impl NotRun {
    fn new(failure: Failure, message: impl Into<String>) -> NotRun {
        NotRun {
            failure,
            message: message.into(),
        }
    }
}

/// One node as `lock` talks to it: its host resolved, or a host that did not resolve,
/// which fails every connection like a refused port (one unreachable node of several).
#[derive(Debug, Clone)]
enum Node {
    Resolved(RedisConnector),
    Unresolved(String),
}

impl Node {
    /// The node `url` names, trusting the CA certificates in `tls_ca` if given.
    fn of(url: &RedisUrl, tls_ca: Option<&Path>) -> Result<Node, NotRun> {
        let addr: SocketAddr = match url.resolve() {
            Ok(addr) => addr,
            Err(reason) => return Ok(Node::Unresolved(reason)),
        };
        let mut node = url
            .connector_at(addr)
            .map_err(|e| NotRun::new(Failure::Invalid, e))?;
        // Only a TLS node, and only with --tls-ca, changes its roots: the others keep theirs.
        if let Some(ca_file) = tls_ca
            && let Some(tls) = node.tls.take()
        {
            let tls = tls
                .trusting(ca_file)
                .map_err(|e| NotRun::new(Failure::Invalid, format!("--tls-ca {e}")))?;
            node.tls = Some(tls);
        }
        Ok(Node::Resolved(node))
    }
}

impl Connect for Node {
    type Stream = Box<dyn RedisStream>;

    /// A resolved node's connection; for a host that did not resolve, an error of kind
    /// [`io::ErrorKind::NotFound`], which reads as an unreachable node.
    async fn connect(&self) -> io::Result<Self::Stream> {
        match self {
            Node::Resolved(node) => node.connect().await,
            Node::Unresolved(reason) => Err(io::Error::new(io::ErrorKind::NotFound, reason.clone())),
        }
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
    /// Nothing listens there, the host does not resolve, or the connection broke.
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
                    io::ErrorKind::PermissionDenied | io::ErrorKind::InvalidInput
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

/// The failure when `answers` (one per node, `nodes` and the labels in the same order)
/// rule out getting the lock now: a refused login anywhere, or too many nodes unreachable
/// for a `quorum`.
fn fails_at_once(answers: &[Answer], nodes: &[String], quorum: usize) -> Option<NotRun> {
    let labelled = || answers.iter().zip(nodes);
    if let Some((Answer::LoginRefused(reason), node)) =
        labelled().find(|(answer, _)| matches!(answer, Answer::LoginRefused(_)))
    {
        return Some(NotRun::new(
            Failure::LoginRefused,
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
        NotRun::new(
            Failure::Unreachable,
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
fn not_acquired(answers: &[Answer], nodes: &[String], quorum: usize, last_failure: &str) -> NotRun {
    if let Some(failure) = fails_at_once(answers, nodes, quorum) {
        return failure;
    }
    if answers.contains(&Answer::Held) {
        return NotRun::new(Failure::Held, "it is held by another client");
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
    NotRun::new(Failure::TimedOut, format!("Redis gave no usable answer ({why})"))
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
fn fill_passwords(nodes: &mut [&mut RedisUrl], password_file: Option<&Path>) -> Result<(), String> {
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
                "user `{user}` at {node} has no password: set LOCKSIM_REDIS_PASSWORD or --password-file"
            ));
        }
    }
    Ok(())
}

/// Connects to a node, logs in and sends PING: a refused login or connection (or a host
/// that does not resolve) shows here at once, instead of as a `--wait` of retries.
async fn check_node(node: Node, timeout_ms: u64) -> Answer {
    let mut conn = Conn::new(node, HostClock::new(), timeout_ms);
    match conn
        .request(&crate::redis::request::build([b"PING".to_vec()]))
        .await
    {
        Ok(Frame::Error(reason)) if is_login_error(&reason) => Answer::LoginRefused(reason.to_string()),
        Ok(_) => Answer::Yes,
        Err(e) => Answer::of_error(&LockError::Request(e)),
    }
}

/// Acquires the lock, runs the command under it (renewed), releases it; the command's
/// status, or why it did not run to its end under the lock. Messages about the release
/// (which cannot change the outcome) go to stderr.
pub fn lock_and_run(request: LockRequest) -> Result<ExitStatus, NotRun> {
    let LockRequest {
        mut redis,
        tls_ca,
        password_file,
        key,
        ttl_ms,
        wait_ms,
        node_timeout_ms,
        mut fence_counter,
        lost_signal,
        lost_grace_ms,
        command,
    } = request;
    let invalid = |message: String| NotRun::new(Failure::Invalid, message);
    if ttl_ms < 3 {
        return Err(invalid(
            "--ttl: must be at least 3ms, to renew every third of it".into(),
        ));
    }
    if command.is_empty() {
        return Err(invalid("no command to run".into()));
    }
    let mut every_url: Vec<&mut RedisUrl> = redis.iter_mut().chain(fence_counter.as_mut()).collect();
    fill_passwords(&mut every_url, password_file.as_deref()).map_err(invalid)?;
    let labels: Vec<String> = redis.iter().map(ToString::to_string).collect();
    let nodes = redis
        .iter()
        .map(|url| Node::of(url, tls_ca.as_deref()))
        .collect::<Result<Vec<Node>, NotRun>>()?;
    let counter = fence_counter
        .as_ref()
        .map(|url| Node::of(url, tls_ca.as_deref()).map(|node| (url.to_string(), node)))
        .transpose()?;
    let algorithm = if nodes.len() > 1 {
        Algorithm::Redlock
    } else {
        Algorithm::LuaRelease
    };
    let options = LockOptions::new(algorithm, ttl_ms)
        .request_timeout_ms(node_timeout_ms)
        .watchdog()
        .fencing(if counter.is_some() {
            Fencing::Counter
        } else {
            Fencing::None
        })
        .retry(Retry {
            // Retry until the wait runs out (the deadline below), or not at all for 0.
            count: if wait_ms == 0 { 0 } else { u32::MAX },
            delay_ms: 100,
            jitter_ms: 100,
        });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| invalid(format!("cannot start the runtime: {e}")))?;
    let not_acquired_because = |within: &str, reason: NotRun| NotRun {
        message: format!("could not acquire lock `{key}`{within}: {}", reason.message),
        ..reason
    };
    runtime.block_on(async {
        let clock = HostClock::new();
        // Tokens must be unguessable and unique across hosts: seed from the OS.
        let rng: rand_chacha::ChaCha20Rng = rand::make_rng();
        let last_answers = Arc::new(LastAnswers {
            answers: Mutex::new(Vec::new()),
            failure: Mutex::new(String::new()),
        });
        let checks = nodes
            .clone()
            .into_iter()
            .map(|node| check_node(node, node_timeout_ms));
        let mut lock = Lock::new(nodes, clock.clone(), rng, options).with_observer(last_answers.clone());
        if let Some((_, node)) = &counter {
            lock = lock.with_fence_counter(node.clone());
        }
        let quorum = lock.quorum();
        let answers = futures::future::join_all(checks).await;
        if let Some(failure) = fails_at_once(&answers, &labels, quorum) {
            return Err(not_acquired_because("", failure));
        }
        *last_answers.answers.lock().expect("never poisoned") = answers;
        if let Some((label, node)) = counter {
            let label = [format!("{label} (the fence counter)")];
            let answer = check_node(node, node_timeout_ms).await;
            if let Some(failure) = fails_at_once(&[answer], &label, 1) {
                return Err(not_acquired_because("", failure));
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
            let reason = not_acquired(&answers, &labels, quorum, &failure);
            let within = if wait_ms == 0 {
                String::new()
            } else {
                format!(" within {wait_ms} ms")
            };
            return Err(not_acquired_because(&within, reason));
        };
        let mut child = std::process::Command::new(&command[0]);
        child
            .args(&command[1..])
            .env("LOCKSIM_LOCK_KEY", &key)
            .env("LOCKSIM_LOCK_TOKEN", &lease.token);
        if let Some(fence) = lease.fence {
            child.env("LOCKSIM_FENCING_TOKEN", fence.to_string());
        }
        // The command leads its own process group: signals go to all it started, and the
        // guardian, armed before the command runs, kills the whole group if locksim dies.
        let (child, mut guardian) = match Guarded::spawn(&mut child) {
            Ok(Guarded { child, guardian }) => (child, guardian),
            Err(e) => {
                let _ = lock.release(&lease).await;
                return Err(NotRun::new(
                    Failure::CannotRun,
                    format!("cannot run `{}`: {e}", command[0]),
                ));
            }
        };
        let group = child.id() as libc::pid_t;
        forward_signals_to(group);
        let killed = std::cell::Cell::new(false);
        let (killed_ref, grace_clock) = (&killed, clock.clone());
        // The work is the command: on a lost lock it is signalled, then killed after the
        // grace period, and `hold` reports the loss.
        let held = lock
            .hold(&lease, |mut guard| async move {
                let mut child = child;
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
        // Nothing the command started may run on once the lock is given back; then the
        // guardian has nothing left to guard.
        signal_group(group, libc::SIGKILL);
        stop_guardian(&mut guardian);
        if let Err(e) = lock.release(&lease).await {
            eprintln!("locksim: releasing lock `{key}` failed (it expires by itself): {e}");
        }
        match held {
            Ok(Ok(status)) => Ok(status),
            Ok(Err(e)) => Err(NotRun::new(
                Failure::WaitFailed,
                format!("waiting for `{}` failed: {e}", command[0]),
            )),
            Err(e) => {
                let then = if killed.get() {
                    format!(", and SIGKILL {lost_grace_ms} ms later")
                } else {
                    String::new()
                };
                Err(NotRun::new(
                    Failure::LockLost,
                    format!(
                        "{e} (lock `{key}`); `{}` was sent {}{then} because it no longer runs under the lock",
                        command[0],
                        signal_name(lost_signal)
                    ),
                ))
            }
        }
    })
}

/// The result of a blocking wait, with a join failure as an I/O error.
fn joined(result: Result<io::Result<ExitStatus>, tokio::task::JoinError>) -> io::Result<ExitStatus> {
    result.unwrap_or_else(|e| Err(io::Error::other(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("node-{i}")).collect()
    }

    #[test]
    fn a_refused_login_anywhere_fails_at_once_with_77() {
        let answers = [Answer::Yes, Answer::LoginRefused("WRONGPASS".into()), Answer::Yes];
        let failure = fails_at_once(&answers, &nodes(3), 2).unwrap();
        assert_eq!(failure.failure, Failure::LoginRefused);
        assert!(
            failure.message.contains("node-1") && failure.message.contains("WRONGPASS"),
            "{failure:?}"
        );
    }

    #[test]
    fn unreachable_nodes_fail_at_once_only_when_no_quorum_is_left() {
        let down = || Answer::Unreachable("connection refused".into());
        let one_down = [down(), Answer::Yes, Answer::Yes];
        assert_eq!(fails_at_once(&one_down, &nodes(3), 2), None);
        let two_down = [down(), down(), Answer::Unusable("no reply".into())];
        let failure = fails_at_once(&two_down, &nodes(3), 2).unwrap();
        assert_eq!(failure.failure, Failure::Unreachable);
        assert!(
            failure.message.contains("node-0 (connection refused)"),
            "{failure:?}"
        );
    }

    #[test]
    fn a_wait_that_ran_out_is_held_when_a_node_refused_and_timed_out_when_none_answered() {
        let no_reply = || Answer::Unusable("no reply within 1000 ms".into());
        assert_eq!(
            not_acquired(&[Answer::Held], &nodes(1), 1, "").failure,
            Failure::Held
        );
        assert_eq!(
            not_acquired(&[Answer::Held, no_reply(), no_reply()], &nodes(3), 2, "").failure,
            Failure::Held
        );
        let timed_out = not_acquired(&[no_reply()], &nodes(1), 1, "");
        assert_eq!(timed_out.failure, Failure::TimedOut);
        assert!(timed_out.message.contains("node-0: no reply"), "{timed_out:?}");
        let granted_but_failed = not_acquired(&[Answer::Yes], &nodes(1), 1, "no validity left");
        assert_eq!(granted_but_failed.failure, Failure::TimedOut);
        assert!(
            granted_but_failed.message.contains("no validity left"),
            "{granted_but_failed:?}"
        );
    }

    #[test]
    fn login_errors_are_told_from_other_errors() {
        let io = |kind: io::ErrorKind| {
            LockError::Request(RequestError::Connection(ConnectionError::Io(kind.into())))
        };
        assert!(matches!(
            Answer::of_error(&io(io::ErrorKind::PermissionDenied)),
            Answer::LoginRefused(_)
        ));
        assert!(matches!(
            Answer::of_error(&io(io::ErrorKind::ConnectionRefused)),
            Answer::Unreachable(_)
        ));
        let noauth = LockError::UnexpectedReply(Frame::Error("NOAUTH Authentication required.".into()));
        assert!(matches!(Answer::of_error(&noauth), Answer::LoginRefused(_)));
        let timeout = LockError::Request(RequestError::Timeout(5));
        assert!(matches!(Answer::of_error(&timeout), Answer::Unusable(_)));
    }

    #[test]
    fn a_host_that_does_not_resolve_is_an_unreachable_node() {
        let url = RedisUrl::parse("redis://:s3cret@no-such-host.invalid:6379").unwrap();
        let node = Node::of(&url, None).unwrap();
        assert!(matches!(node, Node::Unresolved(_)), "{node:?}");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer = runtime.block_on(check_node(node, 1000));
        let Answer::Unreachable(reason) = answer else {
            panic!("{answer:?}");
        };
        assert!(
            reason.contains("cannot resolve") && !reason.contains("s3cret"),
            "{reason}"
        );
        let one_of_three = [Answer::Unreachable(reason), Answer::Yes, Answer::Yes];
        assert_eq!(
            fails_at_once(&one_of_three, &nodes(3), 2),
            None,
            "a majority is left"
        );
    }
}
