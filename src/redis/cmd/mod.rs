//! Redis commands, one type per command, shared by the fake node and the lock client.
//!
//! The node parses a frame into a [`Command`] and applies it to its [`Db`]; the client
//! builds the same type and turns it into a frame. A command's wire format therefore
//! lives in one place. Errors are worded exactly as Redis 7.0 words them.

mod keys;
mod scripting;
mod server_cmds;
mod strings;

pub use keys::{Del, Expire, Pexpire, Pttl};
pub use scripting::Eval;
pub use server_cmds::{Ping, Wait};
pub use strings::{Condition, Get, Incr, Set, SetExpiry, Setnx};

use super::Frame;
use super::db::Db;

/// An error reply (`-ERR …`), as Redis words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyError(pub String);

impl ReplyError {
    fn syntax() -> Self {
        ReplyError("ERR syntax error".into())
    }
    fn not_an_integer() -> Self {
        ReplyError("ERR value is not an integer or out of range".into())
    }
    fn invalid_expire(command: &str) -> Self {
        ReplyError(format!("ERR invalid expire time in '{command}' command"))
    }
}

impl From<ReplyError> for Frame {
    fn from(e: ReplyError) -> Frame {
        Frame::Error(e.0)
    }
}

/// Why a frame is not a command at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The frame is not an array of bulk strings: Redis closes such connections.
    Protocol(String),
    /// A well-formed request Redis answers with an error reply.
    Reply(ReplyError),
}

impl From<ReplyError> for ParseError {
    fn from(e: ReplyError) -> Self {
        ParseError::Reply(e)
    }
}

/// Every command the node understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Ping(Ping),
    Get(Get),
    Set(Set),
    Setnx(Setnx),
    Incr(Incr),
    Del(Del),
    Pttl(Pttl),
    Expire(Expire),
    Pexpire(Pexpire),
    Eval(Eval),
    Wait(Wait),
}

/// Command names with Redis's arity: `n` means exactly `n` words, `-n` at least `n`.
const ARITY: &[(&str, i32)] = &[
    ("ping", -1),
    ("get", 2),
    ("set", -3),
    ("setnx", 3),
    ("incr", 2),
    ("del", -2),
    ("pttl", 2),
    ("expire", -3),
    ("pexpire", -3),
    ("eval", -3),
    ("wait", 3),
];

impl Command {
    /// Parses a request frame (`*N` of bulk strings).
    pub fn from_frame(frame: Frame) -> Result<Command, ParseError> {
        let Frame::Array(items) = frame else {
            return Err(ParseError::Protocol("expected an array of bulk strings".into()));
        };
        let words = items
            .into_iter()
            .map(|item| match item {
                Frame::BulkString(bytes) => Ok(bytes),
                _ => Err(ParseError::Protocol("expected '$' for a command argument".into())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let Some(first) = words.first() else {
            return Err(ParseError::Protocol("empty command".into()));
        };
        let name = String::from_utf8_lossy(first).to_lowercase();
        let Some(&(name, arity)) = ARITY.iter().find(|(n, _)| *n == name) else {
            return Err(unknown_command(&words).into());
        };
        let count = words.len() as i32;
        if (arity >= 0 && count != arity) || (arity < 0 && count < -arity) {
            return Err(ReplyError(format!("ERR wrong number of arguments for '{name}' command")).into());
        }
        let mut args = Args {
            words: words.into_iter().skip(1).collect::<Vec<_>>().into_iter(),
        };
        Ok(match name {
            "ping" => Command::Ping(Ping::parse(&mut args)?),
            "get" => Command::Get(Get::parse(&mut args)?),
            "set" => Command::Set(Set::parse(&mut args)?),
            "setnx" => Command::Setnx(Setnx::parse(&mut args)?),
            "incr" => Command::Incr(Incr::parse(&mut args)?),
            "del" => Command::Del(Del::parse(&mut args)?),
            "pttl" => Command::Pttl(Pttl::parse(&mut args)?),
            "expire" => Command::Expire(Expire::parse(&mut args)?),
            "pexpire" => Command::Pexpire(Pexpire::parse(&mut args)?),
            "eval" => Command::Eval(Eval::parse(&mut args)?),
            "wait" => Command::Wait(Wait::parse(&mut args)?),
            _ => unreachable!("every name in ARITY is dispatched"),
        })
    }

    /// Executes the command against the keyspace at wall-clock time `now_ms`.
    ///
    /// WAIT is not applied here: it blocks, so the server runs it (see `server.rs`).
    pub fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        match self {
            Command::Wait(_) => unreachable!("the server answers WAIT itself"),
            Command::Ping(cmd) => cmd.apply(),
            Command::Get(cmd) => cmd.apply(db, now_ms),
            Command::Set(cmd) => cmd.apply(db, now_ms),
            Command::Setnx(cmd) => cmd.apply(db, now_ms),
            Command::Incr(cmd) => cmd.apply(db, now_ms),
            Command::Del(cmd) => cmd.apply(db, now_ms),
            Command::Pttl(cmd) => cmd.apply(db, now_ms),
            Command::Expire(cmd) => cmd.apply(db, now_ms),
            Command::Pexpire(cmd) => cmd.apply(db, now_ms),
            Command::Eval(cmd) => cmd.apply(db, now_ms),
        }
    }
}

fn unknown_command(words: &[Vec<u8>]) -> ReplyError {
    let shown: String = words[1..]
        .iter()
        .map(|w| format!("'{}' ", String::from_utf8_lossy(w)))
        .collect();
    ReplyError(format!(
        "ERR unknown command '{}', with args beginning with: {shown}",
        String::from_utf8_lossy(&words[0])
    ))
}

/// The arguments of a request after the command name.
pub(crate) struct Args {
    words: std::vec::IntoIter<Vec<u8>>,
}

impl Args {
    /// The next argument; arity was checked before parsing, so a missing one is a syntax error.
    fn next_bytes(&mut self) -> Result<Vec<u8>, ReplyError> {
        self.words.next().ok_or_else(ReplyError::syntax)
    }

    fn next_int(&mut self) -> Result<i64, ReplyError> {
        parse_int(&self.next_bytes()?)
    }

    /// The next argument as an upper-case option word, if any remain.
    fn next_option(&mut self) -> Option<String> {
        self.words
            .next()
            .map(|w| String::from_utf8_lossy(&w).to_uppercase())
    }

    fn rest(&mut self) -> Vec<Vec<u8>> {
        self.words.by_ref().collect()
    }
}

/// Parses a decimal integer as Redis's `string2ll` does: no sign `+`, no spaces.
fn parse_int(bytes: &[u8]) -> Result<i64, ReplyError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ReplyError::not_an_integer())?;
    if text.starts_with('+') || text.starts_with(' ') {
        return Err(ReplyError::not_an_integer());
    }
    text.parse().map_err(|_| ReplyError::not_an_integer())
}

/// Builds a request frame from words (what a client sends).
pub(crate) fn request(words: impl IntoIterator<Item = Vec<u8>>) -> Frame {
    Frame::Array(words.into_iter().map(Frame::BulkString).collect())
}

/// The `+OK` reply.
pub(crate) fn ok() -> Frame {
    Frame::SimpleString(b"OK".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(db: &mut Db, now_ms: u64, words: &[&str]) -> Frame {
        let frame = request(words.iter().map(|w| w.as_bytes().to_vec()));
        match Command::from_frame(frame) {
            Ok(cmd) => cmd.apply(db, now_ms),
            Err(ParseError::Reply(e)) => e.into(),
            Err(ParseError::Protocol(p)) => panic!("protocol error {p}"),
        }
    }
    fn err(text: &str) -> Frame {
        Frame::Error(text.into())
    }

    #[test]
    fn set_nx_px_grants_once_until_expiry() {
        let mut db = Db::default();
        assert_eq!(run(&mut db, 0, &["SET", "lock", "a", "NX", "PX", "2000"]), ok());
        assert_eq!(
            run(&mut db, 1999, &["set", "lock", "b", "nx", "px", "2000"]),
            Frame::Null
        );
        assert_eq!(run(&mut db, 1999, &["PTTL", "lock"]), Frame::Integer(1));
        assert_eq!(
            run(&mut db, 2000, &["SET", "lock", "b", "NX", "PX", "2000"]),
            ok()
        );
        assert_eq!(
            run(&mut db, 2000, &["GET", "lock"]),
            Frame::BulkString(b"b".to_vec())
        );
    }

    #[test]
    fn set_options_follow_redis() {
        let mut db = Db::default();
        assert_eq!(run(&mut db, 0, &["SET", "k", "v", "XX"]), Frame::Null);
        assert_eq!(
            run(&mut db, 0, &["SET", "k", "v", "NX", "XX"]),
            err("ERR syntax error")
        );
        assert_eq!(run(&mut db, 0, &["SET", "k", "v", "PX"]), err("ERR syntax error"));
        assert_eq!(
            run(&mut db, 0, &["SET", "k", "v", "EX", "1", "PX", "5"]),
            err("ERR syntax error")
        );
        assert_eq!(
            run(&mut db, 0, &["SET", "k", "v", "PX", "0"]),
            err("ERR invalid expire time in 'set' command")
        );
        assert_eq!(
            run(&mut db, 0, &["SET", "k", "v", "PX", "ten"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(run(&mut db, 0, &["SET", "k", "v", "EX", "3"]), ok());
        assert_eq!(run(&mut db, 500, &["PTTL", "k"]), Frame::Integer(2500));
        assert_eq!(run(&mut db, 500, &["SET", "k", "w", "KEEPTTL"]), ok());
        assert_eq!(run(&mut db, 500, &["PTTL", "k"]), Frame::Integer(2500));
        assert_eq!(run(&mut db, 500, &["SET", "k", "w", "PXAT", "9000"]), ok());
        assert_eq!(run(&mut db, 1000, &["PTTL", "k"]), Frame::Integer(8000));
    }

    #[test]
    fn keys_commands_follow_redis() {
        let mut db = Db::default();
        assert_eq!(run(&mut db, 0, &["PTTL", "k"]), Frame::Integer(-2));
        run(&mut db, 0, &["SET", "k", "v"]);
        assert_eq!(run(&mut db, 0, &["PTTL", "k"]), Frame::Integer(-1));
        assert_eq!(run(&mut db, 0, &["PEXPIRE", "k", "100"]), Frame::Integer(1));
        assert_eq!(run(&mut db, 40, &["PTTL", "k"]), Frame::Integer(60));
        assert_eq!(run(&mut db, 40, &["PEXPIRE", "nope", "100"]), Frame::Integer(0));
        assert_eq!(run(&mut db, 40, &["PEXPIRE", "k", "-5"]), Frame::Integer(1));
        assert_eq!(run(&mut db, 40, &["GET", "k"]), Frame::Null);
        run(&mut db, 0, &["SET", "a", "1"]);
        run(&mut db, 0, &["SET", "b", "1"]);
        assert_eq!(run(&mut db, 0, &["DEL", "a", "b", "c"]), Frame::Integer(2));
    }

    #[test]
    fn setnx_expire_and_incr_follow_redis() {
        let mut db = Db::default();
        assert_eq!(run(&mut db, 0, &["SETNX", "k", "a"]), Frame::Integer(1));
        assert_eq!(run(&mut db, 0, &["SETNX", "k", "b"]), Frame::Integer(0));
        assert_eq!(
            run(&mut db, 0, &["PTTL", "k"]),
            Frame::Integer(-1),
            "SETNX sets no TTL"
        );
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "10"]), Frame::Integer(1));
        assert_eq!(run(&mut db, 0, &["PTTL", "k"]), Frame::Integer(10_000));
        assert_eq!(
            run(&mut db, 0, &["INCR", "k"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(run(&mut db, 0, &["INCR", "n"]), Frame::Integer(1));
        assert_eq!(run(&mut db, 0, &["INCR", "n"]), Frame::Integer(2));
        assert_eq!(run(&mut db, 0, &["SET", "m", "9223372036854775807"]), ok());
        assert_eq!(
            run(&mut db, 0, &["INCR", "m"]),
            err("ERR increment or decrement would overflow")
        );
    }

    #[test]
    fn arity_and_unknown_commands_are_worded_as_redis() {
        let mut db = Db::default();
        assert_eq!(
            run(&mut db, 0, &["GET"]),
            err("ERR wrong number of arguments for 'get' command")
        );
        assert_eq!(
            run(&mut db, 0, &["get", "a", "b"]),
            err("ERR wrong number of arguments for 'get' command")
        );
        assert_eq!(
            run(&mut db, 0, &["FOO", "a", "b"]),
            err("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
        );
        assert_eq!(run(&mut db, 0, &["PING"]), Frame::SimpleString(b"PONG".to_vec()));
        assert_eq!(
            run(&mut db, 0, &["PING", "hi"]),
            Frame::BulkString(b"hi".to_vec())
        );
    }

    #[test]
    fn client_frames_parse_back_to_the_same_command() {
        let commands = [
            Command::Get(Get { key: b"k".to_vec() }),
            Command::Setnx(Setnx {
                key: b"k".to_vec(),
                value: b"v".to_vec(),
            }),
            Command::Incr(Incr { key: b"k".to_vec() }),
            Command::Del(Del {
                keys: vec![b"a".to_vec(), b"b".to_vec()],
            }),
            Command::Pttl(Pttl { key: b"k".to_vec() }),
            Command::Expire(Expire {
                key: b"k".to_vec(),
                seconds: 10,
            }),
            Command::Pexpire(Pexpire {
                key: b"k".to_vec(),
                ms: 10,
            }),
            Command::Wait(Wait {
                replicas: 1,
                timeout_ms: 100,
            }),
        ];
        for command in commands {
            let frame = match command.clone() {
                Command::Get(c) => c.into_frame(),
                Command::Setnx(c) => c.into_frame(),
                Command::Incr(c) => c.into_frame(),
                Command::Del(c) => c.into_frame(),
                Command::Pttl(c) => c.into_frame(),
                Command::Expire(c) => c.into_frame(),
                Command::Pexpire(c) => c.into_frame(),
                Command::Wait(c) => c.into_frame(),
                _ => unreachable!(),
            };
            assert_eq!(Command::from_frame(frame), Ok(command));
        }
    }

    #[test]
    fn non_array_frames_are_protocol_errors() {
        assert!(matches!(
            Command::from_frame(Frame::Integer(3)),
            Err(ParseError::Protocol(_))
        ));
        assert!(matches!(
            Command::from_frame(Frame::Array(vec![Frame::Integer(3)])),
            Err(ParseError::Protocol(_))
        ));
    }
}
