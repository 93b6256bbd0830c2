//! What a family's command table is made of: a command's [`Spec`] (name, arity, flags,
//! summary, [`Handler`]) and the [`Args`] its handler reads.
//!
//! The tables are generic over the command type `C` they parse into, so that a family
//! names only its own commands; `cmd/mod.rs` instantiates them with its `Command`.

use super::error::ReplyError;
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::Db;
use crate::redis::request::string_to_i64;

/// How a keyspace command runs: on the selected database, at the node's wall-clock time,
/// from its arguments (the words after its name).
pub(crate) type KeyspaceHandler = fn(&mut Args, &mut Db, u64) -> Result<Reply, ReplyError>;

/// A command as the dispatch table knows it: Redis 7.0's name, arity and flags, what it
/// does in a few words (docs/redis-coverage.md), and how its arguments become a
/// `Command`. Each family file owns a table of them ([`FAMILIES`](super::lookup::FAMILIES)).
pub(crate) struct Spec<C> {
    pub name: &'static str,
    /// `n`: exactly `n` words, the name included; `-n`: at least `n`.
    pub arity: i32,
    pub flags: Flags,
    /// Read only by `coverage.rs`, which writes docs/redis-coverage.md from the tables.
    #[cfg_attr(not(test), allow(dead_code))]
    pub summary: &'static str,
    pub handler: Handler<C>,
}

/// How a command's arguments, once its name and arity were checked, become what runs.
pub(crate) enum Handler<C> {
    /// Parsed into its own `Command` type (the types lock clients build too).
    Parse(fn(&mut Args) -> Result<C, ReplyError>),
    /// Run on the keyspace straight from its arguments.
    Keyspace(KeyspaceHandler),
}

/// The flags of Redis's command table that change how the node treats a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flags {
    /// It may change the keyspace: a replica refuses it (READONLY).
    pub write: bool,
    /// Scripts may not call it.
    pub noscript: bool,
    /// It may grow the dataset: refused while the node is over `maxmemory` (Redis's
    /// `CMD_DENYOOM`; see `redis/memory.rs`).
    pub denyoom: bool,
}

impl Flags {
    /// Reads, callable from scripts.
    pub const READ: Flags = Flags {
        write: false,
        noscript: false,
        denyoom: false,
    };
    /// Writes, callable from scripts.
    pub const WRITE: Flags = Flags {
        write: true,
        noscript: false,
        denyoom: false,
    };
    /// Writes that may grow the dataset (`denyoom` in Redis's command table), callable
    /// from scripts.
    pub const WRITE_DENYOOM: Flags = Flags {
        write: true,
        noscript: false,
        denyoom: true,
    };
    /// Not callable from scripts, and no write of its own.
    pub const NOSCRIPT: Flags = Flags {
        write: false,
        noscript: true,
        denyoom: false,
    };
    /// Writes, not callable from scripts (the blocking pops).
    pub const WRITE_NOSCRIPT: Flags = Flags {
        write: true,
        noscript: true,
        denyoom: false,
    };

    /// Redis's names for these flags, as COMMAND INFO lists them (docs/redis-coverage.md).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn names(self) -> Vec<&'static str> {
        let mut names = vec![if self.write { "write" } else { "readonly" }];
        if self.denyoom {
            names.push("denyoom");
        }
        if self.noscript {
            names.push("noscript");
        }
        names
    }
}

/// The arguments of a request after the command name, borrowed from the request: a
/// command copies out only the words it keeps (a key, a value), not its options.
pub(crate) struct Args<'a> {
    words: std::slice::Iter<'a, &'a [u8]>,
}

impl<'a> Args<'a> {
    /// The arguments `words` (the command's name already taken off).
    pub(crate) fn new(words: &'a [&'a [u8]]) -> Self {
        Args { words: words.iter() }
    }

    /// The next argument, copied; arity was checked before parsing, so a missing one is a
    /// syntax error.
    pub(crate) fn next_bytes(&mut self) -> Result<Vec<u8>, ReplyError> {
        self.next_word().map(<[u8]>::to_vec)
    }

    /// The next argument, borrowed (an option, a number), as [`Args::next_bytes`] finds it.
    pub(crate) fn next_word(&mut self) -> Result<&'a [u8], ReplyError> {
        self.words.next().copied().ok_or_else(ReplyError::syntax)
    }

    pub(crate) fn next_int(&mut self) -> Result<i64, ReplyError> {
        parse_int(self.next_word()?)
    }

    /// How many arguments are left.
    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// The arguments left, copied.
    pub(crate) fn rest(&mut self) -> Vec<Vec<u8>> {
        self.words.by_ref().map(|word| word.to_vec()).collect()
    }
}

/// The words `words` as slices, what [`Args`] and the lookup read (a request kept as owned
/// words: EXEC's queue, a script's call).
pub(crate) fn borrowed(words: &[Vec<u8>]) -> Vec<&[u8]> {
    words.iter().map(Vec::as_slice).collect()
}

/// Parses a decimal integer as Redis's `string2ll` does: no `+`, no spaces, no leading zeros.
pub(crate) fn parse_int(bytes: &[u8]) -> Result<i64, ReplyError> {
    string_to_i64(bytes).ok_or_else(ReplyError::not_an_integer)
}

/// The `+OK` reply.
pub(crate) fn ok() -> Frame {
    Frame::SimpleString(b"OK".to_vec())
}

/// A keyspace command no client builds: its table's handler and its arguments, checked as
/// it runs (as Redis checks them).
#[derive(Clone)]
pub struct KeyspaceCall {
    name: &'static str,
    handler: KeyspaceHandler,
    args: Vec<Vec<u8>>,
}

impl KeyspaceCall {
    pub(super) fn new(name: &'static str, handler: KeyspaceHandler, args: Vec<Vec<u8>>) -> Self {
        KeyspaceCall { name, handler, args }
    }

    pub(super) fn apply(self, db: &mut Db, now_ms: u64) -> Reply {
        let words = borrowed(&self.args);
        let mut args = Args::new(&words);
        (self.handler)(&mut args, db, now_ms).unwrap_or_else(|error| Frame::from(error).into())
    }
}

impl PartialEq for KeyspaceCall {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.args == other.args
    }
}

impl Eq for KeyspaceCall {}

impl std::fmt::Debug for KeyspaceCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyspaceCall")
            .field("name", &self.name)
            .field("args", &self.args)
            .finish()
    }
}
