//! String commands: GET, SET, SETNX, INCR, INCRBY.

use super::{Args, Command, Flags, Frame, Handler, ReplyError, Spec, ok, request};
use crate::redis::db::Db;

/// The string commands.
pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "get",
        arity: 2,
        flags: Flags::READ,
        summary: "the value, or nil",
        handler: Handler::Parse(|args| Ok(Command::Get(Get::parse(args)?))),
    },
    Spec {
        name: "set",
        arity: -3,
        flags: Flags::WRITE,
        summary: "NX|XX, EX|PX|EXAT|PXAT|KEEPTTL, GET",
        handler: Handler::Parse(|args| {
            Ok(match Set::parse(args)? {
                (set, false) => Command::Set(set),
                (set, true) => Command::SetGet(SetGet(set)),
            })
        }),
    },
    Spec {
        name: "setnx",
        arity: 3,
        flags: Flags::WRITE,
        summary: "set if absent: 1 or 0",
        handler: Handler::Parse(|args| Ok(Command::Setnx(Setnx::parse(args)?))),
    },
    Spec {
        name: "incr",
        arity: 2,
        flags: Flags::WRITE,
        summary: "add 1 to an integer string",
        handler: Handler::Parse(|args| Ok(Command::Incr(Incr::parse(args)?))),
    },
    Spec {
        name: "incrby",
        arity: 3,
        flags: Flags::WRITE,
        summary: "add an integer to an integer string",
        handler: Handler::Parse(|args| Ok(Command::Incrby(Incrby::parse(args)?))),
    },
];

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
        db.get(&self.key, now_ms)
            .map_or(Frame::Null, |e| Frame::BulkString(e.value.clone()))
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"GET".to_vec(), self.key])
    }
}

/// When SET may write: only if the key is absent (NX) or only if present (XX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Nx,
    Xx,
}

/// How SET sets the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetExpiry {
    /// `EX seconds` from now.
    Ex(i64),
    /// `PX milliseconds` from now.
    Px(i64),
    /// `EXAT unix-seconds`.
    ExAt(i64),
    /// `PXAT unix-milliseconds`.
    PxAt(i64),
    /// `KEEPTTL`: keep the expiry the key had.
    KeepTtl,
}

/// `SET key value [NX|XX] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub condition: Option<Condition>,
    pub expiry: Option<SetExpiry>,
}

impl Set {
    /// Parses as Redis 7.0 does: an option may repeat (the last wins) but not meet a
    /// conflicting one, and the time is checked only after every option was read. The
    /// flag says whether GET was given (the reply is then the old value).
    pub(crate) fn parse(args: &mut Args) -> Result<(Self, bool), ReplyError> {
        let key = args.next_bytes()?;
        let value = args.next_bytes()?;
        let mut condition = None;
        let mut get = false;
        let mut expiry: Option<(&str, Vec<u8>)> = None;
        let mut words = args.rest().into_iter();
        while let Some(option) = words.next() {
            let option = String::from_utf8_lossy(&option).to_uppercase();
            match (option.as_str(), condition, &expiry) {
                ("NX", None | Some(Condition::Nx), _) => condition = Some(Condition::Nx),
                ("XX", None | Some(Condition::Xx), _) => condition = Some(Condition::Xx),
                ("GET", _, _) => get = true,
                ("KEEPTTL", _, None | Some(("KEEPTTL", _))) => expiry = Some(("KEEPTTL", vec![])),
                (kind @ ("EX" | "PX" | "EXAT" | "PXAT"), _, previous)
                    if previous.as_ref().is_none_or(|(k, _)| *k == kind) =>
                {
                    let amount = words.next().ok_or_else(ReplyError::syntax)?;
                    // The same word, borrowed for as long as `expiry` lives.
                    let kind = ["EX", "PX", "EXAT", "PXAT"].into_iter().find(|k| *k == kind);
                    expiry = kind.map(|kind| (kind, amount));
                }
                _ => return Err(ReplyError::syntax()),
            }
        }
        let expiry = match expiry {
            None => None,
            Some(("KEEPTTL", _)) => Some(SetExpiry::KeepTtl),
            Some((kind, amount)) => {
                let amount = super::parse_int(&amount)?;
                if amount <= 0 {
                    return Err(ReplyError::invalid_expire("set"));
                }
                Some(match kind {
                    "EX" => SetExpiry::Ex(amount),
                    "PX" => SetExpiry::Px(amount),
                    "EXAT" => SetExpiry::ExAt(amount),
                    _ => SetExpiry::PxAt(amount),
                })
            }
        };
        let set = Set {
            key,
            value,
            condition,
            expiry,
        };
        Ok((set, get))
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        let now = now_ms as i64;
        // Redis checks the time before the condition.
        let expires_at = match self.expiry {
            None | Some(SetExpiry::KeepTtl) => None,
            Some(SetExpiry::Ex(s)) => s.checked_mul(1000).and_then(|ms| ms.checked_add(now)),
            Some(SetExpiry::Px(ms)) => ms.checked_add(now),
            Some(SetExpiry::ExAt(s)) => s.checked_mul(1000),
            Some(SetExpiry::PxAt(at)) => Some(at),
        };
        if self.expiry.is_some_and(|e| e != SetExpiry::KeepTtl) && expires_at.is_none_or(|at| at <= 0) {
            return ReplyError::invalid_expire("set").into();
        }
        let existing = db.get(&self.key, now_ms).map(|e| e.expires_at_ms);
        match (self.condition, existing) {
            (Some(Condition::Nx), Some(_)) | (Some(Condition::Xx), None) => return Frame::Null,
            _ => {}
        }
        let expires_at = match self.expiry {
            Some(SetExpiry::KeepTtl) => existing.flatten(),
            _ => expires_at.map(|at| at as u64),
        };
        db.set(self.key, self.value, expires_at);
        ok()
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        let mut words = vec![b"SET".to_vec(), self.key, self.value];
        match self.condition {
            Some(Condition::Nx) => words.push(b"NX".to_vec()),
            Some(Condition::Xx) => words.push(b"XX".to_vec()),
            None => {}
        }
        let (word, amount) = match self.expiry {
            None => return request(words),
            Some(SetExpiry::KeepTtl) => ("KEEPTTL", None),
            Some(SetExpiry::Ex(s)) => ("EX", Some(s)),
            Some(SetExpiry::Px(ms)) => ("PX", Some(ms)),
            Some(SetExpiry::ExAt(s)) => ("EXAT", Some(s)),
            Some(SetExpiry::PxAt(ms)) => ("PXAT", Some(ms)),
        };
        words.push(word.as_bytes().to_vec());
        words.extend(amount.map(|a| a.to_string().into_bytes()));
        request(words)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Command;
    use super::*;

    #[test]
    fn a_client_set_parses_back_to_itself() {
        let set = Set {
            key: b"lock".to_vec(),
            value: b"token".to_vec(),
            condition: Some(Condition::Nx),
            expiry: Some(SetExpiry::Px(2000)),
        };
        assert_eq!(
            Command::from_frame(set.clone().into_frame()),
            Ok(Command::Set(set))
        );
    }
}

/// `SET key value [options] GET`: as SET, but replies with the key's old value (or nil),
/// whether or not NX/XX let the write happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetGet(pub Set);

impl SetGet {
    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        let old = db.get(&self.0.key, now_ms).map(|e| e.value.clone());
        match self.0.apply(db, now_ms) {
            error @ Frame::Error(_) => error,
            _ => old.map_or(Frame::Null, Frame::BulkString),
        }
    }
}

/// `SETNX key value`: 1 if the key was set, 0 if it existed (tier 1 of the ladder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setnx {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

impl Setnx {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Setnx {
            key: args.next_bytes()?,
            value: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        if db.get(&self.key, now_ms).is_some() {
            return Frame::Integer(0);
        }
        db.set(self.key, self.value, None);
        Frame::Integer(1)
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"SETNX".to_vec(), self.key, self.value])
    }
}

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
        let (current, expires_at_ms) = match db.get(&self.key, now_ms) {
            None => (0, None),
            Some(entry) => match super::parse_int(&entry.value) {
                Ok(n) => (n, entry.expires_at_ms),
                Err(e) => return e.into(),
            },
        };
        let Some(next) = current.checked_add(self.increment) else {
            return ReplyError("ERR increment or decrement would overflow".into()).into();
        };
        db.set(self.key, next.to_string().into_bytes(), expires_at_ms);
        Frame::Integer(next)
    }
}
