//! A sorted set: members by score, then by member bytes, as Redis orders them.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// A sorted-set score: never NaN, so it orders totally (with `-0` equal to `0`, as Redis's
/// comparisons have it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(pub f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// A sorted set: each member's score, and the members in (score, member) order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortedSet {
    scores: BTreeMap<Vec<u8>, Score>,
    order: BTreeSet<(Score, Vec<u8>)>,
}

impl SortedSet {
    /// The member's score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).map(|s| s.0)
    }

    /// Sets a member's score; returns its old one.
    pub fn insert(&mut self, member: Vec<u8>, score: f64) -> Option<f64> {
        let old = self.remove(&member);
        self.order.insert((Score(score), member.clone()));
        self.scores.insert(member, Score(score));
        old
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let score = self.scores.remove(member)?;
        self.order.remove(&(score, member.to_vec()));
        Some(score.0)
    }

    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// Members and scores, lowest score first (ties by member bytes).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + ExactSizeIterator {
        self.order
            .iter()
            .map(|(score, member)| (member.as_slice(), score.0))
    }

    /// The member's position, lowest score first.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = *self.scores.get(member)?;
        Some(self.order.range(..(score, member.to_vec())).count())
    }
}
