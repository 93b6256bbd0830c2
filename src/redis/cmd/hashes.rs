//! Hash commands: HSET, HGET, HMGET, HDEL, HEXISTS, HINCRBY, HLEN, HKEYS, HGETALL. Fields keep
//! the order they were added in, as Redis's small hashes (listpacks) keep them.

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, Hash};

/// The hash commands.
pub(super) const fn commands<C>() -> [Spec<C>; 9] {
    [
        Spec {
            name: "hset",
            arity: -4,
            flags: Flags::WRITE_DENYOOM,
            summary: "set fields: how many were new",
            handler: Handler::Keyspace(hset),
        },
        Spec {
            name: "hget",
            arity: 3,
            flags: Flags::READ,
            summary: "a field's value, or nil",
            handler: Handler::Keyspace(hget),
        },
        Spec {
            name: "hmget",
            arity: -3,
            flags: Flags::READ,
            summary: "the fields' values (nil for a missing one)",
            handler: Handler::Keyspace(hmget),
        },
        Spec {
            name: "hdel",
            arity: -3,
            flags: Flags::WRITE,
            summary: "delete fields: how many were there",
            handler: Handler::Keyspace(hdel),
        },
        Spec {
            name: "hexists",
            arity: 3,
            flags: Flags::READ,
            summary: "whether a field exists: 1 or 0",
            handler: Handler::Keyspace(hexists),
        },
        Spec {
            name: "hincrby",
            arity: 4,
            flags: Flags::WRITE_DENYOOM,
            summary: "add an integer to a field: the new value",
            handler: Handler::Keyspace(hincrby),
        },
        Spec {
            name: "hlen",
            arity: 2,
            flags: Flags::READ,
            summary: "how many fields",
            handler: Handler::Keyspace(hlen),
        },
        Spec {
            name: "hkeys",
            arity: 2,
            flags: Flags::READ,
            summary: "the fields",
            handler: Handler::Keyspace(hkeys),
        },
        Spec {
            name: "hgetall",
            arity: 2,
            flags: Flags::READ,
            summary: "fields and values (a map in RESP3)",
            handler: Handler::Keyspace(hgetall),
        },
    ]
}

fn field<'a>(hash: &'a Hash, name: &[u8]) -> Option<&'a Vec<u8>> {
    hash.iter().find(|(f, _)| f == name).map(|(_, v)| v)
}

/// Sets a field, keeping its place if it exists; says whether it is new.
fn set_field(hash: &mut Hash, name: Vec<u8>, value: Vec<u8>) -> bool {
    match hash.iter_mut().find(|(f, _)| *f == name) {
        Some((_, old)) => {
            *old = value;
            false
        }
        None => {
            hash.push((name, value));
            true
        }
    }
}

fn hset(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let pairs = args.rest();
    if !pairs.len().is_multiple_of(2) {
        return Err(ReplyError::wrong_arity("hset"));
    }
    let hash = db
        .write::<Hash>(&key, true, now_ms)?
        .ok_or_else(ReplyError::syntax)?;
    let mut pairs = pairs.into_iter();
    let mut created = 0;
    while let (Some(name), Some(value)) = (pairs.next(), pairs.next()) {
        created += i64::from(set_field(hash, name, value));
    }
    Ok(Frame::Integer(created).into())
}

fn hget(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let name = args.next_bytes()?;
    Ok(db
        .read::<Hash>(&key, now_ms)?
        .and_then(|hash| field(hash, &name))
        .map_or(Frame::Null, |v| Frame::BulkString(v.clone()))
        .into())
}

fn hmget(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let names = args.rest();
    let hash = db.read::<Hash>(&key, now_ms)?;
    let values = names
        .iter()
        .map(|name| {
            hash.and_then(|hash| field(hash, name))
                .map_or(Frame::Null, |v| Frame::BulkString(v.clone()))
        })
        .collect();
    Ok(Frame::Array(values).into())
}

fn hdel(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let names = args.rest();
    let mut deleted = 0;
    if let Some(hash) = db.write::<Hash>(&key, false, now_ms)? {
        for name in &names {
            if let Some(at) = hash.iter().position(|(f, _)| f == name) {
                hash.remove(at);
                deleted += 1;
            }
        }
    }
    db.drop_if_empty(&key);
    Ok(Frame::Integer(deleted).into())
}

fn hexists(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let name = args.next_bytes()?;
    let exists = db
        .read::<Hash>(&key, now_ms)?
        .is_some_and(|hash| field(hash, &name).is_some());
    Ok(Frame::Integer(i64::from(exists)).into())
}

fn hincrby(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let name = args.next_bytes()?;
    let increment = args.next_int()?;
    let hash = db
        .write::<Hash>(&key, true, now_ms)?
        .ok_or_else(ReplyError::syntax)?;
    let current = match field(hash, &name) {
        None => 0,
        Some(value) => parse_int(value).map_err(|_| ReplyError("ERR hash value is not an integer".into()))?,
    };
    let Some(next) = current.checked_add(increment) else {
        db.drop_if_empty(&key);
        return Err(ReplyError("ERR increment or decrement would overflow".into()));
    };
    set_field(hash, name, next.to_string().into_bytes());
    Ok(Frame::Integer(next).into())
}

fn hlen(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    Ok(Frame::Integer(db.read::<Hash>(&key, now_ms)?.map_or(0, Vec::len) as i64).into())
}

fn hkeys(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let names = db
        .read::<Hash>(&key, now_ms)?
        .map(|hash| hash.iter().map(|(f, _)| Frame::BulkString(f.clone())).collect())
        .unwrap_or_default();
    Ok(Frame::Array(names).into())
}

fn hgetall(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let pairs = db
        .read::<Hash>(&key, now_ms)?
        .map(|hash| {
            hash.iter()
                .map(|(f, v)| (Frame::BulkString(f.clone()), Frame::BulkString(v.clone())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Reply::Map(pairs))
}
