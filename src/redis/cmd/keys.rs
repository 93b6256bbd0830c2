//! Key commands: DEL, UNLINK, EXISTS, TYPE, TTL/PTTL, PERSIST, KEYS, SCAN, RENAME, and the
//! expire family (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT). Every type expires alike.

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, Entry};
use crate::redis::glob::glob_match;
use crate::redis::request::build as request;

/// The generic key commands.
pub(super) const fn commands<
    C: From<Del> + From<Exists> + From<Type> + From<Pttl> + From<Ttl> + From<Persist> + From<ExpireRequest>,
>() -> [Spec<C>; 14] {
    [
        Spec {
            name: "del",
            arity: -2,
            flags: Flags::WRITE,
            summary: "delete keys: how many existed",
            handler: Handler::Parse(|args| Ok(C::from(Del::parse(args)?))),
        },
        Spec {
            name: "unlink",
            arity: -2,
            flags: Flags::WRITE,
            summary: "delete keys (as DEL here): how many existed",
            handler: Handler::Parse(|args| Ok(C::from(Del::parse(args)?))),
        },
        Spec {
            name: "keys",
            arity: 2,
            flags: Flags::READ,
            summary: "the keys matching a glob pattern",
            handler: Handler::Keyspace(keys),
        },
        Spec {
            name: "scan",
            arity: -2,
            flags: Flags::READ,
            summary: "iterate the keys; MATCH, COUNT, TYPE in pages of COUNT keys (10 by default) with a cursor",
            handler: Handler::Keyspace(scan),
        },
        Spec {
            name: "rename",
            arity: 3,
            flags: Flags::WRITE,
            summary: "move a value and its expiry to another key",
            handler: Handler::Keyspace(rename),
        },
        Spec {
            name: "exists",
            arity: -2,
            flags: Flags::READ,
            summary: "how many of the keys exist",
            handler: Handler::Parse(|args| Ok(C::from(Exists::parse(args)?))),
        },
        Spec {
            name: "type",
            arity: 2,
            flags: Flags::READ,
            summary: "the type of the value, or none",
            handler: Handler::Parse(|args| Ok(C::from(Type::parse(args)?))),
        },
        Spec {
            name: "pttl",
            arity: 2,
            flags: Flags::READ,
            summary: "milliseconds left, -1 or -2",
            handler: Handler::Parse(|args| Ok(C::from(Pttl::parse(args)?))),
        },
        Spec {
            name: "ttl",
            arity: 2,
            flags: Flags::READ,
            summary: "seconds left (rounded), -1 or -2",
            handler: Handler::Parse(|args| Ok(C::from(Ttl::parse(args)?))),
        },
        Spec {
            name: "persist",
            arity: 2,
            flags: Flags::WRITE,
            summary: "remove the expiry",
            handler: Handler::Parse(|args| Ok(C::from(Persist::parse(args)?))),
        },
        Spec {
            name: "expire",
            arity: -3,
            flags: Flags::WRITE,
            summary: "expiry in seconds from now; NX|XX|GT|LT",
            handler: Handler::Parse(|args| Ok(C::from(ExpireRequest::parse(ExpireKind::Expire, args)?))),
        },
        Spec {
            name: "pexpire",
            arity: -3,
            flags: Flags::WRITE,
            summary: "expiry in milliseconds from now; NX|XX|GT|LT",
            handler: Handler::Parse(|args| Ok(C::from(ExpireRequest::parse(ExpireKind::Pexpire, args)?))),
        },
        Spec {
            name: "expireat",
            arity: -3,
            flags: Flags::WRITE,
            summary: "expiry at a Unix time in seconds; NX|XX|GT|LT",
            handler: Handler::Parse(|args| Ok(C::from(ExpireRequest::parse(ExpireKind::Expireat, args)?))),
        },
        Spec {
            name: "pexpireat",
            arity: -3,
            flags: Flags::WRITE,
            summary: "expiry at a Unix time in milliseconds; NX|XX|GT|LT",
            handler: Handler::Parse(|args| Ok(C::from(ExpireRequest::parse(ExpireKind::Pexpireat, args)?))),
        },
    ]
}

/// `DEL key [key ...]`: how many of the keys existed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Del {
    pub keys: Vec<Vec<u8>>,
}

impl Del {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Del { keys: args.rest() })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        Frame::Integer(self.keys.iter().filter(|key| db.remove(key, now_ms)).count() as i64)
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request(std::iter::once(b"DEL".to_vec()).chain(self.keys))
    }
}

/// `EXISTS key [key ...]`: how many of the keys exist (a key named twice counts twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exists {
    pub keys: Vec<Vec<u8>>,
}

impl Exists {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Exists { keys: args.rest() })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        Frame::Integer(
            self.keys
                .iter()
                .filter(|key| db.get(key, now_ms).is_some())
                .count() as i64,
        )
    }
}

/// `TYPE key`: `string`, `hash`, `list`, `zset`, or `none`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Type {
    pub key: Vec<u8>,
}

impl Type {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Type {
            key: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        let name = db
            .get(&self.key, now_ms)
            .map_or("none", |entry| entry.value.kind().name());
        Frame::SimpleString(name.as_bytes().to_vec())
    }
}

/// Milliseconds a key has left: -2 when it is absent, -1 when it has no expiry.
fn remaining_ms(db: &mut Db, key: &[u8], now_ms: u64) -> i64 {
    match db.get(key, now_ms) {
        None => -2,
        Some(entry) => entry
            .expires_at_ms
            .map_or(-1, |at| at.saturating_sub(now_ms) as i64),
    }
}

/// `PTTL key`: milliseconds left, -1 without expiry, -2 when the key is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pttl {
    pub key: Vec<u8>,
}

impl Pttl {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Pttl {
            key: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        Frame::Integer(remaining_ms(db, &self.key, now_ms))
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"PTTL".to_vec(), self.key])
    }
}

/// `TTL key`: as PTTL in seconds, rounded to the nearest second as Redis rounds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ttl {
    pub key: Vec<u8>,
}

impl Ttl {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Ttl {
            key: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        Frame::Integer(match remaining_ms(db, &self.key, now_ms) {
            ms if ms < 0 => ms,
            ms => (ms + 500) / 1000,
        })
    }
}

/// `PERSIST key`: 1 if the key's expiry was removed, 0 if it had none or is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Persist {
    pub key: Vec<u8>,
}

impl Persist {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Persist {
            key: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        Frame::Integer(db.persist(&self.key, now_ms) as i64)
    }
}

/// `EXPIRE key seconds`: the client's request (tier 2 of the ladder sends it after SETNX).
/// The node parses it, with its options, as an [`ExpireRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expire {
    pub key: Vec<u8>,
    pub seconds: i64,
}

impl Expire {
    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([
            b"EXPIRE".to_vec(),
            self.key,
            self.seconds.to_string().into_bytes(),
        ])
    }
}

/// `PEXPIRE key milliseconds`: the client's request. The node parses it, with its options,
/// as an [`ExpireRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pexpire {
    pub key: Vec<u8>,
    pub ms: i64,
}

impl Pexpire {
    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"PEXPIRE".to_vec(), self.key, self.ms.to_string().into_bytes()])
    }
}

/// Which of the four expire commands: they differ only in unit and time base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpireKind {
    /// Seconds from now.
    Expire,
    /// Milliseconds from now.
    Pexpire,
    /// Unix time in seconds.
    Expireat,
    /// Unix time in milliseconds.
    Pexpireat,
}

impl ExpireKind {
    /// The command's name, as Redis's error messages spell it.
    pub fn name(self) -> &'static str {
        match self {
            ExpireKind::Expire => "expire",
            ExpireKind::Pexpire => "pexpire",
            ExpireKind::Expireat => "expireat",
            ExpireKind::Pexpireat => "pexpireat",
        }
    }
}

/// The options of Redis 7's expire commands: set only if the key has no expiry (NX), has
/// one (XX), or if the new one is later (GT) or earlier (LT) than the current one. A key
/// without expiry counts as expiring never: GT always fails on it, LT always succeeds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpireFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
}

/// `EXPIRE | PEXPIRE | EXPIREAT | PEXPIREAT key time [NX|XX|GT|LT ...]`: 1 if the expiry
/// was set (a time already past deletes the key), 0 if the key is absent or an option said no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpireRequest {
    pub kind: ExpireKind,
    pub key: Vec<u8>,
    /// The time as sent: seconds or milliseconds, relative or absolute, per `kind`.
    pub time: i64,
    pub flags: ExpireFlags,
}

impl ExpireRequest {
    pub(crate) fn parse(kind: ExpireKind, args: &mut Args) -> Result<Self, ReplyError> {
        let key = args.next_bytes()?;
        let time = args.next_bytes()?;
        // Redis checks the options before the number.
        let mut flags = ExpireFlags::default();
        for option in args.rest() {
            match option.to_ascii_uppercase().as_slice() {
                b"NX" => flags.nx = true,
                b"XX" => flags.xx = true,
                b"GT" => flags.gt = true,
                b"LT" => flags.lt = true,
                _ => {
                    return Err(ReplyError(format!(
                        "ERR Unsupported option {}",
                        String::from_utf8_lossy(&option)
                    )));
                }
            }
        }
        if flags.nx && (flags.xx || flags.gt || flags.lt) {
            return Err(ReplyError(
                "ERR NX and XX, GT or LT options at the same time are not compatible".into(),
            ));
        }
        if flags.gt && flags.lt {
            return Err(ReplyError(
                "ERR GT and LT options at the same time are not compatible".into(),
            ));
        }
        Ok(ExpireRequest {
            kind,
            key,
            time: parse_int(&time)?,
            flags,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        let invalid = || ReplyError::invalid_expire(self.kind.name()).into();
        let (unit_ms, base_ms) = match self.kind {
            ExpireKind::Expire => (1000, now_ms as i64),
            ExpireKind::Pexpire => (1, now_ms as i64),
            ExpireKind::Expireat => (1000, 0),
            ExpireKind::Pexpireat => (1, 0),
        };
        let Some(at) = self
            .time
            .checked_mul(unit_ms)
            .and_then(|ms| ms.checked_add(base_ms))
        else {
            return invalid();
        };
        let Some(entry) = db.get(&self.key, now_ms) else {
            return Frame::Integer(0);
        };
        let current = entry.expires_at_ms.map(|ms| ms as i64);
        let flags = self.flags;
        let refused = (flags.nx && current.is_some())
            || (flags.xx && current.is_none())
            || (flags.gt && current.is_none_or(|current| at <= current))
            || (flags.lt && current.is_some_and(|current| at >= current));
        if refused {
            return Frame::Integer(0);
        }
        if at <= now_ms as i64 {
            db.remove(&self.key, now_ms);
        } else {
            db.set_expiry(&self.key, at as u64, now_ms);
        }
        Frame::Integer(1)
    }
}

/// The live keys of the selected database, in key order (expired ones are hidden).
fn live_keys(db: &Db, now_ms: u64) -> impl Iterator<Item = (&Vec<u8>, &Entry)> {
    db.entries().filter(move |(_, entry)| entry.is_live(now_ms))
}

/// `KEYS pattern`: every live key matching the pattern.
fn keys(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let pattern = args.next_bytes()?;
    Ok(Frame::Array(
        live_keys(db, now_ms)
            .filter(|(key, _)| glob_match(&pattern, key))
            .map(|(key, _)| Frame::BulkString(key.clone()))
            .collect(),
    )
    .into())
}

/// `SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]`: a page of about COUNT keys
/// (10 by default) and the cursor of the next page, 0 at the end. As in Redis, COUNT
/// bounds the keys looked at, not the keys returned (MATCH and TYPE filter the page, so a
/// page may come back empty before the end), and a key present for a whole iteration is
/// returned at least once however the keyspace changes in between: keys are visited in
/// the order of their [`scan_position`], and the cursor is the position to go on from.
fn scan(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    const DEFAULT_COUNT: usize = 10;
    let cursor = args.next_bytes()?;
    let cursor = parse_cursor(&cursor).ok_or_else(|| ReplyError("ERR invalid cursor".into()))?;
    let words = args.rest();
    let mut pattern = None;
    let mut kind = None;
    let mut count = DEFAULT_COUNT;
    let mut i = 0;
    while i < words.len() {
        let has_value = words.len() - i >= 2;
        match words[i].to_ascii_uppercase().as_slice() {
            b"COUNT" if has_value => {
                count = usize::try_from(parse_int(&words[i + 1])?)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(ReplyError::syntax)?;
            }
            b"MATCH" if has_value => pattern = Some(words[i + 1].clone()),
            b"TYPE" if has_value => kind = Some(words[i + 1].to_ascii_lowercase()),
            _ => return Err(ReplyError::syntax()),
        }
        i += 2;
    }
    let mut ahead: Vec<(u64, &Vec<u8>, &Entry)> = live_keys(db, now_ms)
        .map(|(key, entry)| (scan_position(key), key, entry))
        .filter(|(position, _, _)| *position >= cursor)
        .collect();
    ahead.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let next = ahead.get(count).map_or(0, |(position, _, _)| *position);
    let found = ahead
        .into_iter()
        .take(count)
        .filter(|(_, key, _)| pattern.as_ref().is_none_or(|p| glob_match(p, key)))
        .filter(|(_, _, entry)| {
            kind.as_ref()
                .is_none_or(|k| k.as_slice() == entry.value.kind().name().as_bytes())
        })
        .map(|(_, key, _)| Frame::BulkString(key.clone()))
        .collect();
    let next = Frame::BulkString(next.to_string().into_bytes());
    Ok(Frame::Array(vec![next, Frame::Array(found)]).into())
}

/// Where SCAN visits a key: a hash of its name, never 0 (the cursor that starts and ends
/// an iteration). Fixed for a key, so inserting or deleting other keys moves no key past
/// the cursor; keys sharing a position are returned again by the next page, never skipped.
fn scan_position(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key) | 1
}

/// A cursor as Redis reads one (`strtoul`, the whole word): an optional sign (a negative
/// one wraps), digits, no leading space, no overflow; the empty word reads as 0.
fn parse_cursor(word: &[u8]) -> Option<u64> {
    let (negative, digits) = match word {
        [] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, word),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(if negative { n.wrapping_neg() } else { n })
}

/// `RENAME key newkey`: moves the value and its expiry; `ERR no such key` when absent.
fn rename(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let from = args.next_bytes()?;
    let to = args.next_bytes()?;
    if db.get(&from, now_ms).is_none() {
        return Err(ReplyError("ERR no such key".into()));
    }
    if from != to
        && let Some(entry) = db.take(&from, now_ms)
    {
        db.store(to, entry.value, entry.expires_at_ms);
    }
    Ok(ok().into())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::redis::cmd::{CallRules, Writes};
    use crate::redis::lua::Called;

    fn run(db: &mut Db, words: &[&str]) -> Frame {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        match super::super::run_for_script(&words, CallRules::writes(Writes::Taken), db, 0) {
            Called::Ran { reply, .. } => reply,
            Called::Rejected { error, .. } => Frame::Error(error),
        }
    }

    /// Scans to the end with COUNT `count`, calling `between` before each next page;
    /// returns how often each key came back and how many pages it took.
    fn scan_all(
        db: &mut Db,
        count: usize,
        mut between: impl FnMut(&mut Db, usize),
    ) -> (BTreeMap<Vec<u8>, usize>, usize) {
        let mut seen = BTreeMap::new();
        let mut cursor = "0".to_string();
        for page in 1.. {
            let reply = run(db, &["SCAN", &cursor, "COUNT", &count.to_string()]);
            let Frame::Array(parts) = reply else {
                panic!("SCAN answers an array: {reply:?}")
            };
            let [Frame::BulkString(next), Frame::Array(keys)] = parts.as_slice() else {
                panic!("SCAN answers a cursor and keys: {parts:?}")
            };
            assert!(keys.len() <= count, "a page holds at most COUNT keys");
            for key in keys {
                let Frame::BulkString(key) = key else {
                    panic!("a key is a bulk string")
                };
                *seen.entry(key.clone()).or_insert(0) += 1;
            }
            cursor = String::from_utf8(next.clone()).unwrap();
            if cursor == "0" {
                return (seen, page);
            }
            between(db, page);
        }
        unreachable!()
    }

    #[test]
    fn scan_pages_through_every_key_once() {
        let mut db = Db::default();
        for i in 0..100 {
            run(&mut db, &["SET", &format!("key:{i}"), "v"]);
        }
        let (seen, pages) = scan_all(&mut db, 7, |_, _| {});
        assert_eq!(seen.len(), 100);
        assert!(seen.values().all(|&n| n == 1));
        assert_eq!(pages, 100usize.div_ceil(7));
        // Without COUNT, a page of 10.
        let reply = run(&mut db, &["SCAN", "0"]);
        let Frame::Array(parts) = reply else {
            panic!("SCAN answers an array")
        };
        assert!(matches!(&parts[1], Frame::Array(keys) if keys.len() == 10));
    }

    #[test]
    fn a_key_present_for_the_whole_scan_is_returned_though_others_come_and_go() {
        let mut db = Db::default();
        for i in 0..100 {
            run(&mut db, &["SET", &format!("stays:{i}"), "v"]);
            run(&mut db, &["SET", &format!("goes:{i}"), "v"]);
        }
        let (seen, _) = scan_all(&mut db, 9, |db, page| {
            for i in (page * 10)..(page * 10 + 10) {
                run(db, &["DEL", &format!("goes:{i}")]);
                run(db, &["SET", &format!("new:{page}:{i}"), "v"]);
            }
        });
        for i in 0..100 {
            assert!(
                seen.contains_key(format!("stays:{i}").as_bytes()),
                "stays:{i} was skipped"
            );
        }
    }
}
