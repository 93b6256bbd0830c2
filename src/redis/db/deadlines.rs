//! The expiry times of a database's keys, kept as keys change (the earliest is what the
//! server's expiry cycle sleeps until).

use std::collections::BTreeMap;

/// The expiry times of one database's keys, as a multiset: the earliest is what the
/// server's expiry cycle sleeps until after every command, so it is kept here as keys
/// change instead of found by a scan of every key. Only times are kept (no keys): a
/// write costs no copy of its key, and [`Database::expire_due`] still deletes in key order.
///
/// [`Database::expire_due`]: super::Database::expire_due
#[derive(Debug, Default)]
pub(super) struct Deadlines(BTreeMap<u64, usize>);

impl Deadlines {
    /// Counts a key that expires at `expires_at_ms` (nothing for a key without expiry).
    pub(super) fn add(&mut self, expires_at_ms: Option<u64>) {
        if let Some(at) = expires_at_ms {
            *self.0.entry(at).or_default() += 1;
        }
    }

    /// Forgets a key that expired at `expires_at_ms` (it was deleted or got another expiry).
    pub(super) fn remove(&mut self, expires_at_ms: Option<u64>) {
        if let Some(at) = expires_at_ms
            && let std::collections::btree_map::Entry::Occupied(mut count) = self.0.entry(at)
        {
            *count.get_mut() -= 1;
            if *count.get() == 0 {
                count.remove();
            }
        }
    }

    /// The first millisecond at which some key is expired (the rule of
    /// [`Entry::is_live`](super::Entry::is_live): one past its expiry time).
    pub(super) fn earliest_expired_ms(&self) -> Option<u64> {
        self.0.first_key_value().map(|(at, _)| at + 1)
    }
}
