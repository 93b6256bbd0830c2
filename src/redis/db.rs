//! The keyspace, and expiry by the node's own wall clock.
//!
//! Redis compares a key's absolute expiry time with `gettimeofday`, so a node whose clock
//! jumps forward expires keys early. Every method here takes `now_ms` from the node's
//! wall clock for the same reason. Keys expire lazily (on access) and actively (the
//! server calls [`Db::expire_due`] on its cron tick).

use std::collections::BTreeMap;

/// A stored string and its absolute expiry time (node wall clock, ms), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Vec<u8>,
    pub expires_at_ms: Option<u64>,
}

impl Entry {
    fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// The keyspace of one node (database 0).
#[derive(Debug, Default)]
pub struct Db {
    entries: BTreeMap<Vec<u8>, Entry>,
}

impl Db {
    /// The live entry under `key`; an expired one is deleted first (lazy expiry).
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        if self.entries.get(key).is_some_and(|e| e.is_expired(now_ms)) {
            self.entries.remove(key);
        }
        self.entries.get(key)
    }

    /// Stores `value` under `key`, replacing any entry and its expiry.
    pub fn set(&mut self, key: Vec<u8>, value: Vec<u8>, expires_at_ms: Option<u64>) {
        self.entries.insert(key, Entry { value, expires_at_ms });
    }

    /// Deletes a live key; says whether there was one.
    pub fn remove(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.get(key, now_ms).is_some() && self.entries.remove(key).is_some()
    }

    /// Sets the absolute expiry of a live key; says whether there was one.
    pub fn set_expiry(&mut self, key: &[u8], expires_at_ms: u64, now_ms: u64) -> bool {
        self.get(key, now_ms);
        match self.entries.get_mut(key) {
            Some(entry) => {
                entry.expires_at_ms = Some(expires_at_ms);
                true
            }
            None => false,
        }
    }

    /// Removes the expiry of a live key; says whether it had one.
    pub fn persist(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.get(key, now_ms);
        self.entries
            .get_mut(key)
            .is_some_and(|entry| entry.expires_at_ms.take().is_some())
    }

    /// Deletes every key (FLUSHALL).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Deletes every key whose time has come; returns how many.
    ///
    /// Real Redis samples 20 keys with a TTL per cycle and repeats while many were
    /// expired; scanning all of them in key order deletes the same keys without drawing
    /// random numbers, and keys here are few.
    pub fn expire_due(&mut self, now_ms: u64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| !e.is_expired(now_ms));
        before - self.entries.len()
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
        assert!(db.get(b"k", 1000).is_none());
        assert!(db.is_empty(), "lazy expiry deletes the key");
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
        assert!(!db.set_expiry(b"k", 5000, 1000));
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert!(!db.remove(b"k", 1500));
        db.set(b"k".to_vec(), b"v".to_vec(), Some(1000));
        assert!(db.set_expiry(b"k", 5000, 500));
        assert!(db.remove(b"k", 4000));
    }
}
