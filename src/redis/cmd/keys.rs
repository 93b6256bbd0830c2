//! Key commands: DEL, EXISTS, TYPE, TTL/PTTL, PERSIST, and the expire family
//! (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT).

use super::{Args, Command, Flags, Frame, Handler, ReplyError, Spec, request};
use crate::redis::db::Db;

/// The generic key commands.
pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "del",
        arity: -2,
        flags: Flags::WRITE,
        summary: "delete keys: how many existed",
        handler: Handler::Parse(|args| Ok(Command::Del(Del::parse(args)?))),
    },
    Spec {
        name: "exists",
        arity: -2,
        flags: Flags::READ,
        summary: "how many of the keys exist",
        handler: Handler::Parse(|args| Ok(Command::Exists(Exists::parse(args)?))),
    },
    Spec {
        name: "type",
        arity: 2,
        flags: Flags::READ,
        summary: "the type of the value, or none",
        handler: Handler::Parse(|args| Ok(Command::Type(Type::parse(args)?))),
    },
    Spec {
        name: "pttl",
        arity: 2,
        flags: Flags::READ,
        summary: "milliseconds left, -1 or -2",
        handler: Handler::Parse(|args| Ok(Command::Pttl(Pttl::parse(args)?))),
    },
    Spec {
        name: "ttl",
        arity: 2,
        flags: Flags::READ,
        summary: "seconds left (rounded), -1 or -2",
        handler: Handler::Parse(|args| Ok(Command::Ttl(Ttl::parse(args)?))),
    },
    Spec {
        name: "persist",
        arity: 2,
        flags: Flags::WRITE,
        summary: "remove the expiry",
        handler: Handler::Parse(|args| Ok(Command::Persist(Persist::parse(args)?))),
    },
    Spec {
        name: "expire",
        arity: -3,
        flags: Flags::WRITE,
        summary: "expiry in seconds from now; NX|XX|GT|LT",
        handler: Handler::Parse(|args| Ok(Command::Expire(ExpireRequest::parse(ExpireKind::Expire, args)?))),
    },
    Spec {
        name: "pexpire",
        arity: -3,
        flags: Flags::WRITE,
        summary: "expiry in milliseconds from now; NX|XX|GT|LT",
        handler: Handler::Parse(|args| Ok(Command::Expire(ExpireRequest::parse(ExpireKind::Pexpire, args)?))),
    },
    Spec {
        name: "expireat",
        arity: -3,
        flags: Flags::WRITE,
        summary: "expiry at a Unix time in seconds; NX|XX|GT|LT",
        handler: Handler::Parse(|args| {
            Ok(Command::Expire(ExpireRequest::parse(ExpireKind::Expireat, args)?))
        }),
    },
    Spec {
        name: "pexpireat",
        arity: -3,
        flags: Flags::WRITE,
        summary: "expiry at a Unix time in milliseconds; NX|XX|GT|LT",
        handler: Handler::Parse(|args| {
            Ok(Command::Expire(ExpireRequest::parse(
                ExpireKind::Pexpireat,
                args,
            )?))
        }),
    },
];

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

/// `TYPE key`: `string` (the only type here) or `none`.
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
        let name: &[u8] = if db.get(&self.key, now_ms).is_some() {
            b"string"
        } else {
            b"none"
        };
        Frame::SimpleString(name.to_vec())
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
            time: super::parse_int(&time)?,
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
