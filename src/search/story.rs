//! A violating run told as the published analyses tell one: numbered steps in plain words,
//! only the events that matter, each with the true time and the clock of the node it
//! happened on, ending with the "However, …" that breaks the lock.
//!
//! What matters: the clients the violation names (their grants, renewals, writes, releases
//! and losses), their keys' life on every Redis node, and every fault, crash, restart and
//! failover, from the grant before the first fault on. The steps are data first
//! ([`Step`]); [`render`] turns them into text.

use std::collections::BTreeSet;

use crate::history::{EventKind, History, fmt_ms};

/// One step of the story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub true_us: u64,
    pub node: String,
    /// The node's own clock then.
    pub local_us: i64,
    pub text: String,
}

/// The most steps a story tells; past that, it says how many it left out.
pub const MAX_STEPS: usize = 40;

/// The steps that explain `violation` (a checker's message) in `history`.
pub fn story(history: &History, violation: &str) -> Vec<Step> {
    let clients: BTreeSet<&str> = history
        .events
        .iter()
        .map(|e| e.node.as_str())
        .filter(|node| node.starts_with("client-") && names(violation, node))
        .collect();
    let involved = |node: &str| clients.is_empty() || clients.contains(node);
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
    let first_fault = history
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::FaultStarted { .. } | EventKind::Crashed))
        .map(|e| e.true_us);
    // From the involved clients' last grant before the first fault (the state the fault
    // met), or from the start.
    let start_us = first_fault
        .and_then(|at| {
            history
                .events
                .iter()
                .filter(|e| e.true_us <= at && involved(&e.node))
                .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
                .map(|e| e.true_us)
                .next_back()
        })
        .or(first_fault)
        .unwrap_or(0);
    // Up to the last instant the violation names (the end of an overlap, a late write).
    let end_us = last_time_named(violation).unwrap_or(history.end_us);
    // A grant's key is stored a round trip before the grant returns: keep those too.
    let granted_in_window: BTreeSet<&str> = history
        .events
        .iter()
        .filter(|e| e.true_us >= start_us && involved(&e.node))
        .filter_map(|e| match &e.kind {
            EventKind::Acquired { token, .. } => Some(token.as_str()),
            _ => None,
        })
        .collect();
    let stores_a_granted_key = |kind: &EventKind| matches!(kind, EventKind::KeySet { token, .. } if granted_in_window.contains(token.as_str()));
    history
        .events
        .iter()
        .filter(|e| (e.true_us >= start_us || stores_a_granted_key(&e.kind)) && e.true_us <= end_us)
        .filter_map(|e| {
            let text = match &e.kind {
                EventKind::Acquired {
                    validity_ms, fence, ..
                } if involved(&e.node) => {
                    let fence = fence.map_or(String::new(), |f| format!(", fencing token {f}"));
                    format!(
                        "{} gets the lock (it believes it for {}{fence})",
                        e.node,
                        validity(*validity_ms)
                    )
                }
                EventKind::Renewed { validity_ms } if involved(&e.node) => {
                    format!("{} renews it (for {} more)", e.node, validity(*validity_ms))
                }
                EventKind::ResourceWrite { value, fence } if involved(&e.node) => {
                    let fence = fence.map_or(String::new(), |f| format!(" with token {f}"));
                    format!("{} writes {value} to the resource{fence}", e.node)
                }
                EventKind::ResourceRejected { fence, highest } if involved(&e.node) => format!(
                    "the resource refuses {}'s token {fence} (it has seen {highest})",
                    e.node
                ),
                EventKind::ReleaseSent { .. } if involved(&e.node) => format!("{} releases the lock", e.node),
                EventKind::LockLost { reason } if involved(&e.node) => {
                    format!("{} learns it lost the lock: {reason}", e.node)
                }
                EventKind::KeySet { token, expires_at_us } => {
                    let client = owner(token)?;
                    if !involved(client) {
                        return None;
                    }
                    let expiry = expires_at_us.map_or("never to expire".to_string(), |at| {
                        format!("to expire when its clock reads {} ms", fmt_ms(at))
                    });
                    format!("{} stores {client}'s key, {expiry}", e.node)
                }
                EventKind::KeyGone { token } => {
                    let client = owner(token)?;
                    if !involved(client) {
                        return None;
                    }
                    format!("{client}'s key leaves {}", e.node)
                }
                EventKind::FaultStarted { fault } => format!("fault: {fault}"),
                EventKind::FaultEnded { fault } => format!("fault over: {fault}"),
                EventKind::Crashed => format!("{} crashes", e.node),
                EventKind::Restarted => format!("{} restarts", e.node),
                EventKind::Failover { promoted, replaced } => {
                    format!("the failover controller promotes {promoted} in place of {replaced}")
                }
                _ => return None,
            };
            Some(Step {
                true_us: e.true_us,
                node: e.node.clone(),
                local_us: e.local_us,
                text,
            })
        })
        .collect()
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

/// Whether `text` names `node` as a whole word (`client-1` is not in `client-12`).
fn names(text: &str, node: &str) -> bool {
    text.match_indices(node).any(|(at, _)| {
        !text[at + node.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
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
    use crate::history::Event;

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
        let steps = story(&history, violation);
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

    #[test]
    fn the_story_ends_at_the_last_time_the_violation_names() {
        assert_eq!(
            last_time_named("held it [7349.683, 9299.000] ms; the bound is 3300 ms"),
            Some(9_299_000)
        );
        assert_eq!(last_time_named("nothing timed"), None);
    }

    #[test]
    fn a_client_name_is_matched_as_a_whole_word() {
        assert!(names("client-1 held", "client-1"));
        assert!(!names("client-12 held", "client-1"));
    }
}
