//! The keyspace as commands: what an AOF appends after each write (the *effect* of the
//! write on each key it changed: `SET key value PXAT t`, `DEL`, a hash, list, set, sorted
//! set or stream deleted and rebuilt whole, `PEXPIREAT`; `FLUSHALL`, `FLUSHDB`; keys
//! outside database 0 between `SELECT n` and `SELECT 0`), and the commands that rebuild a
//! whole keyspace (what an AOF rewrite and a replica that does not read RDB load first).
//! Replicas get commands as Redis propagates them instead (`propagation.rs`).

use super::connection::format_double;
use super::connection::{Protocol, Reply};
use super::db::{DATABASES, Database, Db, KeyspaceChanges, Stream, Value};
use super::request::build as request;

/// The request bytes of a command, as a stream or an AOF carries it.
pub fn encode(words: Vec<Vec<u8>>) -> Vec<u8> {
    Reply::Frame(request(words)).encode(Protocol::Resp2)
}

/// The commands that bring a key to the master's state, its expiry an absolute time
/// (`PXAT`, `PEXPIREAT`). A string is one SET; another type is deleted and rebuilt.
fn key_effect(database: &Database, key: &[u8]) -> Vec<u8> {
    let Some(entry) = database.raw(key) else {
        return encode(vec![b"DEL".to_vec(), key.to_vec()]);
    };
    let expiry = entry.expires_at_ms.map(|at| at.to_string().into_bytes());
    let mut words = vec![key.to_vec()];
    let rebuild: &[u8] = match &entry.value {
        Value::String(value) => {
            words.insert(0, b"SET".to_vec());
            words.push(value.clone());
            if let Some(time) = expiry {
                words.push(b"PXAT".to_vec());
                words.push(time);
            }
            return encode(words);
        }
        Value::Hash(hash) => {
            words.extend(hash.iter().flat_map(|(f, v)| [f.clone(), v.clone()]));
            b"HSET"
        }
        Value::List(list) => {
            words.extend(list.iter().cloned());
            b"RPUSH"
        }
        Value::SortedSet(set) => {
            words.extend(
                set.iter()
                    .flat_map(|(member, score)| [format_double(score).into_bytes(), member.to_vec()]),
            );
            b"ZADD"
        }
        Value::Set(set) => {
            words.extend(set.members().into_iter().map(<[u8]>::to_vec));
            b"SADD"
        }
        Value::Stream(stream) => {
            let mut bytes = encode(vec![b"DEL".to_vec(), key.to_vec()]);
            stream_rebuild(key, stream)
                .into_iter()
                .for_each(|command| bytes.extend(encode(command)));
            return with_expiry(bytes, key, expiry);
        }
    };
    words.insert(0, rebuild.to_vec());
    let mut bytes = encode(vec![b"DEL".to_vec(), key.to_vec()]);
    bytes.extend(encode(words));
    with_expiry(bytes, key, expiry)
}

/// The commands that rebuild a stream: its entries (XADD with their IDs), then its groups
/// (XGROUP CREATE at what each delivered; what is pending is not carried).
fn stream_rebuild(key: &[u8], stream: &Stream) -> Vec<Vec<Vec<u8>>> {
    let entries = stream.entries.iter().map(|(id, fields)| {
        let mut words = vec![b"XADD".to_vec(), key.to_vec(), id.text()];
        words.extend(fields.iter().flat_map(|(f, v)| [f.clone(), v.clone()]));
        words
    });
    let groups = stream.groups.iter().map(|(name, group)| {
        let words = [
            &b"XGROUP"[..],
            b"CREATE",
            key,
            name,
            &group.last_delivered.text(),
            b"MKSTREAM",
        ];
        words.map(<[u8]>::to_vec).to_vec()
    });
    entries.chain(groups).collect()
}

/// `bytes` followed by the command that sets the key's `expiry` (see [`key_effect`]).
fn with_expiry(mut bytes: Vec<u8>, key: &[u8], expiry: Option<Vec<u8>>) -> Vec<u8> {
    if let Some(time) = expiry {
        bytes.extend(encode(vec![b"PEXPIREAT".to_vec(), key.to_vec(), time]));
    }
    bytes
}

/// Effects in database `index`, bracketed by `SELECT index` and `SELECT 0` outside
/// database 0, so that a stream or an AOF is always in database 0 between commands.
fn in_database(index: usize, body: Vec<u8>) -> Vec<u8> {
    if index == 0 || body.is_empty() {
        return body;
    }
    let mut bytes = encode(vec![b"SELECT".to_vec(), index.to_string().into_bytes()]);
    bytes.extend(body);
    bytes.extend(encode(vec![b"SELECT".to_vec(), b"0".to_vec()]));
    bytes
}

/// The commands that replay `changes` (what the AOF receives).
pub fn effects(changes: &KeyspaceChanges, db: &Db) -> Vec<u8> {
    let mut bytes = Vec::new();
    let flushed_all = changes.len() == DATABASES && changes.values().all(|c| c.cleared);
    if flushed_all {
        bytes.extend(encode(vec![b"FLUSHALL".to_vec()]));
    }
    for (index, change) in changes {
        let database = db.database(*index);
        let mut body = Vec::new();
        if change.cleared && !flushed_all {
            body.extend(encode(vec![b"FLUSHDB".to_vec()]));
        }
        for key in &change.keys {
            body.extend(key_effect(database, key));
        }
        bytes.extend(in_database(*index, body));
    }
    bytes
}

/// `body` between `MULTI` and `EXEC` when `wrap` (a transaction's effects), as it is
/// otherwise.
pub fn in_transaction(wrap: bool, body: Vec<u8>) -> Vec<u8> {
    if !wrap || body.is_empty() {
        return body;
    }
    let mut bytes = encode(vec![b"MULTI".to_vec()]);
    bytes.extend(body);
    bytes.extend(encode(vec![b"EXEC".to_vec()]));
    bytes
}

/// What a new replica loads first, and what an RDB snapshot holds: every key of every
/// database, expiry times absolute.
pub fn snapshot(db: &Db) -> Vec<u8> {
    let mut bytes = encode(vec![b"FLUSHALL".to_vec()]);
    for index in 0..DATABASES {
        let database = db.database(index);
        let body = database
            .entries()
            .flat_map(|(key, _)| key_effect(database, key))
            .collect();
        bytes.extend(in_database(index, body));
    }
    bytes
}
