//! Redis commands, one file per family, each owning a table of its commands.
//!
//! A family's table ([`Spec`]s, gathered in [`FAMILIES`]) gives each command's name, arity,
//! flags and parser; dispatch looks names up there, and docs/redis-coverage.md is generated
//! from the tables (see `coverage.rs`). The node parses a request into a [`Command`] and
//! applies it to its [`Db`]; the lock client builds the same types and turns them into
//! frames, so a command's wire format lives in one place. Errors are worded exactly as
//! Redis 7.0 words them.

pub mod clients;
pub mod command;
#[cfg(test)]
mod coverage;
pub mod error;
mod hashes;
pub(crate) mod keys;
pub(crate) mod lists;
mod pubsub;
mod replication;
mod scripting;
mod server;
pub(crate) mod session;
mod spec;
mod strings;
pub(crate) mod transactions;
mod zsets;

pub use clients::{Client, Clients, Connected, Link};
pub use command::Describe;
pub use error::{ReplyError, Writes};
pub use keys::{
    Del, Exists, Expire, ExpireFlags, ExpireKind, ExpireRequest, Persist, Pexpire, Pttl, Ttl, Type,
};
pub use lists::{Blocked, BlockingPop, End};
pub use pubsub::{Subscribe, Unsubscribe};
pub use replication::{Info, Psync, Replconf, Replicaof, Role};
pub use scripting::{Eval, EvalRo, Evalsha, EvalshaRo, Function, Script};
pub use server::{Config, Dbsize, Echo, Flushall, Ping, Snapshot, Wait};
pub use session::{Auth, Hello, Quit, Reset, Select, Session, Transaction};
pub use strings::{Condition, Get, Getrange, Incr, Incrby, Set, SetExpiry, SetGet, Setnx};
pub use transactions::{Discard, Exec, Multi, Unwatch, Watch, Watches};

pub use spec::full_name;
pub(crate) use spec::{Args, Handler, KeyspaceHandler, Spec, ok};

use super::Frame;
use super::connection::{Protocol, Reply};
use super::db::Db;
use super::lua::Called;
use super::node::Node;
#[cfg(test)]
use super::request::build as request;

/// Why a frame is not a command at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The frame is not an array of bulk strings: Redis closes such connections.
    Protocol(String),
    /// A well-formed request Redis answers with an error reply.
    Reply(ReplyError),
}

/// A request that did not become a command, and how INFO commandstats counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub error: ReplyError,
    pub stage: Stage,
}

/// Where a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before it ran (`rejected_calls`): its name, arity, the password, subscribed mode,
    /// MULTI, a replica's or a master's refusal of writes. `credited` unless Redis did not
    /// find the command (an unknown command or subcommand).
    Rejected { credited: bool },
    /// By its own checks of its arguments as it ran: a call that failed.
    Ran,
}

impl Refused {
    fn rejected(error: ReplyError, credited: bool) -> Self {
        Refused {
            error,
            stage: Stage::Rejected { credited },
        }
    }

    /// A refusal by the command's arguments: Redis finds an unknown subcommand (or a
    /// subcommand's wrong word count) as it looks the command up, the rest as it runs.
    fn by_arguments(error: ReplyError) -> Self {
        if error.is_found_at_lookup() {
            let credited = !error.is_unknown_subcommand();
            return Refused::rejected(error, credited);
        }
        Refused {
            error,
            stage: Stage::Ran,
        }
    }
}

impl From<ReplyError> for ParseError {
    fn from(e: ReplyError) -> Self {
        ParseError::Reply(e)
    }
}

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
    BlockingPop(BlockingPop);

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

/// A keyspace command no client builds: its table's handler and its arguments, checked as
/// it runs (as Redis checks them).
#[derive(Clone)]
pub struct KeyspaceCall {
    name: &'static str,
    handler: KeyspaceHandler,
    args: Vec<Vec<u8>>,
}

impl KeyspaceCall {
    fn apply(self, db: &mut Db, now_ms: u64) -> Reply {
        let mut args = Args::new(self.args);
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

/// Every family's table: the order docs/redis-coverage.md lists them in.
pub(crate) const FAMILIES: &[(&str, &[Spec<Command>])] = &[
    ("strings", &strings::commands::<Command>()),
    ("keys", &keys::commands::<Command>()),
    ("hashes", &hashes::commands::<Command>()),
    ("sorted sets", &zsets::commands::<Command>()),
    ("lists", &lists::commands::<Command>()),
    ("pub/sub", &pubsub::commands::<Command>()),
    ("transactions", &transactions::commands::<Command>()),
    ("scripting", &scripting::commands::<Command>()),
    ("server", &server::commands::<Command>()),
    ("connection", &session::commands::<Command>()),
    ("replication", &replication::commands::<Command>()),
];

/// Why a command name was refused before its arguments were looked at.
enum Rejection {
    Unknown,
    WrongArity(&'static str),
}

/// Finds the command a request names and checks its word count.
fn lookup(words: &[Vec<u8>]) -> Result<&'static Spec<Command>, Rejection> {
    // Redis looks commands up ignoring case (its command table's dict compares with
    // strcasecmp); every name here is ASCII.
    let name = words.first().ok_or(Rejection::Unknown)?;
    let spec = FAMILIES
        .iter()
        .flat_map(|(_, table)| table.iter())
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
        .ok_or(Rejection::Unknown)?;
    let count = words.len() as i64;
    let arity = i64::from(spec.arity);
    if (arity >= 0 && count != arity) || (arity < 0 && count < -arity) {
        return Err(Rejection::WrongArity(spec.name));
    }
    Ok(spec)
}

/// Runs the words of a script's `redis.call` on the keyspace (a [`ScriptCommand`]).
///
/// [`ScriptCommand`]: super::lua::ScriptCommand
pub(crate) fn run_for_script(words: Vec<Vec<u8>>, writes: Writes, db: &mut Db, now_ms: u64) -> Called {
    let name = full_name(&words);
    let refused = match Command::from_script_words(words, writes) {
        Ok(command) => {
            let reply = command.apply_to_db(db, now_ms).into_resp2();
            return Called::Ran { name, reply };
        }
        Err(refused) => refused,
    };
    match refused.stage {
        Stage::Ran => Called::Ran {
            name,
            reply: refused.error.into(),
        },
        Stage::Rejected { credited } => Called::Rejected {
            name: credited.then_some(name),
            error: refused.error.0,
        },
    }
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
        Command::for_connection(words, writes, false, false, false).map_err(|refused| refused.error)
    }

    /// Parses a request of the connection of `session`, as Redis checks it there: a RESP2
    /// connection with subscriptions (`subscribed`) may send only the subscription commands,
    /// PING, QUIT and RESET; a connection in MULTI has its requests queued once their name
    /// and arity passed, and a refusal then fails its transaction. While the node has a
    /// password (`password_required`), an unauthenticated connection may send only AUTH,
    /// HELLO, QUIT and RESET. A refused EXEC discards the transaction and the connection's
    /// `watches`.
    pub fn for_session(
        words: Vec<Vec<u8>>,
        writes: Writes,
        subscribed: bool,
        password_required: bool,
        session: &mut Session,
        watches: &mut Watches,
    ) -> Result<Command, Refused> {
        let exec = words.first().is_some_and(|w| w.eq_ignore_ascii_case(b"exec"));
        let queuing = session.transaction.is_some();
        let unauthenticated = password_required && !session.authenticated;
        Command::for_connection(words, writes, subscribed, queuing, unauthenticated).map_err(|refused| {
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
    /// `queuing` (in MULTI) or not, and `unauthenticated` or not.
    fn for_connection(
        words: Vec<Vec<u8>>,
        writes: Writes,
        subscribed: bool,
        queuing: bool,
        unauthenticated: bool,
    ) -> Result<Command, Refused> {
        let spec = lookup(&words).map_err(|rejection| match rejection {
            Rejection::Unknown => Refused::rejected(unknown_command(&words), false),
            Rejection::WrongArity(name) => Refused::rejected(ReplyError::wrong_arity(name), true),
        })?;
        // A refusal before the command runs; an unknown subcommand is found first.
        let rejected = |refusal: ReplyError| match subcommand_refusal(spec, &words) {
            Some(lookup_error) => Refused::by_arguments(lookup_error),
            None => Refused::rejected(refusal, true),
        };
        if unauthenticated && let Some(refusal) = session::refusal_before_auth(spec.name) {
            // Redis looks the subcommand up before it asks for the password.
            return Err(rejected(refusal));
        }
        if spec.flags.write
            && let Some(refusal) = writes.refusal()
        {
            return Err(Refused::rejected(refusal, true));
        }
        if subscribed {
            let parsed = Command::parse(spec, words.clone());
            if let Some(refusal) = pubsub::refusal_while_subscribed(spec.name, &words, parsed.as_ref().err())
            {
                return Err(Refused::rejected(refusal, true));
            }
        }
        if queuing && transactions::is_refused_inside_multi(spec.name) {
            return Err(Refused::rejected(
                ReplyError("ERR Command not allowed inside a transaction".into()),
                true,
            ));
        }
        if queuing && transactions::is_queued(spec.name) {
            // A subcommand is looked up before queuing, as Redis looks it up: an unknown one
            // (or its wrong word count) is refused at once and fails the transaction. (PUBSUB's
            // subcommands are checked only as it runs here.)
            if let Some(refusal) = subcommand_refusal(spec, &words) {
                return Err(Refused::by_arguments(refusal));
            }
            return Ok(Command::Queued(words));
        }
        Command::parse(spec, words).map_err(Refused::by_arguments)
    }

    /// Parses the words a script passes to `redis.call`, with the errors Redis gives scripts.
    fn from_script_words(words: Vec<Vec<u8>>, writes: Writes) -> Result<Command, Refused> {
        let spec = lookup(&words).map_err(|rejection| match rejection {
            Rejection::Unknown => Refused::rejected(
                ReplyError("ERR Unknown Redis command called from script".into()),
                false,
            ),
            Rejection::WrongArity(_) => Refused::rejected(
                ReplyError("ERR Wrong number of args calling Redis command from script".into()),
                true,
            ),
        })?;
        if spec.flags.noscript {
            return Err(Refused::rejected(ReplyError::not_from_script(), true));
        }
        if spec.flags.write
            && let Some(refusal) = writes.refusal()
        {
            return Err(Refused::rejected(refusal, true));
        }
        Command::parse(spec, words).map_err(Refused::by_arguments)
    }

    /// Parses the arguments of a command whose name and arity were checked.
    fn parse(spec: &Spec<Command>, words: Vec<Vec<u8>>) -> Result<Command, ReplyError> {
        let mut words = words.into_iter();
        words.next(); // the command's name
        let mut args = Args::new(words.collect());
        match spec.handler {
            Handler::Parse(parse) => parse(&mut args),
            Handler::Keyspace(handler) => Ok(Command::Keyspace(KeyspaceCall {
                name: spec.name,
                handler,
                args: args.rest(),
            })),
        }
    }

    /// Executes the command for a connection's `session` on the node, at wall-clock time
    /// `now_ms`, in the session's database (SELECT changes it).
    ///
    /// WAIT and the blocking pops block, so the server answers them; the server also
    /// closes the connection after QUIT's reply (see `server.rs`).
    pub fn apply(self, node: &mut Node, session: &mut Session, now_ms: u64) -> Reply {
        node.db.select(session.db);
        let reply = match self {
            Command::Auth(cmd) => cmd.apply(session, node.config.value("requirepass")).into(),
            Command::Hello(cmd) => cmd.apply(
                session,
                node.replication.is_replica(),
                node.config.value("requirepass"),
            ),
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
        let reply = match Command::from_words(words, writes) {
            Ok(Command::Wait(_)) => Frame::Integer(node.replication.acked(session.write_offset)).into(),
            Ok(command) => command.apply(node, session, now_ms),
            Err(error) => Frame::from(error).into(),
        };
        node.stats.end(&name, &reply);
        replies.push(reply);
    }
    counted(Reply::Replies(replies))
}

/// A reply whose errors were counted as its calls ran.
fn counted(reply: impl Into<Reply>) -> Reply {
    Reply::Counted(Box::new(reply.into()))
}

/// Redis's reply to an unknown command: the name and the first arguments (about 128
/// bytes of them), each quoted.
/// The refusal Redis gives at lookup, before any other check, to a request whose
/// subcommand is unknown or has the wrong word count.
fn subcommand_refusal(spec: &Spec<Command>, words: &[Vec<u8>]) -> Option<ReplyError> {
    Command::parse(spec, words.to_vec())
        .err()
        .filter(ReplyError::is_found_at_lookup)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(db: &mut Db, now_ms: u64, words: &[&str]) -> Frame {
        let frame = request(words.iter().map(|w| w.as_bytes().to_vec()));
        match Command::from_frame(frame) {
            Ok(cmd) => cmd.apply_to_db(db, now_ms).into_resp2(),
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
        // At the expiry millisecond the key still lives (Redis: expired when now > when).
        assert_eq!(
            run(&mut db, 2000, &["SET", "lock", "b", "NX", "PX", "2000"]),
            Frame::Null
        );
        assert_eq!(
            run(&mut db, 2001, &["SET", "lock", "b", "NX", "PX", "2000"]),
            ok()
        );
        assert_eq!(
            run(&mut db, 2001, &["GET", "lock"]),
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

    // Expected replies below were read from redis-server 7.0.15 for the same requests.
    #[test]
    fn key_commands_follow_redis() {
        let mut db = Db::default();
        let int = Frame::Integer;
        run(&mut db, 0, &["SET", "k", "v"]);
        assert_eq!(run(&mut db, 0, &["EXISTS", "k", "k", "nokey"]), int(2));
        assert_eq!(
            run(&mut db, 0, &["TYPE", "k"]),
            Frame::SimpleString(b"string".to_vec())
        );
        assert_eq!(
            run(&mut db, 0, &["TYPE", "nokey"]),
            Frame::SimpleString(b"none".to_vec())
        );
        assert_eq!(run(&mut db, 0, &["PERSIST", "k"]), int(0));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100"]), int(1));
        assert_eq!(run(&mut db, 0, &["TTL", "k"]), int(100));
        assert_eq!(run(&mut db, 0, &["PERSIST", "k"]), int(1));
        assert_eq!(run(&mut db, 0, &["TTL", "k"]), int(-1));
        assert_eq!(run(&mut db, 0, &["TTL", "nokey"]), int(-2));
        run(&mut db, 0, &["PEXPIRE", "k", "1499"]);
        assert_eq!(
            run(&mut db, 0, &["TTL", "k"]),
            int(1),
            "TTL rounds to the nearest second"
        );
        run(&mut db, 0, &["PEXPIRE", "k", "499"]);
        assert_eq!(run(&mut db, 0, &["TTL", "k"]), int(0));
        assert_eq!(run(&mut db, 0, &["DBSIZE"]), int(1));
        assert_eq!(run(&mut db, 0, &["FLUSHALL", "x"]), err("ERR syntax error"));
        assert_eq!(run(&mut db, 0, &["FLUSHALL", "async"]), ok());
        assert_eq!(run(&mut db, 0, &["DBSIZE"]), int(0));
        assert_eq!(run(&mut db, 0, &["ECHO", "a"]), Frame::BulkString(b"a".to_vec()));
        assert_eq!(run(&mut db, 0, &["SELECT", "0"]), ok());
        assert_eq!(
            run(&mut db, 0, &["SELECT", "16"]),
            err("ERR DB index is out of range")
        );
    }

    #[test]
    fn expire_options_follow_redis() {
        let mut db = Db::default();
        let int = Frame::Integer;
        run(&mut db, 0, &["SET", "k", "v"]);
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "NX"]), int(1));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "NX"]), int(0));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "200", "XX"]), int(1));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "GT"]), int(0));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "300", "gt"]), int(1));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "400", "LT"]), int(0));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "200", "LT"]), int(1));
        assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "XX", "GT"]), int(0));
        assert_eq!(
            run(&mut db, 0, &["EXPIRE", "k", "100", "NX", "XX"]),
            err("ERR NX and XX, GT or LT options at the same time are not compatible")
        );
        assert_eq!(
            run(&mut db, 0, &["EXPIRE", "k", "100", "GT", "LT"]),
            err("ERR GT and LT options at the same time are not compatible")
        );
        assert_eq!(
            run(&mut db, 0, &["EXPIRE", "k", "x", "bogus"]),
            err("ERR Unsupported option bogus")
        );
        run(&mut db, 0, &["SET", "p", "v"]);
        assert_eq!(
            run(&mut db, 0, &["EXPIRE", "p", "100", "GT"]),
            int(0),
            "no TTL is infinite"
        );
        assert_eq!(run(&mut db, 0, &["EXPIRE", "p", "100", "LT"]), int(1));
        assert_eq!(
            run(&mut db, 0, &["EXPIRE", "k", "92233720368547758"]),
            err("ERR invalid expire time in 'expire' command")
        );
        assert_eq!(
            run(&mut db, 0, &["PEXPIREAT", "k", "9223372036854775807"]),
            int(1)
        );
        assert_eq!(run(&mut db, 5, &["PEXPIREAT", "k", "1"]), int(1));
        assert_eq!(
            run(&mut db, 5, &["EXISTS", "k"]),
            int(0),
            "a past time deletes the key"
        );
        run(&mut db, 0, &["SET", "k", "v"]);
        assert_eq!(run(&mut db, 0, &["EXPIREAT", "k", "3"]), int(1));
        assert_eq!(run(&mut db, 1000, &["PTTL", "k"]), int(2000));
    }

    #[test]
    fn incrby_follows_redis() {
        let mut db = Db::default();
        assert_eq!(run(&mut db, 0, &["INCRBY", "n", "5"]), Frame::Integer(5));
        assert_eq!(
            run(&mut db, 0, &["INCRBY", "n", "9223372036854775807"]),
            err("ERR increment or decrement would overflow")
        );
        assert_eq!(
            run(&mut db, 0, &["INCRBY", "n", "x"]),
            err("ERR value is not an integer or out of range")
        );
        for stored in [" 1", "01", "-0", "1.0", "+1"] {
            run(&mut db, 0, &["SET", "s", stored]);
            assert_eq!(
                run(&mut db, 0, &["INCR", "s"]),
                err("ERR value is not an integer or out of range"),
                "{stored}"
            );
        }
    }

    #[test]
    fn client_frames_parse_back_to_the_same_command() {
        let expire = |kind, time| {
            Command::Expire(ExpireRequest {
                kind,
                key: b"k".to_vec(),
                time,
                flags: ExpireFlags::default(),
            })
        };
        let wait = Wait {
            replicas: 1,
            timeout_ms: 100,
        };
        let cases = [
            (
                Get { key: b"k".to_vec() }.into_frame(),
                Command::Get(Get { key: b"k".to_vec() }),
            ),
            (
                Setnx {
                    key: b"k".to_vec(),
                    value: b"v".to_vec(),
                }
                .into_frame(),
                Command::Setnx(Setnx {
                    key: b"k".to_vec(),
                    value: b"v".to_vec(),
                }),
            ),
            (
                Incr { key: b"k".to_vec() }.into_frame(),
                Command::Incr(Incr { key: b"k".to_vec() }),
            ),
            (
                Del {
                    keys: vec![b"a".to_vec(), b"b".to_vec()],
                }
                .into_frame(),
                Command::Del(Del {
                    keys: vec![b"a".to_vec(), b"b".to_vec()],
                }),
            ),
            (
                Pttl { key: b"k".to_vec() }.into_frame(),
                Command::Pttl(Pttl { key: b"k".to_vec() }),
            ),
            (
                Expire {
                    key: b"k".to_vec(),
                    seconds: 10,
                }
                .into_frame(),
                expire(ExpireKind::Expire, 10),
            ),
            (
                Pexpire {
                    key: b"k".to_vec(),
                    ms: 10,
                }
                .into_frame(),
                expire(ExpireKind::Pexpire, 10),
            ),
            (wait.clone().into_frame(), Command::Wait(wait)),
        ];
        for (frame, command) in cases {
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
