//! DEL, PTTL and PEXPIRE.

use super::{Args, Frame, ReplyError, request};
use crate::redis::db::Db;

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
        Frame::Integer(match db.get(&self.key, now_ms) {
            None => -2,
            Some(entry) => entry
                .expires_at_ms
                .map_or(-1, |at| at.saturating_sub(now_ms) as i64),
        })
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"PTTL".to_vec(), self.key])
    }
}

/// `EXPIRE key seconds`: as PEXPIRE, in seconds (tier 2 of the ladder sends it after SETNX).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expire {
    pub key: Vec<u8>,
    pub seconds: i64,
}

impl Expire {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let pexpire = Pexpire::parse(args)?;
        Ok(Expire {
            key: pexpire.key,
            seconds: pexpire.ms,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        match self.seconds.checked_mul(1000) {
            Some(ms) => Pexpire { key: self.key, ms }.apply_as(db, now_ms, "expire"),
            None => ReplyError::invalid_expire("expire").into(),
        }
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([
            b"EXPIRE".to_vec(),
            self.key,
            self.seconds.to_string().into_bytes(),
        ])
    }
}

/// `PEXPIRE key milliseconds`: 1 if the key exists (a time in the past deletes it), else 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pexpire {
    pub key: Vec<u8>,
    pub ms: i64,
}

impl Pexpire {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let key = args.next_bytes()?;
        let ms = args.next_int()?;
        if let Some(option) = args.next_option() {
            // NX|XX|GT|LT are Redis 7 options the lock client does not use yet.
            return Err(ReplyError(format!("ERR Unsupported option {option}")));
        }
        Ok(Pexpire { key, ms })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        self.apply_as(db, now_ms, "pexpire")
    }

    /// Applies the expiry; `command` names the command in error replies.
    fn apply_as(self, db: &mut Db, now_ms: u64, command: &str) -> Frame {
        let Some(at) = self.ms.checked_add(now_ms as i64) else {
            return ReplyError::invalid_expire(command).into();
        };
        let existed = if at <= now_ms as i64 {
            db.remove(&self.key, now_ms)
        } else {
            db.set_expiry(&self.key, at as u64, now_ms)
        };
        Frame::Integer(existed as i64)
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([b"PEXPIRE".to_vec(), self.key, self.ms.to_string().into_bytes()])
    }
}
