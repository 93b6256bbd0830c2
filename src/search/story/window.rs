//! Which stretch of a run a story tells: the [`Window`] a violation rests on, the faults
//! and crashes already in effect when it opens ([`Span`]), and the times a checker's
//! message names.

use std::collections::BTreeSet;

use crate::check::{liveness, mutual_exclusion, starvation, validity};
use crate::history::{Event, EventKind, History, names_node};

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
/// crash inside the lock or a lost update rests on), the earliest of them. Liveness and
/// starvation name the span the lock was not had (`from A to B ms`: free while wanted, a
/// client's wait): the window is that span, since what came before it was had.
pub fn window(history: &History, checker: &str, violation: &str) -> Window {
    if checker == mutual_exclusion::NAME
        && let Some((earlier, later)) = mutual_exclusion::overlap(history)
    {
        return Window {
            clients: BTreeSet::from([earlier.client.to_string(), later.client.to_string()]),
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
    if matches!(checker, liveness::NAME | starvation::NAME)
        && let Some((from_us, to_us)) = span_named(violation)
    {
        return Window {
            clients,
            from_us,
            to_us,
        };
    }
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

/// The events a story tells that change the deployment or a client rather than the lock:
/// faults started, crashes, restarts and failovers, in a violation's `window` or in effect
/// when it opens, as [`super::story`] tells them. What the violation rests on
/// ([`super::super::mechanism`]).
pub fn system_events<'h>(history: &'h History, window: &Window) -> Vec<&'h Event> {
    let told = Span::of(history, window);
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
pub(super) struct Span {
    pub from_us: u64,
    pub to_us: u64,
    /// Indexes of the events before `from_us` still in effect then.
    in_effect: BTreeSet<usize>,
}

impl Span {
    /// The span told of `window` in `history`.
    pub fn of(history: &History, window: &Window) -> Span {
        Span {
            from_us: window.from_us,
            to_us: window.to_us,
            in_effect: Span::in_effect_at(history, window.from_us),
        }
    }

    /// Whether the event at `index` is in the stretch.
    pub fn covers(&self, index: usize, event: &Event) -> bool {
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

/// The latest time a checker's message names, in µs: its times are written as
/// milliseconds with three decimals (`7654.000`).
pub fn last_time_named(violation: &str) -> Option<u64> {
    times_named(violation).max()
}

/// Every time a checker's message names, in µs, in the order it names them.
fn times_named(violation: &str) -> impl Iterator<Item = u64> + '_ {
    violation
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|word| word.len() > 4 && word.as_bytes()[word.len() - 4] == b'.')
        .filter_map(|word| word.parse::<f64>().ok())
        .map(|ms| (ms * 1000.0).round() as u64)
}

/// The span a liveness checker's message names as `from A to B ms` (the lock free and
/// wanted, a client's wait, the refusals after a crash), in µs.
pub(super) fn span_named(violation: &str) -> Option<(u64, u64)> {
    let (_, rest) = violation.split_once(" from ")?;
    let mut times = times_named(rest.split_once(" ms")?.0);
    let (from_us, to_us) = (times.next()?, times.next()?);
    (from_us <= to_us).then_some((from_us, to_us))
}

/// The promotions before `at_us` whose promoted node no later promotion before then
/// replaced: the masters in place when a window opens, by the index of each `Failover`.
/// A story tells them (the grants it tells come from them); the mechanism counts only the
/// promotions inside the window ([`system_events`]).
pub(super) fn promotions_in_effect(history: &History, at_us: u64) -> BTreeSet<usize> {
    let mut current: Vec<(usize, &str)> = Vec::new();
    for (index, event) in history.events.iter().enumerate() {
        if event.true_us >= at_us {
            break;
        }
        if let EventKind::Failover { promoted, replaced } = &event.kind {
            current.retain(|&(_, master)| master != replaced);
            current.push((index, promoted));
        }
    }
    current.into_iter().map(|(index, _)| index).collect()
}
