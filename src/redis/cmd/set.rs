//! SET and SETNX, the commands a lock takes its key with: their options, their request
//! frames, and how an expiry option becomes an absolute time (shared with SETEX, PSETEX
//! and GETEX in `strings.rs`).

use smallvec::SmallVec;

use super::error::ReplyError;
use super::spec::{Args, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Encoded;
use crate::redis::db::Db;
use crate::redis::request::build as request;

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

/// SET's options, as [`option_name`] names them.
const SET_OPTIONS: &[&str] = &["NX", "XX", "GET", "KEEPTTL", "EX", "PX", "EXAT", "PXAT"];

/// The one of `names` (upper case) that `word` spells, in any ASCII case, as Redis's
/// `strcasecmp` compares options: no copy, no Unicode case mapping.
pub(super) fn option_name(word: &[u8], names: &[&'static str]) -> Option<&'static str> {
    names
        .iter()
        .copied()
        .find(|name| word.eq_ignore_ascii_case(name.as_bytes()))
}

/// `SET key value [NX|XX] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]`: the key and value owned
/// as the node parses them, or borrowed (`B = &[u8]`) by a client that only encodes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set<B = Vec<u8>> {
    pub key: B,
    pub value: B,
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
        let mut expiry: Option<(&str, &[u8])> = None;
        while let Ok(option) = args.next_word() {
            match (option_name(option, SET_OPTIONS), condition, &expiry) {
                (Some("NX"), None | Some(Condition::Nx), _) => condition = Some(Condition::Nx),
                (Some("XX"), None | Some(Condition::Xx), _) => condition = Some(Condition::Xx),
                (Some("GET"), _, _) => get = true,
                (Some("KEEPTTL"), _, None | Some(("KEEPTTL", _))) => expiry = Some(("KEEPTTL", &[])),
                (Some(kind @ ("EX" | "PX" | "EXAT" | "PXAT")), _, previous)
                    if previous.as_ref().is_none_or(|(k, _)| *k == kind) =>
                {
                    let amount = args.next_word()?;
                    expiry = Some((kind, amount));
                }
                _ => return Err(ReplyError::syntax()),
            }
        }
        let expiry = match expiry {
            None => None,
            Some(("KEEPTTL", _)) => Some(SetExpiry::KeepTtl),
            Some((kind, amount)) => {
                let amount = parse_int(amount)?;
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
        // Redis checks the time before the condition.
        let expires_at = match self.expiry.map(|expiry| expiry_time_ms(expiry, now_ms)) {
            None => None,
            Some(None) => return ReplyError::invalid_expire("set").into(),
            Some(Some(at)) => at,
        };
        let existing = db.get(&self.key, now_ms).map(|e| e.expires_at_ms);
        match (self.condition, existing) {
            (Some(Condition::Nx), Some(_)) | (Some(Condition::Xx), None) => return Frame::Null,
            _ => {}
        }
        let expires_at = match self.expiry {
            Some(SetExpiry::KeepTtl) => existing.flatten(),
            _ => expires_at,
        };
        db.set(self.key, self.value, expires_at);
        ok()
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        let mut number = itoa::Buffer::new();
        request(self.words(&mut number).iter().map(|word| word.to_vec()))
    }
}

impl<B: AsRef<[u8]>> Set<B> {
    /// The request's words, an expiry's amount written into `number`.
    fn words<'a>(&'a self, number: &'a mut itoa::Buffer) -> SmallVec<[&'a [u8]; 6]> {
        // A lock's SET has six words (`SET key token NX PX ms`).
        let mut words: SmallVec<[&[u8]; 6]> = SmallVec::new();
        words.extend([&b"SET"[..], self.key.as_ref(), self.value.as_ref()]);
        match self.condition {
            Some(Condition::Nx) => words.push(b"NX"),
            Some(Condition::Xx) => words.push(b"XX"),
            None => {}
        }
        let (word, amount): (&[u8], _) = match self.expiry {
            None => return words,
            Some(SetExpiry::KeepTtl) => (b"KEEPTTL", None),
            Some(SetExpiry::Ex(s)) => (b"EX", Some(s)),
            Some(SetExpiry::Px(ms)) => (b"PX", Some(ms)),
            Some(SetExpiry::ExAt(s)) => (b"EXAT", Some(s)),
            Some(SetExpiry::PxAt(ms)) => (b"PXAT", Some(ms)),
        };
        words.push(word);
        words.extend(amount.map(|amount| number.format(amount).as_bytes()));
        words
    }

    /// The request a client sends, encoded from the words themselves (no frame built).
    pub fn encode(&self) -> Encoded {
        let mut number = itoa::Buffer::new();
        Encoded::of_words(&self.words(&mut number))
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
        let old = match db.get_string(&self.0.key, now_ms) {
            Ok(old) => old.map(<[u8]>::to_vec),
            Err(error) => return error.into(),
        };
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

/// The absolute expiry time (ms) an expiry option gives at `now_ms`, checked as Redis's
/// `getExpireMillisecondsOrReply` checks it; `None` when the time is invalid. `KeepTtl`
/// gives no time of its own.
pub(super) fn expiry_time_ms(expiry: SetExpiry, now_ms: u64) -> Option<Option<u64>> {
    let now = now_ms as i64;
    let at = match expiry {
        SetExpiry::KeepTtl => return Some(None),
        SetExpiry::Ex(s) => s.checked_mul(1000).and_then(|ms| ms.checked_add(now)),
        SetExpiry::Px(ms) => ms.checked_add(now),
        SetExpiry::ExAt(s) => s.checked_mul(1000),
        SetExpiry::PxAt(at) => Some(at),
    };
    at.filter(|at| *at > 0).map(|at| Some(at as u64))
}
