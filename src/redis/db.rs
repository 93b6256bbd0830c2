//! The keyspace, and expiry by the node's own wall clock.
//!
//! Redis compares a key's absolute expiry time with `gettimeofday`, so a node whose clock
//! jumps forward expires keys early. Every method here takes `now_ms` from the node's
//! wall clock for the same reason. Keys expire lazily (on access) and actively (the
//! server calls [`Db::expire_due`] on its cron tick).
//!
//! A replica expires nothing itself: it hides logically expired keys from reads and waits
//! for its master's DEL, as Redis replicas do. Every change is recorded so a master can
//! stream its effects to replicas (`replication.rs`).

use std::collections::{BTreeMap, BTreeSet};

/// A stored string and its absolute expiry time (node wall clock, ms), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Vec<u8>,
    pub expires_at_ms: Option<u64>,
}

impl Entry {
    /// Redis's rule (`keyIsExpired`, and the active cycle): a key is expired once `now` is
    /// past its expiry, not at it. At the expiry millisecond it is still live: a `SET NX`
    /// then fails and a release then still finds the key.
    fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|at| now_ms > at)
    }

    /// The first millisecond at which the key is expired.
    fn expired_from_ms(&self) -> Option<u64> {
        self.expires_at_ms.map(|at| at + 1)
    }
}

/// What changed in a keyspace since it was last asked.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Every key was deleted (before the changes to `keys`).
    pub cleared: bool,
    /// Keys written, deleted or given a new expiry, in key order.
    pub keys: BTreeSet<Vec<u8>>,
}

/// The keyspace of one node (database 0).
#[derive(Debug, Default)]
pub struct Db {
    entries: BTreeMap<Vec<u8>, Entry>,
    /// On a replica: expired keys are hidden from reads, never deleted here.
    replica: bool,
    changes: Changes,
}

impl Db {
    /// The live entry under `key`. On a master an expired one is deleted first (lazy
    /// expiry); a replica only hides it.
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        if !self.replica && self.entries.get(key).is_some_and(|e| e.is_expired(now_ms)) {
            self.entries.remove(key);
            self.changes.keys.insert(key.to_vec());
        }
        self.entries.get(key).filter(|e| !e.is_expired(now_ms))
    }

    /// The entry under `key`, expired or not (what a master's snapshot sends).
    pub fn raw(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Every stored key, in order.
    pub fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.entries.keys()
    }

    fn live_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        self.get(key, now_ms)?;
        self.changes.keys.insert(key.to_vec());
        self.entries.get_mut(key)
    }

    /// Stores `value` under `key`, replacing any entry and its expiry.
    pub fn set(&mut self, key: Vec<u8>, value: Vec<u8>, expires_at_ms: Option<u64>) {
        self.changes.keys.insert(key.clone());
        self.entries.insert(key, Entry { value, expires_at_ms });
    }

    /// Deletes a key (a replica's hidden expired one too); says whether it was live.
    pub fn remove(&mut self, key: &[u8], now_ms: u64) -> bool {
        let live = self.get(key, now_ms).is_some();
        if self.entries.remove(key).is_some() {
            self.changes.keys.insert(key.to_vec());
        }
        live
    }

    /// Sets the absolute expiry of a live key; says whether there was one.
    pub fn set_expiry(&mut self, key: &[u8], expires_at_ms: u64, now_ms: u64) -> bool {
        self.live_mut(key, now_ms)
            .map(|entry| entry.expires_at_ms = Some(expires_at_ms))
            .is_some()
    }

    /// Removes the expiry of a live key; says whether it had one.
    pub fn persist(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.live_mut(key, now_ms)
            .is_some_and(|entry| entry.expires_at_ms.take().is_some())
    }

    /// Deletes every key (FLUSHALL).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.changes = Changes {
            cleared: true,
            keys: BTreeSet::new(),
        };
    }

    /// Makes this keyspace a replica's (it stops expiring keys) or a master's.
    pub fn set_replica(&mut self, replica: bool) {
        self.replica = replica;
    }

    /// What changed since the last call.
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// Deletes every key whose time has come (never on a replica); returns how many.
    ///
    /// Real Redis samples 20 keys with a TTL per cycle and repeats while many were
    /// expired; scanning all of them in key order deletes the same keys without drawing
    /// random numbers, and keys here are few.
    pub fn expire_due(&mut self, now_ms: u64) -> usize {
        if self.replica {
            return 0;
        }
        let due: Vec<Vec<u8>> = self
            .entries
            .iter()
            .filter(|(_, e)| e.is_expired(now_ms))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &due {
            self.entries.remove(key);
        }
        self.changes.keys.extend(due.iter().cloned());
        due.len()
    }

    /// The earliest time (node wall clock, ms) at which a key is expired: when
    /// [`Db::expire_due`] next has work. `None` on a replica, which expires nothing itself.
    pub fn earliest_expiry_ms(&self) -> Option<u64> {
        if self.replica {
            return None;
        }
        self.entries.values().filter_map(Entry::expired_from_ms).min()
    }

    /// Number of keys stored, expired or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_expire_lazily_by_the_given_clock() {
        let mut db = Db::default();
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert!(db.get(b"k", 999).is_some());
        assert_eq!(db.len(), 1);
        assert!(db.get(b"k", 1001).is_none());
        assert!(db.is_empty(), "lazy expiry deletes the key");
    }

    #[test]
    fn a_key_is_still_live_at_its_expiry_millisecond_as_in_redis() {
        let mut db = Db::default();
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert_eq!(db.expire_due(1000), 0, "the active cycle spares it at 1000");
        assert!(db.get(b"k", 1000).is_some(), "keyIsExpired: now > when");
        assert!(db.remove(b"k", 1000), "a release at the expiry finds the key");
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert_eq!(db.earliest_expiry_ms(), Some(1001));
        assert_eq!(db.expire_due(1001), 1);
    }

    #[test]
    fn active_expiry_deletes_only_due_keys() {
        let mut db = Db::default();
        db.set(b"a".to_vec(), b"1".to_vec(), Some(1000));
        db.set(b"b".to_vec(), b"2".to_vec(), Some(3000));
        db.set(b"c".to_vec(), b"3".to_vec(), None);
        assert_eq!(db.expire_due(2000), 1);
        assert_eq!(db.len(), 2);
    }

    #[test]
    fn expired_keys_cannot_be_removed_or_extended() {
        let mut db = Db::default();
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert!(!db.set_expiry(b"k", 5000, 1001));
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert!(!db.remove(b"k", 1500));
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert!(db.set_expiry(b"k", 5000, 500));
        assert!(db.remove(b"k", 4000));
    }
}
