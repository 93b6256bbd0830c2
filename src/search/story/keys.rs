//! The lock key's life on every Redis node, read from the history's key events: which
//! client's key each node held at each moment, what a restart brought back from disk, and
//! what it lost.
//!
//! The history records a crash without a `KeyGone` ("a crash takes the key with it
//! silently") and a restart's reload from an AOF or RDB as `KeySet`s the node records as it
//! starts, before it serves anyone. So a key a node held when it crashed is gone on restart
//! unless one of those first `KeySet`s brings it back, and unless it had expired by then.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Answer, Event, EventKind, History};

/// Which client a token's key belongs to. A token names one grant, except where a lock
/// writes the same value for every client (the ladder's lowest tiers): then the key is the
/// client's granted under it last before the moment asked about, or, for a key being
/// stored, the client its store is about to grant.
#[derive(Debug, Default)]
pub(super) struct Owners<'h> {
    /// Each token's grants: the index of its `Acquired` event and the client.
    grants: BTreeMap<&'h str, Vec<(usize, &'h str)>>,
}

impl<'h> Owners<'h> {
    pub fn of(history: &'h History) -> Owners<'h> {
        let mut grants: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
        for (index, event) in history.events.iter().enumerate() {
            if let EventKind::Acquired { token, .. } = &event.kind {
                grants.entry(token).or_default().push((index, &event.node));
            }
        }
        Owners { grants }
    }

    /// Whose key holding `token` a node held at the event at `index`: the client last
    /// granted it before, else the first after.
    pub fn holding(&self, token: &str, index: usize) -> Option<&'h str> {
        let grants = self.grants.get(token)?;
        let before = grants.iter().rev().find(|(at, _)| *at < index);
        before.or(grants.first()).map(|(_, client)| *client)
    }

    /// Whose key holding `token` the event at `index` stores: the client it is granted to
    /// next, else the last granted it.
    pub fn storing(&self, token: &str, index: usize) -> Option<&'h str> {
        let grants = self.grants.get(token)?;
        let after = grants.iter().find(|(at, _)| *at > index);
        after.or(grants.last()).map(|(_, client)| *client)
    }
}

/// How long after its restart (or its waking, if a pause still held it) a node reloads
/// what it persisted: it does so as it starts (1 ms after the restart in the simulator),
/// before it listens. A client's own `SET`, or a replica's full resync from its master,
/// takes a connection and a round trip: at least 2 ms more at the default latency.
const RELOAD_US: u64 = 2_000;

/// What a Redis node's restart did to the lock key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Restart {
    /// The key the node held when it crashed, unexpired, that the restart did not bring
    /// back: gone.
    pub lost: Option<String>,
    /// The key it held when it crashed, brought back from disk.
    pub kept: Option<String>,
    /// Keys the restart brought back that it did not hold when it crashed (an older one).
    pub older: Vec<String>,
    /// The key it held when it crashed, which had expired by the restart.
    pub expired: Option<String>,
}

impl Restart {
    /// The step that tells `node`'s restart; `owner` names the client a token belongs to.
    pub fn told(&self, node: &str, owner: impl Fn(&str) -> Option<String>) -> String {
        let held_by = |token: &str| match owner(token) {
            Some(client) => format!("the lock key held by {client}"),
            None => format!("the lock key it held (token {})", short(token)),
        };
        match (&self.lost, &self.kept, &self.expired) {
            (Some(lost), _, _) if self.older.is_empty() => {
                format!("{node} restarts without the lock key: {} is gone", held_by(lost))
            }
            (Some(lost), _, _) => format!(
                "{node} restarts with an older lock key from disk: {} is gone",
                held_by(lost)
            ),
            (None, Some(kept), _) => format!("{node} restarts and reloads {} from disk", held_by(kept)),
            (None, None, Some(expired)) => {
                format!("{node} restarts; {} had expired meanwhile", held_by(expired))
            }
            (None, None, None) => format!("{node} restarts"),
        }
    }
}

fn short(token: &str) -> &str {
    &token[..token.len().min(8)]
}

/// The lock key's life over a whole run.
#[derive(Debug, Default)]
pub(super) struct KeyLife {
    /// Each Redis node's restart, by the index of its `Restarted` event.
    pub restarts: BTreeMap<usize, Restart>,
    /// For each acquire a node refused (its `NodeAnswered` event's index), the token of the
    /// key that node held then.
    pub refused_for: BTreeMap<usize, String>,
}

impl KeyLife {
    pub fn of(history: &History) -> KeyLife {
        let mut life = KeyLife::default();
        let mut held: BTreeMap<&str, (&str, Option<i64>)> = BTreeMap::new();
        let mut at_crash: BTreeMap<&str, (&str, Option<i64>)> = BTreeMap::new();
        let mut ever: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (index, event) in history.events.iter().enumerate() {
            let node = event.node.as_str();
            let redis = !node.starts_with("client-");
            match &event.kind {
                EventKind::KeySet { token, expires_at_us } => {
                    held.insert(node, (token, *expires_at_us));
                    ever.entry(node).or_default().insert(token);
                }
                EventKind::KeyGone { .. } => {
                    held.remove(node);
                }
                EventKind::Crashed if redis => {
                    at_crash.remove(node);
                    if let Some(key) = held.remove(node) {
                        at_crash.insert(node, key);
                    }
                }
                EventKind::Restarted if redis => {
                    let before = ever.get(node).cloned().unwrap_or_default();
                    let reloaded = reloaded(history, index, &before);
                    let mut restart = Restart::default();
                    if let Some((token, expires_at_us)) = at_crash.remove(node) {
                        if reloaded.contains(&token) {
                            restart.kept = Some(token.to_string());
                        } else if expires_at_us.is_some_and(|at| at <= event.local_us) {
                            restart.expired = Some(token.to_string());
                        } else {
                            restart.lost = Some(token.to_string());
                        }
                    }
                    let kept = restart.kept.clone();
                    restart.older = reloaded
                        .into_iter()
                        .filter(|t| Some(*t) != kept.as_deref())
                        .map(str::to_string)
                        .collect();
                    life.restarts.insert(index, restart);
                }
                EventKind::NodeAnswered {
                    request: "acquire",
                    redis,
                    answer: Answer::No,
                    ..
                } => {
                    if let Some((token, _)) = held.get(redis.as_str()) {
                        life.refused_for.insert(index, token.to_string());
                    }
                }
                _ => {}
            }
        }
        life
    }
}

/// The tokens the node whose `Restarted` event is at `index` reloads from disk: its first
/// `KeySet`s after the restart, before it answers anyone, soon after it starts (or wakes,
/// when a pause still holds it), of keys it had stored before.
fn reloaded<'h>(history: &'h History, index: usize, stored_before: &BTreeSet<&str>) -> Vec<&'h str> {
    let restart = &history.events[index];
    let node = restart.node.as_str();
    let later = &history.events[index + 1..];
    let starts_us = match paused_at(&history.events[..index], node) {
        false => restart.true_us,
        true => later
            .iter()
            .find(|e| e.node == node && matches!(e.kind, EventKind::Resumed))
            .map_or(u64::MAX, |e| e.true_us),
    };
    let serves = |e: &Event| {
        matches!(&e.kind, EventKind::NodeAnswered { redis, answer, .. }
            if redis == node && !matches!(answer, Answer::Failed(_)))
    };
    later
        .iter()
        .take_while(|e| e.true_us <= starts_us.saturating_add(RELOAD_US) && !serves(e))
        .filter(|e| e.node == node && !matches!(e.kind, EventKind::Resumed))
        .map_while(|e| match &e.kind {
            EventKind::KeySet { token, .. } if stored_before.contains(token.as_str()) => Some(token.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether a pause holds `node` at the end of `events`.
pub(super) fn paused_at(events: &[Event], node: &str) -> bool {
    events
        .iter()
        .rev()
        .filter(|e| e.node == node)
        .find_map(|e| match e.kind {
            EventKind::Paused => Some(true),
            EventKind::Resumed => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}
