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
pub use scripting::{Eval, Evalsha, Script};
pub use server_cmds::{Ping, Wait};
pub use strings::{Condition, Get, Incr, Set, SetExpiry, Setnx};

use super::Frame;
use super::db::Db;
use super::node::Node;

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
    fn not_from_script() -> Self {
        ReplyError("ERR This Redis command is not allowed from script".into())
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
    Evalsha(Evalsha),
    Script(Script),
    Wait(Wait),
}

/// How Redis treats a command name: its arity (`n` means exactly `n` words, `-n` at least
/// `n`) and whether scripts may call it (Redis's `noscript` flag).
struct Spec {
    name: &'static str,
    arity: i32,
    in_scripts: bool,
}

const fn spec(name: &'static str, arity: i32, in_scripts: bool) -> Spec {
    Spec {
        name,
        arity,
        in_scripts,
    }
}

/// Every command name, with Redis 7.0's arity and flags.
const COMMANDS: &[Spec] = &[
    spec("ping", -1, true),
    spec("get", 2, true),
    spec("set", -3, true),
    spec("setnx", 3, true),
    spec("incr", 2, true),
    spec("del", -2, true),
    spec("pttl", 2, true),
    spec("expire", -3, true),
    spec("pexpire", -3, true),
    spec("eval", -3, false),
    spec("evalsha", -3, false),
    spec("script", -2, false),
    spec("wait", 3, false),
];

/// Why a command name was refused before its arguments were looked at.
enum Rejection {
    Unknown,
    WrongArity(&'static str),
}

/// Finds the command a request names and checks its word count.
fn lookup(words: &[Vec<u8>]) -> Result<&'static Spec, Rejection> {
    let name = String::from_utf8_lossy(words.first().ok_or(Rejection::Unknown)?).to_lowercase();
    let spec = COMMANDS
        .iter()
        .find(|s| s.name == name)
        .ok_or(Rejection::Unknown)?;
    let count = words.len() as i64;
    let arity = i64::from(spec.arity);
    if (arity >= 0 && count != arity) || (arity < 0 && count < -arity) {
        return Err(Rejection::WrongArity(spec.name));
    }
    Ok(spec)
}

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
        if words.is_empty() {
            return Err(ParseError::Protocol("empty command".into()));
        }
        Ok(Command::from_words(words)?)
    }

    /// Parses a client's request words, with the errors Redis gives clients.
    pub fn from_words(words: Vec<Vec<u8>>) -> Result<Command, ReplyError> {
        let spec = lookup(&words).map_err(|rejection| match rejection {
            Rejection::Unknown => unknown_command(&words),
            Rejection::WrongArity(name) => {
                ReplyError(format!("ERR wrong number of arguments for '{name}' command"))
            }
        })?;
        Command::parse(spec.name, words)
    }

    /// Parses the words a script passes to `redis.call`, with the errors Redis gives scripts.
    pub(crate) fn from_script_words(words: Vec<Vec<u8>>) -> Result<Command, ReplyError> {
        let spec = lookup(&words).map_err(|rejection| {
            ReplyError(
                match rejection {
                    Rejection::Unknown => "ERR Unknown Redis command called from script",
                    Rejection::WrongArity(_) => "ERR Wrong number of args calling Redis command from script",
                }
                .into(),
            )
        })?;
        if !spec.in_scripts {
            return Err(ReplyError::not_from_script());
        }
        Command::parse(spec.name, words)
    }

    /// Parses the arguments of a command whose name and arity were checked.
    fn parse(name: &str, words: Vec<Vec<u8>>) -> Result<Command, ReplyError> {
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
            "evalsha" => Command::Evalsha(Evalsha::parse(&mut args)?),
            "script" => Command::Script(Script::parse(&mut args)?),
            "wait" => Command::Wait(Wait::parse(&mut args)?),
            _ => return Err(unknown_command(&[name.as_bytes().to_vec()])),
        })
    }

    /// Executes the command on the node at wall-clock time `now_ms`.
    ///
    /// WAIT blocks, so the server answers it (see `server.rs`).
    pub fn apply(self, node: &mut Node, now_ms: u64) -> Frame {
        match self {
            Command::Eval(cmd) => cmd.apply(node, now_ms),
            Command::Evalsha(cmd) => cmd.apply(node, now_ms),
            Command::Script(cmd) => cmd.apply(&mut node.scripts),
            command => command.apply_to_db(&mut node.db, now_ms),
        }
    }

    /// Executes a keyspace command (what scripts may call) at wall-clock time `now_ms`.
    pub(crate) fn apply_to_db(self, db: &mut Db, now_ms: u64) -> Frame {
        match self {
            Command::Ping(cmd) => cmd.apply(),
            Command::Get(cmd) => cmd.apply(db, now_ms),
            Command::Set(cmd) => cmd.apply(db, now_ms),
            Command::Setnx(cmd) => cmd.apply(db, now_ms),
            Command::Incr(cmd) => cmd.apply(db, now_ms),
            Command::Del(cmd) => cmd.apply(db, now_ms),
            Command::Pttl(cmd) => cmd.apply(db, now_ms),
            Command::Expire(cmd) => cmd.apply(db, now_ms),
            Command::Pexpire(cmd) => cmd.apply(db, now_ms),
            Command::Eval(_) | Command::Evalsha(_) | Command::Script(_) | Command::Wait(_) => {
                ReplyError::not_from_script().into()
            }
        }
    }
}

/// Redis's reply to an unknown command: the name and the first arguments (about 128
/// bytes of them), each quoted.
fn unknown_command(words: &[Vec<u8>]) -> ReplyError {
    const SHOWN_BYTES: usize = 128;
    let Some((name, args)) = words.split_first() else {
        return ReplyError("ERR unknown command '', with args beginning with: ".into());
    };
    let mut shown = String::new();
    for arg in args {
        if shown.len() >= SHOWN_BYTES {
            break;
        }
        let room = SHOWN_BYTES - shown.len();
        shown.push_str(&format!(
            "'{}' ",
            String::from_utf8_lossy(&arg[..arg.len().min(room)])
        ));
    }
    let name = &name[..name.len().min(SHOWN_BYTES)];
    ReplyError(
        format!(
            "ERR unknown command '{}', with args beginning with: {shown}",
            String::from_utf8_lossy(name)
        )
        .replace(['\r', '\n'], " "),
    )
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
            Ok(cmd) => cmd.apply_to_db(db, now_ms),
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
