//! Error replies worded as Redis 7.0 words them, and how a node that takes no writes
//! refuses one.
//!
//! Apart from the command tables so that the keyspace (`db.rs`) and the script engine
//! (`lua.rs`) can speak Redis's errors without knowing the commands.

use crate::redis::Frame;

/// An error reply (`-ERR …`), as Redis words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyError(pub String);

impl ReplyError {
    pub(crate) fn syntax() -> Self {
        ReplyError("ERR syntax error".into())
    }
    pub(crate) fn not_an_integer() -> Self {
        ReplyError("ERR value is not an integer or out of range".into())
    }
    pub(crate) fn invalid_expire(command: &str) -> Self {
        ReplyError(format!("ERR invalid expire time in '{command}' command"))
    }
    pub(crate) fn wrong_arity(name: &str) -> Self {
        ReplyError(format!("ERR wrong number of arguments for '{name}' command"))
    }
    /// A script's call with the wrong word count (Redis words it apart from a client's).
    pub(crate) fn wrong_arity_from_script() -> Self {
        ReplyError("ERR Wrong number of args calling Redis command from script".into())
    }
    pub(crate) fn not_from_script() -> Self {
        ReplyError("ERR This Redis command is not allowed from script".into())
    }
    /// A command that may grow the dataset, refused while the node is over `maxmemory`
    /// (server.c `shared.oomerr`; see `redis/memory.rs`).
    pub(crate) fn out_of_memory() -> Self {
        ReplyError("OOM command not allowed when used memory > 'maxmemory'.".into())
    }

    /// Whether Redis finds this error while looking the command up, before anything else
    /// (subscribed mode, queuing in MULTI): an unknown subcommand, or a subcommand's wrong
    /// word count (`'config|get'`). A command's own count check past its arity (PING a b,
    /// LPOP k 1 2, an odd HSET or MSET) runs only when it runs, as in Redis.
    pub(crate) fn is_found_at_lookup(&self) -> bool {
        let subcommand_arity = self
            .0
            .strip_prefix("ERR wrong number of arguments for '")
            .and_then(|rest| rest.split('\'').next())
            .is_some_and(|name| name.contains('|'));
        self.is_unknown_subcommand() || subcommand_arity
    }

    /// An unknown subcommand: Redis finds no command to credit the refusal to.
    pub(crate) fn is_unknown_subcommand(&self) -> bool {
        self.0.starts_with("ERR unknown subcommand")
    }
}

impl From<ReplyError> for Frame {
    fn from(e: ReplyError) -> Frame {
        Frame::Error(e.0)
    }
}

/// Whether a node takes writes now and, if not, how it refuses them (before a command
/// runs, and at each write a script makes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Writes {
    #[default]
    Taken,
    /// A replica: `READONLY You can't write against a read only replica.`
    ReadOnly,
    /// A master with fewer good replicas than `min-replicas-to-write`:
    /// `NOREPLICAS Not enough good replicas to write.`
    NoReplicas,
    /// A read-only script (EVAL_RO, EVALSHA_RO), on any node: `ERR Write commands are not
    /// allowed from read-only scripts.` (Redis checks this before the node's own refusals.)
    ReadOnlyScript,
}

impl Writes {
    /// How a node that does not take writes refuses one; `None` when it takes them.
    pub(crate) fn refusal(self) -> Option<ReplyError> {
        let message = match self {
            Writes::Taken => return None,
            Writes::ReadOnly => "READONLY You can't write against a read only replica.",
            Writes::NoReplicas => "NOREPLICAS Not enough good replicas to write.",
            Writes::ReadOnlyScript => "ERR Write commands are not allowed from read-only scripts.",
        };
        Some(ReplyError(message.into()))
    }
}

/// What a script's `redis.call` may run: writes as `writes` says and, while
/// `out_of_memory`, no command that may grow the dataset (script.c `scriptVerifyOOM`: only
/// in a script without a shebang that found the node out of memory as it started, and only
/// until its first write, "otherwise we can't stop in the middle").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallRules {
    pub writes: Writes,
    pub out_of_memory: bool,
}

impl CallRules {
    /// The rules of a script that may write as `writes` says and never hears of memory.
    pub const fn writes(writes: Writes) -> Self {
        CallRules {
            writes,
            out_of_memory: false,
        }
    }
}
