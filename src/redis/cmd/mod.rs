//! Redis commands, one file per family, each owning a table of its commands.
//!
//! A family's table ([`Spec`]s, gathered in [`FAMILIES`]) gives each command's name, arity,
//! flags and parser; dispatch looks names up there, and docs/redis-coverage.md is generated
//! from the tables (see `coverage.rs`). The node parses a request into a [`Command`] and
//! applies it to its [`Db`]; the lock client builds the same types and turns them into
//! frames, so a command's wire format lives in one place. Errors are worded exactly as
//! Redis 7.0 words them.

pub(crate) mod acl;
pub(crate) mod acl_users;
pub mod clients;
pub mod command;
#[cfg(test)]
mod coverage;
pub mod descriptions;
pub mod error;
mod geo;
mod hashes;
pub(crate) mod keys;
pub(crate) mod lists;
mod lookup;
mod pubsub;
mod refused;
mod replication;
mod script_call;
mod scripting;
mod server;
pub(crate) mod session;
mod session_state;
mod set;
mod sets;
mod sort;
mod spec;
mod streams;
mod strings;
pub(crate) mod transactions;
mod zsets;

pub use acl::Acl;
pub use clients::{Client, Clients, Connected, Link};
pub use command::Describe;
pub use error::{CallRules, ReplyError, Writes};
pub use keys::{
    Del, Exists, Expire, ExpireFlags, ExpireKind, ExpireRequest, Persist, Pexpire, Pttl, Ttl, Type,
};
pub use lists::{Blocked, BlockingPop, End};
pub use pubsub::{Subscribe, Unsubscribe};
pub use refused::{ParseError, Refused, Stage};
pub use replication::{Info, Psync, Replconf, Replicaof, Role};
pub(crate) use script_call::run_for_script;
pub use scripting::{Eval, EvalRo, Evalsha, EvalshaRo, Function, Script};
pub use server::{Config, Dbsize, Echo, Flushall, Ping, Snapshot, Wait};
pub use session::{Auth, Hello, Quit, Reset, Select};
pub use session_state::{Session, Transaction};
pub use set::{Condition, Set, SetExpiry, SetGet, Setnx};
pub use sort::Sort;
pub use streams::Xread;
pub use strings::{Get, Getrange, Incr, Incrby};
pub use transactions::{Discard, Exec, Multi, Unwatch, Watch, Watches};

pub(crate) use lookup::FAMILIES;
pub use lookup::{Lookup, full_name};
use lookup::{Rejection, unknown_command};
pub use spec::KeyspaceCall;
pub(crate) use spec::{Args, Flags, Handler, Spec, borrowed, ok};

use super::Frame;
use super::connection::{Protocol, Reply};
use super::db::Db;
use super::node::Node;

/// Declares [`Command`] and wraps each family's command type in its variant: the families'
/// tables parse into any `C: From<…>` (see `spec.rs`), and `Command` is the `C` they parse
/// into. The variants after `;` carry no family type of their own.
macro_rules! commands {
    ($($variant:ident($type:ty)),*; $($rest:tt)*) => {
        /// Every command the node understands.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Command {
            $($variant($type),)*
            $($rest)*
        }

        $(impl From<$type> for Command {
            fn from(command: $type) -> Self {
                Command::$variant(command)
            }
        })*
    };
}

commands!(
    Ping(Ping),
    Echo(Echo),
    Auth(Auth),
    Hello(Hello),
    Select(Select),
    Client(Client),
    Quit(Quit),
    Reset(Reset),
    Subscribe(Subscribe),
    Unsubscribe(Unsubscribe),
    Get(Get),
    Set(Set),
    SetGet(SetGet),
    Setnx(Setnx),
    Incr(Incr),
    Incrby(Incrby),
    Getrange(Getrange),
    Del(Del),
    Exists(Exists),
    Type(Type),
    Pttl(Pttl),
    Ttl(Ttl),
    Persist(Persist),
    Expire(ExpireRequest),
    Dbsize(Dbsize),
    Flushall(Flushall),
    Eval(Eval),
    Evalsha(Evalsha),
    EvalRo(EvalRo),
    EvalshaRo(EvalshaRo),
    Script(Script),
    Function(Function),
    Wait(Wait),
    Config(Config),
    Snapshot(Snapshot),
    Describe(Describe),
    Replicaof(Replicaof),
    Role(Role),
    Info(Info),
    Psync(Psync),
    Replconf(Replconf),
    BlockingPop(BlockingPop),
    Sort(Sort),
    Acl(Acl),
    Xread(Xread);

    // Without a family type of their own:
    Multi,
    Exec,
    Discard,
    Watch(Vec<Vec<u8>>),
    Unwatch,
    /// A request a connection in MULTI queued: its words, parsed when EXEC runs it.
    Queued(Vec<Vec<u8>>),
    Keyspace(KeyspaceCall),
);

impl From<Multi> for Command {
    fn from(Multi: Multi) -> Self {
        Command::Multi
    }
}

impl From<Exec> for Command {
    fn from(Exec: Exec) -> Self {
        Command::Exec
    }
}

impl From<Discard> for Command {
    fn from(Discard: Discard) -> Self {
        Command::Discard
    }
}

impl From<Watch> for Command {
    fn from(Watch(keys): Watch) -> Self {
        Command::Watch(keys)
    }
}

impl From<Unwatch> for Command {
    fn from(Unwatch: Unwatch) -> Self {
        Command::Unwatch
    }
}

/// The words of a request, kept to be propagated once it ran (`propagation.rs`): a command
/// that may write (XGROUP's subcommands too), while the keyspace records. Never a script or
/// EXEC, whose calls are propagated each by itself.
pub fn kept_for_propagation<W: AsRef<[u8]>>(db: &Db, lookup: Lookup, words: &[W]) -> Option<Vec<Vec<u8>>> {
    let flags = lookup.flags()?;
    let writes = flags.write || lookup.name(words).starts_with("xgroup|");
    (db.log.recording && writes).then(|| words.iter().map(|word| word.as_ref().to_vec()).collect())
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
        Ok(Command::from_words(words, Writes::Taken)?)
    }

    /// Parses a client's request words, with the errors Redis gives clients; a node that
    /// does not take `writes` refuses them before looking at their arguments.
    pub fn from_words(words: Vec<Vec<u8>>, writes: Writes) -> Result<Command, ReplyError> {
        let words = borrowed(&words);
        let lookup = Lookup::of(&words);
        Command::for_connection(&words, lookup, writes, Memory::Enough, false, false, false)
            .map_err(|refused| refused.error)
    }

    /// Parses a request of the connection of `session`, as Redis checks it there: a RESP2
    /// connection with subscriptions (`subscribed`) may send only the subscription commands,
    /// PING, QUIT and RESET; a connection in MULTI has its requests queued once their name
    /// and arity passed, and a refusal then fails its transaction. An `unauthenticated`
    /// connection (the node has a password it was not given) may send only AUTH, HELLO,
    /// QUIT and RESET. A refused EXEC discards the transaction and the connection's
    /// `watches`. `lookup` is the lookup of `words`. While the node is `out_of_memory`, a
    /// command that may grow the dataset is refused, and so is every request of a connection
    /// in MULTI but EXEC, DISCARD, QUIT and RESET (server.c `processCommand`); EXEC too when
    /// its queue holds one that may grow the dataset.
    #[allow(clippy::too_many_arguments)]
    pub fn for_session(
        words: &[&[u8]],
        lookup: Lookup,
        writes: Writes,
        out_of_memory: bool,
        subscribed: bool,
        unauthenticated: bool,
        session: &mut Session,
        watches: &mut Watches,
    ) -> Result<Command, Refused> {
        let exec = words.first().is_some_and(|w| w.eq_ignore_ascii_case(b"exec"));
        let queuing = session.transaction.is_some();
        let memory = match &session.transaction {
            _ if !out_of_memory => Memory::Enough,
            Some(transaction) if exec => Memory::Over {
                queue_may_grow: transaction
                    .queued
                    .iter()
                    .any(|words| Lookup::of(words).flags().is_some_and(|flags| flags.denyoom)),
            },
            _ => Memory::Over {
                queue_may_grow: false,
            },
        };
        Command::for_connection(
            words,
            lookup,
            writes,
            memory,
            subscribed,
            queuing,
            unauthenticated,
        )
        .map_err(|refused| {
            if exec {
                // `execCommandAbort`: the refused EXEC discards the transaction, as DISCARD.
                if session.transaction.take().is_some() {
                    watches.unwatch(session.id);
                }
                return Refused {
                    error: transactions::exec_abort(refused.error),
                    ..refused
                };
            }
            if let Some(transaction) = &mut session.transaction {
                transaction.failed = true;
            }
            refused
        })
    }

    /// The checks of [`Command::for_session`], on a connection `subscribed` or not,
    /// `queuing` (in MULTI) or not, and `unauthenticated` or not, on a node with `memory`.
    fn for_connection(
        words: &[&[u8]],
        lookup: Lookup,
        writes: Writes,
        memory: Memory,
        subscribed: bool,
        queuing: bool,
        unauthenticated: bool,
    ) -> Result<Command, Refused> {
        let spec = lookup.checked(words).map_err(|rejection| match rejection {
            Rejection::Unknown => Refused::rejected(unknown_command(words), false),
            Rejection::WrongArity(name) => Refused::rejected(ReplyError::wrong_arity(name), true),
        })?;
        // A refusal before the command runs; an unknown subcommand is found first.
        let rejected = |refusal: ReplyError| match subcommand_refusal(spec, words) {
            Some(lookup_error) => Refused::by_arguments(lookup_error),
            None => Refused::rejected(refusal, true),
        };
        if unauthenticated && let Some(refusal) = session::refusal_before_auth(spec.name) {
            // Redis looks the subcommand up before it asks for the password.
            return Err(rejected(refusal));
        }
        if queuing && transactions::is_refused_inside_multi(spec.name) {
            return Err(Refused::rejected(
                ReplyError("ERR Command not allowed inside a transaction".into()),
                true,
            ));
        }
        // Redis checks memory after the commands MULTI refuses, before the refusals of writes.
        if memory.refuses(spec, queuing) {
            return Err(rejected(ReplyError::out_of_memory()));
        }
        if spec.flags.write
            && let Some(refusal) = writes.refusal()
        {
            return Err(Refused::rejected(refusal, true));
        }
        if subscribed {
            let parsed = Command::parse(spec, words);
            if let Some(refusal) = pubsub::refusal_while_subscribed(spec.name, words, parsed.as_ref().err()) {
                return Err(Refused::rejected(refusal, true));
            }
        }
        if queuing && transactions::is_queued(spec.name) {
            // A subcommand is looked up before queuing, as Redis looks it up: an unknown one
            // (or its wrong word count) is refused at once and fails the transaction. (PUBSUB's
            // subcommands are checked only as it runs here.)
            if let Some(refusal) = subcommand_refusal(spec, words) {
                return Err(Refused::by_arguments(refusal));
            }
            return Ok(Command::Queued(words.iter().map(|word| word.to_vec()).collect()));
        }
        Command::parse(spec, words).map_err(Refused::by_arguments)
    }

    /// Parses the words a script passes to `redis.call`, with the errors Redis gives scripts
    /// (script.c `scriptCall`: the refusals of writes, then of memory), and the command's
    /// flags.
    fn from_script_words(
        words: &[&[u8]],
        lookup: Lookup,
        rules: CallRules,
    ) -> Result<(Command, Flags), Refused> {
        let spec = lookup.checked(words).map_err(|rejection| match rejection {
            Rejection::Unknown => Refused::rejected(
                ReplyError("ERR Unknown Redis command called from script".into()),
                false,
            ),
            Rejection::WrongArity(_) => Refused::rejected(ReplyError::wrong_arity_from_script(), true),
        })?;
        if spec.flags.noscript {
            return Err(Refused::rejected(ReplyError::not_from_script(), true));
        }
        if spec.flags.write
            && let Some(refusal) = rules.writes.refusal()
        {
            return Err(Refused::rejected(refusal, true));
        }
        if rules.out_of_memory && spec.flags.denyoom {
            return Err(Refused::rejected(ReplyError::out_of_memory(), true));
        }
        let flags = spec.flags;
        Command::parse(spec, words)
            .map(|command| (command, flags))
            .map_err(Refused::by_arguments)
    }

    /// Parses the arguments of a command whose name and arity were checked.
    fn parse(spec: &Spec<Command>, words: &[&[u8]]) -> Result<Command, ReplyError> {
        // The words after the command's name.
        let mut args = Args::new(words.get(1..).unwrap_or_default());
        match spec.handler {
            Handler::Parse(parse) => parse(&mut args),
            Handler::Keyspace(handler) => Ok(Command::Keyspace(KeyspaceCall::new(
                spec.name,
                handler,
                args.rest(),
            ))),
        }
    }

    /// Executes the command for a connection's `session` on the node, at wall-clock time
    /// `now_ms`, in the session's database (SELECT changes it).
    ///
    /// WAIT and the blocking pops block, so the server answers them; the server also
    /// closes the connection after QUIT's reply (see `server.rs`).
    pub fn apply(self, node: &mut Node, session: &mut Session, now_ms: u64) -> Reply {
        node.db.select(session.db);
        // Whose permissions a script's `redis.acl_check_cmd` checks.
        node.db.users.script_user.clone_from(&session.user);
        let reply = match self {
            Command::Auth(cmd) => cmd
                .apply(session, node.config.value("requirepass"), &node.db.users)
                .into(),
            Command::Hello(cmd) => cmd.apply(
                session,
                node.replication.is_replica(),
                node.config.value("requirepass"),
                &node.db.users,
            ),
            Command::Acl(cmd) => cmd.apply(&mut node.db.users, session.user.as_deref()).into(),
            Command::Client(cmd) => cmd.apply(
                session,
                &mut node.clients,
                &mut node.db.pubsub,
                node.watches.dirty(),
                now_ms,
            ),
            Command::Quit(Quit) => ok().into(),
            Command::Reset(Reset) => {
                node.db.pubsub.drop_subscriptions(session.id);
                node.watches.unwatch(session.id);
                node.db.select(0);
                Reset::apply(session, node.config.value("requirepass"))
            }
            Command::Multi => transactions::multi(session),
            Command::Queued(words) => {
                if let Some(transaction) = &mut session.transaction {
                    transaction.queued.push(words);
                }
                Frame::SimpleString(b"QUEUED".to_vec()).into()
            }
            Command::Discard => transactions::discard(session, &mut node.watches),
            Command::Watch(keys) => transactions::watch(keys, session, &mut node.watches, &node.db, now_ms),
            Command::Unwatch => {
                node.watches.unwatch(session.id);
                ok().into()
            }
            Command::Exec => exec(node, session, now_ms),
            Command::Subscribe(cmd) => cmd.apply(&mut node.db.pubsub, session.id),
            Command::Unsubscribe(cmd) => cmd.apply(&mut node.db.pubsub, session.id),
            Command::Ping(cmd)
                if session.protocol == Protocol::Resp2 && node.db.pubsub.subscriptions(session.id) > 0 =>
            {
                pubsub::subscribed_pong(cmd.message)
            }
            // A script's errors count as the script runs (see `stats.rs`).
            Command::Eval(cmd) => counted(cmd.apply(node, now_ms, run_for_script)),
            Command::Evalsha(cmd) => counted(cmd.apply(node, now_ms, run_for_script)),
            Command::EvalRo(cmd) => counted(cmd.apply(node, now_ms, run_for_script)),
            Command::EvalshaRo(cmd) => counted(cmd.apply(node, now_ms, run_for_script)),
            Command::Script(cmd) => cmd.apply(&mut node.scripts).into(),
            Command::Function(cmd) => cmd.apply(),
            Command::Replicaof(cmd) => cmd.apply(node).into(),
            Command::Role(Role) => node.replication.role_frame().into(),
            Command::Info(cmd) => cmd.apply(node, now_ms),
            Command::Config(cmd) => cmd.apply(node, now_ms),
            Command::Snapshot(cmd) => cmd.apply(node, now_ms).into(),
            command => command.apply_to_db(&mut node.db, now_ms),
        };
        session.db = node.db.selected();
        reply
    }

    /// Executes a keyspace command (what scripts may call) at wall-clock time `now_ms`, in
    /// the keyspace's selected database. A blocking pop does not block here.
    pub(crate) fn apply_to_db(self, db: &mut Db, now_ms: u64) -> Reply {
        match self {
            Command::Ping(cmd) => cmd.apply().into(),
            Command::Echo(cmd) => cmd.apply().into(),
            Command::Select(cmd) => cmd.apply(db).into(),
            Command::Get(cmd) => cmd.apply(db, now_ms).into(),
            Command::Set(cmd) => cmd.apply(db, now_ms).into(),
            Command::SetGet(cmd) => cmd.apply(db, now_ms).into(),
            Command::Setnx(cmd) => cmd.apply(db, now_ms).into(),
            Command::Incr(cmd) => cmd.apply(db, now_ms).into(),
            Command::Incrby(cmd) => cmd.apply(db, now_ms).into(),
            Command::Getrange(cmd) => cmd.apply(db, now_ms).into(),
            Command::Del(cmd) => cmd.apply(db, now_ms).into(),
            Command::Exists(cmd) => cmd.apply(db, now_ms).into(),
            Command::Type(cmd) => cmd.apply(db, now_ms).into(),
            Command::Pttl(cmd) => cmd.apply(db, now_ms).into(),
            Command::Ttl(cmd) => cmd.apply(db, now_ms).into(),
            Command::Persist(cmd) => cmd.apply(db, now_ms).into(),
            Command::Expire(cmd) => cmd.apply(db, now_ms).into(),
            Command::Dbsize(cmd) => cmd.apply(db).into(),
            Command::Describe(cmd) => cmd.apply(),
            Command::Flushall(cmd) => cmd.apply(db).into(),
            Command::BlockingPop(cmd) => cmd.apply(db, now_ms),
            Command::Keyspace(call) => call.apply(db, now_ms),
            Command::Sort(cmd) => cmd.apply(db, now_ms),
            Command::Xread(cmd) => cmd.apply(db, now_ms),
            Command::Auth(_)
            | Command::Hello(_)
            | Command::Client(_)
            | Command::Quit(_)
            | Command::Reset(_)
            | Command::Subscribe(_)
            | Command::Unsubscribe(_)
            | Command::Multi
            | Command::Exec
            | Command::Discard
            | Command::Watch(_)
            | Command::Unwatch
            | Command::Queued(_)
            | Command::Eval(_)
            | Command::Evalsha(_)
            | Command::EvalRo(_)
            | Command::EvalshaRo(_)
            | Command::Script(_)
            | Command::Function(_)
            | Command::Wait(_)
            | Command::Replicaof(_)
            | Command::Role(_)
            | Command::Info(_)
            | Command::Config(_)
            | Command::Snapshot(_)
            | Command::Acl(_)
            | Command::Psync(_)
            | Command::Replconf(_) => Frame::from(ReplyError::not_from_script()).into(),
        }
    }
}

/// EXEC: runs the connection's queue at one instant (`now_ms`), nothing else in between, and
/// replies with every reply; WAIT inside counts the replicas that have the connection's
/// writes now, and a blocking pop does not block. What it wrote reaches replicas and the
/// AOF between MULTI and EXEC.
fn exec(node: &mut Node, session: &mut Session, now_ms: u64) -> Reply {
    let queue = match transactions::exec_queue(session, &mut node.watches, &node.db, now_ms) {
        Ok(queue) => queue,
        Err(reply) => return reply,
    };
    node.in_transaction = true;
    let mut replies = Vec::with_capacity(queue.len());
    for words in queue {
        let writes = node.writes();
        let name = full_name(&words);
        // Each queued command is a call of its own, counted as it runs.
        node.stats.begin();
        let kept = kept_for_propagation(&node.db, Lookup::of(&words), &words);
        let dirty = node.db.dirty();
        let reply = match Command::from_words(words, writes) {
            Ok(Command::Wait(_)) => Frame::Integer(node.replication.acked(session.write_offset)).into(),
            Ok(command) => command.apply(node, session, now_ms),
            Err(error) => Frame::from(error).into(),
        };
        crate::redis::propagation::record(&mut node.db, kept, dirty, &reply);
        node.stats.end(&name, &reply);
        replies.push(reply);
    }
    counted(Reply::Replies(replies))
}

/// Whether the node is over `maxmemory` as a request arrives (`performEvictions` failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Memory {
    Enough,
    /// Out of memory; `queue_may_grow`: the connection's MULTI queue holds a command that
    /// may grow the dataset (asked only for EXEC).
    Over {
        queue_may_grow: bool,
    },
}

impl Memory {
    /// Whether `processCommand` refuses the command of `spec` with `-OOM`, on a connection
    /// `queuing` in MULTI or not: one that may grow the dataset, an EXEC whose queue holds
    /// one, and anything queued but what ends or leaves the transaction.
    fn refuses(self, spec: &Spec<Command>, queuing: bool) -> bool {
        let Memory::Over { queue_may_grow } = self else {
            return false;
        };
        let ends_transaction = matches!(spec.name, "exec" | "discard" | "quit" | "reset");
        spec.flags.denyoom || (spec.name == "exec" && queue_may_grow) || (queuing && !ends_transaction)
    }
}

/// A reply whose errors were counted as its calls ran.
fn counted(reply: impl Into<Reply>) -> Reply {
    Reply::Counted(Box::new(reply.into()))
}

/// The refusal Redis gives at lookup, before any other check, to a request whose
/// subcommand is unknown or has the wrong word count.
fn subcommand_refusal(spec: &Spec<Command>, words: &[&[u8]]) -> Option<ReplyError> {
    Command::parse(spec, words)
        .err()
        .filter(ReplyError::is_found_at_lookup)
}

#[cfg(test)]
mod tests;
