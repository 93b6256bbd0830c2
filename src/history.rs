//! The event log of one simulated run, how a trace prints it, and its digest.
//!
//! Every event carries the true (global virtual) time, which only the simulator sees, and
//! the local wall-clock reading of the node it happened on, which is all that node could
//! know. Checkers judge by true time; the gap between the two is what clock faults do.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use xxhash_rust::xxh3::xxh3_128;

pub use crate::clock_model::ClockLog;
pub use node_name::{NodeName, same_text_at};

mod node_name;

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A client started trying to acquire the lock.
    AcquireStarted,
    /// A client's acquire returned success: from here it believes it holds the lock,
    /// for `validity_ms` more (its own estimate), under fencing token `fence` if any.
    Acquired {
        token: String,
        fence: Option<u64>,
        validity_ms: u64,
    },
    /// A client's acquire gave up (retries exhausted, timeout, connection error);
    /// `contended` when Redis answered that someone else holds the lock.
    AcquireFailed { reason: String, contended: bool },
    /// A client read the protected resource (presenting fencing token `fence`, if any).
    ResourceRead { value: i64, fence: Option<u64> },
    /// A client wrote the protected resource (presenting fencing token `fence`, if any).
    ResourceWrite { value: i64, fence: Option<u64> },
    /// The fenced resource refused an access whose token was below the highest seen.
    ResourceRejected { fence: u64, highest: u64 },
    /// A client sent its release: from here it no longer believes it holds the lock.
    ReleaseSent { token: String },
    /// The release returned; `owned` says whether the key still held our token.
    Released { owned: bool },
    /// The release failed (timeout, connection error).
    ReleaseFailed { reason: String },
    /// The holder extended its lock (watchdog renewal, or an explicit extend).
    Renewed { validity_ms: u64 },
    /// The holder learned it lost the lock (a renewal failed) and was told to stop.
    LockLost { reason: String },
    /// The simulator injected a fault.
    FaultStarted { fault: String },
    /// An injected fault ended.
    FaultEnded { fault: String },
    /// The node's process died (a crash fault): its tasks, sockets and memory are gone.
    Crashed,
    /// The node was frozen by a pause (the first of the pauses covering it).
    Paused,
    /// The node goes on: the last pause covering it ended.
    Resumed,
    /// The link from this node to `to` was cut (the first partition or stall covering it).
    LinkCut { to: String },
    /// The link from this node to `to` carries messages again: nothing cuts it any more.
    LinkHealed { to: String },
    /// The node's process started again after a crash.
    Restarted,
    /// The failover controller or a Sentinel (the event's node) promoted
    /// `promoted` to master in place of `replaced`.
    Failover { promoted: String, replaced: String },
    /// A Sentinel's election for a failover of `master` in `epoch` ended: it won `votes` of
    /// the `needed`, or gave up after the election timeout (as `-failover-abort-not-elected`)
    /// and may try again only twice `failover_timeout` after its start. A split vote, two
    /// Sentinels asking at once and each voting for itself, is the usual reason none wins.
    SentinelElection {
        master: String,
        epoch: u64,
        votes: usize,
        needed: usize,
        elected: bool,
    },
    /// A Redis node stored the lock key holding `token`, expiring at `expires_at_us` on the
    /// node's own clock (µs since the run's epoch), or never.
    KeySet {
        token: String,
        expires_at_us: Option<i64>,
    },
    /// The lock key holding `token` left a Redis node (deleted, expired or flushed).
    KeyGone { token: String },
    /// Redis node `redis` answered the client's `request` (`acquire`, `extend`, `release`),
    /// recorded as the reply arrived; `redis_local_us` is that node's clock when it answered
    /// (began writing the reply), or, for no answer, when the client gave up.
    NodeAnswered {
        request: &'static str,
        redis: NodeName,
        answer: Answer,
        redis_local_us: i64,
    },
    /// Acquire attempt number `attempt` got no lock; more attempts may follow.
    AttemptFailed { attempt: u32, reason: String },
    /// A watchdog renewal did not renew (the watchdog may ride it out).
    RenewalFailed { reason: String },
    /// The failover controller or a Sentinel (the event's node) made `node` a replica of
    /// `master`: `REPLICAOF`, then `CLIENT KILL TYPE normal` and `TYPE pubsub`, which close
    /// its clients' connections so that they reconnect and ask for the master. `demoted`
    /// when `node` was answering as a master (the old master, converted).
    Reconfigured {
        node: String,
        master: String,
        demoted: bool,
    },
    // New variants go last: a variant's place is part of every trace digest.
}

/// One node's answer to one request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Answer {
    /// Granted, extended or released.
    Yes,
    /// Refused: the key held another value (or none).
    No,
    /// No usable answer: timeout, connection error, unexpected reply.
    Failed(String),
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventKind::AcquireStarted => write!(f, "acquire-start"),
            EventKind::Acquired {
                token,
                fence,
                validity_ms,
            } => {
                write!(
                    f,
                    "acquired token={} validity={}",
                    short(token),
                    validity(*validity_ms)
                )?;
                fence.map_or(Ok(()), |fence| write!(f, " fence={fence}"))
            }
            EventKind::AcquireFailed { reason, .. } => write!(f, "acquire-failed: {reason}"),
            EventKind::ResourceRead { value, fence } => {
                write!(f, "resource-read value={value}")?;
                fence.map_or(Ok(()), |fence| write!(f, " fence={fence}"))
            }
            EventKind::ResourceWrite { value, fence } => {
                write!(f, "resource-write value={value}")?;
                fence.map_or(Ok(()), |fence| write!(f, " fence={fence}"))
            }
            EventKind::ResourceRejected { fence, highest } => {
                write!(f, "resource-rejected fence={fence} < highest seen {highest}")
            }
            EventKind::ReleaseSent { token } => write!(f, "release-sent token={}", short(token)),
            EventKind::Released { owned: true } => write!(f, "released"),
            EventKind::Released { owned: false } => write!(f, "released: the key was no longer ours"),
            EventKind::ReleaseFailed { reason } => write!(f, "release-failed: {reason}"),
            EventKind::Renewed { validity_ms } => write!(f, "renewed validity={}", validity(*validity_ms)),
            EventKind::LockLost { reason } => write!(f, "lock-lost: {reason}"),
            EventKind::FaultStarted { fault } => write!(f, "fault-start {fault}"),
            EventKind::FaultEnded { fault } => write!(f, "fault-end {fault}"),
            EventKind::Crashed => write!(f, "crashed"),
            EventKind::Restarted => write!(f, "restarted"),
            EventKind::Paused => write!(f, "paused"),
            EventKind::Resumed => write!(f, "resumed"),
            EventKind::LinkCut { to } => write!(f, "link-cut to={to}"),
            EventKind::LinkHealed { to } => write!(f, "link-healed to={to}"),
            EventKind::KeySet {
                token,
                expires_at_us: Some(at),
            } => write!(f, "key-set token={} expires-at={}", short(token), fmt_ms(*at)),
            EventKind::KeySet {
                token,
                expires_at_us: None,
            } => write!(f, "key-set token={} without expiry", short(token)),
            EventKind::KeyGone { token } => write!(f, "key-gone token={}", short(token)),
            EventKind::Failover { promoted, replaced } => {
                write!(
                    f,
                    "failover: {promoted} promoted to master in place of {replaced}"
                )
            }
            EventKind::Reconfigured {
                node,
                master,
                demoted,
            } => {
                let was = if *demoted {
                    " (it answered as a master)"
                } else {
                    ""
                };
                write!(
                    f,
                    "{node} becomes a replica of {master}{was}; CLIENT KILL closes its clients' connections"
                )
            }
            EventKind::SentinelElection {
                master,
                epoch,
                votes,
                needed,
                elected,
            } => {
                let outcome = if *elected {
                    "elected leader"
                } else {
                    "not elected, failover aborted"
                };
                write!(
                    f,
                    "sentinel election for {master} in epoch {epoch}: {outcome} ({votes} of {needed} votes needed)"
                )
            }
            EventKind::NodeAnswered {
                request,
                redis,
                answer,
                redis_local_us,
            } => {
                let answer = match (answer, *request) {
                    (Answer::Yes, "acquire") => "granted",
                    (Answer::Yes, "extend") => "extended",
                    (Answer::Yes, _) => "released",
                    (Answer::No, "acquire") => "refused",
                    (Answer::No, _) => "not ours",
                    (Answer::Failed(reason), _) => {
                        return write!(
                            f,
                            "{request} {redis}: no answer ({reason}) at {redis}-clock={}",
                            fmt_ms(*redis_local_us)
                        );
                    }
                };
                write!(
                    f,
                    "{request} {redis}: {answer} at {redis}-clock={}",
                    fmt_ms(*redis_local_us)
                )
            }
            EventKind::AttemptFailed { attempt, reason } => write!(f, "attempt-{attempt}-failed: {reason}"),
            EventKind::RenewalFailed { reason } => write!(f, "renewal-failed: {reason}"),
        }
    }
}

/// A validity in a trace: milliseconds, or unbounded for a lock without TTL (`u64::MAX`).
fn validity(ms: u64) -> String {
    match ms {
        u64::MAX => "unbounded (no TTL)".to_string(),
        ms => format!("{ms}ms"),
    }
}

/// Tokens are long random strings; eight characters identify one in a trace.
fn short(token: &str) -> &str {
    &token[..token.len().min(8)]
}

/// One entry of the log.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    /// True time since the start of the run, in microseconds.
    pub true_us: u64,
    /// The node it happened on (`client-2`, `redis-1`, `world` for injected faults).
    pub node: NodeName,
    /// That node's wall clock, in microseconds since the run's epoch (true time 0).
    pub local_us: i64,
    pub kind: EventKind,
}

/// When one of the scenario's scheduled faults first struck, and on what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strike {
    /// The fault's index in the scenario's `faults`.
    pub fault: usize,
    /// True time of the strike (for the nemesis: of its first fault), in microseconds.
    pub true_us: u64,
    /// How many events the history held when it struck: what follows in the log came
    /// after the strike, even an event of the same microsecond (the grant whose holder a
    /// `holder` fault waited for came before it).
    pub events_before: usize,
    /// The nodes it struck, as resolved then (`compare-live` compares them across modes).
    pub on: StruckOn,
}

/// What a scheduled fault struck, as the history keeps it ([`Strike`]): its target nodes
/// and its groups as resolved then, and the node `holder` stood for, if it did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StruckOn {
    /// The target nodes (none for a fault that names groups, or the whole network).
    pub targets: Vec<String>,
    /// The groups of a partition, latency or loss, words resolved.
    pub groups: Vec<Vec<String>>,
    /// The node the word `holder` stood for, if the fault named it.
    pub holder: Option<String>,
}

impl StruckOn {
    /// The nodes in words: `client-1`, `[client-1] | [redis-1,redis-2]`.
    pub fn describe(&self) -> String {
        let groups: Vec<String> = self.groups.iter().map(|g| format!("[{}]", g.join(","))).collect();
        match (self.targets.is_empty(), groups.is_empty()) {
            (_, true) => self.targets.join(","),
            (true, false) => groups.join(" | "),
            (false, false) => format!("{} on {}", self.targets.join(","), groups.join(" | ")),
        }
    }
}

/// Which way a frame on a client's connection went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The client wrote a request.
    Sent,
    /// The client read a reply or a pub/sub message.
    Received,
    /// The client gave up waiting for a reply (the text says why).
    NoReply,
}

/// One frame a client wrote to or read from a Redis node, as `locksim replay --commands`
/// lists it. Kept only when asked for (a sweep does not pay for it), beside the history and
/// outside its digest: watching the wire changes nothing in the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireRecord {
    /// True time, in microseconds.
    pub true_us: u64,
    /// The client whose connection it was.
    pub client: String,
    /// That client's wall clock then.
    pub local_us: i64,
    /// The node the connection went to.
    pub redis: String,
    pub direction: Direction,
    /// The request's words, the reply as redis-cli prints it, or why no reply came.
    pub text: String,
    /// How many events the history held then: where it goes in the trace.
    pub events_before: usize,
}

impl fmt::Display for WireRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arrow = match self.direction {
            Direction::Sent => "→",
            Direction::Received => "←",
            Direction::NoReply => "✗",
        };
        write!(f, "{arrow} {} {}", self.redis, self.text)
    }
}

/// The log of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Events in the order they happened.
    pub events: Vec<Event>,
    /// True time at which the run ended, in microseconds.
    pub end_us: u64,
    /// The scheduled faults that struck, in the order they did. A fault whose trigger never
    /// fired is missing: whatever the run shows, it does not show that fault.
    pub strikes: Vec<Strike>,
    /// Every fault the nemesis drew, in the order it struck, as a scenario file writes a
    /// fault (JSON, with `at_ms` the true time it struck): the run's random faults as an
    /// explicit list.
    pub drawn: Vec<String>,
    /// Every node's clock over the run, by node name: what the node's clock read at any
    /// true instant, so a checker can tell when a key expired on its node. Derived from the
    /// seed and the faults, as the events are, so the digest leaves it out.
    pub clocks: BTreeMap<String, ClockLog>,
}

impl History {
    /// The 128-bit XXH3 of every event, field by field, and the end time, in hex: equal
    /// digests mean identical runs. The events are hashed as data, not as the canonical
    /// trace's text: formatting every event was the largest single cost of a seed. (A fast
    /// hash, not a cryptographic one: it tells runs apart, it guards nothing.)
    ///
    /// The fields are gathered into one buffer and hashed at once: XXH3 of a byte stream
    /// does not depend on how the stream was cut, so the digest is the one a streaming
    /// `Xxh3` fed field by field gives, for a fraction of the cost of its ~10 updates an
    /// event (issue 33).
    ///
    /// The buffer has room for 128 bytes an event: the bench workloads' events took more
    /// than 64 each (a node's answer, a token), so a buffer sized for 64 grew once a seed,
    /// copying every byte gathered so far (issue 33); with 128 it never grew there. Room
    /// never written costs nothing.
    pub fn digest(&self) -> String {
        let mut bytes = Bytes(Vec::with_capacity(DIGEST_BYTES_AN_EVENT * self.events.len() + 16));
        self.events.hash(&mut bytes);
        self.end_us.hash(&mut bytes);
        format!("{:032x}", xxh3_128(&bytes.0))
    }
}

/// The room [`History::digest`] makes for each event's bytes.
const DIGEST_BYTES_AN_EVENT: usize = 128;

/// A `Hasher` that keeps the bytes it is fed, in order, for one hash of them all.
struct Bytes(Vec<u8>);

impl Hasher for Bytes {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        unreachable!("the digest hashes the bytes gathered, with xxh3_128")
    }
}

/// Whether `text` (a fault, a checker's message) names `node` as a whole word: `client-1`
/// is not named in `client-12`, nor `redis-1` in `redis-1-replica-1`.
pub fn names_node(text: &str, node: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .any(|word| word == node)
}

/// Formats microseconds as milliseconds with three decimals (`5000.125`).
pub fn fmt_ms(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let us = us.unsigned_abs();
    format!("{sign}{}.{:03}", us / 1000, us % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(value: i64) -> History {
        History {
            events: vec![Event {
                true_us: 1500,
                node: "client-1".into(),
                local_us: 1499,
                kind: EventKind::ResourceWrite { value, fence: None },
            }],
            end_us: 2000,
            strikes: Vec::new(),
            drawn: Vec::new(),
            clocks: BTreeMap::new(),
        }
    }

    #[test]
    fn the_digest_is_the_streaming_xxh3_of_every_field() {
        // What the digest was before it gathered the bytes first: runs digested then and
        // now compare equal. Long enough to cross XXH3's 240-byte and stripe boundaries.
        let mut long = history(7);
        for i in 0..40 {
            long.events.push(Event {
                true_us: 2000 + i,
                node: format!("redis-{i}").into(),
                local_us: i as i64 - 3,
                kind: EventKind::AcquireFailed {
                    reason: "no quorum".repeat(i as usize),
                    contended: i % 2 == 0,
                },
            });
        }
        for run in [history(1), long] {
            let mut streamed = xxhash_rust::xxh3::Xxh3::new();
            run.events.hash(&mut streamed);
            run.end_us.hash(&mut streamed);
            assert_eq!(run.digest(), format!("{:032x}", streamed.digest128()));
        }
    }

    #[test]
    fn a_node_is_named_as_a_whole_word() {
        assert!(names_node("client-1 held", "client-1"));
        assert!(names_node("client-1's key", "client-1"));
        assert!(!names_node("client-12 held", "client-1"));
        assert!(!names_node("pause redis-1-replica-1", "redis-1"));
        assert!(names_node("partition [redis-1] | [redis-1-replica-1]", "redis-1"));
    }

    #[test]
    fn digest_depends_on_every_event() {
        assert_eq!(history(1).digest(), history(1).digest());
        assert_ne!(history(1).digest(), history(2).digest());
        assert_eq!(history(1).digest().len(), 32);
    }

    #[test]
    fn milliseconds_format_keeps_sign_and_fraction() {
        assert_eq!(fmt_ms(5_000_125), "5000.125");
        assert_eq!(fmt_ms(-1_500), "-1.500");
    }
}
