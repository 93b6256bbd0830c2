//! Server-level commands: PING, ECHO, DBSIZE, FLUSHALL, FLUSHDB, SWAPDB, WAIT, TIME, CONFIG,
//! and the snapshot commands SAVE, BGSAVE, LASTSAVE (through the node's persister).

use super::command::Describe;
use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{DATABASES, Db};
use crate::redis::node::Node;
use crate::redis::request::build as request;

/// The server commands.
pub(super) const fn commands<
    C: From<Ping>
        + From<Echo>
        + From<Dbsize>
        + From<Flushall>
        + From<Wait>
        + From<Config>
        + From<Snapshot>
        + From<Describe>,
>() -> [Spec<C>; 13] {
    [
        Spec {
            name: "ping",
            arity: -1,
            flags: Flags::READ,
            summary: "PONG, or the message",
            handler: Handler::Parse(|args| Ok(C::from(Ping::parse(args)?))),
        },
        Spec {
            name: "echo",
            arity: 2,
            flags: Flags::READ,
            summary: "the message",
            handler: Handler::Parse(|args| Ok(C::from(Echo::parse(args)?))),
        },
        Spec {
            name: "dbsize",
            arity: 1,
            flags: Flags::READ,
            summary: "how many keys the selected database holds",
            handler: Handler::Parse(|_| Ok(C::from(Dbsize))),
        },
        Spec {
            name: "flushall",
            arity: -1,
            flags: Flags::WRITE,
            summary: "delete every key; ASYNC|SYNC",
            handler: Handler::Parse(|args| Ok(C::from(Flushall::parse(args)?))),
        },
        Spec {
            name: "flushdb",
            arity: -1,
            flags: Flags::WRITE,
            summary: "delete every key of the selected database; ASYNC|SYNC",
            handler: Handler::Keyspace(flushdb),
        },
        Spec {
            name: "swapdb",
            arity: 3,
            flags: Flags::WRITE,
            summary: "swap two databases' contents",
            handler: Handler::Keyspace(swapdb),
        },
        Spec {
            name: "wait",
            arity: 3,
            flags: Flags::NOSCRIPT,
            summary: "block until replicas acknowledged this connection's writes",
            handler: Handler::Parse(|args| Ok(C::from(Wait::parse(args)?))),
        },
        Spec {
            name: "time",
            arity: 1,
            flags: Flags::READ,
            summary: "the node's clock: [seconds, microseconds]",
            handler: Handler::Keyspace(time),
        },
        Spec {
            name: "config",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "GET pattern ..., SET name value ..., REWRITE, RESETSTAT (src/redis/config.rs)",
            handler: Handler::Parse(|args| Ok(C::from(Config::parse(args)?))),
        },
        Spec {
            name: "command",
            arity: -1,
            flags: Flags::READ,
            summary: "COUNT and LIST of these tables; INFO and DOCS as Redis 7.0 describes each (src/redis/cmd/command.rs)",
            handler: Handler::Parse(|args| Ok(C::from(Describe::parse(args)?))),
        },
        Spec {
            name: "save",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "take an RDB snapshot now (kept by a node with an RDB file; not inside MULTI)",
            handler: Handler::Parse(|_| Ok(C::from(Snapshot::Save))),
        },
        Spec {
            name: "bgsave",
            arity: -1,
            flags: Flags::NOSCRIPT,
            summary: "take an RDB snapshot (the dataset now; in progress for one serverCron period); SCHEDULE",
            handler: Handler::Parse(|args| Ok(C::from(Snapshot::parse_bgsave(args)?))),
        },
        Spec {
            name: "lastsave",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "the Unix time of the last snapshot, or of the start (not from scripts here)",
            handler: Handler::Parse(|_| Ok(C::from(Snapshot::LastSave))),
        },
    ]
}

/// `SAVE`, `BGSAVE [SCHEDULE]` and `LASTSAVE`: a snapshot of the dataset, written as the
/// node's RDB file when it has one ([`Node::save_snapshot`]), and when the last was taken.
/// While a background save is in progress, SAVE and BGSAVE (SCHEDULE too) are refused, as
/// Redis 7.0 refuses them; inside EXEC (where Redis may not fork) BGSAVE is scheduled,
/// which here takes the snapshot at once, with no save in progress after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshot {
    Save,
    Background,
    LastSave,
}

impl Snapshot {
    fn parse_bgsave(args: &mut Args) -> Result<Self, ReplyError> {
        match args.rest().as_slice() {
            [] => Ok(Snapshot::Background),
            [option] if option.eq_ignore_ascii_case(b"SCHEDULE") => Ok(Snapshot::Background),
            _ => Err(ReplyError::syntax()),
        }
    }

    pub(crate) fn apply(self, node: &mut Node, now_ms: u64) -> Frame {
        match self {
            Snapshot::Save | Snapshot::Background if node.persistence.saving_in_background(now_ms) => {
                Frame::Error("ERR Background save already in progress".into())
            }
            Snapshot::Background if node.in_transaction => {
                node.save_snapshot(now_ms, false);
                Frame::SimpleString(b"Background saving scheduled".to_vec())
            }
            Snapshot::Save => {
                node.save_snapshot(now_ms, false);
                ok()
            }
            Snapshot::Background => {
                node.save_snapshot(now_ms, true);
                Frame::SimpleString(b"Background saving started".to_vec())
            }
            Snapshot::LastSave => Frame::Integer(node.persistence.last_save_s() as i64),
        }
    }
}

/// `PING [message]`: PONG, or the message back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    pub message: Option<Vec<u8>>,
}

impl Ping {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let mut words = args.rest();
        if words.len() > 1 {
            return Err(ReplyError::wrong_arity("ping"));
        }
        Ok(Ping { message: words.pop() })
    }

    pub(crate) fn apply(self) -> Frame {
        match self.message {
            None => Frame::SimpleString(b"PONG".to_vec()),
            Some(message) => Frame::BulkString(message),
        }
    }
}

/// `ECHO message`: the message back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo {
    pub message: Vec<u8>,
}

impl Echo {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Echo {
            message: args.next_bytes()?,
        })
    }

    pub(crate) fn apply(self) -> Frame {
        Frame::BulkString(self.message)
    }
}

/// `DBSIZE`: how many keys are stored (expired ones not yet deleted included, as in Redis).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dbsize;

impl Dbsize {
    pub(crate) fn apply(self, db: &Db) -> Frame {
        Frame::Integer(db.len() as i64)
    }
}

/// The `[ASYNC|SYNC]` of FLUSHALL and FLUSHDB (both modes flush at once here).
fn flush_mode(args: &mut Args) -> Result<(), ReplyError> {
    match args.rest().as_slice() {
        [] => Ok(()),
        [mode] if mode.eq_ignore_ascii_case(b"SYNC") || mode.eq_ignore_ascii_case(b"ASYNC") => Ok(()),
        _ => Err(ReplyError::syntax()),
    }
}

/// `FLUSHALL [ASYNC|SYNC]`: deletes every key of every database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flushall;

impl Flushall {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        flush_mode(args).map(|()| Flushall)
    }

    pub(crate) fn apply(self, db: &mut Db) -> Frame {
        db.clear_all();
        ok()
    }
}

/// `FLUSHDB [ASYNC|SYNC]`: deletes every key of the selected database.
fn flushdb(args: &mut Args, db: &mut Db, _now_ms: u64) -> Result<Reply, ReplyError> {
    flush_mode(args)?;
    db.clear();
    Ok(ok().into())
}

/// `SWAPDB index1 index2`: the two databases trade contents (connections keep their
/// selection, so they see the other's keys).
fn swapdb(args: &mut Args, db: &mut Db, _now_ms: u64) -> Result<Reply, ReplyError> {
    let index = |word: Vec<u8>, which: &str| {
        parse_int(&word)
            .ok()
            .filter(|n| i32::try_from(*n).is_ok())
            .ok_or_else(|| ReplyError(format!("ERR invalid {which} DB index")))
    };
    let first = index(args.next_bytes()?, "first")?;
    let second = index(args.next_bytes()?, "second")?;
    let in_range = |n: i64| usize::try_from(n).ok().filter(|n| *n < DATABASES);
    let (Some(first), Some(second)) = (in_range(first), in_range(second)) else {
        return Err(ReplyError("ERR DB index is out of range".into()));
    };
    db.swap(first, second);
    Ok(ok().into())
}

/// `WAIT numreplicas timeout`: blocks until that many replicas acknowledged this
/// connection's writes, or the timeout (ms, 0 = forever) passes; replies with the count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub replicas: i64,
    pub timeout_ms: i64,
}

impl Wait {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let replicas = args.next_int()?;
        let timeout_ms = args.next_int()?;
        if timeout_ms < 0 {
            return Err(ReplyError("ERR timeout is negative".into()));
        }
        Ok(Wait { replicas, timeout_ms })
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([
            b"WAIT".to_vec(),
            self.replicas.to_string().into_bytes(),
            self.timeout_ms.to_string().into_bytes(),
        ])
    }
}

/// `TIME`: the node's wall clock as `[unix seconds, microseconds]` (scripts may call it).
fn time(_args: &mut Args, _db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    const MS_PER_S: u64 = 1000;
    const US_PER_MS: u64 = 1000;
    let bulk = |n: u64| Frame::BulkString(n.to_string().into_bytes());
    Ok(Frame::Array(vec![bulk(now_ms / MS_PER_S), bulk(now_ms % MS_PER_S * US_PER_MS)]).into())
}

/// `CONFIG GET pattern ... | SET name value ... | REWRITE | RESETSTAT`, on the node's
/// parameters (`config.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Config {
    Get(Vec<Vec<u8>>),
    Set(Vec<(Vec<u8>, Vec<u8>)>),
    Rewrite,
    Resetstat,
}

impl Config {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let subcommand = args.next_bytes()?;
        let rest = args.rest();
        let arity = |name: &str| ReplyError::wrong_arity(&format!("config|{name}"));
        match subcommand.to_ascii_uppercase().as_slice() {
            b"GET" if rest.is_empty() => Err(arity("get")),
            b"GET" => Ok(Config::Get(rest)),
            b"SET" if rest.len() < 2 => Err(arity("set")),
            b"SET" if rest.len() % 2 == 1 => Err(ReplyError::syntax()),
            b"SET" => Ok(Config::Set(
                rest.chunks(2)
                    .map(|pair| (pair[0].clone(), pair[1].clone()))
                    .collect(),
            )),
            b"REWRITE" if rest.is_empty() => Ok(Config::Rewrite),
            b"REWRITE" => Err(arity("rewrite")),
            b"RESETSTAT" if rest.is_empty() => Ok(Config::Resetstat),
            b"RESETSTAT" => Err(arity("resetstat")),
            _ => Err(ReplyError(format!(
                "ERR unknown subcommand '{}'. Try CONFIG HELP.",
                String::from_utf8_lossy(&subcommand)
            ))),
        }
    }

    /// Reads or changes the node's parameters; a change of `min-replicas-*` changes which
    /// writes the node takes (from its next count of good replicas).
    pub(crate) fn apply(self, node: &mut Node, now_ms: u64) -> Reply {
        match self {
            Config::Get(patterns) => {
                node.remember_modelled_config();
                Reply::Map(
                    node.config
                        .get(&patterns)
                        .into_iter()
                        .map(|(name, value)| (Frame::BulkString(name), Frame::BulkString(value)))
                        .collect(),
                )
            }
            Config::Set(pairs) => match node.config.set(&pairs) {
                Ok(_) => {
                    node.apply_config(now_ms);
                    ok().into()
                }
                Err(error) => Frame::from(error).into(),
            },
            // This node, as `redis-server` started with arguments only, has no config file.
            Config::Rewrite => Frame::from(ReplyError(
                "ERR The server is running without a config file".into(),
            ))
            .into(),
            Config::Resetstat => {
                node.stats.reset();
                ok().into()
            }
        }
    }
}
