//! The keyspace's expiry as Redis has it: lazy on access (live at its own millisecond),
//! active for due keys only, and an expired key neither removed nor extended; and what a
//! node takes after each command, from whichever databases were written.

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

#[test]
fn changes_expiries_and_writes_come_from_whichever_databases_were_written() {
    let mut db = Db::default();
    db.select(5);
    db.set(b"five".to_vec(), b"v".to_vec(), Some(1000));
    db.database_mut(2).set(b"two".to_vec(), b"v".to_vec(), None);
    assert_eq!(db.take_changes().into_keys().collect::<Vec<_>>(), [2, 5]);
    assert!(db.take_changes().is_empty(), "changes are taken once");
    assert_eq!(db.earliest_expiry_ms(), Some(1001));
    assert_eq!(db.expire_due(1001), 1, "the cycle reaches database 5");
    assert!(db.take_changes()[&5].keys.contains(&b"five"[..]));
    let before = db.dirty();
    db.database_mut(7).set(b"seven".to_vec(), b"v".to_vec(), None);
    assert_eq!(db.dirty(), before + 1);
    db.swap(7, 9);
    assert_eq!(db.take_changes().into_keys().collect::<Vec<_>>(), [7, 9]);
}
