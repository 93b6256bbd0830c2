//! Which nodes gave each grant: the answers a client heard during the attempt that won it.

use std::collections::BTreeMap;

use super::words::list;
use crate::check::mutual_exclusion;
use crate::history::{Answer, EventKind, History};

/// The nodes' answers to the attempt that won one grant.
#[derive(Debug, Default)]
pub(super) struct Answers {
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
pub(super) fn grants_behind_each_acquire(history: &History) -> BTreeMap<usize, Answers> {
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
                    Answer::Yes => answers.granted.push(redis.to_string()),
                    Answer::No => {}
                    Answer::Failed(_) => answers.silent.push(redis.to_string()),
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
