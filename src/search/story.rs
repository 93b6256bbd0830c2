//! A violating run told as the published analyses tell one: numbered steps in plain words,
//! only the events that matter, each with the true time and the clock of the node it
//! happened on, ending with the "However, …" that breaks the lock.
//!
//! What matters: the clients the violation involves (their grants, renewals, writes,
//! releases and losses), their keys' life on every Redis node (and that of any key the
//! violation names by its token, whoever owns it), and every fault, crash, restart and
//! failover, from the earliest grant involved in the violation up to the violation
//! ([`window`]), with the faults already in effect when that grant came. A
//! violation before the first fault is told from its own grants, not around the fault.
//! The steps are data first ([`Step`]); [`render`] turns them into text.

use std::collections::{BTreeMap, BTreeSet};

use crate::check::{mutual_exclusion, validity};
use crate::history::{Answer, Event, EventKind, History, fmt_ms, names_node};

/// One step of the story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub true_us: u64,
    pub node: String,
    /// The node's own clock then.
    pub local_us: i64,
    pub text: String,
    /// The part this step plays in a client's routine lock cycle (key stored, grant,
    /// write, release, key gone), if it is one: such cycles in a row fold into one step.
    pub routine: Option<Routine>,
}

/// A step of one client's routine lock cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routine {
    KeyStored,
    Granted,
    Wrote,
    Released,
    KeyGone,
}

/// The most steps a story tells; past that, it says how many it left out.
pub const MAX_STEPS: usize = 40;

/// The stretch of a run a violation rests on: the clients it involves (empty: every
/// client), from the earliest grant involved to the instant the violation is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub clients: BTreeSet<String>,
    pub from_us: u64,
    pub to_us: u64,
}

/// The window of `checker`'s `violation` in `history`. Mutual exclusion names its two
/// overlapping holds: from the first grant to the end of the overlap. Other checkers say
/// which clients their message names and the last instant it names (validity: the late
/// access, not the end of the client's belief); the window starts at
/// the latest grant each named client had before that instant (the grant a late access, a
/// crash inside the lock or a lost update rests on), the earliest of them.
pub fn window(history: &History, checker: &str, violation: &str) -> Window {
    if checker == mutual_exclusion::NAME
        && let Some((earlier, later)) = mutual_exclusion::overlap(history)
    {
        return Window {
            clients: BTreeSet::from([earlier.client, later.client]),
            from_us: earlier.from_us,
            to_us: earlier.to_us.min(later.to_us),
        };
    }
    let clients: BTreeSet<String> = history
        .events
        .iter()
        .map(|e| e.node.as_str())
        .filter(|node| node.starts_with("client-") && names_node(violation, node))
        .map(str::to_string)
        .collect();
    // A late access is the moment validity broke; its message also names when the client
    // believed its lock would end, which may come later and after other grants.
    let named_end = match checker {
        validity::NAME => validity::accessed_at_us(violation),
        _ => None,
    };
    let to_us = named_end
        .or_else(|| last_time_named(violation))
        .unwrap_or(history.end_us);
    let from_us = clients
        .iter()
        .filter_map(|client| {
            history
                .events
                .iter()
                .filter(|e| e.true_us < to_us && e.node == *client)
                .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
                .map(|e| e.true_us)
                .next_back()
        })
        .min()
        .unwrap_or(0);
    Window {
        clients,
        from_us,
        to_us,
    }
}

/// The steps that explain `checker`'s `violation` in `history`: its [`window`], and the
/// faults already in effect when the window opens (the state its first grant met).
pub fn story(history: &History, checker: &str, violation: &str) -> Vec<Step> {
    let Window {
        clients,
        from_us: start_us,
        to_us: end_us,
    } = window(history, checker, violation);
    let involved = |node: &str| clients.is_empty() || clients.contains(node);
    // A key the violation names by its token ("key held token 8d1845ed") is told whoever
    // owns it: a restart that brought back a released key is what broke the grant.
    let named_token = |token: &str| violation.contains(&format!("token {}", validity::short(token)));
    let mut owner_of_token: Vec<(String, String)> = Vec::new();
    for event in &history.events {
        if let EventKind::Acquired { token, .. } = &event.kind {
            owner_of_token.push((token.clone(), event.node.clone()));
        }
    }
    let owner = |token: &str| {
        owner_of_token
            .iter()
            .find(|(t, _)| t == token)
            .map(|(_, client)| client.as_str())
    };
    let in_effect = Span::in_effect_at(history, start_us);
    // A grant's key is stored a round trip before the grant returns, during the acquire
    // that led to it: keep those too (not the keys earlier cycles stored with a token a
    // client reuses).
    let acquiring_since: BTreeMap<&str, u64> = history
        .events
        .iter()
        .filter(|e| e.true_us < start_us && matches!(e.kind, EventKind::AcquireStarted))
        .map(|e| (e.node.as_str(), e.true_us))
        .collect();
    let granted_in_window: BTreeSet<&str> = history
        .events
        .iter()
        .filter(|e| e.true_us >= start_us && involved(&e.node))
        .filter_map(|e| match &e.kind {
            EventKind::Acquired { token, .. } => Some(token.as_str()),
            _ => None,
        })
        .collect();
    let grants = grants_behind_each_acquire(history);
    let stores_a_granted_key = |e: &Event| match &e.kind {
        EventKind::KeySet { token, .. } => {
            granted_in_window.contains(token.as_str())
                && owner(token)
                    .and_then(|client| acquiring_since.get(client))
                    .is_some_and(|&since| e.true_us >= since)
        }
        _ => false,
    };
    let told = Span {
        from_us: start_us,
        to_us: end_us,
        in_effect,
    };
    let steps = history
        .events
        .iter()
        .enumerate()
        .filter(|&(index, e)| told.covers(index, e) || (stores_a_granted_key(e) && e.true_us <= end_us))
        .filter_map(|(index, e)| {
            let text = match &e.kind {
                EventKind::Acquired {
                    validity_ms, fence, ..
                } if involved(&e.node) => {
                    let fence = fence.map_or(String::new(), |f| format!(", fencing token {f}"));
                    let from = grants
                        .get(&index)
                        .map_or(String::new(), |answers| answers.to_string());
                    let text = format!(
                        "{} gets the lock{from} (it believes it for {}{fence})",
                        e.node,
                        validity(*validity_ms)
                    );
                    return Some((step(e, text, Some(Routine::Granted)), None));
                }
                EventKind::RenewalFailed { reason } if involved(&e.node) => {
                    format!("{}'s renewal fails: {reason}", e.node)
                }
                EventKind::Renewed { validity_ms } if involved(&e.node) => {
                    format!("{} renews it (for {} more)", e.node, validity(*validity_ms))
                }
                EventKind::ResourceWrite { value, fence } if involved(&e.node) => {
                    let fence = fence.map_or(String::new(), |f| format!(" with token {f}"));
                    let text = format!("{} writes {value} to the resource{fence}", e.node);
                    return Some((step(e, text, Some(Routine::Wrote)), None));
                }
                EventKind::ResourceRejected { fence, highest } if involved(&e.node) => format!(
                    "the resource refuses {}'s token {fence} (it has seen {highest})",
                    e.node
                ),
                EventKind::ReleaseSent { .. } if involved(&e.node) => {
                    let text = format!("{} releases the lock", e.node);
                    return Some((step(e, text, Some(Routine::Released)), None));
                }
                EventKind::LockLost { reason } if involved(&e.node) => {
                    format!("{} learns it lost the lock: {reason}", e.node)
                }
                EventKind::KeySet { token, expires_at_us } => {
                    let client = owner(token)?;
                    if !involved(client) && !named_token(token) {
                        return None;
                    }
                    let note = KeyNote {
                        client: client.to_string(),
                        nodes: vec![e.node.clone()],
                        expiries_us: expires_at_us.iter().copied().collect(),
                        stored: true,
                    };
                    return Some((step(e, note.to_string(), Some(Routine::KeyStored)), Some(note)));
                }
                EventKind::KeyGone { token } => {
                    let client = owner(token)?;
                    if !involved(client) && !named_token(token) {
                        return None;
                    }
                    let note = KeyNote {
                        client: client.to_string(),
                        nodes: vec![e.node.clone()],
                        expiries_us: Vec::new(),
                        stored: false,
                    };
                    return Some((step(e, note.to_string(), Some(Routine::KeyGone)), Some(note)));
                }
                EventKind::FaultStarted { fault } => format!("fault: {fault}"),
                EventKind::FaultEnded { fault } => format!("fault over: {fault}"),
                EventKind::Crashed => format!("{} crashes", e.node),
                EventKind::Restarted => format!("{} restarts", e.node),
                EventKind::Failover { promoted, replaced } => {
                    format!(
                        "{} promotes {promoted} in place of {replaced}",
                        crate::world::failover::actor(&e.node)
                    )
                }
                _ => return None,
            };
            Some((step(e, text, None), None))
        })
        .fold(Vec::new(), merge_key_notes);
    fold_routine_cycles(steps.into_iter().map(|(step, _)| step).collect())
}

/// The steps with each stretch of one client's routine cycles shortened: a stretch of
/// consecutive routine steps of one client that spans two grants or more keeps its steps
/// up to its first grant (where an overlap begins) and from its last write on (the write
/// a lost update erases); what lies between becomes one step saying how many times the
/// client released the lock and took it again.
pub fn fold_routine_cycles(steps: Vec<Step>) -> Vec<Step> {
    let mut folded = Vec::with_capacity(steps.len());
    let mut start = 0;
    while start < steps.len() {
        let end = match routine_client(&steps[start]) {
            None => start + 1,
            Some(client) => {
                let mut end = start;
                while end < steps.len() && routine_client(&steps[end]).as_deref() == Some(client.as_str()) {
                    end += 1;
                }
                end.max(start + 1)
            }
        };
        let stretch = &steps[start..end];
        let first_grant = stretch.iter().position(|s| s.routine == Some(Routine::Granted));
        let last_write = stretch.iter().rposition(|s| s.routine == Some(Routine::Wrote));
        match (first_grant, last_write) {
            (Some(grant), Some(write))
                if write > grant + 1
                    && stretch[grant + 1..write]
                        .iter()
                        .any(|s| s.routine == Some(Routine::Granted)) =>
            {
                let middle = &stretch[grant + 1..write];
                let again = middle
                    .iter()
                    .filter(|s| s.routine == Some(Routine::Granted))
                    .count();
                folded.extend_from_slice(&stretch[..=grant]);
                folded.push(Step {
                    true_us: middle[0].true_us,
                    node: middle[0].node.clone(),
                    local_us: middle[0].local_us,
                    text: format!(
                        "… {} writes, releases the lock and takes it again {again} time(s), to {} ms ({} routine steps \
                         folded)",
                        routine_client(&middle[0]).unwrap_or_default(),
                        fmt_ms(middle[middle.len() - 1].true_us as i64),
                        middle.len()
                    ),
                    routine: None,
                });
                folded.extend_from_slice(&stretch[write..]);
            }
            _ => folded.extend_from_slice(stretch),
        }
        start = end;
    }
    folded
}

/// The client whose routine cycle `step` belongs to: the node for a client's own step,
/// the key's owner (the text's first `client-N` after the node list) for a key's.
fn routine_client(step: &Step) -> Option<String> {
    match step.routine? {
        Routine::KeyStored | Routine::KeyGone => step
            .text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .find(|word| word.starts_with("client-"))
            .map(str::to_string),
        _ => Some(step.node.clone()),
    }
}

/// The events a story tells that change the deployment or a client rather than the lock:
/// faults started, crashes, restarts and failovers, in a violation's `window` or in effect
/// when it opens, as [`story`] tells them. What the violation rests on
/// ([`super::mechanism`]).
pub fn system_events<'h>(history: &'h History, window: &Window) -> Vec<&'h Event> {
    let told = Span {
        from_us: window.from_us,
        to_us: window.to_us,
        in_effect: Span::in_effect_at(history, window.from_us),
    };
    history
        .events
        .iter()
        .enumerate()
        .filter(|&(index, e)| told.covers(index, e))
        .filter(|(_, e)| {
            matches!(
                e.kind,
                EventKind::FaultStarted { .. }
                    | EventKind::Crashed
                    | EventKind::Restarted
                    | EventKind::Failover { .. }
            )
        })
        .map(|(_, e)| e)
        .collect()
}

/// The stretch of a run a story tells: from the window's first grant to the violation, and
/// the faults and crashes before it still in effect when it opens.
struct Span {
    from_us: u64,
    to_us: u64,
    /// Indexes of the events before `from_us` still in effect then.
    in_effect: BTreeSet<usize>,
}

impl Span {
    /// Whether the event at `index` is in the stretch.
    fn covers(&self, index: usize, event: &Event) -> bool {
        (event.true_us >= self.from_us || self.in_effect.contains(&index)) && event.true_us <= self.to_us
    }

    /// The indexes of the faults started before `at_us` and not yet over then, and of the
    /// crashes before it whose node had not restarted by then.
    fn in_effect_at(history: &History, at_us: u64) -> BTreeSet<usize> {
        let before = || {
            history
                .events
                .iter()
                .enumerate()
                .take_while(|(_, e)| e.true_us < at_us)
        };
        before()
            .filter(|(index, started)| {
                let over = |e: &&Event| match (&started.kind, &e.kind) {
                    (EventKind::FaultStarted { fault }, EventKind::FaultEnded { fault: ended }) => {
                        fault == ended
                    }
                    (EventKind::Crashed, EventKind::Restarted) => e.node == started.node,
                    _ => false,
                };
                matches!(started.kind, EventKind::FaultStarted { .. } | EventKind::Crashed)
                    && !before().skip(index + 1).any(|(_, e)| over(&e))
            })
            .map(|(index, _)| index)
            .collect()
    }
}

fn step(event: &Event, text: String, routine: Option<Routine>) -> Step {
    Step {
        true_us: event.true_us,
        node: event.node.clone(),
        local_us: event.local_us,
        text,
        routine,
    }
}

/// A client's key stored on, or gone from, some nodes: consecutive ones become one step.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyNote {
    client: String,
    nodes: Vec<String>,
    /// Each node's expiry, on its own clock (µs); empty for a key without TTL.
    expiries_us: Vec<i64>,
    stored: bool,
}

impl std::fmt::Display for KeyNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (client, nodes) = (&self.client, list(&self.nodes));
        if !self.stored {
            return write!(f, "{client}'s key leaves {nodes}");
        }
        let (verb, whose) = match self.nodes.len() {
            1 => ("stores", "its clock reads"),
            _ => ("store", "their clocks read"),
        };
        let first = self.expiries_us.iter().min();
        let last = self.expiries_us.iter().max();
        match (first, last) {
            (Some(first), Some(last)) if first == last => write!(
                f,
                "{nodes} {verb} {client}'s key, to expire when {whose} {} ms",
                fmt_ms(*first)
            ),
            (Some(first), Some(last)) => write!(
                f,
                "{nodes} {verb} {client}'s key, to expire when {whose} {}–{} ms",
                fmt_ms(*first),
                fmt_ms(*last)
            ),
            _ => write!(f, "{nodes} {verb} {client}'s key, never to expire"),
        }
    }
}

/// Node names in order, as a person writes them: `redis-1`, `redis-1 and redis-3`,
/// `redis-1, redis-2 and redis-4`, a run of three or more as `redis-1..5`.
fn list(names: &[String]) -> String {
    let mut sorted = names.to_vec();
    sorted.sort_by_key(|name| {
        let (prefix, number) = numbered(name).unwrap_or((name, 0));
        (prefix.to_string(), number, name.clone())
    });
    sorted.dedup();
    let numbers: Option<Vec<(&str, u32)>> = sorted.iter().map(|name| numbered(name)).collect();
    if let Some(numbers) = numbers
        && numbers.len() >= 3
        && numbers.iter().all(|(prefix, _)| *prefix == numbers[0].0)
        && numbers.windows(2).all(|pair| pair[1].1 == pair[0].1 + 1)
    {
        let (prefix, first) = numbers[0];
        return format!("{prefix}-{first}..{}", numbers[numbers.len() - 1].1);
    }
    match sorted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `redis-12` as (`redis`, 12).
fn numbered(name: &str) -> Option<(&str, u32)> {
    let (prefix, number) = name.rsplit_once('-')?;
    Some((prefix, number.parse().ok()?))
}

/// Appends `next`, folding a key note into the step before it when that one is a note of
/// the same client's key going the same way.
fn merge_key_notes(
    mut steps: Vec<(Step, Option<KeyNote>)>,
    next: (Step, Option<KeyNote>),
) -> Vec<(Step, Option<KeyNote>)> {
    if let (Some((step, Some(note))), Some(new)) = (steps.last_mut(), &next.1)
        && note.client == new.client
        && note.stored == new.stored
    {
        note.nodes.extend(new.nodes.iter().cloned());
        note.expiries_us.extend(&new.expiries_us);
        step.text = note.to_string();
        return steps;
    }
    steps.push(next);
    steps
}

/// The nodes' answers to the attempt that won one grant.
#[derive(Debug, Default)]
struct Answers {
    granted: Vec<String>,
    silent: Vec<String>,
    asked: usize,
}

impl std::fmt::Display for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, " from {}", list(&self.granted))?;
        if self.asked > 1 {
            write!(f, " ({} of {} nodes", self.granted.len(), self.asked)?;
            if !self.silent.is_empty() {
                write!(f, "; no answer from {}", list(&self.silent))?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

/// For each `Acquired` event (by index), which nodes granted the attempt it ends and which
/// did not answer: the answers a client heard since its attempt began.
fn grants_behind_each_acquire(history: &History) -> BTreeMap<usize, Answers> {
    let mut open: BTreeMap<&str, Answers> = BTreeMap::new();
    let mut grants = BTreeMap::new();
    for (index, event) in history.events.iter().enumerate() {
        let client = event.node.as_str();
        match &event.kind {
            EventKind::AcquireStarted | EventKind::AttemptFailed { .. } => {
                open.remove(client);
            }
            EventKind::NodeAnswered {
                request: "acquire",
                redis,
                answer,
                ..
            } => {
                let answers = open.entry(client).or_default();
                answers.asked += 1;
                match answer {
                    Answer::Yes => answers.granted.push(redis.clone()),
                    Answer::No => {}
                    Answer::Failed(_) => answers.silent.push(redis.clone()),
                }
            }
            EventKind::Acquired { .. } => {
                if let Some(answers) = open.remove(client).filter(|a| !a.granted.is_empty()) {
                    grants.insert(index, answers);
                }
            }
            _ => {}
        }
    }
    grants
}

/// How many of the nodes it asked granted a client the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantShare {
    pub granted: usize,
    pub asked: usize,
}

impl GrantShare {
    /// Granted by a majority of several nodes and not one more: lose one of its keys and
    /// the grant no longer stands (Kleppmann's first example, anchors S4).
    pub fn bare_majority(self) -> bool {
        self.asked > 1 && self.granted == self.asked / 2 + 1
    }
}

/// The grant of the earlier of the first two clients that believed they held the lock
/// at once: how many nodes gave it, of how many asked. None without an overlap, or when
/// the history does not record the nodes' answers.
pub fn first_overlap_grant(history: &History) -> Option<GrantShare> {
    let (earlier, _) = mutual_exclusion::overlap(history)?;
    let index = history.events.iter().position(|e| {
        e.node == earlier.client
            && e.true_us == earlier.from_us
            && matches!(e.kind, EventKind::Acquired { .. })
    })?;
    let answers = grants_behind_each_acquire(history).remove(&index)?;
    Some(GrantShare {
        granted: answers.granted.len(),
        asked: answers.asked,
    })
}

/// The latest time a checker's message names, in µs: its times are written as
/// milliseconds with three decimals (`7654.000`).
pub fn last_time_named(violation: &str) -> Option<u64> {
    violation
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|word| word.len() > 4 && word.as_bytes()[word.len() - 4] == b'.')
        .filter_map(|word| word.parse::<f64>().ok())
        .map(|ms| (ms * 1000.0).round() as u64)
        .max()
}

fn validity(ms: u64) -> String {
    match ms {
        u64::MAX => "ever (no TTL)".to_string(),
        ms => format!("{ms} ms"),
    }
}

/// The story as numbered lines, ending with what broke.
pub fn render(steps: &[Step], checker: &str, violation: &str) -> Vec<String> {
    let mut lines: Vec<String> = steps
        .iter()
        .take(MAX_STEPS)
        .enumerate()
        .map(|(i, step)| {
            let clock = if step.local_us == step.true_us as i64 || step.node == "world" {
                String::new()
            } else {
                format!(" ({}'s clock reads {})", step.node, fmt_ms(step.local_us))
            };
            format!(
                "{:>2}. t={} ms{clock}: {}.",
                i + 1,
                fmt_ms(step.true_us as i64),
                step.text
            )
        })
        .collect();
    if steps.len() > MAX_STEPS {
        lines.push(format!("    … {} more steps", steps.len() - MAX_STEPS));
    }
    lines.push(format!("However, {checker} is broken: {violation}."));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, node: &str, kind: EventKind) -> Event {
        Event {
            true_us: ms * 1000,
            node: node.into(),
            local_us: (ms * 1000) as i64,
            kind,
        }
    }

    #[test]
    fn the_story_keeps_the_named_clients_and_the_faults_only() {
        let acquired = |token: &str| EventKind::Acquired {
            token: token.into(),
            fence: None,
            validity_ms: 2000,
        };
        let history = History {
            events: vec![
                at(100, "client-3", acquired("c")),
                at(200, "client-3", EventKind::ReleaseSent { token: "c".into() }),
                at(1000, "client-1", acquired("a")),
                at(
                    1001,
                    "redis-1",
                    EventKind::KeySet {
                        token: "a".into(),
                        expires_at_us: Some(3_001_000),
                    },
                ),
                at(
                    1500,
                    "world",
                    EventKind::FaultStarted {
                        fault: "pause client-1 for 4000 ms".into(),
                    },
                ),
                at(3001, "redis-1", EventKind::KeyGone { token: "a".into() }),
                at(3100, "client-2", acquired("b")),
                at(3200, "client-3", EventKind::AcquireStarted),
            ],
            end_us: 6_000_000,
            ..History::default()
        };
        let violation =
            "client-1 held the lock [1000.000, 5500.000] ms while client-2 held it [3100.000, 5000.000] ms";
        let steps = story(&history, "mutual_exclusion", violation);
        let texts: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "client-1 gets the lock (it believes it for 2000 ms)",
                "redis-1 stores client-1's key, to expire when its clock reads 3001.000 ms",
                "fault: pause client-1 for 4000 ms",
                "client-1's key leaves redis-1",
                "client-2 gets the lock (it believes it for 2000 ms)",
            ]
        );
        let lines = render(&steps, "mutual_exclusion", violation);
        assert!(lines[0].starts_with(" 1. t=1000.000 ms: client-1 gets the lock"));
        assert!(
            lines
                .last()
                .unwrap()
                .starts_with("However, mutual_exclusion is broken")
        );
    }

    fn acquired(token: &str) -> EventKind {
        EventKind::Acquired {
            token: token.into(),
            fence: None,
            validity_ms: 2000,
        }
    }

    fn released(token: &str) -> EventKind {
        EventKind::ReleaseSent { token: token.into() }
    }

    fn fault(text: &str) -> EventKind {
        EventKind::FaultStarted { fault: text.into() }
    }

    /// Routine cycles, then two overlapping holds: `client-1` from 2000 ms (too slow to
    /// release in time), `client-2` from 4100 ms; the partition starts at `fault_ms`.
    fn overlap_and_a_fault_at(fault_ms: u64) -> History {
        let mut events = vec![
            at(10, "client-1", acquired("a1")),
            at(500, "client-1", released("a1")),
            at(600, "client-2", acquired("b1")),
            at(1000, "client-2", released("b1")),
            at(2000, "client-1", acquired("a2")),
            at(4100, "client-2", acquired("b2")),
            at(4500, "client-1", released("a2")),
            at(5000, "client-2", released("b2")),
            at(fault_ms, "world", fault("partition [redis-1] | [client-3]")),
        ];
        events.sort_by_key(|e| e.true_us);
        History {
            events,
            end_us: 9_000_000,
            ..History::default()
        }
    }

    #[test]
    fn a_violation_before_the_first_fault_is_told_from_its_earliest_grant() {
        let history = overlap_and_a_fault_at(7000);
        let violation = mutual_exclusion::check(&history).violation.unwrap();
        let window = window(&history, mutual_exclusion::NAME, &violation);
        assert_eq!((window.from_us, window.to_us), (2_000_000, 4_500_000));
        let steps = story(&history, mutual_exclusion::NAME, &violation);
        let texts: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "client-1 gets the lock (it believes it for 2000 ms)",
                "client-2 gets the lock (it believes it for 2000 ms)",
                "client-1 releases the lock",
            ]
        );
    }

    #[test]
    fn a_violation_after_the_first_fault_is_told_from_its_earliest_grant_with_the_fault_it_met() {
        let history = overlap_and_a_fault_at(300);
        let violation = mutual_exclusion::check(&history).violation.unwrap();
        let steps = story(&history, mutual_exclusion::NAME, &violation);
        assert_eq!(steps[0].text, "fault: partition [redis-1] | [client-3]");
        assert_eq!(steps[1].true_us, 2_000_000, "{steps:?}");
        assert_eq!(steps.len(), 4);
    }

    #[test]
    fn a_fault_over_before_the_earliest_grant_is_not_told() {
        let mut history = overlap_and_a_fault_at(300);
        history.events.push(at(
            400,
            "world",
            EventKind::FaultEnded {
                fault: "partition [redis-1] | [client-3]".into(),
            },
        ));
        history.events.sort_by_key(|e| e.true_us);
        let violation = mutual_exclusion::check(&history).violation.unwrap();
        let steps = story(&history, mutual_exclusion::NAME, &violation);
        assert_eq!(steps[0].true_us, 2_000_000, "{steps:?}");
    }

    #[test]
    fn another_checker_is_told_from_the_grant_its_named_client_had_before_the_violation() {
        let history = overlap_and_a_fault_at(7000);
        let violation = "client-1 accessed the resource at 4400.000 ms, 400.000 ms past its validity deadline (4000.000 ms)";
        let window = window(&history, "validity", violation);
        assert_eq!(
            (window.clients.len(), window.from_us, window.to_us),
            (1, 2_000_000, 4_400_000)
        );
    }

    #[test]
    fn a_reused_token_brings_in_only_the_key_stored_for_the_grant_in_the_window() {
        let key_set = |ms: u64| {
            at(
                ms,
                "redis-1",
                EventKind::KeySet {
                    token: "same".into(),
                    expires_at_us: None,
                },
            )
        };
        let history = History {
            events: vec![
                at(0, "client-1", EventKind::AcquireStarted),
                key_set(5),
                at(10, "client-1", acquired("same")),
                at(100, "client-1", released("same")),
                at(200, "client-1", EventKind::AcquireStarted),
                key_set(205),
                at(210, "client-1", acquired("same")),
                at(300, "client-1", EventKind::Crashed),
            ],
            end_us: 1_000_000,
            ..History::default()
        };
        let steps = story(
            &history,
            "deadlock",
            "client-1 crashed inside the lock at 300.000 ms",
        );
        let times: Vec<u64> = steps.iter().map(|s| s.true_us / 1000).collect();
        assert_eq!(times, [205, 210, 300]);
    }

    #[test]
    fn the_story_ends_at_the_last_time_the_violation_names() {
        assert_eq!(
            last_time_named("held it [7349.683, 9299.000] ms; the bound is 3300 ms"),
            Some(9_299_000)
        );
        assert_eq!(last_time_named("nothing timed"), None);
    }

    #[test]
    fn node_lists_read_as_a_person_writes_them() {
        let names = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(list(&names(&["redis-3", "redis-1", "redis-2"])), "redis-1..3");
        assert_eq!(list(&names(&["redis-4", "redis-1"])), "redis-1 and redis-4");
        assert_eq!(
            list(&names(&["redis-10", "redis-2", "redis-1"])),
            "redis-1, redis-2 and redis-10"
        );
        assert_eq!(list(&names(&["redis-1a", "sentinel"])), "redis-1a and sentinel");
    }

    #[test]
    fn routine_cycles_in_a_row_fold_between_the_first_grant_and_the_last_write() {
        let write = |value| EventKind::ResourceWrite { value, fence: None };
        let key = |token: &str| EventKind::KeySet {
            token: token.into(),
            expires_at_us: Some(9_000_000),
        };
        let mut events = vec![
            at(0, "redis-1", key("a")),
            at(1, "client-1", acquired("a")),
            at(2, "world", fault("pause client-1 for 9000 ms")),
        ];
        // client-2 takes the lock four times while client-1 sleeps, writing 1 to 4.
        for cycle in 0..4 {
            let t = 2000 + cycle * 500;
            let token = format!("b{cycle}");
            events.push(at(t, "redis-1", key(&token)));
            events.push(at(t + 1, "client-2", acquired(&token)));
            events.push(at(t + 100, "client-2", write(cycle as i64 + 1)));
            events.push(at(t + 100, "client-2", released(&token)));
        }
        events.push(at(9002, "client-1", write(1)));
        let history = History {
            events,
            end_us: 10_000_000,
            ..History::default()
        };
        let violation =
            "client-1 wrote 1 at 9002.000 ms from its read of 0, but client-2 had written 4 meanwhile";
        let steps = story(&history, "resource_safety", violation);
        let texts: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts.len(), 8, "{texts:#?}");
        assert_eq!(
            texts[3], "client-2 gets the lock (it believes it for 2000 ms)",
            "the first grant stays"
        );
        assert!(
            texts[4].starts_with("… client-2 writes, releases the lock and takes it again 3 time(s)"),
            "{}",
            texts[4]
        );
        assert_eq!(
            texts[5], "client-2 writes 4 to the resource",
            "the last write stays"
        );
        assert_eq!(texts[7], "client-1 writes 1 to the resource");
    }

    #[test]
    fn a_grant_names_the_nodes_that_gave_it_and_key_events_merge() {
        let answered = |redis: &str, answer: Answer| EventKind::NodeAnswered {
            request: "acquire",
            redis: redis.into(),
            answer,
            redis_local_us: 0,
        };
        let key_set = |at: i64| EventKind::KeySet {
            token: "a".into(),
            expires_at_us: Some(at),
        };
        let history = History {
            events: vec![
                at(0, "client-1", EventKind::AcquireStarted),
                at(1, "redis-1", key_set(2_001_000)),
                at(1, "redis-2", key_set(2_001_000)),
                at(2, "client-1", answered("redis-1", Answer::Yes)),
                at(2, "client-1", answered("redis-2", Answer::Yes)),
                at(
                    50,
                    "client-1",
                    answered("redis-3", Answer::Failed("no reply within 50 ms".into())),
                ),
                at(
                    50,
                    "client-1",
                    EventKind::Acquired {
                        token: "a".into(),
                        fence: None,
                        validity_ms: 1900,
                    },
                ),
            ],
            end_us: 3_000_000,
            ..History::default()
        };
        let texts: Vec<String> = story(&history, "validity", "client-1 held it")
            .into_iter()
            .map(|s| s.text)
            .collect();
        assert_eq!(
            texts,
            [
                "redis-1 and redis-2 store client-1's key, to expire when their clocks read 2001.000 ms",
                "client-1 gets the lock from redis-1 and redis-2 (2 of 3 nodes; no answer from redis-3) (it believes it for 1900 ms)",
            ]
        );
    }

    #[test]
    fn a_late_access_is_told_from_its_grant_with_the_restart_that_brought_back_a_key() {
        let key_set = |token: &str| EventKind::KeySet {
            token: token.into(),
            expires_at_us: Some(9_000_000),
        };
        let history = History {
            events: vec![
                at(0, "redis-1", key_set("old")),
                at(1, "client-3", acquired("old")),
                at(100, "client-3", released("old")),
                at(101, "redis-1", EventKind::KeyGone { token: "old".into() }),
                at(200, "redis-1", key_set("a")),
                at(201, "client-2", acquired("a")),
                at(300, "redis-1", EventKind::Crashed),
                at(400, "redis-1", EventKind::Restarted),
                at(401, "redis-1", key_set("old")),
                at(
                    500,
                    "client-2",
                    EventKind::ResourceWrite {
                        value: 1,
                        fence: None,
                    },
                ),
                at(900, "redis-1", key_set("b")),
                at(1000, "client-2", acquired("b")),
            ],
            end_us: 3_000_000,
            ..History::default()
        };
        let violation = "client-2 accessed the resource at 500.000 ms past its validity: its grant (token a) stood \
                         on 0 of 1 node(s), 1 needed (redis-1: key held token old); the client believed it had 2000 \
                         ms of validity at 201.000 ms, so until about 2201.000 ms";
        let told = window(&history, "validity", violation);
        assert_eq!(
            (told.from_us, told.to_us),
            (201_000, 500_000),
            "the grant to the access"
        );
        let texts: Vec<String> = story(&history, "validity", violation)
            .into_iter()
            .map(|s| s.text)
            .collect();
        for expected in [
            "client-2 gets the lock",
            "redis-1 crashes",
            "redis-1 restarts",
            "redis-1 stores client-3's key",
            "client-2 writes 1",
        ] {
            assert!(
                texts.iter().any(|t| t.starts_with(expected)),
                "{expected:?} in {texts:#?}"
            );
        }
        assert!(
            !texts.iter().any(|t| t.contains("client-3 releases")),
            "client-3's own cycle is not told: {texts:#?}"
        );
    }

    #[test]
    fn the_first_overlap_names_how_many_nodes_granted_its_earlier_holder() {
        let answered = |redis: &str, answer: Answer| EventKind::NodeAnswered {
            request: "acquire",
            redis: redis.into(),
            answer,
            redis_local_us: 0,
        };
        let overlapping = |third: Answer| History {
            events: vec![
                at(0, "client-1", EventKind::AcquireStarted),
                at(2, "client-1", answered("redis-1", Answer::Yes)),
                at(2, "client-1", answered("redis-2", Answer::Yes)),
                at(3, "client-1", answered("redis-3", third)),
                at(3, "client-1", acquired("a")),
                at(100, "client-2", acquired("b")),
                at(200, "client-1", released("a")),
                at(300, "client-2", released("b")),
            ],
            end_us: 1_000_000,
            ..History::default()
        };
        let bare = first_overlap_grant(&overlapping(Answer::No)).unwrap();
        assert_eq!(bare, GrantShare { granted: 2, asked: 3 });
        assert!(bare.bare_majority());
        let every = first_overlap_grant(&overlapping(Answer::Yes)).unwrap();
        assert!(!every.bare_majority(), "3 of 3 is more than a bare majority");
        assert!(
            !GrantShare { granted: 1, asked: 1 }.bare_majority(),
            "one node is no majority of several"
        );
        let mut apart = overlapping(Answer::No);
        apart.events.retain(|e| e.node != "client-2");
        assert_eq!(first_overlap_grant(&apart), None, "no overlap, nothing to say");
    }
}
