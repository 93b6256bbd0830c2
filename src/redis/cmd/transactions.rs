//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! After MULTI a connection's commands are checked as Redis checks them before queuing
//! (name, arity, a replica's READONLY, subscribed mode) and queued (`+QUEUED`); a refusal
//! there marks the transaction failed, and EXEC then discards it (EXECABORT). EXEC runs the
//! queue at one instant of the node's clock, with no other command in between, and replies
//! with every reply, errors of single commands included (their arguments are checked only
//! then, as in Redis). WATCH makes EXEC abort (a nil reply) when a watched key changed after
//! it: by this or another connection, by expiry, a flush or the replication stream (the
//! node tells [`Watches`] of every change it applies), or when a key that was there at WATCH
//! has expired by EXEC.

use std::collections::{BTreeMap, BTreeSet};

use super::error::ReplyError;
use super::session_state::{Session, Transaction};
use super::spec::{Args, Flags, Handler, Spec, ok};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, KeyspaceChanges};

/// The transaction commands.
pub(super) const fn commands<C: From<Multi> + From<Exec> + From<Discard> + From<Unwatch> + From<Watch>>()
-> [Spec<C>; 5] {
    [
        Spec {
            name: "multi",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "start queuing this connection's commands",
            handler: Handler::Parse(|_| Ok(C::from(Multi))),
        },
        Spec {
            name: "exec",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "run the queue at one instant: every reply, or nil if a watched key changed",
            handler: Handler::Parse(|_| Ok(C::from(Exec))),
        },
        Spec {
            name: "discard",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "drop the queue and the watches",
            handler: Handler::Parse(|_| Ok(C::from(Discard))),
        },
        Spec {
            name: "watch",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "abort the next EXEC if these keys change (expiry, flush and replication included)",
            handler: Handler::Parse(|args: &mut Args| Ok(C::from(Watch(args.rest())))),
        },
        Spec {
            name: "unwatch",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "forget the watched keys",
            handler: Handler::Parse(|_| Ok(C::from(Unwatch))),
        },
    ]
}

/// `MULTI`: opens a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Multi;

/// `EXEC`: runs the transaction's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exec;

/// `DISCARD`: drops the transaction's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Discard;

/// `WATCH key ...`: the keys whose change aborts the connection's next EXEC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch(pub Vec<Vec<u8>>);

/// `UNWATCH`: forgets the connection's watched keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unwatch;

/// The commands that run at once inside MULTI instead of being queued.
const RUN_INSIDE_MULTI: &[&str] = &["exec", "discard", "multi", "watch", "quit", "reset"];

/// The commands Redis flags `no_multi`: refused inside MULTI, failing the transaction.
const REFUSED_INSIDE_MULTI: &[&str] = &["save"];

/// Whether a command named `name` is refused by a connection in MULTI.
pub(super) fn is_refused_inside_multi(name: &str) -> bool {
    REFUSED_INSIDE_MULTI.contains(&name)
}

/// Whether a command named `name` is queued by a connection in MULTI.
pub(super) fn is_queued(name: &str) -> bool {
    !RUN_INSIDE_MULTI.contains(&name)
}

/// How EXEC words a refusal of itself (`execCommandAbort`): an EXEC refused before it runs
/// discards the transaction.
pub(super) fn exec_abort(error: ReplyError) -> ReplyError {
    let reason = error.0.strip_prefix("ERR ").unwrap_or(&error.0);
    ReplyError(format!("EXECABORT Transaction discarded because of: {reason}"))
}

/// One watched key: its database, and whether it was there (unexpired) at WATCH.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watched {
    db: usize,
    key: Vec<u8>,
    existed: bool,
}

/// The keys each connection watches, and the connections whose watched keys changed.
#[derive(Debug, Default)]
pub struct Watches {
    by_client: BTreeMap<u64, Vec<Watched>>,
    touched: BTreeSet<u64>,
}

impl Watches {
    /// Connection `id` watches `key` of database `db`, which `existed` or not.
    fn watch(&mut self, id: u64, db: usize, key: Vec<u8>, existed: bool) {
        let keys = self.by_client.entry(id).or_default();
        if !keys.iter().any(|w| w.db == db && w.key == key) {
            keys.push(Watched { db, key, existed });
        }
    }

    /// Connection `id` watches nothing any more (UNWATCH, EXEC, DISCARD, RESET, closed).
    pub fn unwatch(&mut self, id: u64) {
        self.by_client.remove(&id);
        self.touched.remove(&id);
    }

    /// Marks the connections watching a key that `changes` changed (a flushed database
    /// changes every watched key that was there).
    pub fn touch(&mut self, changes: &KeyspaceChanges) {
        for (id, keys) in &self.by_client {
            let changed = keys.iter().any(|w| {
                changes
                    .get(&w.db)
                    .is_some_and(|c| c.keys.contains(&w.key) || (c.cleared && w.existed))
            });
            if changed {
                self.touched.insert(*id);
            }
        }
    }

    /// The connections a key they watch changed for (CLIENT LIST's flag `d`).
    pub fn dirty(&self) -> &BTreeSet<u64> {
        &self.touched
    }

    /// Whether EXEC of connection `id` must abort at `now_ms`: a watched key changed, or
    /// was there at WATCH and has expired since (Redis 7.0's `isWatchedKeyExpired`).
    fn must_abort(&self, id: u64, db: &Db, now_ms: u64) -> bool {
        self.touched.contains(&id)
            || self
                .by_client
                .get(&id)
                .into_iter()
                .flatten()
                .any(|w| w.existed && !db.database(w.db).raw(&w.key).is_some_and(|e| e.is_live(now_ms)))
    }
}

/// MULTI.
pub(super) fn multi(session: &mut Session) -> Reply {
    if session.transaction.is_some() {
        return Frame::Error("ERR MULTI calls can not be nested".into()).into();
    }
    session.transaction = Some(Transaction::default());
    ok().into()
}

/// DISCARD.
pub(super) fn discard(session: &mut Session, watches: &mut Watches) -> Reply {
    if session.transaction.take().is_none() {
        return Frame::Error("ERR DISCARD without MULTI".into()).into();
    }
    watches.unwatch(session.id);
    ok().into()
}

/// WATCH key ...: each key of the connection's database, noting whether it is there now.
pub(super) fn watch(
    keys: Vec<Vec<u8>>,
    session: &Session,
    watches: &mut Watches,
    db: &Db,
    now_ms: u64,
) -> Reply {
    if session.transaction.is_some() {
        return Frame::Error("ERR WATCH inside MULTI is not allowed".into()).into();
    }
    for key in keys {
        let existed = db.raw(&key).is_some_and(|e| e.is_live(now_ms));
        watches.watch(session.id, session.db, key, existed);
    }
    ok().into()
}

/// What EXEC does before running the queue: the queue to run, or the reply that ends the
/// transaction without running it. The watches are dropped either way.
pub(super) fn exec_queue(
    session: &mut Session,
    watches: &mut Watches,
    db: &Db,
    now_ms: u64,
) -> Result<Vec<Vec<Vec<u8>>>, Reply> {
    let Some(transaction) = session.transaction.take() else {
        return Err(Frame::Error("ERR EXEC without MULTI".into()).into());
    };
    let aborted = watches.must_abort(session.id, db, now_ms);
    watches.unwatch(session.id);
    if transaction.failed {
        return Err(
            Frame::Error("EXECABORT Transaction discarded because of previous errors.".into()).into(),
        );
    }
    if aborted {
        return Err(Reply::NullArray);
    }
    Ok(transaction.queued)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::db::Changes;

    #[test]
    fn a_change_to_a_watched_key_or_its_expiry_aborts_exec() {
        let mut db = Db::default();
        db.set(b"k".to_vec(), b"v".to_vec(), Some(100));
        let mut watches = Watches::default();
        let session = Session {
            id: 1,
            ..Session::default()
        };
        watch(
            vec![b"k".to_vec(), b"other".to_vec()],
            &session,
            &mut watches,
            &db,
            0,
        );
        assert!(
            !watches.must_abort(1, &db, 100),
            "alive at its expiry millisecond"
        );
        assert!(watches.must_abort(1, &db, 101), "expired since WATCH");

        let mut watches = Watches::default();
        watch(vec![b"other".to_vec()], &session, &mut watches, &db, 0);
        let mut flushed_elsewhere = KeyspaceChanges::new();
        flushed_elsewhere.insert(
            0,
            Changes {
                cleared: true,
                keys: BTreeSet::new(),
            },
        );
        watches.touch(&flushed_elsewhere);
        assert!(
            !watches.must_abort(1, &db, 0),
            "a flush spares a key that was not there"
        );
        let mut written = KeyspaceChanges::new();
        written.insert(
            0,
            Changes {
                cleared: false,
                keys: BTreeSet::from([b"other".to_vec()]),
            },
        );
        watches.touch(&written);
        assert!(watches.must_abort(1, &db, 0));
        watches.unwatch(1);
        assert!(!watches.must_abort(1, &db, 0));
    }
}
