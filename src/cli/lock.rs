//! `lock`'s arguments and exit codes: run a command under a lock on real Redis (Redlock
//! with several addresses), like `etcdctl lock` and `consul lock`. What it does is in
//! `locksim::real::lock`; this maps its outcome to an exit code and a message.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::ExitCode;

use locksim::real::RedisUrl;
use locksim::real::lock::{Failure, LockRequest, NotRun};
use locksim::real::process::SIGNALS;
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
/// `lock`: waiting for the command failed (the system refused to report its end).
pub const EXIT_WAIT_FAILED: u8 = 1;

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
               handshake that failed, on too many nodes for a majority (at once)
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
    #[arg(long, value_delimiter = ',', required = true, value_parser = RedisUrlParser)]
    pub redis: Vec<RedisUrl>,
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
    #[arg(long, value_name = "URL", value_parser = RedisUrlParser)]
    pub fence_counter: Option<RedisUrl>,
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
    SIGNALS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, number)| *number)
        .ok_or_else(|| format!("`{text}`: expected TERM, INT, HUP, QUIT, USR1, USR2, KILL or a number"))
}

/// Parses `--redis` and `--fence-counter` URLs; an error never repeats the argument (clap's
/// own message would, password and all), only the URL with its password masked.
#[derive(Clone)]
struct RedisUrlParser;

impl clap::builder::TypedValueParser for RedisUrlParser {
    type Value = RedisUrl;

    fn parse_ref(
        &self,
        _command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<RedisUrl, clap::Error> {
        let option = arg.map_or(String::new(), |arg| format!("{arg}: "));
        let text = value.to_str().ok_or_else(|| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidUtf8,
                format!("{option}a Redis URL must be UTF-8\n"),
            )
        })?;
        RedisUrl::parse(text)
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{option}{e}\n")))
    }
}

/// Runs `lock`: acquires, runs the command under the renewed lock, releases; the
/// command's status, or the exit code of why it did not run under the lock.
pub fn lock_and_run(args: LockArgs) -> ExitCode {
    let request = LockRequest {
        redis: args.redis,
        tls_ca: args.tls_ca,
        password_file: args.password_file,
        key: args.key,
        ttl_ms: args.ttl,
        wait_ms: args.wait,
        node_timeout_ms: args.node_timeout,
        fence_counter: args.fence_counter,
        lost_signal: args.lost_signal,
        lost_grace_ms: args.lost_grace,
        command: args.command,
    };
    match locksim::real::lock::lock_and_run(request) {
        Ok(status) => exit_code_of(status),
        Err(NotRun {
            failure: Failure::Invalid,
            message,
        }) => invalid(message),
        Err(NotRun { failure, message }) => {
            eprintln!("locksim: {message}");
            ExitCode::from(match failure {
                Failure::Invalid => super::EXIT_INVALID,
                Failure::Unreachable => EXIT_UNREACHABLE,
                Failure::LockLost => EXIT_LOCK_LOST,
                Failure::Held => EXIT_HELD,
                Failure::LoginRefused => EXIT_LOGIN_REFUSED,
                Failure::TimedOut => EXIT_TIMED_OUT,
                Failure::CannotRun => EXIT_CANNOT_RUN,
                Failure::WaitFailed => EXIT_WAIT_FAILED,
            })
        }
    }
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
}
