//! A violating run told as the published analyses tell one: numbered steps in plain words,
//! only the events that matter, each with the true time and the clock of the node it
//! happened on, ending with the "However, …" that breaks the lock.
//!
//! What matters: the clients the violation involves (their grants, renewals, writes,
//! releases and losses), their keys' life on every Redis node (and that of any key the
//! violation names by its token, whoever owns it), and every fault, crash, restart and
//! failover, from the earliest grant involved in the violation up to the violation
//! ([`window`](fn@window)), with the faults already in effect when that grant came and the
//! promotions that made the masters of then (a split brain's second grant comes from one). A
//! violation before the first fault is told from its own grants, not around the fault.
//! A restart says whether the node came back without the key it held ([`keys`]); a
//! fault's end says which nodes another fault still holds ([`holds`]); a liveness story
//! says why each try failed and why no failover came ([`tries`]). What repeats folds into
//! one step ([`fold`]). The steps are data first ([`Step`]); [`render`] turns them into
//! text, headed by the checker they explain.

mod fold;
mod grants;
mod holds;
mod keys;
mod step;
#[cfg(test)]
mod tests;
mod tries;
mod window;
mod words;

use std::collections::{BTreeMap, BTreeSet};

use crate::check::{deadlock, liveness, starvation, validity};
use crate::history::{Event, EventKind, History, fmt_ms};

use fold::fold_key_churn;
pub use fold::fold_routine_cycles;
pub use grants::{GrantShare, first_overlap_grant};
pub use step::{Routine, Step};
pub use window::{Window, last_time_named, system_events, window};

use grants::{Answers, grants_behind_each_acquire};
use keys::{KeyLife, Owners};
use window::{Span, promotions_in_effect, span_named};
use words::{KeyNote, actor, validity};

/// The most steps a story tells; past that, it says how many it left out.
pub const MAX_STEPS: usize = 40;

/// The checkers that judge whether the lock is had at all (no progress, a starved client,
/// a key outliving its dead holder): their stories say why each try failed.
const LIVENESS: [&str; 3] = [liveness::NAME, starvation::NAME, deadlock::NAME];

/// The steps that explain `checker`'s `violation` in `history`: its [`window`](fn@window), and the
/// faults and promotions already in effect when the window opens (the state its first
/// grant met); for a liveness checker, why the tries in the span its message names failed.
pub fn story(history: &History, checker: &str, violation: &str) -> Vec<Step> {
    let window = window(history, checker, violation);
    let teller = Teller::new(history, &window, checker, violation);
    let told = Span::of(history, &window);
    let promoted = promotions_in_effect(history, window.from_us);
    let end_us = window.to_us;
    let mut steps: Vec<Step> = history
        .events
        .iter()
        .enumerate()
        .filter(|&(index, e)| {
            told.covers(index, e)
                || promoted.contains(&index)
                || (teller.stores_a_granted_key(index, e) && e.true_us <= end_us)
        })
        .filter_map(|(index, e)| teller.tell(index, e))
        .fold(Vec::new(), merge_key_notes)
        .into_iter()
        .map(|(step, _)| step)
        .collect();
    if LIVENESS.contains(&checker) {
        // Deadlock names only the dead holder: every other client's refusals tell it.
        let clients = match checker {
            deadlock::NAME => BTreeSet::new(),
            _ => window.clients.clone(),
        };
        let span = tries_span(&window, violation);
        let owner = |token: &str, index: usize| teller.owners.holding(token, index).map(str::to_string);
        for step in tries::why_not_had(history, &teller.keys, &owner, &clients, span) {
            let at = steps.partition_point(|s| s.true_us <= step.true_us);
            steps.insert(at, step);
        }
    }
    fold_routine_cycles(fold_key_churn(steps))
}

/// Where a liveness story tells the failed tries: the span its checker names, in the window.
fn tries_span(window: &Window, violation: &str) -> (u64, u64) {
    span_named(violation).map_or((window.from_us, window.to_us), |(from_us, to_us)| {
        (from_us, to_us.min(window.to_us))
    })
}

/// What [`story`] knows of a run while it tells each event.
struct Teller<'h> {
    history: &'h History,
    clients: BTreeSet<String>,
    violation: &'h str,
    /// Whose key each token is.
    owners: Owners<'h>,
    /// When each client began the acquire that was still going on when the window opened.
    acquiring_since: BTreeMap<&'h str, u64>,
    /// The tokens the involved clients were granted in the window.
    granted_in_window: BTreeSet<&'h str>,
    /// The nodes behind each grant, by the index of its `Acquired` event.
    grants: BTreeMap<usize, Answers>,
    keys: KeyLife,
    /// A liveness story's span, inside which the keys of failed tries are not told (the
    /// tries' step says what each node held), only those stored for a grant.
    tries_span: Option<(u64, u64)>,
    /// The `KeySet` events (by index) of attempts that won a grant.
    stored_for_grants: BTreeSet<usize>,
}

impl<'h> Teller<'h> {
    fn new(history: &'h History, window: &Window, checker: &str, violation: &'h str) -> Teller<'h> {
        let involved = |node: &str| window.clients.is_empty() || window.clients.contains(node);
        let owners = Owners::of(history);
        let stored_for_grants = stored_for_grants(history, &owners);
        Teller {
            history,
            clients: window.clients.clone(),
            violation,
            owners,
            // A grant's key is stored a round trip before the grant returns, during the
            // acquire that led to it: keep those too (not the keys earlier cycles stored
            // with a token a client reuses).
            acquiring_since: history
                .events
                .iter()
                .filter(|e| e.true_us < window.from_us && matches!(e.kind, EventKind::AcquireStarted))
                .map(|e| (e.node.as_str(), e.true_us))
                .collect(),
            granted_in_window: history
                .events
                .iter()
                .filter(|e| e.true_us >= window.from_us && involved(&e.node))
                .filter_map(|e| match &e.kind {
                    EventKind::Acquired { token, .. } => Some(token.as_str()),
                    _ => None,
                })
                .collect(),
            grants: grants_behind_each_acquire(history),
            keys: KeyLife::of(history),
            stored_for_grants,
            tries_span: LIVENESS.contains(&checker).then(|| tries_span(window, violation)),
        }
    }

    fn involved(&self, node: &str) -> bool {
        self.clients.is_empty() || self.clients.contains(node)
    }

    /// Whether the key holding `token` is told: its owner is involved, or the violation
    /// names it by its token ("key held token 8d1845ed": a restart that brought back a
    /// released key is what broke the grant).
    fn tells_key(&self, client: Option<&'h str>, token: &str) -> Option<&'h str> {
        let client = client?;
        let named = self
            .violation
            .contains(&format!("token {}", validity::short(token)));
        (self.involved(client) || named).then_some(client)
    }

    /// Whether a key event at `at_us` is told: not inside a liveness story's span.
    fn tells_key_at(&self, at_us: u64) -> bool {
        self.tries_span
            .is_none_or(|(from_us, to_us)| !(from_us < at_us && at_us < to_us))
    }

    /// Whether `event` stores the key of a grant in the window during the acquire that won it.
    fn stores_a_granted_key(&self, index: usize, event: &Event) -> bool {
        match &event.kind {
            EventKind::KeySet { token, .. } => {
                self.granted_in_window.contains(token.as_str())
                    && self
                        .owners
                        .storing(token, index)
                        .and_then(|client| self.acquiring_since.get(client))
                        .is_some_and(|&since| event.true_us >= since)
            }
            _ => false,
        }
    }

    /// The step that tells the event at `index`, if the story tells it, with its key note.
    fn tell(&self, index: usize, e: &Event) -> Option<(Step, Option<KeyNote>)> {
        let involved = self.involved(&e.node);
        let text = match &e.kind {
            EventKind::Acquired {
                validity_ms, fence, ..
            } if involved => {
                let fence = fence.map_or(String::new(), |f| format!(", fencing token {f}"));
                let from = self
                    .grants
                    .get(&index)
                    .map_or(String::new(), |answers| answers.to_string());
                let text = format!(
                    "{} gets the lock{from} (it believes it for {}{fence})",
                    e.node,
                    validity(*validity_ms)
                );
                return Some((Step::of(e, text, Some(Routine::Granted)), None));
            }
            EventKind::RenewalFailed { reason } if involved => {
                format!("{}'s renewal fails: {reason}", e.node)
            }
            EventKind::Renewed { validity_ms } if involved => {
                format!("{} renews it (for {} more)", e.node, validity(*validity_ms))
            }
            EventKind::ResourceWrite { value, fence } if involved => {
                let fence = fence.map_or(String::new(), |f| format!(" with token {f}"));
                let text = format!("{} writes {value} to the resource{fence}", e.node);
                return Some((Step::of(e, text, Some(Routine::Wrote)), None));
            }
            EventKind::ResourceRejected { fence, highest } if involved => format!(
                "the resource refuses {}'s token {fence} (it has seen {highest})",
                e.node
            ),
            EventKind::ReleaseSent { .. } if involved => {
                let text = match crashed_releasing(self.history, index) {
                    true => format!("{} starts to release the lock", e.node),
                    false => format!("{} releases the lock", e.node),
                };
                return Some((Step::of(e, text, Some(Routine::Released)), None));
            }
            EventKind::LockLost { reason } if involved => {
                format!("{} learns it lost the lock: {reason}", e.node)
            }
            EventKind::KeySet { token, expires_at_us } => {
                if !self.tells_key_at(e.true_us) && !self.stored_for_grants.contains(&index) {
                    return None;
                }
                let note = KeyNote {
                    client: self
                        .tells_key(self.owners.storing(token, index), token)?
                        .to_string(),
                    nodes: vec![(e.node.to_string(), *expires_at_us)],
                    stored: true,
                };
                return Some((
                    Step::of(e, note.to_string(), Some(Routine::KeyStored)),
                    Some(note),
                ));
            }
            EventKind::KeyGone { token } => {
                if !self.tells_key_at(e.true_us) {
                    return None;
                }
                let note = KeyNote {
                    client: self
                        .tells_key(self.owners.holding(token, index), token)?
                        .to_string(),
                    nodes: vec![(e.node.to_string(), None)],
                    stored: false,
                };
                return Some((Step::of(e, note.to_string(), Some(Routine::KeyGone)), Some(note)));
            }
            EventKind::FaultStarted { fault } => format!("fault: {fault}"),
            EventKind::FaultEnded { .. } => holds::fault_over(self.history, index)?,
            EventKind::Crashed => format!("{} crashes", actor(&e.node)),
            EventKind::Restarted => match self.keys.restarts.get(&index) {
                Some(restart) => restart.told(&actor(&e.node), |token| {
                    self.owners.holding(token, index).map(str::to_string)
                }),
                None => format!("{} restarts", actor(&e.node)),
            },
            EventKind::Failover { promoted, replaced } => {
                format!("{} promotes {promoted} in place of {replaced}", actor(&e.node))
            }
            _ => return None,
        };
        Some((Step::of(e, text, None), None))
    }
}

/// The `KeySet` events (by index) of the attempts that won their client a grant: those
/// of its key stored since its attempt began, up to its grant.
fn stored_for_grants(history: &History, owners: &Owners) -> BTreeSet<usize> {
    let mut pending: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
    let mut stored = BTreeSet::new();
    for (index, event) in history.events.iter().enumerate() {
        let client = event.node.as_str();
        match &event.kind {
            EventKind::KeySet { token, .. } => {
                if let Some(owner) = owners.storing(token, index) {
                    pending.entry(owner).or_default().push((index, token));
                }
            }
            EventKind::AcquireStarted | EventKind::AttemptFailed { .. } | EventKind::AcquireFailed { .. } => {
                pending.remove(client);
            }
            EventKind::Acquired { token, .. } => {
                let won = pending.remove(client).unwrap_or_default();
                stored.extend(won.into_iter().filter(|(_, t)| t == token).map(|(i, _)| i));
            }
            _ => {}
        }
    }
    stored
}

/// Whether the client whose `ReleaseSent` is the event at `index` crashed before its
/// release was answered (a crash point before the `DEL`): it did not release the lock.
fn crashed_releasing(history: &History, index: usize) -> bool {
    let client = &history.events[index].node;
    history.events[index + 1..]
        .iter()
        .filter(|e| e.node == *client)
        .find_map(|e| match &e.kind {
            EventKind::Crashed => Some(true),
            EventKind::Released { .. }
            | EventKind::ReleaseFailed { .. }
            | EventKind::NodeAnswered {
                request: "release", ..
            }
            | EventKind::AcquireStarted => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

/// Appends `next`, folding a key note into the step before it when that one is a note of
/// the same client's key going the same way; or into an earlier one past notes of other
/// clients' keys only, on other nodes (a replica following its master a moment later:
/// `client-1's key leaves redis-1 and redis-1-replica-1`, then `redis-1 and
/// redis-1-replica-1 store client-2's key`).
fn merge_key_notes(
    mut steps: Vec<(Step, Option<KeyNote>)>,
    next: (Step, Option<KeyNote>),
) -> Vec<(Step, Option<KeyNote>)> {
    let Some(new) = &next.1 else {
        steps.push(next);
        return steps;
    };
    let same_way = |note: &KeyNote| note.client == new.client && note.stored == new.stored;
    let elsewhere = |note: &KeyNote| {
        !note
            .nodes
            .iter()
            .any(|(node, _)| new.nodes.iter().any(|(n, _)| n == node))
    };
    let mut target = None;
    for (at, (_, note)) in steps.iter().enumerate().rev() {
        match note {
            Some(note) if same_way(note) && (at + 1 == steps.len() || elsewhere(note)) => {
                target = Some(at);
                break;
            }
            Some(note) if note.client != new.client => continue,
            _ => break,
        }
    }
    if let Some((step, Some(note))) = target.map(|at| &mut steps[at]) {
        note.merge(new);
        step.text = note.to_string();
        return steps;
    }
    steps.push(next);
    steps
}

/// The story as lines: a heading naming the checker it explains, the numbered steps, and
/// what broke.
pub fn render(steps: &[Step], checker: &str, violation: &str) -> Vec<String> {
    let mut lines = vec![format!("Story of the {checker} violation:")];
    lines.extend(steps.iter().take(MAX_STEPS).enumerate().map(|(i, step)| {
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
    }));
    if steps.len() > MAX_STEPS {
        lines.push(format!("    … {} more steps", steps.len() - MAX_STEPS));
    }
    lines.push(format!("However, {checker} is broken: {violation}."));
    lines
}
