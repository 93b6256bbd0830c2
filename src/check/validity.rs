//! Validity: a holder must not touch the resource once its grant no longer stands on the
//! nodes that gave it.
//!
//! What a client believes (the validity its acquire computed, on its own clock) is beside
//! the point: a client that never measures how long its acquire took (Kleppmann's second
//! example) believes a lock whose key expired before the reply arrived, and a client whose
//! clock runs a little slow, within the drift allowance, believes a few milliseconds more
//! than true time gives it while its keys still live. So an access is judged against what
//! really happened: at the true instant of the access, the key that granted it must still
//! be on enough nodes (one for a single node, a majority of the masters for Redlock),
//! holding the grant's token, and unexpired on that node's own clock (read from the run's
//! clock log, through every step and re-rate). A key that left a node (deleted, expired,
//! replaced by another client's) does not come back for this grant, even when a key with the
//! same value is set again. After a failover the promoted replica stands in for the master
//! it replaced. A crashed node keeps its key in the count while it is down (nobody can take
//! it there); a restarted one holds what its AOF gave back. The client's belief stays in the
//! message, as evidence.

use std::collections::BTreeMap;

use xxhash_rust::xxh3::xxh3_64;

use super::Verdict;
use super::by_node::ByNode;
use crate::history::{ClockLog, EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "validity";

/// A client's grant while it holds it.
struct Grant<'a> {
    token: &'a str,
    /// The token's hash, by which its departures are found ([`Departed`]).
    token_hash: u64,
    granted_us: u64,
    /// The nodes the granting attempt asked (every one that answered), each renamed to the
    /// replica promoted in its place by any failover since.
    nodes: Vec<&'a str>,
    /// The validity the client last believed it had (ms), and when (true µs) it said so.
    believed_ms: u64,
    believed_at_us: u64,
}

/// The lock key on one node: its value and its expiry on the node's clock.
#[derive(Clone, Copy)]
struct Key<'a> {
    token: &'a str,
    expires_at_us: Option<i64>,
}

/// When (true µs) and why a token left a node; put in words only for a violation's message
/// (a run records thousands of departures and breaks its lock a few times at most).
#[derive(Clone, Copy)]
struct Left<'a> {
    at_us: u64,
    why: Why<'a>,
}

/// Why a token left a node.
#[derive(Clone, Copy)]
enum Why<'a> {
    /// Another client's token was stored over it.
    Replaced(&'a str),
    /// Its time had come on the node's clock (this key, with its expiry).
    Expired(Key<'a>),
    /// It was deleted (a release, or a flush).
    Deleted,
}

/// Why a grant does not stand on one node at one instant.
enum Failure<'a> {
    /// Its token left the node after the grant.
    LeftSince(Left<'a>),
    /// The node holds no key (its token having left it before the grant, if it did).
    NoKey(Option<Left<'a>>),
    /// The node's key holds another token.
    OtherToken(&'a str),
    /// The node's key is the grant's but has expired: the key, and the node's clock then.
    Expired(Key<'a>, i64),
}

/// Everything the checker knows of the nodes at one point of the history.
struct Nodes<'a> {
    history: &'a History,
    /// Each Redis node's state, found by its name once an event: a run names a handful.
    nodes: ByNode<'a, Node<'a>>,
}

/// What the checker knows of one Redis node.
struct Node<'a> {
    /// The lock key it holds, if any.
    key: Option<Key<'a>>,
    /// Its clock over the run, if the history has one (else it reads true time): looked up
    /// once, not at every expiry (issue 33).
    clock: Option<&'a ClockLog>,
    /// The last time each token left it, by [`Departed`].
    left: BTreeMap<Departed<'a>, Left<'a>>,
}

/// Which token left a node: the token's hash, then the token. The tree compares the
/// hashes, and the strings only where two hashes are equal: a run has thousands of
/// departures, and comparing their long tokens byte by byte at every step of the tree cost
/// more than the rest of the checker (issue 33).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Departed<'a>(u64, &'a str);

/// The hash [`Departed`] orders tokens by.
fn token_hash(token: &str) -> u64 {
    xxh3_64(token.as_bytes())
}

impl<'a> Node<'a> {
    /// The node's clock at true time `true_us`, in µs since the run's epoch.
    fn local_us(&self, true_us: u64) -> i64 {
        self.clock
            .and_then(|log| log.local_us(true_us))
            .unwrap_or(true_us as i64)
    }

    fn expired(&self, key: Key, true_us: u64) -> bool {
        key.expires_at_us.is_some_and(|at| self.local_us(true_us) >= at)
    }

    fn leave(&mut self, token: &'a str, at_us: u64, why: Why<'a>) {
        self.left
            .insert(Departed(token_hash(token), token), Left { at_us, why });
    }
}

impl<'a> Nodes<'a> {
    /// Node `node`'s state, made empty on its first event.
    fn node(&mut self, node: &'a str) -> &mut Node<'a> {
        let clocks = &self.history.clocks;
        self.nodes.or_insert_with(node, || Node {
            key: None,
            clock: clocks.get(node),
            left: BTreeMap::new(),
        })
    }

    /// A node stored the key (set, renewed, replicated, read back from its AOF). The key it
    /// replaced left, if it held another value or its time had come.
    fn set(&mut self, node: &'a str, at_us: u64, key: Key<'a>) {
        let node = self.node(node);
        if let Some(old) = node.key.replace(key) {
            if old.token != key.token {
                node.leave(old.token, at_us, Why::Replaced(key.token));
            } else if node.expired(old, at_us) {
                node.leave(old.token, at_us, Why::Expired(old));
            }
        }
    }

    /// The key left a node.
    fn gone(&mut self, node: &'a str, at_us: u64, token: &'a str) {
        let node = self.node(node);
        let why = match node.key.take() {
            Some(old) if node.expired(old, at_us) => Why::Expired(old),
            _ => Why::Deleted,
        };
        node.leave(token, at_us, why);
    }

    /// A node's process started again: it holds nothing until its AOF says otherwise.
    fn restarted(&mut self, node: &str) {
        if let Some(node) = self.nodes.get_mut(node) {
            node.key = None;
        }
    }

    fn expiry(&self, node: &str, key: Key) -> String {
        let at = key.expires_at_us.map_or_else(String::new, fmt_ms);
        format!("expired at {node}-clock={at}")
    }

    /// Why `grant` does not stand on `node` at true time `true_us`, or `None` if it does.
    fn fails_on(&self, grant: &Grant, node: &str, true_us: u64) -> Option<Failure<'a>> {
        let Some(state) = self.nodes.get(node) else {
            return Some(Failure::NoKey(None));
        };
        let left = state.left.get(&Departed(grant.token_hash, grant.token)).copied();
        if let Some(left) = left
            && left.at_us > grant.granted_us
        {
            return Some(Failure::LeftSince(left));
        }
        match state.key {
            None => Some(Failure::NoKey(left)),
            Some(key) if key.token != grant.token => Some(Failure::OtherToken(key.token)),
            Some(key) if state.expired(key, true_us) => Some(Failure::Expired(key, state.local_us(true_us))),
            Some(_) => None,
        }
    }

    /// Why a token left `node`, in words.
    fn left_why(&self, node: &str, left: Left) -> String {
        match left.why {
            Why::Replaced(by) => format!(
                "replaced by token {} at {} ms",
                short(by),
                fmt_ms(left.at_us as i64)
            ),
            Why::Expired(key) => self.expiry(node, key),
            Why::Deleted => format!("deleted at {} ms", fmt_ms(left.at_us as i64)),
        }
    }

    /// Why a grant does not stand on `node`, in words.
    fn failure_text(&self, node: &str, failure: Failure) -> String {
        match failure {
            Failure::LeftSince(left) => self.left_why(node, left),
            Failure::NoKey(None) => "no key".to_string(),
            Failure::NoKey(Some(left)) => format!("no key ({} before the grant)", self.left_why(node, left)),
            Failure::OtherToken(token) => format!("key held token {}", short(token)),
            Failure::Expired(key, local_us) => {
                format!(
                    "{}, and the clock read {} then",
                    self.expiry(node, key),
                    fmt_ms(local_us)
                )
            }
        }
    }
}

/// Finds the first resource access whose grant no longer stood on enough nodes.
pub fn check(history: &History) -> Verdict {
    let mut nodes = Nodes {
        history,
        nodes: ByNode::default(),
    };
    // The nodes each client's current attempt has heard from.
    let mut asked: ByNode<Vec<&str>> = ByNode::default();
    let mut grants: ByNode<Grant> = ByNode::default();
    let violation = history.events.iter().find_map(|event| {
        let (node, at_us) = (event.node.as_str(), event.true_us);
        match &event.kind {
            EventKind::AcquireStarted | EventKind::AttemptFailed { .. } => {
                asked.clear(node);
            }
            EventKind::NodeAnswered {
                request: "acquire",
                redis,
                ..
            } => asked.or_insert_with(node, Vec::new).push(redis),
            EventKind::Acquired {
                token, validity_ms, ..
            } => {
                let mut asked = asked.take_copy(node);
                asked.dedup();
                let grant = Grant {
                    token,
                    token_hash: token_hash(token),
                    granted_us: at_us,
                    nodes: asked,
                    believed_ms: *validity_ms,
                    believed_at_us: at_us,
                };
                grants.insert(node, grant);
            }
            EventKind::Renewed { validity_ms } => {
                if let Some(grant) = grants.get_mut(node) {
                    (grant.believed_ms, grant.believed_at_us) = (*validity_ms, at_us);
                }
            }
            EventKind::ReleaseSent { .. } | EventKind::Crashed => {
                grants.remove(node);
            }
            EventKind::Restarted => nodes.restarted(node),
            EventKind::Failover { promoted, replaced } => {
                for grant in grants.values_mut() {
                    for asked in grant.nodes.iter_mut().filter(|n| **n == replaced.as_str()) {
                        *asked = promoted;
                    }
                }
            }
            EventKind::KeySet { token, expires_at_us } => nodes.set(
                node,
                at_us,
                Key {
                    token,
                    expires_at_us: *expires_at_us,
                },
            ),
            EventKind::KeyGone { token } => nodes.gone(node, at_us, token),
            EventKind::ResourceRead { .. }
            | EventKind::ResourceWrite { .. }
            | EventKind::ResourceRejected { .. } => {
                return grants
                    .get(node)
                    .and_then(|grant| judge(&nodes, node, grant, at_us));
            }
            _ => {}
        }
        None
    });
    Verdict {
        checker: NAME,
        violation,
    }
}

/// Whether `client`'s access at `at_us` under `grant` came after the grant stopped
/// standing: a majority of its nodes (one of one) must still hold the key. A grant whose
/// nodes the history does not name (no node answers recorded) cannot be judged.
fn judge(nodes: &Nodes, client: &str, grant: &Grant, at_us: u64) -> Option<String> {
    let asked = grant.nodes.len();
    let standing = grant
        .nodes
        .iter()
        .filter(|node| nodes.fails_on(grant, node, at_us).is_none())
        .count();
    let needed = asked / 2 + 1;
    (asked > 0 && standing < needed).then(|| {
        // Put in words only now: most accesses stand, and their judgement formats nothing.
        let failures: Vec<String> = grant
            .nodes
            .iter()
            .filter_map(|node| {
                let failure = nodes.fails_on(grant, node, at_us)?;
                Some(format!("{node}: {}", nodes.failure_text(node, failure)))
            })
            .collect();
        let believed_until_us = grant
            .believed_at_us
            .saturating_add(grant.believed_ms.saturating_mul(1000));
        let belief = match grant.believed_ms {
            u64::MAX => "a lock without expiry".to_string(),
            ms => format!(
                "{} ms of validity at {} ms, so until about {} ms",
                ms,
                fmt_ms(grant.believed_at_us as i64),
                fmt_ms(believed_until_us as i64)
            ),
        };
        format!(
            "{client}{ACCESSED_AT}{} ms past its validity: its grant (token {}) stood on \
             {standing} of {asked} node(s), {needed} needed ({}); the client believed it had {belief}",
            fmt_ms(at_us as i64),
            short(grant.token),
            failures.join("; "),
        )
    })
}

/// What a violation says between the client and the true time of its late access.
const ACCESSED_AT: &str = " accessed the resource at ";

/// The true time of the late access a violation of this checker names, in µs: the moment
/// the violation happened (its message also names when the client believed its lock would
/// end, which may come later).
pub fn accessed_at_us(violation: &str) -> Option<u64> {
    let (_, after) = violation.split_once(ACCESSED_AT)?;
    let ms: f64 = after.split_once(" ms")?.0.parse().ok()?;
    Some((ms * 1000.0).round() as u64)
}

/// Tokens are long random strings; eight characters identify one in a message.
pub fn short(token: &str) -> &str {
    &token[..token.len().min(8)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::*;
    use crate::clock_model::ClockModel;
    use crate::history::{Answer, ClockLog, Event};

    /// client-1 acquires at `granted_ms`, `redis-1` (and, for Redlock, the others) having
    /// stored its 2000 ms key `set_ms` earlier and answered.
    fn granted(granted_ms: u64, set_ms: u64, redis: &[&str]) -> Vec<Event> {
        let mut events = vec![attempt(granted_ms - set_ms - 1, "client-1")];
        let set = redis
            .iter()
            .map(|node| key_set(granted_ms - set_ms, node, "client-1-token", 2000));
        events.extend(set.collect::<Vec<_>>());
        let answers = redis
            .iter()
            .map(|node| answered(granted_ms, "client-1", node, Answer::Yes));
        events.extend(answers.collect::<Vec<_>>());
        events.push(acquired(granted_ms, "client-1"));
        events
    }

    #[test]
    fn work_while_the_key_lives_is_fine() {
        let mut events = granted(100, 5, &["redis-1"]);
        events.extend([write(2000, "client-1", 1), release(2050, "client-1")]);
        assert_eq!(check(&history(5000, events)).violation, None);
    }

    #[test]
    fn a_write_after_the_key_expired_on_its_node_violates() {
        let mut events = granted(100, 5, &["redis-1"]);
        // The key expires at 2095 ms (set at 95 ms, TTL 2000 ms); active expiry deletes it
        // a little later, the write comes before that, after the expiry.
        events.extend([
            write(2096, "client-1", 1),
            key_gone(2100, "redis-1", "client-1-token"),
        ]);
        let violation = check(&history(5000, events))
            .violation
            .expect("write past expiry");
        assert!(
            violation.contains("client-1") && violation.contains("expired at redis-1-clock=2095.000"),
            "{violation}"
        );
        assert!(violation.contains("believed it had 2000 ms"), "{violation}");
    }

    #[test]
    fn the_access_time_is_read_back_from_the_message_not_the_belief() {
        let mut events = granted(100, 5, &["redis-1"]);
        events.extend([
            key_gone(1000, "redis-1", "client-1-token"),
            write(1500, "client-1", 1),
        ]);
        let violation = check(&history(5000, events))
            .violation
            .expect("write after the key left");
        assert!(
            violation.contains("until about"),
            "it names the belief too: {violation}"
        );
        assert_eq!(accessed_at_us(&violation), Some(1_500_000));
        assert_eq!(accessed_at_us("client-1 held the lock"), None);
    }

    #[test]
    fn a_grant_whose_reply_came_after_the_key_expired_violates_at_once() {
        // Kleppmann's second example: the reply arrives 2500 ms after the key was set; the
        // client believes a whole TTL, and its first read is inside that belief.
        let mut events = granted(2600, 2500, &["redis-1"]);
        events.insert(2, key_gone(2200, "redis-1", "client-1-token"));
        events.push(read(2700, "client-1", 0));
        let violation = check(&history(5000, events))
            .violation
            .expect("expired before the reply");
        assert!(
            violation.contains("stood on 0 of 1")
                && violation.contains("no key (expired at redis-1-clock=2100.000 before"),
            "{violation}"
        );
    }

    #[test]
    fn a_key_taken_by_another_client_no_longer_stands() {
        let mut events = granted(100, 5, &["redis-1"]);
        events.extend([
            key_gone(500, "redis-1", "client-1-token"),
            key_set(600, "redis-1", "client-2-token", 2000),
            write(700, "client-1", 1),
        ]);
        let violation = check(&history(5000, events))
            .violation
            .expect("deleted and taken");
        assert!(violation.contains("deleted at 500.000"), "{violation}");
    }

    #[test]
    fn a_key_that_left_does_not_stand_again_when_the_same_value_returns() {
        // Tiers 1-3 store the same value for everyone: the next client's key is not ours.
        let mut events = granted(100, 5, &["redis-1"]);
        events[1] = key_set(95, "redis-1", "1", 2000);
        events[3] = at(100, "client-1", acquired_kind("1"));
        events.extend([
            key_set(2500, "redis-1", "1", 2000), // expired unseen, set anew by client-2
            write(2600, "client-1", 1),
        ]);
        assert!(check(&history(5000, events)).violation.is_some());
    }

    #[test]
    fn a_renewal_on_the_node_keeps_the_grant_standing() {
        let mut events = granted(100, 5, &["redis-1"]);
        events.extend([
            key_set(1500, "redis-1", "client-1-token", 2000),
            at(1505, "client-1", EventKind::Renewed { validity_ms: 2000 }),
            write(3000, "client-1", 1),
        ]);
        assert_eq!(check(&history(5000, events)).violation, None);
    }

    #[test]
    fn expiry_is_read_on_the_nodes_clock_not_true_time() {
        // redis-1's clock runs twice as fast: its 2000 ms key lives 1000 ms of true time.
        let fast = ClockLog::new(ClockModel::new(0, 1_000_000));
        let mut events = granted(100, 5, &["redis-1"]);
        events[1].local_us = 190_000;
        events[1].kind = EventKind::KeySet {
            token: "client-1-token".into(),
            expires_at_us: Some(2_190_000),
        };
        events.push(write(1000, "client-1", 1));
        let mut run = history(5000, events.clone());
        run.clocks.insert("redis-1".into(), fast.clone());
        assert_eq!(check(&run).violation, None, "redis-1 reads 2000 ms at 1000 ms");
        events.push(write(1100, "client-1", 2));
        let mut run = history(5000, events);
        run.clocks.insert("redis-1".into(), fast);
        let violation = check(&run).violation.expect("past expiry on the fast clock");
        assert!(violation.contains("the clock read 2200.000"), "{violation}");
    }

    #[test]
    fn redlock_needs_a_majority_of_its_nodes_to_still_hold_the_key() {
        let five = ["redis-1", "redis-2", "redis-3", "redis-4", "redis-5"];
        let mut two_lost = granted(100, 5, &five);
        two_lost.extend([
            key_gone(300, "redis-1", "client-1-token"),
            key_gone(300, "redis-2", "client-1-token"),
            write(400, "client-1", 1),
        ]);
        assert_eq!(check(&history(5000, two_lost.clone())).violation, None);
        two_lost.insert(two_lost.len() - 1, key_gone(350, "redis-3", "client-1-token"));
        let violation = check(&history(5000, two_lost))
            .violation
            .expect("a minority left");
        assert!(
            violation.contains("stood on 2 of 5 node(s), 3 needed"),
            "{violation}"
        );
    }

    #[test]
    fn after_a_failover_the_promoted_replica_stands_in_for_the_master() {
        let replica = "redis-1-replica-1";
        let mut events = granted(100, 5, &["redis-1"]);
        events.push(at(
            300,
            "sentinel",
            EventKind::Failover {
                promoted: replica.into(),
                replaced: "redis-1".into(),
            },
        ));
        events.push(write(400, "client-1", 1));
        let violation = check(&history(5000, events.clone()))
            .violation
            .expect("the replica never had it");
        assert!(violation.contains("redis-1-replica-1: no key"), "{violation}");
        events.insert(2, key_set(96, replica, "client-1-token", 2000));
        assert_eq!(check(&history(5000, events)).violation, None);
    }

    #[test]
    fn accesses_after_the_release_or_without_known_nodes_are_not_judged() {
        let mut events = granted(100, 5, &["redis-1"]);
        events.extend([release(200, "client-1"), write(3000, "client-1", 1)]);
        assert_eq!(check(&history(5000, events)).violation, None);
        let unknown = vec![acquired(100, "client-1"), write(4000, "client-1", 1)];
        assert_eq!(check(&history(5000, unknown)).violation, None);
    }

    fn acquired_kind(token: &str) -> EventKind {
        EventKind::Acquired {
            token: token.into(),
            fence: None,
            validity_ms: 2000,
        }
    }
}
