//! A fault's end, told as what it leaves: faults compose by cover (a node stays paused
//! while any pause covers it, down while any crash does, a link cut while any partition or
//! stall does), so the end of one is the end of nothing while another still holds the same
//! node. The history says so node by node (`Paused`/`Resumed`, `Crashed`/`Restarted`,
//! `LinkCut`/`LinkHealed`, recorded only when the first cover starts and the last ends).

use super::words::list;
use crate::history::{Event, EventKind, History, fmt_ms, names_node};

/// What a fault holds a node in, by the first word of its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    Paused,
    Down,
    Cut,
}

impl Hold {
    fn of(fault: &str) -> Option<Hold> {
        match fault.split_whitespace().next()? {
            "pause" => Some(Hold::Paused),
            "crash" | "power" => Some(Hold::Down),
            "partition" | "replication" => Some(Hold::Cut),
            _ => None,
        }
    }

    fn starts(self, kind: &EventKind) -> bool {
        matches!(
            (self, kind),
            (Hold::Paused, EventKind::Paused)
                | (Hold::Down, EventKind::Crashed)
                | (Hold::Cut, EventKind::LinkCut { .. })
        )
    }

    fn ends(self, kind: &EventKind) -> bool {
        matches!(
            (self, kind),
            (Hold::Paused, EventKind::Resumed)
                | (Hold::Down, EventKind::Restarted)
                | (Hold::Cut, EventKind::LinkHealed { .. })
        )
    }

    fn still(self) -> &'static str {
        match self {
            Hold::Paused => "still paused by",
            Hold::Down => "still kept down by",
            Hold::Cut => "still cut off by",
        }
    }
}

/// The step that tells the end of the fault whose `FaultEnded` is the event at `index`:
/// `fault over: …`, and, for each node another fault still holds, by which and until when
/// (`fault over: pause client-1 for 2000 ms, but client-1 is still paused by pause
/// client-1 for 3000 ms until 3200.000 ms`). None for a crash that restarted every node it named: their
/// restarts, told at the same instant, said it.
pub(super) fn fault_over(history: &History, index: usize) -> Option<String> {
    let event = &history.events[index];
    let EventKind::FaultEnded { fault } = &event.kind else {
        return None;
    };
    let mut text = format!("fault over: {fault}");
    let Some(hold) = Hold::of(fault) else {
        return Some(text);
    };
    let (before, after) = history.events.split_at(index + 1);
    // The nodes it named that another fault still holds, with when that ends.
    let mut still: Vec<(String, Option<u64>)> = Vec::new();
    for node in named_nodes(history, fault) {
        let held = match hold {
            Hold::Cut => cut_links(before, &node, fault).next().is_some(),
            _ => holds(hold, before, &node),
        };
        if held {
            let until = match hold {
                Hold::Cut => last_heal(after, before, &node, fault),
                _ => after
                    .iter()
                    .find(|e| e.node == node && hold.ends(&e.kind))
                    .map(|e| e.true_us),
            };
            still.push((node, until));
        }
    }
    if hold == Hold::Down && still.is_empty() {
        return None;
    }
    let mut by_holder: Vec<(String, Option<u64>, Vec<String>)> = Vec::new();
    for (node, until) in still {
        let holder = other_holder(before, fault, &node).unwrap_or_else(|| "another fault".into());
        match by_holder.iter_mut().find(|(h, u, _)| *h == holder && *u == until) {
            Some((_, _, nodes)) => nodes.push(node),
            None => by_holder.push((holder, until, vec![node])),
        }
    }
    let held: Vec<String> = by_holder
        .into_iter()
        .map(|(holder, until, nodes)| {
            let until = until.map_or("for the rest of the run".to_string(), |us| {
                format!("until {} ms", fmt_ms(us as i64))
            });
            let is = if nodes.len() == 1 { "is" } else { "are" };
            format!("{} {is} {} {holder} {until}", list(&nodes), hold.still())
        })
        .collect();
    if !held.is_empty() {
        text.push_str(&format!(", but {}", held.join(" and ")));
    }
    Some(text)
}

/// The nodes of the run a fault's description names.
fn named_nodes(history: &History, fault: &str) -> Vec<String> {
    let mut nodes: Vec<String> = history
        .events
        .iter()
        .map(|e| e.node.as_str())
        .filter(|node| *node != "world" && names_node(fault, node))
        .map(str::to_string)
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// Whether a `hold` of `node` is on after `events`.
fn holds(hold: Hold, events: &[Event], node: &str) -> bool {
    events
        .iter()
        .rev()
        .filter(|e| e.node == node)
        .find(|e| hold.starts(&e.kind) || hold.ends(&e.kind))
        .is_some_and(|e| hold.starts(&e.kind))
}

/// The links from or to `node`, to another node `fault` names, still cut after `events`.
fn cut_links<'e>(
    events: &'e [Event],
    node: &'e str,
    fault: &'e str,
) -> impl Iterator<Item = (&'e str, &'e str)> {
    let mut links: Vec<(&str, &str)> = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::LinkCut { to } => links.push((&e.node, to)),
            EventKind::LinkHealed { to } => links.retain(|&(from, t)| !(from == e.node && t == to)),
            _ => {}
        }
    }
    links.into_iter().filter(move |&(from, to)| {
        (from == node && names_node(fault, to)) || (to == node && names_node(fault, from))
    })
}

/// When the last of `node`'s links that `fault` named and that are still cut after
/// `before` heals, if they all do.
fn last_heal(after: &[Event], before: &[Event], node: &str, fault: &str) -> Option<u64> {
    cut_links(before, node, fault)
        .map(|(from, to)| {
            after
                .iter()
                .find(|e| e.node == from && matches!(&e.kind, EventKind::LinkHealed { to: t } if t == to))
                .map(|e| e.true_us)
        })
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .max()
}

/// The fault of the same kind as `ended`, started before its end and not over by then,
/// that names `node`: what still holds it. The latest started, if several.
fn other_holder(before: &[Event], ended: &str, node: &str) -> Option<String> {
    let hold = Hold::of(ended);
    let mut open: Vec<&str> = Vec::new();
    for e in before {
        match &e.kind {
            EventKind::FaultStarted { fault } => open.push(fault),
            EventKind::FaultEnded { fault } => {
                if let Some(at) = open.iter().position(|f| f == fault) {
                    open.remove(at);
                }
            }
            _ => {}
        }
    }
    open.into_iter()
        .rev()
        .find(|f| Hold::of(f) == hold && names_node(f, node))
        .map(str::to_string)
}
