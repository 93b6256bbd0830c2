//! The expiry index against the scan it replaced: after any sequence of the keyspace's
//! writes, deletions, expiries and flushes, [`Db::earliest_expiry_ms`] and
//! [`Db::expire_due`] answer what a scan of every key answers.

use std::collections::VecDeque;

use proptest::prelude::*;

use super::*;

/// One change to a keyspace, on the selected database, at node wall time `now` where it
/// takes one.
#[derive(Debug, Clone)]
enum Op {
    Select(usize),
    Set(u8, Option<u64>),
    SetExpiry(u8, u64, u64),
    Persist(u8, u64),
    Remove(u8, u64),
    Get(u8, u64),
    Push(u8, u64),
    Pop(u8, u64),
    ExpireDue(u64),
    Clear,
    ClearAll,
    Swap(usize, usize),
    Replica(bool),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..4;
    let time = 0u64..60;
    let database = 0usize..3;
    prop_oneof![
        database.clone().prop_map(Op::Select),
        (key.clone(), proptest::option::of(time.clone())).prop_map(|(k, at)| Op::Set(k, at)),
        (key.clone(), time.clone(), time.clone()).prop_map(|(k, at, now)| Op::SetExpiry(k, at, now)),
        (key.clone(), time.clone()).prop_map(|(k, now)| Op::Persist(k, now)),
        (key.clone(), time.clone()).prop_map(|(k, now)| Op::Remove(k, now)),
        (key.clone(), time.clone()).prop_map(|(k, now)| Op::Get(k, now)),
        (key.clone(), time.clone()).prop_map(|(k, now)| Op::Push(k, now)),
        (key, time.clone()).prop_map(|(k, now)| Op::Pop(k, now)),
        time.prop_map(Op::ExpireDue),
        Just(Op::Clear),
        Just(Op::ClearAll),
        (database.clone(), database).prop_map(|(a, b)| Op::Swap(a, b)),
        any::<bool>().prop_map(Op::Replica),
    ]
}

/// What a scan of every stored key finds: the first millisecond some key is expired.
fn scanned_earliest_expiry_ms(db: &Db, replica: bool) -> Option<u64> {
    let expiries = (0..DATABASES).flat_map(|index| db.database(index).entries());
    let earliest = expiries.filter_map(|(_, entry)| entry.expires_at_ms).min();
    earliest.filter(|_| !replica).map(|at| at + 1)
}

/// How many stored keys a scan finds expired at `now_ms` (what active expiry deletes).
fn scanned_due(db: &Db, replica: bool, now_ms: u64) -> usize {
    let expiries = (0..DATABASES).flat_map(|index| db.database(index).entries());
    let due = expiries.filter(|(_, entry)| !entry.is_live(now_ms)).count();
    if replica { 0 } else { due }
}

fn apply(db: &mut Db, replica: &mut bool, op: Op) {
    let key = |k: u8| vec![b'k', k];
    match op {
        Op::Select(index) => db.select(index),
        Op::Set(k, at) => db.set(key(k), b"v".to_vec(), at),
        Op::SetExpiry(k, at, now) => _ = db.set_expiry(&key(k), at, now),
        Op::Persist(k, now) => _ = db.persist(&key(k), now),
        Op::Remove(k, now) => _ = db.remove(&key(k), now),
        Op::Get(k, now) => _ = db.get(&key(k), now),
        Op::Push(k, now) => {
            if let Ok(Some(list)) = db.write::<VecDeque<Vec<u8>>>(&key(k), true, now) {
                list.push_back(b"e".to_vec());
            }
        }
        Op::Pop(k, now) => {
            if let Ok(Some(list)) = db.write::<VecDeque<Vec<u8>>>(&key(k), false, now) {
                list.pop_front();
            }
            db.drop_if_empty(&key(k));
        }
        Op::ExpireDue(now) => {
            let due = scanned_due(db, *replica, now);
            assert_eq!(db.expire_due(now), due, "active expiry at {now}");
        }
        Op::Clear => db.clear(),
        Op::ClearAll => db.clear_all(),
        Op::Swap(a, b) => db.swap(a, b),
        Op::Replica(on) => {
            db.set_replica(on);
            *replica = on;
        }
    }
}

proptest! {
    #[test]
    fn the_earliest_expiry_is_the_one_a_scan_of_every_key_finds(ops in proptest::collection::vec(op(), 0..80)) {
        let mut db = Db::default();
        let mut replica = false;
        for op in ops {
            apply(&mut db, &mut replica, op.clone());
            prop_assert_eq!(db.earliest_expiry_ms(), scanned_earliest_expiry_ms(&db, replica), "after {:?}", op);
        }
    }
}
