//! Coverage of dangerous states: did a run get where a lock could break?
//!
//! Antithesis's `sometimes` assertions are the model (see
//! shared/docs/research/report-decides.md): a checker that found nothing proves something
//! only if the search reached the states that would break the lock. Each [`State`] here is
//! one such state, with a stable id, a one-line description, and a detector that is a pure
//! function of the run's [`History`], in a file of its own. A run reaching a state says the
//! search got there; it says nothing of whether the lock survived it (the checkers judge
//! that). A scenario's faults *aim at* some of these states (`Scenario::aims`), and a
//! "holds" over seeds none of which reached an aimed-at state is *not exercised*.
//!
//! The detectors share two views of the history, built here: each client's holds with the
//! nodes that granted them ([`holds`]), and the lock key's life on each node ([`KeyLog`]).

mod clock_jump;
mod crash;
mod cut_off;
mod failover;
mod pause;
mod release;
mod renewal;

use std::fmt;

use super::by_node::ByNode;
use crate::history::{Answer, ClockLog, EventKind, History};

/// A dangerous state a run may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// A replica was promoted while the replaced master held an unexpired lock key that the
    /// promoted node had never stored, whether or not any client believed it held it (read
    /// from the Redis side, so that a lock that refuses the unreplicated grant reaches it
    /// too).
    FailoverUnreplicated,
    /// A replica was promoted while some client held a lock the replaced master granted.
    FailoverWhileHeld,
    /// A Redis node that granted the lock a client holds had its wall clock stepped while
    /// the client held it.
    ClockJumpInQuorum,
    /// A client was paused after a node granted its acquire (or after its grant) and before
    /// its write, past its TTL-based lease, whether or not it then recorded a grant (so
    /// that a client that wakes, finds no validity left and gives up reaches it too).
    HolderPausedPastValidity,
    /// A Redis node that granted the lock a client holds crashed while the client held it.
    CrashInQuorum,
    /// A release reached a node that had granted the lock after the releasing client's key
    /// had left it (expired, deleted or replaced).
    ReleaseAfterExpiry,
    /// A renewal reached a granting node after the key had left it, or its answer came
    /// back (or the client gave up on it) after the key had expired.
    RenewalRacingExpiry,
    /// Every link between a holder and the nodes that granted its lock was cut while it
    /// held the lock.
    HolderCutOff,
}

impl State {
    /// Every state, in the order reports list them.
    pub const ALL: [State; 8] = [
        State::FailoverUnreplicated,
        State::FailoverWhileHeld,
        State::ClockJumpInQuorum,
        State::HolderPausedPastValidity,
        State::CrashInQuorum,
        State::ReleaseAfterExpiry,
        State::RenewalRacingExpiry,
        State::HolderCutOff,
    ];

    /// The stable short id used in seed logs and JSON reports.
    pub fn id(self) -> &'static str {
        match self {
            State::FailoverUnreplicated => "failover-unreplicated",
            State::FailoverWhileHeld => "failover-while-held",
            State::ClockJumpInQuorum => "clock-jump-in-quorum",
            State::HolderPausedPastValidity => "holder-paused-past-validity",
            State::CrashInQuorum => "crash-in-quorum",
            State::ReleaseAfterExpiry => "release-after-expiry",
            State::RenewalRacingExpiry => "renewal-racing-expiry",
            State::HolderCutOff => "holder-cut-off",
        }
    }

    /// The state in one line, for a reader of a report.
    pub fn description(self) -> &'static str {
        match self {
            State::FailoverUnreplicated => {
                "a replica was promoted while the old master held a lock key it never stored"
            }
            State::FailoverWhileHeld => {
                "a replica was promoted while a client held a lock the old master granted"
            }
            State::ClockJumpInQuorum => "the wall clock of a node that granted the held lock was stepped",
            State::HolderPausedPastValidity => {
                "a client paused between a node's yes and its write, past the lock's TTL"
            }
            State::CrashInQuorum => "a node that granted the held lock crashed while it was held",
            State::ReleaseAfterExpiry => {
                "a release reached a node after the releasing client's key had left it"
            }
            State::RenewalRacingExpiry => {
                "a renewal landed, or was answered, after the key it renews had expired"
            }
            State::HolderCutOff => "a holder was cut off from every node that granted its lock",
        }
    }

    /// The state's place in [`State::ALL`] (its declaration order), for tables indexed by
    /// state.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The state an id names, if any.
    pub fn from_id(id: &str) -> Option<State> {
        State::ALL.into_iter().find(|state| state.id() == id)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The states `history` reached, in [`State::ALL`]'s order.
pub fn reached(history: &History) -> Vec<State> {
    let holds = holds(history);
    let keys = KeyLog::of(history);
    let (while_held, unreplicated) = failover::reached(history, &holds, &keys);
    let mut reached = Vec::new();
    for (state, is) in [
        (State::FailoverUnreplicated, unreplicated),
        (State::FailoverWhileHeld, while_held),
        (State::ClockJumpInQuorum, clock_jump::reached(history, &holds)),
        (State::HolderPausedPastValidity, pause::reached(history, &keys)),
        (State::CrashInQuorum, crash::reached(history, &holds)),
        (
            State::ReleaseAfterExpiry,
            release::reached(history, &holds, &keys),
        ),
        (
            State::RenewalRacingExpiry,
            renewal::reached(history, &holds, &keys),
        ),
        (State::HolderCutOff, cut_off::reached(history, &holds)),
    ] {
        if is {
            reached.push(state);
        }
    }
    reached
}

/// One client's hold of the lock: from its `acquired` event until it sent its release,
/// crashed, or the run ended (as mutual exclusion counts a hold).
#[derive(Debug)]
struct Hold<'a> {
    client: &'a str,
    token: &'a str,
    /// The Redis nodes that answered yes to the attempt that granted it: its quorum.
    quorum: Vec<&'a str>,
    /// The index of its `acquired` event.
    from: usize,
    /// The index of the event that ended it, or the number of events if none did.
    to: usize,
}

impl Hold<'_> {
    /// Whether the client held the lock when event `at` happened.
    fn open_at(&self, at: usize) -> bool {
        self.from < at && at < self.to
    }

    /// Whether the client held the lock at true time `true_us`.
    fn open_at_us(&self, history: &History, true_us: u64) -> bool {
        let until_us = history.events.get(self.to).map_or(history.end_us, |e| e.true_us);
        history.events[self.from].true_us <= true_us && true_us < until_us
    }
}

/// Every hold of the history, in the order they began.
fn holds(history: &History) -> Vec<Hold<'_>> {
    // The nodes that said yes to each client's current attempt.
    let mut granting: ByNode<Vec<&str>> = ByNode::default();
    let mut open: ByNode<usize> = ByNode::default();
    let mut holds: Vec<Hold> = Vec::new();
    for (at, event) in history.events.iter().enumerate() {
        let client = event.node.as_str();
        match &event.kind {
            EventKind::AcquireStarted | EventKind::AttemptFailed { .. } => {
                granting.clear(client);
            }
            EventKind::NodeAnswered {
                request: "acquire",
                redis,
                answer: Answer::Yes,
                ..
            } => granting.or_insert_with(client, Vec::new).push(redis),
            EventKind::Acquired { token, .. } => {
                let mut quorum = granting.take_copy(client);
                quorum.sort_unstable();
                quorum.dedup();
                // A grant while still holding (a re-acquire) ends the hold before it.
                if let Some(before) = open.insert(client, holds.len()) {
                    holds[before].to = at;
                }
                holds.push(Hold {
                    client,
                    token,
                    quorum,
                    from: at,
                    to: history.events.len(),
                });
            }
            EventKind::ReleaseSent { .. } | EventKind::Crashed => {
                if let Some(hold) = open.remove(client) {
                    holds[hold].to = at;
                }
            }
            _ => {}
        }
    }
    holds
}

/// The latest hold each client began, followed through the history in order: the lock a
/// client's requests at some event are about (a watchdog that outlives the unlock still
/// renews it), for a detector that walks the events, without scanning every hold at each.
struct LatestHolds<'h, 'a> {
    holds: &'h [Hold<'a>],
    /// How many holds (in the order they began) have begun so far.
    begun: usize,
    /// Each client's latest hold so far, as an index into `holds`.
    by_client: ByNode<'a, usize>,
}

impl<'h, 'a> LatestHolds<'h, 'a> {
    fn new(holds: &'h [Hold<'a>]) -> Self {
        LatestHolds {
            holds,
            begun: 0,
            by_client: ByNode::default(),
        }
    }

    /// The latest hold `client` began before event `at`; `at` never goes back between calls.
    fn before(&mut self, client: &str, at: usize) -> Option<&'h Hold<'a>> {
        while let Some(hold) = self.holds.get(self.begun).filter(|hold| hold.from < at) {
            self.by_client.insert(hold.client, self.begun);
            self.begun += 1;
        }
        let holds = self.holds;
        self.by_client.get(client).map(|&i| &holds[i])
    }
}

/// The lock key on one node after one event: the token it held and its expiry on the
/// node's clock, or `None` when the node held no key (gone, or the process crashed or
/// started afresh).
type Stored<'a> = Option<(&'a str, Option<i64>)>;

/// One change of the lock key on a node.
#[derive(Debug, Clone, Copy)]
enum Change<'a> {
    /// The node stored the key holding this token, to expire then on its clock.
    Set(&'a str, Option<i64>),
    /// The key holding this token left the node (deleted, expired, replaced).
    Gone(&'a str),
    /// The node's process crashed or started again: its memory is gone.
    Wiped,
}

/// The lock key's life on every node, event by event, and the clocks of those nodes.
struct KeyLog<'a> {
    history: &'a History,
    /// Per node: (event index, the node's clock then, the change).
    nodes: ByNode<'a, Vec<(usize, i64, Change<'a>)>>,
    /// Per node that ever held the key, its clock over the run, if the history has one:
    /// looked up once, not at every reading (issue 33).
    clocks: ByNode<'a, Option<&'a ClockLog>>,
}

impl<'a> KeyLog<'a> {
    fn of(history: &'a History) -> Self {
        let mut nodes: ByNode<Vec<(usize, i64, Change)>> = ByNode::default();
        let mut clocks = ByNode::default();
        for (at, event) in history.events.iter().enumerate() {
            let change = match &event.kind {
                EventKind::KeySet { token, expires_at_us } => Change::Set(token, *expires_at_us),
                EventKind::KeyGone { token } => Change::Gone(token),
                EventKind::Crashed | EventKind::Restarted => Change::Wiped,
                _ => continue,
            };
            nodes
                .or_insert_with(&event.node, || {
                    clocks.insert(&event.node, history.clocks.get(event.node.as_str()));
                    Vec::new()
                })
                .push((at, event.local_us, change));
        }
        KeyLog {
            history,
            nodes,
            clocks,
        }
    }

    /// Node `node`'s clock at true time `true_us`; a node the history has no clock for
    /// reads true time.
    fn local_us(&self, node: &str, true_us: u64) -> i64 {
        let clock = match self.clocks.get(node) {
            Some(&clock) => clock,
            None => self.history.clocks.get(node),
        };
        clock
            .and_then(|log| log.local_us(true_us))
            .unwrap_or(true_us as i64)
    }

    /// `node`'s changes recorded after event `after` and before event `before`.
    fn between(&self, node: &str, after: usize, before: usize) -> &[(usize, i64, Change<'a>)] {
        let log = self.nodes.get(node).map_or(&[][..], Vec::as_slice);
        let from = log.partition_point(|(at, _, _)| *at <= after);
        let to = log.partition_point(|(at, _, _)| *at < before);
        &log[from..to.max(from)]
    }

    /// What `node` held just before event `before`.
    fn before(&self, node: &str, before: usize) -> Stored<'a> {
        let log = self.nodes.get(node).map_or(&[][..], Vec::as_slice);
        let recorded = log.partition_point(|(at, _, _)| *at < before);
        match recorded.checked_sub(1).map(|last| log[last].2) {
            Some(Change::Set(token, expires_at_us)) => Some((token, expires_at_us)),
            _ => None,
        }
    }
}

/// Whether `stored` is `token`'s key, unexpired when the node's clock reads `local_us`.
fn live(stored: Stored, token: &str, local_us: i64) -> bool {
    stored.is_some_and(|(held, expires_at_us)| held == token && expires_at_us.is_none_or(|at| local_us < at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_kebab_case_and_read_back() {
        for (i, state) in State::ALL.into_iter().enumerate() {
            assert_eq!(state.index(), i);
            assert_eq!(State::from_id(state.id()), Some(state));
            assert!(state.id().chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            assert!(!state.description().is_empty());
        }
        assert_eq!(State::from_id("no-such-state"), None);
        assert_eq!(State::FailoverUnreplicated.to_string(), "failover-unreplicated");
    }

    #[test]
    fn a_run_without_faults_reaches_nothing() {
        use crate::check::testing::*;
        let run = history(
            10_000,
            vec![
                attempt(0, "client-1"),
                key_set(1, "redis-1", "client-1-token", 2000),
                answered(1, "client-1", "redis-1", Answer::Yes),
                acquired(1, "client-1"),
                write(100, "client-1", 1),
                release(200, "client-1"),
                key_gone(201, "redis-1", "client-1-token"),
            ],
        );
        assert_eq!(reached(&run), []);
    }
}
