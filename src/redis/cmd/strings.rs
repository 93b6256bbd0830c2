//! String commands: GET, SET, SETNX, SETEX, PSETEX, GETDEL, GETEX, INCR, INCRBY, DECR,
//! DECRBY, INCRBYFLOAT, MGET, MSET, MSETNX, APPEND, STRLEN, GETRANGE. A command reading a string answers
//! WRONGTYPE on a key of another type; SET and MSET replace any type. SET's and SETNX's
//! types, the ones a lock client sends, are in `set.rs`.

use super::error::ReplyError;
use super::set::{Set, SetExpiry, SetGet, Setnx, expiry_time_ms, option_name};
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use super::zsets::parse_double;
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, wrong_type};
use crate::redis::request::build as request;

/// The string commands.
pub(super) const fn commands<
    C: From<Get> + From<Set> + From<SetGet> + From<Setnx> + From<Incr> + From<Incrby> + From<Getrange>,
>() -> [Spec<C>; 18] {
    [
        Spec {
            name: "get",
            arity: 2,
            flags: Flags::READ,
            summary: "the value, or nil",
            handler: Handler::Parse(|args| Ok(C::from(Get::parse(args)?))),
        },
        Spec {
            name: "set",
            arity: -3,
            flags: Flags::WRITE_DENYOOM,
            summary: "NX|XX, EX|PX|EXAT|PXAT|KEEPTTL, GET",
            handler: Handler::Parse(|args| {
                Ok(match Set::parse(args)? {
                    (set, false) => C::from(set),
                    (set, true) => C::from(SetGet(set)),
                })
            }),
        },
        Spec {
            name: "setnx",
            arity: 3,
            flags: Flags::WRITE_DENYOOM,
            summary: "set if absent: 1 or 0",
            handler: Handler::Parse(|args| Ok(C::from(Setnx::parse(args)?))),
        },
        Spec {
            name: "incr",
            arity: 2,
            flags: Flags::WRITE_DENYOOM,
            summary: "add 1 to an integer string",
            handler: Handler::Parse(|args| Ok(C::from(Incr::parse(args)?))),
        },
        Spec {
            name: "incrby",
            arity: 3,
            flags: Flags::WRITE_DENYOOM,
            summary: "add an integer to an integer string",
            handler: Handler::Parse(|args| Ok(C::from(Incrby::parse(args)?))),
        },
        Spec {
            name: "setex",
            arity: 4,
            flags: Flags::WRITE_DENYOOM,
            summary: "set with an expiry in seconds",
            handler: Handler::Keyspace(|args, db, now| set_expiring(args, db, now, SetExpiry::Ex, "setex")),
        },
        Spec {
            name: "psetex",
            arity: 4,
            flags: Flags::WRITE_DENYOOM,
            summary: "set with an expiry in milliseconds",
            handler: Handler::Keyspace(|args, db, now| set_expiring(args, db, now, SetExpiry::Px, "psetex")),
        },
        Spec {
            name: "getdel",
            arity: 2,
            flags: Flags::WRITE,
            summary: "the value, and delete the key",
            handler: Handler::Keyspace(getdel),
        },
        Spec {
            name: "getex",
            arity: -2,
            flags: Flags::WRITE,
            summary: "the value, and set or remove the expiry; EX|PX|EXAT|PXAT|PERSIST",
            handler: Handler::Keyspace(getex),
        },
        Spec {
            name: "decr",
            arity: 2,
            flags: Flags::WRITE_DENYOOM,
            summary: "subtract 1 from an integer string",
            handler: Handler::Keyspace(|args, db, now| add_to_integer(args.next_bytes()?, -1, db, now)),
        },
        Spec {
            name: "decrby",
            arity: 3,
            flags: Flags::WRITE_DENYOOM,
            summary: "subtract an integer from an integer string",
            handler: Handler::Keyspace(decrby),
        },
        Spec {
            name: "incrbyfloat",
            arity: 3,
            flags: Flags::WRITE_DENYOOM,
            summary: "add a float to a number string: the new value",
            handler: Handler::Keyspace(incrbyfloat),
        },
        Spec {
            name: "mget",
            arity: -2,
            flags: Flags::READ,
            summary: "the values (nil for a missing key or another type)",
            handler: Handler::Keyspace(mget),
        },
        Spec {
            name: "mset",
            arity: -3,
            flags: Flags::WRITE_DENYOOM,
            summary: "set several keys",
            handler: Handler::Keyspace(|args, db, now| mset(args, db, now, false)),
        },
        Spec {
            name: "msetnx",
            arity: -3,
            flags: Flags::WRITE_DENYOOM,
            summary: "set several keys if none exists: 1 or 0",
            handler: Handler::Keyspace(|args, db, now| mset(args, db, now, true)),
        },
        Spec {
            name: "append",
            arity: 3,
            flags: Flags::WRITE_DENYOOM,
            summary: "append to a string: the new length",
            handler: Handler::Keyspace(append),
        },
        Spec {
            name: "strlen",
            arity: 2,
            flags: Flags::READ,
            summary: "the length of a string",
            handler: Handler::Keyspace(strlen),
        },
        Spec {
            name: "getrange",
            arity: 4,
            flags: Flags::READ,
            summary: "a substring by byte offsets, negative from the end",
            handler: Handler::Parse(|args| Ok(C::from(Getrange::parse(args)?))),
        },
    ]
}

/// `GETRANGE key start end`: the bytes from `start` to `end` inclusive, offsets counted
/// from the end when negative, clamped to the string; `""` for a missing key or an empty
/// range (t_string.c `getrangeCommand`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Getrange {
    pub key: Vec<u8>,
    pub start: i64,
    pub end: i64,
}

impl Getrange {
    /// The offsets are read before the key is looked up, as Redis reads them: a bad one is
    /// an error even on a missing key.
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Getrange {
            key: args.next_bytes()?,
            start: args.next_int()?,
            end: args.next_int()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        let value = match db.get_string(&self.key, now_ms) {
            Ok(value) => value.unwrap_or_default(),
            Err(error) => return error.into(),
        };
        let len = value.len() as i64;
        let (start, end) = (self.start, self.end);
        if start < 0 && end < 0 && start > end {
            return Frame::BulkString(Vec::new());
        }
        let from_end = |offset: i64| if offset < 0 { (len + offset).max(0) } else { offset };
        let (start, end) = (from_end(start), from_end(end).min(len - 1));
        if start > end || len == 0 {
            return Frame::BulkString(Vec::new());
        }
        Frame::BulkString(value[start as usize..=end as usize].to_vec())
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([
            b"GETRANGE".to_vec(),
            self.key,
            self.start.to_string().into_bytes(),
            self.end.to_string().into_bytes(),
        ])
    }
}

/// `GET key`: the value, or nil.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Get {
    pub key: Vec<u8>,
}

impl Get {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Get {
            key: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        match db.get_string(&self.key, now_ms) {
            Ok(value) => value.map_or(Frame::Null, |v| Frame::BulkString(v.to_vec())),
            Err(error) => error.into(),
        }
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"GET".to_vec(), self.key])
    }
}

/// GETEX's options, as [`option_name`] names them.
const GETEX_OPTIONS: &[&str] = &["PERSIST", "EX", "PX", "EXAT", "PXAT"];

/// `INCR key`: adds one to an integer stored as a string (a missing key counts as 0);
/// the key keeps its expiry. Used for fencing tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incr {
    pub key: Vec<u8>,
}

impl Incr {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Incr {
            key: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        Incrby {
            key: self.key,
            increment: 1,
        }
        .apply(db, now_ms)
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"INCR".to_vec(), self.key])
    }
}

/// `INCRBY key increment`: as INCR, by any amount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incrby {
    pub key: Vec<u8>,
    pub increment: i64,
}

impl Incrby {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Incrby {
            key: args.next_bytes()?,
            increment: args.next_int()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        add_to_integer(self.key, self.increment, db, now_ms).map_or_else(Frame::from, Reply::into_resp2)
    }
}

/// `SETEX key seconds value`, `PSETEX key milliseconds value`.
fn set_expiring(
    args: &mut Args,
    db: &mut Db,
    now_ms: u64,
    unit: fn(i64) -> SetExpiry,
    name: &str,
) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let amount = args.next_int()?;
    let value = args.next_bytes()?;
    if amount <= 0 {
        return Err(ReplyError::invalid_expire(name));
    }
    let at = expiry_time_ms(unit(amount), now_ms).ok_or_else(|| ReplyError::invalid_expire(name))?;
    db.set(key, value, at);
    Ok(ok().into())
}

fn getdel(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let Some(value) = db.get_string(&key, now_ms)?.map(<[u8]>::to_vec) else {
        return Ok(Frame::Null.into());
    };
    db.remove(&key, now_ms);
    Ok(Frame::BulkString(value).into())
}

/// What GETEX does to the key's expiry: sets it (the time as sent, read once the key was
/// found, as Redis reads it), or removes it.
enum GetexExpiry {
    Set(Vec<u8>),
    Persist,
}

fn getex(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let mut words = args.rest().into_iter().peekable();
    let mut change: Option<(&str, GetexExpiry)> = None;
    while let Some(word) = words.next() {
        let option = option_name(&word, GETEX_OPTIONS);
        let previous = change.as_ref().map(|(name, _)| *name);
        let has_next = words.peek().is_some();
        change = Some(match (option, previous) {
            (Some(option @ "PERSIST"), None | Some("PERSIST")) => (option, GetexExpiry::Persist),
            (Some(option @ ("EX" | "PX" | "EXAT" | "PXAT")), _)
                if has_next && previous.is_none_or(|p| p == option) =>
            {
                let amount = words.next().unwrap_or_default();
                (option, GetexExpiry::Set(amount))
            }
            _ => return Err(ReplyError::syntax()),
        });
    }
    // Redis looks the key up before it checks the time.
    let Some(value) = db.get_string(&key, now_ms)?.map(<[u8]>::to_vec) else {
        return Ok(Frame::Null.into());
    };
    let at = match &change {
        Some((option, GetexExpiry::Set(amount))) => {
            let amount = parse_int(amount)?;
            let invalid = || ReplyError::invalid_expire("getex");
            if amount <= 0 {
                return Err(invalid());
            }
            let expiry = match *option {
                "EX" => SetExpiry::Ex(amount),
                "PX" => SetExpiry::Px(amount),
                "EXAT" => SetExpiry::ExAt(amount),
                _ => SetExpiry::PxAt(amount),
            };
            expiry_time_ms(expiry, now_ms).ok_or_else(invalid)?
        }
        _ => None,
    };
    match (change, at) {
        (Some((_, GetexExpiry::Persist)), _) => {
            db.persist(&key, now_ms);
        }
        (Some(_), Some(at)) if at <= now_ms => {
            db.remove(&key, now_ms);
        }
        (Some(_), Some(at)) => {
            db.set_expiry(&key, at, now_ms);
        }
        _ => {}
    }
    Ok(Frame::BulkString(value).into())
}

/// A string's bytes and its expiry time.
type StringEntry<'a> = (&'a [u8], Option<u64>);

/// The live string under `key` and its expiry; WRONGTYPE if the key holds another type.
fn string_entry<'a>(db: &'a mut Db, key: &[u8], now_ms: u64) -> Result<Option<StringEntry<'a>>, ReplyError> {
    match db.get(key, now_ms) {
        None => Ok(None),
        Some(entry) => match entry.value.as_string() {
            Some(text) => Ok(Some((text, entry.expires_at_ms))),
            None => Err(wrong_type()),
        },
    }
}

/// Adds `increment` to the integer stored as a string under `key` (0 when absent); the key
/// keeps its expiry.
fn add_to_integer(key: Vec<u8>, increment: i64, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let (current, expires_at_ms) = match string_entry(db, &key, now_ms)? {
        None => (0, None),
        Some((text, expires_at_ms)) => (parse_int(text)?, expires_at_ms),
    };
    let next = current
        .checked_add(increment)
        .ok_or_else(|| ReplyError("ERR increment or decrement would overflow".into()))?;
    db.set(key, next.to_string().into_bytes(), expires_at_ms);
    Ok(Frame::Integer(next).into())
}

fn decrby(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let decrement = args.next_int()?;
    let increment = decrement
        .checked_neg()
        .ok_or_else(|| ReplyError("ERR decrement would overflow".into()))?;
    add_to_integer(key, increment, db, now_ms)
}

/// `INCRBYFLOAT key increment`: the key keeps its expiry. Redis adds in `long double` and
/// writes the sum with `%.17Lf` and no trailing zeros; here the sum is an `f64`, written
/// in the fewest digits that read back as it (the same for sums of short decimals, which
/// `long double` rounds back; `0.1 + 0.2` writes `0.30000000000000004` here, `0.3` there).
fn incrbyfloat(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let increment = args.next_bytes()?;
    let invalid = || ReplyError("ERR value is not a valid float".into());
    let (current, expires_at_ms) = match string_entry(db, &key, now_ms)? {
        None => (0.0, None),
        Some((text, expires_at_ms)) => (parse_double(text).ok_or_else(invalid)?, expires_at_ms),
    };
    let sum = current + parse_double(&increment).ok_or_else(invalid)?;
    if !sum.is_finite() {
        return Err(ReplyError("ERR increment would produce NaN or Infinity".into()));
    }
    let written = format!("{sum}").into_bytes();
    db.set(key, written.clone(), expires_at_ms);
    Ok(Frame::BulkString(written).into())
}

fn mget(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let values = args
        .rest()
        .iter()
        .map(
            |key| match db.get(key, now_ms).and_then(|e| e.value.as_string()) {
                Some(value) => Frame::BulkString(value.to_vec()),
                None => Frame::Null,
            },
        )
        .collect();
    Ok(Frame::Array(values).into())
}

/// `MSET key value [key value ...]`, and with `only_new` MSETNX (nothing is set if any key
/// exists).
fn mset(args: &mut Args, db: &mut Db, now_ms: u64, only_new: bool) -> Result<Reply, ReplyError> {
    let words = args.rest();
    if !words.len().is_multiple_of(2) {
        return Err(ReplyError::wrong_arity(if only_new { "msetnx" } else { "mset" }));
    }
    if only_new && words.chunks(2).any(|pair| db.get(&pair[0], now_ms).is_some()) {
        return Ok(Frame::Integer(0).into());
    }
    let mut words = words.into_iter();
    while let (Some(key), Some(value)) = (words.next(), words.next()) {
        db.set(key, value, None);
    }
    Ok(if only_new {
        Frame::Integer(1).into()
    } else {
        ok().into()
    })
}

fn append(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let suffix = args.next_bytes()?;
    let (mut value, expires_at_ms) = match string_entry(db, &key, now_ms)? {
        None => (Vec::new(), None),
        Some((value, expires_at_ms)) => (value.to_vec(), expires_at_ms),
    };
    value.extend(suffix);
    let length = value.len() as i64;
    db.set(key, value, expires_at_ms);
    Ok(Frame::Integer(length).into())
}

fn strlen(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    Ok(Frame::Integer(db.get_string(&key, now_ms)?.map_or(0, <[u8]>::len) as i64).into())
}
