//! List commands: LPUSH, RPUSH, LPOP, RPOP (with a count), LINDEX, LRANGE, LREM, LLEN,
//! LTRIM, and the blocking BLPOP and BRPOP. A blocking pop that finds nothing blocks the
//! connection on the node's clock until a push serves it (blocked clients are served in
//! the order they blocked) or its timeout passes; the server does the waiting (see
//! `server.rs` and [`Blocked`]). Scripts may not call them (Redis 7.0's `noscript`); inside
//! a transaction they do not block, answering as if their timeout had passed.

use std::collections::{BTreeMap, VecDeque};

use tokio::sync::oneshot;

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::Db;
use crate::redis::propagation::served_pop;

/// The list commands.
pub(super) const fn commands<C: From<BlockingPop>>() -> [Spec<C>; 11] {
    [
        Spec {
            name: "lpush",
            arity: -3,
            flags: Flags::WRITE_DENYOOM,
            summary: "push at the head: the new length",
            handler: Handler::Keyspace(|args, db, now| push(args, db, now, End::Left)),
        },
        Spec {
            name: "rpush",
            arity: -3,
            flags: Flags::WRITE_DENYOOM,
            summary: "push at the tail: the new length",
            handler: Handler::Keyspace(|args, db, now| push(args, db, now, End::Right)),
        },
        Spec {
            name: "lpop",
            arity: -2,
            flags: Flags::WRITE,
            summary: "pop from the head, or count of them",
            handler: Handler::Keyspace(|args, db, now| pop(args, db, now, End::Left, "lpop")),
        },
        Spec {
            name: "rpop",
            arity: -2,
            flags: Flags::WRITE,
            summary: "pop from the tail, or count of them",
            handler: Handler::Keyspace(|args, db, now| pop(args, db, now, End::Right, "rpop")),
        },
        Spec {
            name: "lindex",
            arity: 3,
            flags: Flags::READ,
            summary: "the element at an index (negative from the end)",
            handler: Handler::Keyspace(lindex),
        },
        Spec {
            name: "lrange",
            arity: 4,
            flags: Flags::READ,
            summary: "the elements start..=stop",
            handler: Handler::Keyspace(lrange),
        },
        Spec {
            name: "lrem",
            arity: 4,
            flags: Flags::WRITE,
            summary: "remove count occurrences (negative: from the tail, 0: all)",
            handler: Handler::Keyspace(lrem),
        },
        Spec {
            name: "llen",
            arity: 2,
            flags: Flags::READ,
            summary: "the length",
            handler: Handler::Keyspace(llen),
        },
        Spec {
            name: "ltrim",
            arity: 4,
            flags: Flags::WRITE,
            summary: "keep only start..=stop",
            handler: Handler::Keyspace(ltrim),
        },
        Spec {
            name: "blpop",
            arity: -3,
            flags: Flags::WRITE_NOSCRIPT,
            summary: "pop from the head of the first non-empty list, or block (timeout in s, 0 = forever)",
            handler: Handler::Parse(|args| Ok(C::from(BlockingPop::parse(args, End::Left)?))),
        },
        Spec {
            name: "brpop",
            arity: -3,
            flags: Flags::WRITE_NOSCRIPT,
            summary: "pop from the tail of the first non-empty list, or block",
            handler: Handler::Parse(|args| Ok(C::from(BlockingPop::parse(args, End::Right)?))),
        },
    ]
}

/// Which end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

type List = VecDeque<Vec<u8>>;

fn push(args: &mut Args, db: &mut Db, now_ms: u64, end: End) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let list = db
        .write::<List>(&key, true, now_ms)?
        .ok_or_else(ReplyError::syntax)?;
    for element in args.rest() {
        match end {
            End::Left => list.push_front(element),
            End::Right => list.push_back(element),
        }
    }
    Ok(Frame::Integer(list.len() as i64).into())
}

/// Pops one element from `end` of the list under `key` (deleting an emptied list).
fn pop_one(db: &mut Db, key: &[u8], end: End, now_ms: u64) -> Result<Option<Vec<u8>>, ReplyError> {
    let popped = db.write::<List>(key, false, now_ms)?.and_then(|list| match end {
        End::Left => list.pop_front(),
        End::Right => list.pop_back(),
    });
    db.drop_if_empty(key);
    Ok(popped)
}

fn pop(args: &mut Args, db: &mut Db, now_ms: u64, end: End, name: &str) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let rest = args.rest();
    let count = match rest.as_slice() {
        [] => None,
        [count] => {
            // getPositiveLongFromObjectOrReply: one message for both failures.
            let count = parse_int(count)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| ReplyError("ERR value is out of range, must be positive".into()))?;
            Some(count)
        }
        _ => return Err(ReplyError::wrong_arity(name)),
    };
    let Some(count) = count else {
        return Ok(pop_one(db, &key, end, now_ms)?
            .map_or(Frame::Null, Frame::BulkString)
            .into());
    };
    let Some(list) = db.write::<List>(&key, false, now_ms)? else {
        return Ok(Reply::NullArray);
    };
    let take = count.min(list.len());
    let popped: Vec<Frame> = match end {
        End::Left => list.drain(..take).map(Frame::BulkString).collect(),
        End::Right => (0..take)
            .filter_map(|_| list.pop_back())
            .map(Frame::BulkString)
            .collect(),
    };
    db.drop_if_empty(&key);
    Ok(Frame::Array(popped).into())
}

/// An index into a list of `len` (negative counts from the end), if it is inside.
fn position(index: i64, len: usize) -> Option<usize> {
    let index = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&index).then_some(index as usize)
}

/// The clamped range `start..=stop` of a list of `len`, as LRANGE and LTRIM take it;
/// `None` when empty.
fn span(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

/// LINDEX looks the key up before it reads the index, as Redis does: a missing key is nil
/// whatever the index says.
fn lindex(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let Some(list) = db.read::<List>(&key, now_ms)? else {
        return Ok(Frame::Null.into());
    };
    let index = args.next_int()?;
    Ok(position(index, list.len())
        .and_then(|at| list.get(at))
        .map_or(Frame::Null, |e| Frame::BulkString(e.clone()))
        .into())
}

fn lrange(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let start = args.next_int()?;
    let stop = args.next_int()?;
    let items = db
        .read::<List>(&key, now_ms)?
        .and_then(|list| {
            let (from, to) = span(start, stop, list.len())?;
            Some(list.range(from..=to).cloned().map(Frame::BulkString).collect())
        })
        .unwrap_or_default();
    Ok(Frame::Array(items).into())
}

fn lrem(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let count = args.next_int()?;
    let element = args.next_bytes()?;
    let mut removed = 0;
    if let Some(list) = db.write::<List>(&key, false, now_ms)? {
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs() as usize
        };
        let matches: Vec<usize> = if count < 0 {
            list.iter()
                .enumerate()
                .rev()
                .filter(|(_, e)| **e == element)
                .map(|(i, _)| i)
                .take(limit)
                .collect()
        } else {
            list.iter()
                .enumerate()
                .filter(|(_, e)| **e == element)
                .map(|(i, _)| i)
                .take(limit)
                .collect()
        };
        let mut doomed = matches;
        doomed.sort_unstable_by(|a, b| b.cmp(a));
        for index in doomed {
            list.remove(index);
            removed += 1;
        }
    }
    db.drop_if_empty(&key);
    Ok(Frame::Integer(removed).into())
}

fn llen(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    Ok(Frame::Integer(db.read::<List>(&key, now_ms)?.map_or(0, VecDeque::len) as i64).into())
}

fn ltrim(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let start = args.next_int()?;
    let stop = args.next_int()?;
    if let Some(list) = db.write::<List>(&key, false, now_ms)? {
        match span(start, stop, list.len()) {
            None => list.clear(),
            Some((from, to)) => {
                list.truncate(to + 1);
                list.drain(..from);
            }
        }
    }
    db.drop_if_empty(&key);
    Ok(ok().into())
}

/// `BLPOP | BRPOP key [key ...] timeout`: pops from the first of the keys holding a list;
/// when none does, the connection blocks (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockingPop {
    pub keys: Vec<Vec<u8>>,
    /// How long to block, in ms; 0 blocks until served.
    pub timeout_ms: u64,
    pub end: End,
}

impl BlockingPop {
    fn parse(args: &mut Args, end: End) -> Result<Self, ReplyError> {
        let mut keys = args.rest();
        let timeout = keys.pop().ok_or_else(ReplyError::syntax)?;
        let seconds = std::str::from_utf8(&timeout)
            .ok()
            .filter(|t| !t.is_empty() && !t.starts_with(|c: char| c.is_ascii_whitespace()))
            .and_then(|t| t.parse::<f64>().ok())
            .filter(|s| s.is_finite())
            .ok_or_else(|| ReplyError("ERR timeout is not a float or out of range".into()))?;
        if seconds < 0.0 {
            return Err(ReplyError("ERR timeout is negative".into()));
        }
        Ok(BlockingPop {
            keys,
            // Rounded up, as Redis does: a timeout under a millisecond still times out.
            timeout_ms: (seconds * 1000.0).ceil() as u64,
            end,
        })
    }

    /// Pops now from the first key holding a list: `[key, element]`; `None` when no key
    /// holds one (a client then blocks).
    pub(crate) fn try_pop(&self, db: &mut Db, now_ms: u64) -> Result<Option<Frame>, ReplyError> {
        for key in &self.keys {
            if let Some(element) = pop_one(db, key, self.end, now_ms)? {
                return Ok(Some(Frame::Array(vec![
                    Frame::BulkString(key.clone()),
                    Frame::BulkString(element),
                ])));
            }
        }
        Ok(None)
    }

    /// Pops now as [`BlockingPop::try_pop`] does, and records the pop as Redis propagates
    /// a blocking pop (an `LPOP` or `RPOP` of the key served, `propagation.rs`).
    pub(crate) fn try_pop_recorded(&self, db: &mut Db, now_ms: u64) -> Result<Option<Frame>, ReplyError> {
        let popped = self.try_pop(db, now_ms)?;
        if let Some(frame) = &popped {
            db.record_expired(false);
            if db.log.recording {
                let database = db.selected();
                db.log.push(database, served_pop(self.end == End::Left, frame));
            }
        }
        Ok(popped)
    }

    /// As a transaction runs it: never blocks.
    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Reply {
        match self.try_pop(db, now_ms) {
            Ok(Some(frame)) => frame.into(),
            Ok(None) => Reply::NullArray,
            Err(error) => Frame::from(error).into(),
        }
    }
}

/// One blocked connection: what it waits for and where its reply goes.
struct Waiter {
    database: usize,
    pop: BlockingPop,
    reply: oneshot::Sender<Frame>,
}

/// The connections blocked on lists, in the order they blocked. After every command the
/// server calls [`Blocked::serve`], which hands pushed elements to the longest-waiting
/// connections blocked on their keys, as Redis serves them.
#[derive(Default)]
pub struct Blocked {
    /// By the order they blocked in.
    waiters: BTreeMap<u64, Waiter>,
    next_ticket: u64,
}

impl Blocked {
    /// Blocks a connection on `pop` in `database`; its reply comes on the receiver. The
    /// ticket unblocks it ([`Blocked::cancel`]).
    pub fn block(&mut self, database: usize, pop: BlockingPop) -> (u64, oneshot::Receiver<Frame>) {
        let (reply, receiver) = oneshot::channel();
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.waiters.insert(ticket, Waiter { database, pop, reply });
        (ticket, receiver)
    }

    /// How many connections are blocked now (INFO's `blocked_clients`).
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Forgets a connection that stopped waiting (its timeout passed, it hung up).
    pub fn cancel(&mut self, ticket: u64) {
        self.waiters.remove(&ticket);
    }

    /// Serves every blocked connection a list now can, oldest first, each from the first
    /// of its keys holding a list.
    pub fn serve(&mut self, db: &mut Db, now_ms: u64) {
        if self.waiters.is_empty() {
            return;
        }
        let selected = db.selected();
        let tickets: Vec<u64> = self.waiters.keys().copied().collect();
        for ticket in tickets {
            let Some(waiter) = self.waiters.get(&ticket) else {
                continue;
            };
            if waiter.reply.is_closed() {
                self.waiters.remove(&ticket);
                continue;
            }
            db.select(waiter.database);
            // Each connection served is propagated apart, as Redis serves it.
            db.log.close_unit();
            if let Ok(Some(reply)) = waiter.pop.try_pop_recorded(db, now_ms)
                && let Some(waiter) = self.waiters.remove(&ticket)
            {
                let _ = waiter.reply.send(reply);
            }
            db.log.close_unit();
        }
        db.select(selected);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Command, Writes};

    #[test]
    fn a_timeout_under_a_millisecond_rounds_up_and_still_times_out() {
        let words = ["BLPOP", "l", "0.0001"].map(|w| w.as_bytes().to_vec()).to_vec();
        let Ok(Command::BlockingPop(pop)) = Command::from_words(words, Writes::Taken) else {
            panic!("BLPOP l 0.0001 parses as a blocking pop")
        };
        assert_eq!(pop.timeout_ms, 1, "0 would block forever");
    }
}
