//! What a master propagates to its replicas for each command, as Redis 7.0 does
//! (server.c `call`, `alsoPropagate`, `propagatePendingCommands`).
//!
//! A call that changed the keyspace is propagated as the command it was, word for word,
//! unless Redis rewrites it so that a replica applying it later ends in the same state:
//! a relative or absolute expiry becomes an absolute one in milliseconds (`SET … PXAT`,
//! `PEXPIREAT`), an expiry in the past a `DEL`, `GETDEL` a `DEL`, `GETEX` a `PEXPIREAT` or
//! `PERSIST`, `SET … GET` loses its `GET`, `INCRBYFLOAT` becomes `SET key value KEEPTTL`,
//! `SPOP` one `SREM` per member popped (`DEL` when a count took the whole set), a blocking
//! pop an `LPOP`/`RPOP`, `XADD *` gets the ID it made. A call that changed nothing (a read,
//! a failed `SET NX`) is not propagated; a key that expires is propagated as its `DEL`.
//! A script is propagated as the writes it called, never as itself.
//!
//! Each top-level command (a client's command, an EXEC, a script, a served blocked pop) is
//! one unit: a unit of more than one command goes out between `MULTI` and `EXEC`. Each key
//! the expiry cycle deletes is a unit of its own. The stream selects each command's database
//! with `SELECT` whenever it differs from the last one sent, and always first after a
//! replica synchronised (`server.slaveseldb = -1`).

use super::Frame;
use super::connection::Reply;
use super::db::{Database, Db};
pub use super::propagation_log::{Log, Op};

/// Whether `word` is `expected` (upper case), in any case.
fn is(word: &[u8], expected: &[u8]) -> bool {
    word.eq_ignore_ascii_case(expected)
}

fn words_of(words: &[&[u8]]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.to_vec()).collect()
}

/// The commands a call of `words` that changed the keyspace propagates, given its `reply`
/// and its `database` after it ran.
pub fn rewrite(words: Vec<Vec<u8>>, reply: &Reply, database: &Database) -> Vec<Vec<Vec<u8>>> {
    let (Some(name), Some(key)) = (words.first(), words.get(1)) else {
        return vec![words];
    };
    let name = name.to_ascii_lowercase();
    let key = key.as_slice();
    let expiry = || database.raw(key).and_then(|entry| entry.expires_at_ms);
    let at = |ms: u64| ms.to_string().into_bytes();
    let set_pxat = |value: &[u8]| match expiry() {
        Some(ms) => words_of(&[b"SET", key, value, b"PXAT", &at(ms)]),
        None => words_of(&[b"DEL", key]),
    };
    match name.as_slice() {
        b"set"
            if words[3..]
                .iter()
                .any(|w| [&b"EX"[..], b"PX", b"EXAT", b"PXAT"].iter().any(|o| is(w, o))) =>
        {
            vec![set_pxat(&words[2])]
        }
        b"set" => vec![
            words
                .iter()
                .enumerate()
                .filter(|(i, w)| *i < 3 || !is(w, b"GET"))
                .map(|(_, w)| w.clone())
                .collect(),
        ],
        b"setex" | b"psetex" => vec![set_pxat(&words[3])],
        b"getdel" => vec![words_of(&[b"DEL", key])],
        b"getex" => match (database.raw(key), words.get(2)) {
            (None, _) => vec![words_of(&[b"DEL", key])],
            (Some(_), Some(option)) if is(option, b"PERSIST") => vec![words_of(&[b"PERSIST", key])],
            (Some(entry), Some(_)) => match entry.expires_at_ms {
                Some(ms) => vec![words_of(&[b"PEXPIREAT", key, &at(ms)])],
                None => Vec::new(),
            },
            (Some(_), None) => Vec::new(),
        },
        b"expire" | b"pexpire" | b"expireat" | b"pexpireat" => match expiry() {
            Some(ms) => {
                let mut rewritten = words_of(&[b"PEXPIREAT", key, &at(ms)]);
                rewritten.extend(words[3..].iter().cloned());
                vec![rewritten]
            }
            None => vec![words_of(&[b"DEL", key])],
        },
        b"incrbyfloat" => match database.raw(key).and_then(|entry| entry.value.as_string()) {
            Some(value) => vec![words_of(&[b"SET", key, value, b"KEEPTTL"])],
            None => vec![words],
        },
        b"spop" => {
            let popped = members(reply);
            if words.len() > 2 && database.raw(key).is_none() {
                return vec![words_of(&[b"DEL", key])];
            }
            popped
                .iter()
                .map(|member| words_of(&[b"SREM", key, member]))
                .collect()
        }
        b"blpop" | b"brpop" => match reply {
            Reply::Frame(popped) => served_pop(name == b"blpop", popped),
            _ => Vec::new(),
        },
        b"xadd" => vec![with_stream_id(words, reply)],
        _ => vec![words],
    }
}

/// What a blocking pop that popped (`popped`: `[key, element]`) propagates: an `LPOP`
/// (from the `left`) or `RPOP` of the key it served.
pub fn served_pop(left: bool, popped: &Frame) -> Vec<Vec<Vec<u8>>> {
    let Frame::Array(pair) = popped else {
        return Vec::new();
    };
    let Some(Frame::BulkString(key)) = pair.first() else {
        return Vec::new();
    };
    let pop: &[u8] = if left { b"LPOP" } else { b"RPOP" };
    vec![words_of(&[pop, key])]
}

/// The members a reply carries (SPOP's one, or its set).
fn members(reply: &Reply) -> Vec<Vec<u8>> {
    match reply {
        Reply::Frame(Frame::BulkString(member)) => vec![member.clone()],
        Reply::Frame(Frame::Array(items)) => items
            .iter()
            .filter_map(|item| match item {
                Frame::BulkString(member) => Some(member.clone()),
                _ => None,
            })
            .collect(),
        Reply::Set(members) => members.clone(),
        _ => Vec::new(),
    }
}

/// XADD with the ID it made (its reply) in place of an `*` or `ms-*` ID, as Redis
/// rewrites it: a replica must store the entry under the same ID.
fn with_stream_id(mut words: Vec<Vec<u8>>, reply: &Reply) -> Vec<Vec<u8>> {
    let Reply::Frame(Frame::BulkString(id)) = reply else {
        return words;
    };
    let mut at = 2;
    while let Some(word) = words.get(at) {
        if is(word, b"NOMKSTREAM") {
            at += 1;
        } else if is(word, b"MAXLEN") || is(word, b"MINID") {
            let exactness = words.get(at + 1).is_some_and(|w| w == b"=" || w == b"~");
            at += if exactness { 3 } else { 2 };
        } else if is(word, b"LIMIT") {
            at += 2;
        } else {
            break;
        }
    }
    if let Some(word) = words.get_mut(at)
        && word.ends_with(b"*")
    {
        *word = id.clone();
    }
    words
}

/// A command with an absolute expiry in the relative form an older Redis sends
/// (`SET … PX`, `PEXPIRE`): the time left at `now_ms`, at least 1 ms.
pub fn relative(mut words: Vec<Vec<u8>>, now_ms: u64) -> Vec<Vec<u8>> {
    let left = |at: &[u8]| {
        let at: u64 = std::str::from_utf8(at)
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(now_ms);
        at.saturating_sub(now_ms).max(1).to_string().into_bytes()
    };
    match words.as_mut_slice() {
        [name, _, _, option, time] if name == b"SET" && option == b"PXAT" => {
            *option = b"PX".to_vec();
            *time = left(time);
        }
        [name, _, time, ..] if name == b"PEXPIREAT" => {
            *name = b"PEXPIRE".to_vec();
            *time = left(time);
        }
        _ => {}
    }
    words
}

/// Records what a call propagates, once it ran: the `DEL` of each key that expired
/// meanwhile, then the call's `words` (kept when the log records) as [`rewrite`] rewrites
/// them with its `reply`, if the keyspace took a write since `dirty_before`.
pub fn record(db: &mut Db, words: Option<Vec<Vec<u8>>>, dirty_before: u64, reply: &Reply) {
    db.record_expired(false);
    if let Some(words) = words
        && db.dirty() != dirty_before
    {
        let ops = rewrite(words, reply, db);
        let selected = db.selected();
        db.log.push(selected, ops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::db::Db;

    fn words(text: &str) -> Vec<Vec<u8>> {
        text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn an_expiring_set_goes_out_with_its_absolute_time_and_an_older_redis_gets_the_time_left() {
        let mut db = Db::default();
        db.set(b"k".to_vec(), b"v".to_vec(), Some(31_000));
        let ok = Reply::Frame(Frame::SimpleString(b"OK".to_vec()));
        let ops = rewrite(words("set k v NX PX 30000"), &ok, &db);
        assert_eq!(ops, vec![words("SET k v PXAT 31000")]);
        assert_eq!(relative(ops[0].clone(), 1_000), words("SET k v PX 30000"));
        let ops = rewrite(words("pexpire k 30000 GT"), &ok, &db);
        assert_eq!(ops, vec![words("PEXPIREAT k 31000 GT")]);
        assert_eq!(relative(ops[0].clone(), 1_000), words("PEXPIRE k 30000 GT"));
    }

    #[test]
    fn a_units_commands_stay_together_and_a_closed_unit_starts_another() {
        let mut log = Log::default();
        log.push(0, [words("DEL a"), words("SET b 1")]);
        log.close_unit();
        log.push(1, [words("LPOP l")]);
        let units = log.take();
        assert_eq!(units.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(units[1][0].database, 1);
        assert!(log.take().is_empty());
    }
}
