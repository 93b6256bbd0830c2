//! A node's reply statistics, as Redis 7.0 keeps them until CONFIG RESETSTAT: the error
//! replies it sent, in all (`total_error_replies` in `INFO stats`) and by error code
//! (`INFO errorstats`), and each command's calls, refusals and failures (`INFO
//! commandstats`, and the commands `INFO latencystats` lists).
//!
//! Redis counts an error where it writes one to a client (`afterErrorReply`), so the server
//! counts each reply it sends ([`ErrorStats::count_reply`]). Nested calls are the exception:
//! EXEC counts each queued command's reply as it runs, and a script counts by Redis's rules
//! for scripts (an error a command returns to `redis.call` or `redis.pcall` counts once
//! when it happens, whether the script swallows it or hands it back; the script's own error
//! replies count when it returns them). Their replies go out as [`Reply::Counted`], which
//! the walk skips.
//!
//! A command failed if an error was counted between the start of its call and its end
//! ([`CommandStats::begin`], [`CommandStats::end`]): Redis's `incrCommandStatsOnError`,
//! whose mark every nested call moves, so an EXEC fails by its own error (EXECABORT) and
//! not by its queued commands'.

use std::collections::{BTreeMap, HashMap};

use super::Frame;
use super::connection::Reply;
use super::name_hash::BuildNameHasher;

/// Redis finds an error's code (the text before its first space) within this many bytes of
/// the reply, its leading `-` included; an error without a space there counts as `ERR`.
const CODE_SEARCH_BYTES: usize = 32;

/// Error replies sent since the node started or since CONFIG RESETSTAT.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ErrorStats {
    /// By error code, in byte order (Redis keeps them in a radix tree and lists them so).
    by_code: BTreeMap<Vec<u8>, u64>,
    total: u64,
}

impl ErrorStats {
    /// Counts one error reply; `text` is the reply as sent, without its leading `-`.
    pub fn count(&mut self, text: &str) {
        self.total += 1;
        *self.by_code.entry(code(text).to_vec()).or_default() += 1;
    }

    /// Counts every error in a reply the server sends, EXEC's replies included; a script's
    /// reply ([`Reply::Counted`]) was counted as the script ran.
    pub fn count_reply(&mut self, reply: &Reply) {
        match reply {
            Reply::Frame(frame) => self.count_frame(frame),
            Reply::Map(pairs) => {
                for (key, value) in pairs {
                    self.count_frame(key);
                    self.count_frame(value);
                }
            }
            Reply::Nested(pairs) => {
                for (key, value) in pairs {
                    self.count_frame(key);
                    self.count_reply(value);
                }
            }
            Reply::Replies(replies) => replies.iter().for_each(|reply| self.count_reply(reply)),
            // Counted as its calls ran.
            Reply::Counted(_)
            | Reply::Resp3(_)
            | Reply::Verbatim(_)
            | Reply::Double(_)
            | Reply::Scored(_)
            | Reply::NullArray
            | Reply::Set(_)
            | Reply::Keyed(_)
            | Reply::Pushes(_) => {}
        }
    }

    /// Counts the errors in a frame and hands it back (what a script's run replies).
    pub fn counted(&mut self, frame: Frame) -> Frame {
        self.count_frame(&frame);
        frame
    }

    fn count_frame(&mut self, frame: &Frame) {
        match frame {
            Frame::Error(text) => self.count(text),
            Frame::Array(items) => items.iter().for_each(|item| self.count_frame(item)),
            _ => {}
        }
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&mut self) {
        *self = ErrorStats::default();
    }

    /// Every error reply counted (`total_error_replies`).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// `INFO errorstats`'s lines: `errorstat_CODE:count=N`, codes in byte order.
    pub fn info_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.by_code
            .iter()
            .map(|(code, count)| format!("errorstat_{}:count={count}", String::from_utf8_lossy(code)))
    }
}

/// One command's counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Calls {
    calls: u64,
    rejected: u64,
    failed: u64,
    /// A call of it replied (at once, or served after it blocked), so it has a latency
    /// histogram.
    timed: bool,
}

/// Each command's calls (`INFO commandstats`), by the name Redis gives it (`get`,
/// `client|list`), since the start or CONFIG RESETSTAT.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommandStats {
    /// Hashed, not ordered: every call finds its entry, where a `BTreeMap` compared about
    /// four names a call (issue 33); INFO, rare, puts them in order.
    by_name: HashMap<String, Calls, BuildNameHasher>,
    /// The error count when the last call began or ended, or the last refusal was counted.
    errors_seen: u64,
}

/// What `INFO latencystats` shows for each command: the node takes no time, so every call
/// lands in the histogram's first bucket (as Redis's fastest commands do).
const LATENCY_PERCENTILES: &str = "p50=1.003,p99=1.003,p99.9=1.003";

impl CommandStats {
    /// A call begins.
    pub fn begin(&mut self, errors: &ErrorStats) {
        self.errors_seen = errors.total();
    }

    /// The call to `name` that began last ends: it failed if an error was counted since.
    pub fn end(&mut self, name: &str, errors: &ErrorStats) {
        self.end_call(name, errors, true);
    }

    /// [`CommandStats::end`] of a call that blocked and timed out: Redis 7.0 records no
    /// latency for it.
    pub fn end_timed_out(&mut self, name: &str, errors: &ErrorStats) {
        self.end_call(name, errors, false);
    }

    fn end_call(&mut self, name: &str, errors: &ErrorStats, timed: bool) {
        let failed = errors.total() > self.errors_seen;
        self.update(name, |calls| {
            calls.calls += 1;
            calls.failed += u64::from(failed);
            calls.timed |= timed;
        });
        self.errors_seen = errors.total();
    }

    /// A request refused before it ran, its error counted: a refusal of `name`, if Redis
    /// found the command (none for an unknown command or subcommand).
    pub fn reject(&mut self, name: Option<&str>, errors: &ErrorStats) {
        if let Some(name) = name
            && errors.total() > self.errors_seen
        {
            self.update(name, |calls| calls.rejected += 1);
        }
        self.errors_seen = errors.total();
    }

    /// The call to `name` replied an error counted before (a script's reply of an error a
    /// command returned to it): a failure without a new error.
    pub fn fail(&mut self, name: &str) {
        self.update(name, |calls| calls.failed += 1);
    }

    /// Changes the counts of `name`, from zero if it has none yet: one lookup for a
    /// command seen before (every call but a command's first).
    fn update(&mut self, name: &str, change: impl FnOnce(&mut Calls)) {
        match self.by_name.get_mut(name) {
            Some(calls) => change(calls),
            None => change(self.by_name.entry(name.to_string()).or_default()),
        }
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&mut self) {
        self.by_name.clear();
    }

    /// `INFO commandstats`'s lines, for every command called or refused (no time spent).
    pub fn info_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.in_name_order().map(|(name, calls)| {
            format!(
                "cmdstat_{name}:calls={},usec=0,usec_per_call=0.00,rejected_calls={},failed_calls={}",
                calls.calls, calls.rejected, calls.failed
            )
        })
    }

    /// `INFO latencystats`'s lines, for every command that replied but by a timeout.
    pub fn latency_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.in_name_order()
            .filter(|(_, calls)| calls.timed)
            .map(|(name, _)| format!("latency_percentiles_usec_{name}:{LATENCY_PERCENTILES}"))
    }

    /// Every command's calls, by name in byte order (as Redis's INFO lists them).
    fn in_name_order(&self) -> impl Iterator<Item = (&String, &Calls)> {
        let mut calls: Vec<_> = self.by_name.iter().collect();
        calls.sort_unstable_by_key(|(name, _)| *name);
        calls.into_iter()
    }
}

/// A node's error and command statistics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    pub errors: ErrorStats,
    pub commands: CommandStats,
}

impl Stats {
    /// A call begins (see [`CommandStats::begin`]).
    pub fn begin(&mut self) {
        self.commands.begin(&self.errors);
    }

    /// The call to `name` that began last replied `reply`, and ends.
    pub fn end(&mut self, name: &str, reply: &Reply) {
        self.errors.count_reply(reply);
        self.commands.end(name, &self.errors);
    }

    /// One whole call to `name` that replied `reply` (no call nested in it).
    pub fn call(&mut self, name: &str, reply: &Reply) {
        self.begin();
        self.end(name, reply);
    }

    /// [`Stats::call`] of a call that blocked and timed out with `reply`.
    pub fn call_timed_out(&mut self, name: &str, reply: &Reply) {
        self.begin();
        self.errors.count_reply(reply);
        self.commands.end_timed_out(name, &self.errors);
    }

    /// A request refused before it ran with `reply` (see [`CommandStats::reject`]).
    pub fn refusal(&mut self, name: Option<&str>, reply: &Reply) {
        self.errors.count_reply(reply);
        self.commands.reject(name, &self.errors);
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&mut self) {
        self.errors.reset();
        self.commands.reset();
    }
}

/// The code an error counts under: the bytes before the first space, if the space lies
/// within [`CODE_SEARCH_BYTES`] of the `-` that starts the reply; otherwise `ERR`.
fn code(text: &str) -> &[u8] {
    let bytes = text.as_bytes();
    let searched = &bytes[..bytes.len().min(CODE_SEARCH_BYTES - 1)];
    match searched.iter().position(|&b| b == b' ') {
        Some(space) => &bytes[..space],
        None => b"ERR",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> Frame {
        Frame::Error(text.into())
    }

    /// Every expectation below was read from redis-server 7.0.15's `INFO errorstats` after
    /// CONFIG RESETSTAT and the same replies.
    #[test]
    fn errors_count_under_their_code_in_byte_order() {
        let mut stats = ErrorStats::default();
        stats.count("WRONGTYPE Operation against a key holding the wrong kind of value");
        stats.count("ERR unknown command 'nosuch', with args beginning with: ");
        stats.count("WRONGTYPE Operation against a key holding the wrong kind of value");
        stats.count("lower case");
        stats.count("EXECABORT Transaction discarded because of previous errors.");
        assert_eq!(stats.total(), 5);
        assert_eq!(
            stats.info_lines().collect::<Vec<_>>(),
            [
                "errorstat_ERR:count=1",
                "errorstat_EXECABORT:count=1",
                "errorstat_WRONGTYPE:count=2",
                "errorstat_lower:count=1",
            ]
        );
        stats.reset();
        assert_eq!((stats.total(), stats.info_lines().count()), (0, 0));
    }

    #[test]
    fn an_error_without_a_space_in_its_first_bytes_counts_as_err() {
        // `return redis.error_reply('aaa…a b')` with 42 a's: the reply keeps its text, and
        // counts as ERR.
        assert_eq!(code(&format!("{} b", "a".repeat(42))), b"ERR");
        // The space at byte 31 of the reply (30 bytes of code after the `-`) is still found.
        assert_eq!(code(&format!("{} b", "a".repeat(30))), "a".repeat(30).as_bytes());
        assert_eq!(code(&format!("{} b", "a".repeat(31))), b"ERR");
        assert_eq!(code("nospace"), b"ERR");
    }

    #[test]
    fn exec_replies_count_each_error_and_script_replies_are_skipped() {
        let mut stats = ErrorStats::default();
        stats.count_reply(&Reply::Replies(vec![
            Reply::Frame(Frame::SimpleString(b"OK".to_vec())),
            Reply::Frame(error(
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            )),
            Reply::Counted(Box::new(Reply::Frame(Frame::Array(vec![error("IN array")])))),
            Reply::Frame(error("ERR value is not an integer or out of range")),
        ]));
        assert_eq!(
            stats.info_lines().collect::<Vec<_>>(),
            ["errorstat_ERR:count=1", "errorstat_WRONGTYPE:count=1"]
        );
        assert_eq!(stats.total(), 2);
    }

    /// The counts redis-server 7.0.15 showed (INFO commandstats after CONFIG RESETSTAT) for
    /// `MULTI`, `INCR l` (a list), `EXEC`; `MULTI`, `SET x` (refused: arity), `EXEC`
    /// (EXECABORT); `CLIENT BOGUS` (no such subcommand); `GET` (arity).
    #[test]
    fn a_command_fails_by_its_own_errors_and_refusals_count_apart() {
        let mut stats = Stats::default();
        let ok = || Reply::Frame(Frame::SimpleString(b"OK".to_vec()));
        let wrongtype = error("WRONGTYPE Operation against a key holding the wrong kind of value");
        stats.call("multi", &ok());
        stats.begin();
        stats.call("incr", &Reply::Frame(wrongtype.clone()));
        stats.end(
            "exec",
            &Reply::Counted(Box::new(Reply::Replies(vec![Reply::Frame(wrongtype)]))),
        );
        stats.call("multi", &ok());
        stats.refusal(
            Some("set"),
            &Reply::Frame(error("ERR wrong number of arguments for 'set' command")),
        );
        stats.call(
            "exec",
            &Reply::Frame(error(
                "EXECABORT Transaction discarded because of previous errors.",
            )),
        );
        stats.refusal(
            None,
            &Reply::Frame(error("ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.")),
        );
        stats.refusal(
            Some("get"),
            &Reply::Frame(error("ERR wrong number of arguments for 'get' command")),
        );
        stats.call_timed_out("blpop", &Reply::NullArray);
        let line = |name: &str, calls, rejected, failed| {
            format!(
                "cmdstat_{name}:calls={calls},usec=0,usec_per_call=0.00,rejected_calls={rejected},failed_calls={failed}"
            )
        };
        assert_eq!(
            stats.commands.info_lines().collect::<Vec<_>>(),
            [
                line("blpop", 1, 0, 0),
                line("exec", 2, 0, 1),
                line("get", 0, 1, 0),
                line("incr", 1, 0, 1),
                line("multi", 2, 0, 0),
                line("set", 0, 1, 0),
            ]
        );
        // A command whose only call timed out has no latency (redis-server: `BLPOP l 0.05`
        // on a missing list; served by a push, it has one).
        assert_eq!(
            stats
                .commands
                .latency_lines()
                .map(|l| l.split(':').next().unwrap().to_string())
                .collect::<Vec<_>>(),
            [
                "latency_percentiles_usec_exec",
                "latency_percentiles_usec_incr",
                "latency_percentiles_usec_multi"
            ]
        );
        assert_eq!(stats.errors.total(), 5);
        stats.reset();
        assert_eq!(stats.commands.info_lines().count(), 0);
    }

    /// A script's reply of an error a command returned to it fails the script again,
    /// without a new error (redis-server: `EVAL "return redis.pcall('incr','l')" 0` shows
    /// incr and eval each failed once, one WRONGTYPE).
    #[test]
    fn a_recounted_error_fails_the_call_without_a_new_error() {
        let mut stats = Stats::default();
        stats.begin();
        stats.call(
            "incr",
            &Reply::Frame(error(
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            )),
        );
        stats.commands.fail("eval");
        stats.end(
            "eval",
            &Reply::Counted(Box::new(Reply::Frame(error("WRONGTYPE …")))),
        );
        assert_eq!(stats.errors.total(), 1);
        assert!(
            stats
                .commands
                .info_lines()
                .all(|line| line.ends_with("failed_calls=1"))
        );
    }
}
