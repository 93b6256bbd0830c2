//! Why the lock was not had: a liveness story (the lock free while wanted, a client
//! starved, a key outliving its dead holder) tells why each try failed and why no
//! failover came, in a few steps. Each failed acquire attempt of a client the violation
//! involves is read from the answers its nodes gave ([`Cause`]: refused for another
//! client's key, an error reply such as `READONLY` or `NOREPLICAS`, no answer, a Redlock
//! quorum not reached with each node's answer); tries that failed for one cause become one
//! step ("12 tries by client-1 from 3100.000 to 9800.000 ms all got READONLY … from
//! redis-1"), and so do the Sentinel elections that failed.

use std::collections::{BTreeMap, BTreeSet};

use super::keys::KeyLife;
use super::step::Step;
use super::words::{actor, count, list, owners, reason};
use crate::history::{Answer, Event, EventKind, History, fmt_ms};

/// The most causes a story tells apart; the rest it counts in one step.
const MAX_CAUSES: usize = 5;

/// What one node answered one try.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Granted,
    /// Refused: the node held a key, the named client's if known.
    Refused(Option<String>),
    /// An error reply or no answer, in short.
    Error(String),
}

impl Outcome {
    fn word(&self) -> String {
        match self {
            Outcome::Granted => "granted".into(),
            Outcome::Refused(_) => "refused".into(),
            Outcome::Error(error) => error.clone(),
        }
    }
}

/// Why one try failed, as tries are grouped: the same cause in other words is the same.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Cause {
    /// The one node asked refused: it held a key.
    Refused { node: String },
    /// The one node asked gave an error reply or no answer.
    Error { node: String, error: String },
    /// Several nodes asked, fewer than a majority granted.
    NoQuorum { asked: usize },
    /// What the client library said, when the answers do not say it (none recorded, or
    /// enough granted and the grant still given up).
    Said { reason: String },
}

/// What each node answered one try, in the order the answers came.
type Answers = Vec<(String, Outcome)>;

/// One failed try.
struct Try<'h> {
    event: &'h Event,
    answers: Answers,
    cause: Cause,
}

/// The failed tries of `clients` (every client, if empty) that ended in
/// `[from_us, to_us]`, in order.
fn failed_tries<'h>(
    history: &'h History,
    life: &KeyLife,
    owner: &dyn Fn(&str, usize) -> Option<String>,
    clients: &BTreeSet<String>,
    (from_us, to_us): (u64, u64),
) -> Vec<Try<'h>> {
    // Each client's acquire going on: the answers to its attempt so far, and whether an
    // attempt of it failed already (its `AcquireFailed` then ends no try of its own).
    let mut open: BTreeMap<&str, (Answers, bool)> = BTreeMap::new();
    let mut tries = Vec::new();
    for (index, event) in history.events.iter().enumerate() {
        let client = event.node.as_str();
        let ended = match &event.kind {
            EventKind::AcquireStarted => {
                open.insert(client, (Vec::new(), false));
                None
            }
            EventKind::NodeAnswered {
                request: "acquire",
                redis,
                answer,
                ..
            } => {
                let outcome = match answer {
                    Answer::Yes => Outcome::Granted,
                    Answer::No => {
                        Outcome::Refused(life.refused_for.get(&index).and_then(|t| owner(t, index)))
                    }
                    Answer::Failed(why) => Outcome::Error(reason(why)),
                };
                open.entry(client)
                    .or_default()
                    .0
                    .push((redis.to_string(), outcome));
                None
            }
            EventKind::AttemptFailed { reason: why, .. } => open.get_mut(client).map(|(answers, tried)| {
                *tried = true;
                (std::mem::take(answers), why)
            }),
            EventKind::AcquireFailed { reason: why, .. } => open
                .remove(client)
                .filter(|(_, tried)| !tried)
                .map(|(answers, _)| (answers, why)),
            EventKind::Acquired { .. } | EventKind::Crashed => {
                open.remove(client);
                None
            }
            _ => None,
        };
        let Some((answers, why)) = ended else { continue };
        if (from_us..=to_us).contains(&event.true_us) && (clients.is_empty() || clients.contains(client)) {
            let cause = cause(&answers, why);
            tries.push(Try {
                event,
                answers,
                cause,
            });
        }
    }
    tries
}

/// Why a try with these answers failed, the client saying `why`.
fn cause(answers: &[(String, Outcome)], why: &str) -> Cause {
    let granted = answers.iter().filter(|(_, o)| *o == Outcome::Granted).count();
    let said = || Cause::Said { reason: reason(why) };
    match answers {
        [] => said(),
        [(node, Outcome::Refused(_))] => Cause::Refused { node: node.clone() },
        [(node, Outcome::Error(error))] => Cause::Error {
            node: node.clone(),
            error: error.clone(),
        },
        _ if granted > answers.len() / 2 => said(),
        _ => Cause::NoQuorum { asked: answers.len() },
    }
}

/// The tries of one cause.
struct Group<'h> {
    cause: Cause,
    tries: Vec<&'h Try<'h>>,
}

impl Group<'_> {
    fn step(&self, history: &History) -> Step {
        let first = self.tries[0].event;
        let last = self.tries[self.tries.len() - 1].event;
        let clients: Vec<String> = self.tries.iter().map(|t| t.event.node.to_string()).collect();
        let n = self.tries.len();
        let who = match n {
            1 => format!("a try by {}", first.node),
            n => format!(
                "{n} tries by {} from {} to {} ms",
                list(&clients),
                fmt_ms(first.true_us as i64),
                fmt_ms(last.true_us as i64)
            ),
        };
        let all = if n == 1 { "" } else { "all " };
        let holders = |refusals: &mut dyn Iterator<Item = &Outcome>| -> Vec<String> {
            let holders: BTreeSet<String> = refusals
                .filter_map(|o| match o {
                    Outcome::Refused(Some(holder)) => Some(holder.clone()),
                    _ => None,
                })
                .collect();
            holders.into_iter().collect()
        };
        let text = match &self.cause {
            Cause::Refused { node } => {
                let held = holders(&mut self.tries.iter().flat_map(|t| t.answers.iter().map(|(_, o)| o)));
                let whose = match held.as_slice() {
                    [] => "a key of another client".to_string(),
                    held => format!("{} key", owners(held).replace(" and ", " or ")),
                };
                let were = if n == 1 { "is" } else { "are all" };
                format!("{who} {were} refused by {node}, which held {whose}")
            }
            Cause::Error { node, error } => {
                let verb = if n == 1 { "gets" } else { "get" };
                format!(
                    "{who} {all}{verb} {error} from {node}{}",
                    why_readonly(history, node, error, first)
                )
            }
            Cause::NoQuorum { asked } => {
                let most = self
                    .tries
                    .iter()
                    .map(|t| t.answers.iter().filter(|(_, o)| *o == Outcome::Granted).count())
                    .max()
                    .unwrap_or(0);
                let (at_most, fall) = if n == 1 {
                    ("", "falls")
                } else {
                    ("at most ", "fall")
                };
                format!(
                    "{who} {all}{fall} short of a quorum ({at_most}{most} of {asked} nodes granted, {} needed): {}",
                    asked / 2 + 1,
                    self.per_node()
                )
            }
            Cause::Said { reason } => {
                let fail = if n == 1 { "fails" } else { "fail" };
                format!("{who} {all}{fail}: {reason}")
            }
        };
        Step::of(first, text, None)
    }

    /// Each node's answers to the tries, nodes that answered alike together:
    /// `redis-1 and redis-2 granted, redis-3..5 refused (holding client-2's key)`.
    fn per_node(&self) -> String {
        let mut by_node: BTreeMap<&str, BTreeSet<&Outcome>> = BTreeMap::new();
        for (node, outcome) in self.tries.iter().flat_map(|t| &t.answers) {
            by_node.entry(node).or_default().insert(outcome);
        }
        let mut alike: Vec<(Vec<String>, BTreeSet<String>, BTreeSet<String>)> = Vec::new();
        for (node, outcomes) in by_node {
            let words: BTreeSet<String> = outcomes.iter().map(|o| o.word()).collect();
            let held: BTreeSet<String> = outcomes
                .iter()
                .filter_map(|o| match o {
                    Outcome::Refused(Some(holder)) => Some(holder.clone()),
                    _ => None,
                })
                .collect();
            match alike.iter_mut().find(|(_, w, _)| *w == words) {
                Some((nodes, _, holders)) => {
                    nodes.push(node.to_string());
                    holders.extend(held);
                }
                None => alike.push((vec![node.to_string()], words, held)),
            }
        }
        let told: Vec<String> = alike
            .into_iter()
            .map(|(nodes, words, held)| {
                let words: Vec<String> = words.into_iter().collect();
                let holding = match held.is_empty() {
                    true => String::new(),
                    false => {
                        let held: Vec<String> = held.into_iter().collect();
                        format!(" (holding {} key)", owners(&held).replace(" and ", " or "))
                    }
                };
                format!("{} {}{holding}", list(&nodes), words.join(" or "))
            })
            .collect();
        told.join(", ")
    }
}

/// Why a node answers `READONLY`, if the history says: the latest promotion of another
/// node in its place before `first` (` (the failover controller had promoted
/// redis-1-replica-1 in its place at 3524.205 ms)`).
fn why_readonly(history: &History, node: &str, error: &str, first: &Event) -> String {
    if !error.starts_with("READONLY") {
        return String::new();
    }
    history
        .events
        .iter()
        .take_while(|e| e.true_us <= first.true_us)
        .filter_map(|e| match &e.kind {
            EventKind::Failover { promoted, replaced } if replaced == node => Some((e, promoted)),
            _ => None,
        })
        .last()
        .map_or(String::new(), |(e, promoted)| {
            format!(
                " ({} had promoted {promoted} in its place at {} ms)",
                actor(&e.node),
                fmt_ms(e.true_us as i64)
            )
        })
}

/// The steps that say why the lock was not had: the failed tries of `clients` (every
/// client, if empty) in `span`, one step per cause, and the Sentinel elections there.
pub(super) fn why_not_had(
    history: &History,
    life: &KeyLife,
    owner: &dyn Fn(&str, usize) -> Option<String>,
    clients: &BTreeSet<String>,
    span: (u64, u64),
) -> Vec<Step> {
    let tries = failed_tries(history, life, owner, clients, span);
    let mut groups: Vec<Group> = Vec::new();
    for t in &tries {
        match groups.iter_mut().find(|g| g.cause == t.cause) {
            Some(group) => group.tries.push(t),
            None => groups.push(Group {
                cause: t.cause.clone(),
                tries: vec![t],
            }),
        }
    }
    // The causes of most tries, and a count of the others.
    let mut rest = Vec::new();
    if groups.len() > MAX_CAUSES {
        groups.sort_by_key(|g| std::cmp::Reverse(g.tries.len()));
        rest = groups.split_off(MAX_CAUSES - 1);
        groups.sort_by_key(|g| g.tries[0].event.true_us);
    }
    let mut steps: Vec<Step> = groups.iter().map(|g| g.step(history)).collect();
    if let Some(first) = rest
        .iter()
        .flat_map(|g| &g.tries)
        .map(|t| t.event)
        .min_by_key(|e| e.true_us)
    {
        let others: usize = rest.iter().map(|g| g.tries.len()).sum();
        let text = format!(
            "{} fail for {} other causes",
            count(others, "other try", "other tries"),
            rest.len()
        );
        steps.push(Step::of(first, text, None));
    }
    steps.extend(elections(history, span));
    steps.sort_by_key(|s| s.true_us);
    steps
}

/// The Sentinel elections in `span`: the failed ones for each master in one step, each
/// won one in its own.
fn elections(history: &History, (from_us, to_us): (u64, u64)) -> Vec<Step> {
    let mut failed: BTreeMap<&str, Vec<(&Event, u64, usize, usize)>> = BTreeMap::new();
    let mut steps = Vec::new();
    for event in history
        .events
        .iter()
        .filter(|e| (from_us..=to_us).contains(&e.true_us))
    {
        let EventKind::SentinelElection {
            master,
            epoch,
            votes,
            needed,
            elected,
        } = &event.kind
        else {
            continue;
        };
        if *elected {
            let text = format!(
                "{} wins the election to fail over {master} (epoch {epoch}, with {} of the {needed} needed)",
                actor(&event.node),
                count(*votes, "vote", "votes")
            );
            steps.push(Step::of(event, text, None));
        } else {
            failed
                .entry(master)
                .or_default()
                .push((event, *epoch, *votes, *needed));
        }
    }
    for (master, lost) in failed {
        let (first, epoch, votes, needed) = lost[0];
        let text = match lost.as_slice() {
            [_] => format!(
                "{}'s election to fail over {master} (epoch {epoch}) fails: {} of the {needed} needed",
                actor(&first.node),
                count(votes, "vote", "votes")
            ),
            _ => {
                let sentinels: Vec<String> = lost.iter().map(|(e, ..)| e.node.to_string()).collect();
                let epochs: Vec<u64> = lost.iter().map(|&(_, epoch, ..)| epoch).collect();
                let most = lost.iter().map(|&(.., votes, _)| votes).max().unwrap_or(0);
                let needed = lost.iter().map(|&(.., needed)| needed).max().unwrap_or(needed);
                format!(
                    "{} elections by Sentinels {} to fail over {master} from {} to {} ms (epochs {}–{}) all \
                     fail: none won more than {most} of the {needed} votes needed",
                    lost.len(),
                    list(&sentinels),
                    fmt_ms(first.true_us as i64),
                    fmt_ms(lost[lost.len() - 1].0.true_us as i64),
                    epochs.iter().min().unwrap_or(&epoch),
                    epochs.iter().max().unwrap_or(&epoch),
                )
            }
        };
        steps.push(Step::of(first, text, None));
    }
    steps
}
