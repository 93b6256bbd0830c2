//! The node's Lua 5.1 interpreter: EVAL, EVALSHA and SCRIPT run real scripts, as Redis 7.0
//! runs them.
//!
//! One interpreter per node, created with the node, as Redis has one per server. Only the
//! base, string, table and math libraries are loaded: no `os` or `io`, so no host clock,
//! file or randomness can reach a script. `math.random` is Redis's own 48-bit generator,
//! seeded identically at start, so a simulated node draws the same numbers as redis-server.
//! A script reaches the keyspace only through `redis.call`/`redis.pcall`, which parse and
//! apply the same command types clients send, at the node's clock reading when the script
//! started (Redis freezes time during a script too). `prelude.lua` builds the `redis`
//! library and the read-only globals; `lua_reply.rs` converts values both ways;
//! `lua_errors.rs` words the errors as Redis does, and this file counts them in the node's
//! error statistics by Redis's rules for scripts (see [`super::stats`]); `lua_random.rs`
//! is `math.random`.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::OnceLock;

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value, Variadic};

use super::Frame;
use super::cmd::error::CallRules;
use super::connection::Reply;
use super::db::Db;
use super::lua_errors::{RedisCallError, ScriptFailure, compile_error, redis_call_error, script_line};
use super::lua_random::{Lrand48, random_function};
use super::lua_reply::{ReplyErrors, error_frame, lua_to_frame};
use super::lua_stack::{CallReply, CallWords, call_script};
pub use super::lua_watchdog::Watcher;
use super::lua_watchdog::{HOOK_EVERY_INSTRUCTIONS, SCRIPT_CHUNK_NAME, Watchdog};
use super::number::format_g;
use super::shebang::{self, ScriptFlags};
use super::stats::Stats;

/// The chunk name of `prelude.lua`; the `=` makes Lua show it as is in messages.
const PRELUDE_CHUNK_NAME: &str = "=prelude";

/// `prelude.lua` compiled once per process and kept as Lua 5.1 bytecode with its debug
/// information (chunk name, line numbers, local names), so that every node of every seed
/// loads the same function without parsing the text again; a node's interpreter behaves as
/// if it had compiled the text itself.
static PRELUDE_BYTECODE: OnceLock<Vec<u8>> = OnceLock::new();

/// The prelude's bytecode, compiled in `lua` by the first interpreter that asks.
fn prelude_bytecode(lua: &Lua) -> mlua::Result<&'static [u8]> {
    if let Some(bytecode) = PRELUDE_BYTECODE.get() {
        return Ok(bytecode);
    }
    let compiled = lua
        .load(include_str!("prelude.lua"))
        .set_name(PRELUDE_CHUNK_NAME)
        .set_mode(ChunkMode::Text)
        .into_function()?;
    Ok(PRELUDE_BYTECODE.get_or_init(|| compiled.dump(false)))
}

/// How a script's `redis.call` runs a command: parse `words` as a script's command (refusing
/// what `rules` refuse), apply it to the keyspace at `now_ms`, reply. The commands pass it
/// in, so that the interpreter need not know the command types.
pub type ScriptCommand = fn(words: &[&[u8]], rules: CallRules, db: &mut Db, now_ms: u64) -> Called;

/// What a script's `redis.call` did.
pub enum Called {
    /// The command `name` ran and replied; `wrote`: it is a write command (after which a
    /// script no longer hears of memory, see [`CallRules`]).
    Ran {
        name: CommandName,
        reply: Frame,
        wrote: bool,
    },
    /// It was refused before it ran (see [`crate::redis::cmd::Stage`]); `name` if Redis found
    /// the command.
    Rejected {
        name: Option<CommandName>,
        error: String,
    },
}

/// A command's name as the statistics count it: its table's own (`get`) for most, a
/// container's with its subcommand (`client|list`) or an unknown one made for the call.
pub type CommandName = Cow<'static, str>;

/// What a `redis.call` did, for the node's statistics: kept during the run, counted after
/// it in order.
enum CallEvent {
    Ran {
        name: CommandName,
        error: Option<String>,
    },
    Rejected {
        name: Option<CommandName>,
        error: String,
    },
}

/// One run of a script: its keys and arguments, the node's clock reading, whether the
/// node takes writes (a replica, or a master short of good replicas, does not), and how
/// `redis.call` runs a command.
#[derive(Clone, Copy)]
pub struct ScriptCall<'a> {
    pub keys: &'a [Vec<u8>],
    pub args: &'a [Vec<u8>],
    pub now_ms: u64,
    pub rules: CallRules,
    pub command: ScriptCommand,
    /// The command that runs the script (`eval`, `evalsha_ro`…), whose failures a reply
    /// counts.
    pub caller: &'static str,
}

/// The interpreter and its compiled-script cache (what EVALSHA finds by SHA1).
pub struct Scripts {
    lua: Lua,
    /// What `prelude.lua` left in its private bridge table, read once: the environment
    /// user scripts are compiled in.
    sandbox: Table,
    /// What `redis.call` and `redis.pcall` reach while a script runs.
    running: Rc<RunningScript>,
    /// The error handler that finds the script's line, made once with the interpreter.
    on_error: Function,
    /// Compiled scripts by lower-case hex SHA1 of their body.
    cache: BTreeMap<String, Function>,
    /// The SHA1 of each cached script's body, so that EVAL of a known body (every EVAL a
    /// lock client sends) compares bytes instead of hashing them again.
    sha_of_body: BTreeMap<Vec<u8>, String>,
    /// What each cached script with a `#!lua` shebang declares (the others declare nothing).
    declared: BTreeMap<String, ScriptFlags>,
    /// The count hook's state.
    watchdog: Rc<Watchdog>,
    /// `math.random`'s state.
    random: Rc<Cell<Lrand48>>,
    /// Every script compiled here left the interpreter as the prelude made it, so that a
    /// reset makes it as good as new (see `super::lua_pool`).
    reusable: bool,
}

/// The lower-case hex SHA1 Redis names a script by.
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

impl Scripts {
    /// A fresh interpreter with Redis's libraries and an empty script cache.
    pub fn new() -> mlua::Result<Self> {
        let lua = Lua::new_with(
            StdLib::STRING | StdLib::TABLE | StdLib::MATH,
            LuaOptions::default(),
        )?;
        let bridge = lua.create_table()?;
        let random = Rc::new(Cell::new(Lrand48::START));
        bridge.set("random", random_function(&lua, random.clone())?)?;
        let seeded = random.clone();
        bridge.set(
            "randomseed",
            lua.create_function(move |_, seed: f64| {
                seeded.set(Lrand48::seeded(seed as i32));
                Ok(())
            })?,
        )?;
        // script_lua.c `luaRedisSha1hexCommand`: exactly one argument, read with
        // `lua_tolstring` (a number in its `%.14g` form, Lua 5.1's `LUA_NUMBER_FMT`;
        // anything else as no bytes).
        bridge.set(
            "sha1hex",
            lua.create_function(move |_, args: Variadic<Value>| {
                let [text] = args.as_slice() else {
                    return Err(mlua::Error::external(RedisCallError {
                        message: "ERR wrong number of arguments".into(),
                        counted: false,
                    }));
                };
                let bytes = match text {
                    Value::String(text) => text.as_bytes().to_vec(),
                    Value::Integer(n) => format_g(*n as f64, 14).into_bytes(),
                    Value::Number(x) => format_g(*x, 14).into_bytes(),
                    _ => Vec::new(),
                };
                Ok(sha1_hex(&bytes))
            })?,
        )?;
        bridge.set(
            "redis_error_message",
            lua.create_function(|_, reason: Value| {
                Ok(match reason {
                    Value::Error(error) => redis_call_error(&error).map(|e| e.message.clone()),
                    _ => None,
                })
            })?,
        )?;
        bridge.set("bit", super::lua_bit::library(&lua)?)?;
        bridge.set("cjson", super::lua_cjson::library(&lua)?)?;
        bridge.set("cmsgpack", super::lua_cmsgpack::library(&lua)?)?;
        bridge.set("version", super::REDIS_VERSION)?;
        bridge.set("version_num", version_number(super::REDIS_VERSION))?;
        let running = Rc::new(RunningScript {
            db: RefCell::default(),
            lent: Cell::new(false),
            now_ms: Cell::new(0),
            rules: Cell::new(CallRules::default()),
            command: Cell::new(None),
            wrote: Rc::default(),
            events: RefCell::default(),
        });
        let script = running.clone();
        let call = lua.create_function(move |lua, words: CallWords| match script.command(words)? {
            Ok(reply) => CallReply::new(lua, reply),
            Err(error) => Err(mlua::Error::external(error)),
        })?;
        let script = running.clone();
        let pcall = lua.create_function(move |lua, words: CallWords| match script.command(words)? {
            Ok(reply) => CallReply::new(lua, reply),
            Err(error) => Ok(CallReply::Converted(error.into_table(lua)?)),
        })?;
        let script = running.clone();
        let acl_check = lua.create_function(move |_, words: CallWords| script.acl_check(words))?;
        bridge.set("acl_check", acl_check)?;
        let on_error = lua.create_function(|lua, reason: Value| {
            let info = lua.create_table()?;
            info.raw_set("reason", reason)?;
            info.raw_set("line", script_line(lua))?;
            Ok(info)
        })?;
        lua.load(prelude_bytecode(&lua)?)
            .set_name(PRELUDE_CHUNK_NAME)
            .set_mode(ChunkMode::Binary)
            .call::<()>(bridge.clone())?;
        // The library behind the read-only `redis` proxy scripts see: no script can reach
        // it to change these.
        let redis: Table = bridge.get("redis")?;
        redis.raw_set("call", call)?;
        redis.raw_set("pcall", pcall)?;
        let watchdog = Rc::new(Watchdog::new(running.wrote.clone()));
        watchdog.hook_every(&lua, HOOK_EVERY_INSTRUCTIONS)?;
        Ok(Scripts {
            sandbox: bridge.get("sandbox")?,
            lua,
            running,
            on_error,
            cache: BTreeMap::new(),
            sha_of_body: BTreeMap::new(),
            declared: BTreeMap::new(),
            watchdog,
            random,
            reusable: true,
        })
    }

    /// Has `watcher` told of every script run from now on, and asked whether to stop it
    /// (a node served on real sockets: see `server::busy`).
    pub fn set_watcher(&mut self, watcher: Rc<dyn Watcher>) {
        *self.watchdog.watcher.borrow_mut() = Some(watcher);
    }

    /// `busy-reply-threshold`: how long (ms) a script runs before the node's other clients
    /// are answered BUSY.
    pub fn set_busy_after_ms(&mut self, busy_after_ms: u64) {
        self.watchdog.busy_after_ms.set(busy_after_ms);
    }

    /// Makes a kept interpreter as good as new for the next node: forgets its scripts, the
    /// last run's KEYS and ARGV and what `redis.call` reaches, and restarts `math.random`;
    /// `false` (and nothing done) if some script it compiled may have changed it otherwise.
    pub(super) fn reset_for_reuse(&mut self) -> bool {
        if !self.reusable {
            return false;
        }
        let globals = self.lua.globals();
        if globals.raw_set("KEYS", Value::Nil).is_err() || globals.raw_set("ARGV", Value::Nil).is_err() {
            return false;
        }
        self.flush();
        self.random.set(Lrand48::START);
        if self.watchdog.reset(&self.lua).is_err() {
            return false;
        }
        let running = &self.running;
        running.lent.set(false);
        running.now_ms.set(0);
        running.rules.set(CallRules::default());
        running.command.set(None);
        running.events.take();
        true
    }

    /// Compiles `body` into the cache (SCRIPT LOAD, and EVAL's first run); returns its SHA1.
    pub fn load(&mut self, body: &[u8]) -> Result<String, Frame> {
        if let Some(sha) = self.sha_of_body.get(body) {
            return Ok(sha.clone());
        }
        let sha = sha1_hex(body);
        if !self.cache.contains_key(&sha) {
            let globals = self.lua.globals();
            let is_global = |name: &str| !matches!(globals.raw_get::<Value>(name), Ok(Value::Nil));
            self.reusable = self.reusable && super::lua_scan::leaves_no_trace(body, is_global);
            let (flags, shebang) = shebang::parse(body).map_err(|why| error_frame(format!("ERR {why}")))?;
            let function = self
                .lua
                .load(&body[shebang..])
                .set_name(SCRIPT_CHUNK_NAME)
                .set_mode(ChunkMode::Text)
                .set_environment(self.sandbox.clone())
                .into_function()
                .map_err(|e| compile_error(&e))?;
            self.cache.insert(sha.clone(), function);
            if !flags.compat {
                self.declared.insert(sha.clone(), flags);
            }
        }
        self.sha_of_body.insert(body.to_vec(), sha.clone());
        Ok(sha)
    }

    /// Whether a script with this SHA1 (any case) is cached.
    pub fn exists(&self, sha: &str) -> bool {
        self.cache.contains_key(&sha.to_ascii_lowercase())
    }

    /// What a cached script's shebang declares ([`ScriptFlags::COMPAT`] without one).
    /// Every script run asks, and lock scripts declare nothing: no SHA1 is lower-cased
    /// (copied) unless some cached script has a shebang.
    pub fn flags(&self, sha: &str) -> ScriptFlags {
        if self.declared.is_empty() {
            return ScriptFlags::COMPAT;
        }
        let sha = sha.to_ascii_lowercase();
        self.declared.get(&sha).copied().unwrap_or(ScriptFlags::COMPAT)
    }

    /// How many scripts are cached (INFO's `number_of_cached_scripts`).
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Forgets every cached script (SCRIPT FLUSH).
    pub fn flush(&mut self) {
        self.cache.clear();
        self.sha_of_body.clear();
        self.declared.clear();
    }

    /// Runs a cached script (EVALSHA, and EVAL after [`Scripts::load`]); on a node that
    /// refuses writes (`call.writes`) the script may not write. Every error the run
    /// replied, to `redis.call` or in the reply, and every command it called, is counted in
    /// `stats` as Redis counts them.
    pub fn run(&mut self, sha: &str, call: ScriptCall<'_>, db: &mut Db, stats: &mut Stats) -> Frame {
        // The cache's names are lower case, as every client sends them: no copy then.
        let sha = if sha.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(sha.to_ascii_lowercase())
        } else {
            Cow::Borrowed(sha)
        };
        let Some(function) = self.cache.get(&*sha) else {
            return stats.errors.counted(error_frame(
                "NOSCRIPT No matching script. Please use EVAL.".into(),
            ));
        };
        let mut reply_errors = ReplyErrors::default();
        let reply = match self.run_function(function, call, db, &mut reply_errors) {
            Ok(Ok(frame)) => frame,
            Ok(Err(failure)) => failure.into_frame(&sha, &mut reply_errors),
            Err(e) => {
                let frame = error_frame(format!("ERR {e}"));
                reply_errors.add(&frame, false);
                frame
            }
        };
        // A call's reply, as far as the statistics look at it: its error, if any.
        let call_reply = |error: Option<String>| Reply::Frame(error.map_or(Frame::Null, Frame::Error));
        let mut events = self.running.events.take();
        for event in events.drain(..) {
            match event {
                CallEvent::Ran { name, error } => stats.call(&name, &call_reply(error)),
                CallEvent::Rejected { name, error } => {
                    stats.refusal(name.as_deref(), &call_reply(Some(error)))
                }
            }
        }
        // The list goes back empty, its room kept for the next run's calls.
        self.running.events.replace(events);
        for message in &reply_errors.uncounted {
            stats.errors.count(message);
        }
        for _ in 0..reply_errors.recounted {
            stats.commands.fail(call.caller);
        }
        reply
    }

    /// Runs the script; the error replies in what it returns go to `reply_errors`.
    fn run_function(
        &self,
        function: &Function,
        call: ScriptCall<'_>,
        db: &mut Db,
        reply_errors: &mut ReplyErrors,
    ) -> mlua::Result<Result<Frame, ScriptFailure>> {
        let ScriptCall {
            keys,
            args,
            now_ms,
            rules,
            command,
            caller: _,
        } = call;
        self.watchdog.start(&self.lua)?;
        self.running.wrote.set(false);
        self.running.now_ms.set(now_ms);
        self.running.rules.set(rules);
        self.running.command.set(Some(command));
        // The node's keyspace and the stand-in trade places, and back after the run.
        std::mem::swap(&mut *self.running.db.borrow_mut(), db);
        self.running.lent.set(true);
        let outcome = call_script(&self.lua, function, &self.on_error, (keys, args));
        self.watchdog.end();
        self.running.lent.set(false);
        std::mem::swap(&mut *self.running.db.borrow_mut(), db);
        let (ok, outcome) = outcome?;
        if ok {
            return Ok(Ok(lua_to_frame(outcome, 0, reply_errors)));
        }
        let Value::Table(info) = outcome else {
            return Ok(Err(ScriptFailure {
                reason: outcome,
                line: None,
            }));
        };
        Ok(Err(ScriptFailure {
            reason: info.raw_get("reason")?,
            line: info.raw_get("line")?,
        }))
    }
}

/// The keyspace and settings of the script that is running, for `redis.call` and
/// `redis.pcall`. The node's keyspace is swapped in for the run and back out after it, so
/// the two functions are made once per interpreter rather than once per run.
struct RunningScript {
    /// The node's keyspace while a script runs (`lent`); between runs, an empty keyspace
    /// made once with the interpreter, which stands in the node's place during a run.
    db: RefCell<Db>,
    /// A script runs: `db` is the node's.
    lent: Cell<bool>,
    now_ms: Cell<u64>,
    rules: Cell<CallRules>,
    command: Cell<Option<ScriptCommand>>,
    /// The script has run a write command (Redis's `SCRIPT_WRITE_DIRTY`): SCRIPT KILL
    /// cannot stop it.
    wrote: Rc<Cell<bool>>,
    /// What each `redis.call` did, counted by the node after the run.
    events: RefCell<Vec<CallEvent>>,
}

impl RunningScript {
    /// Runs the arguments of `redis.call`/`redis.pcall` as a command, checking and
    /// converting them as Redis does; its error reply is counted, the library's own
    /// refusals are not.
    fn command(&self, CallWords(words): CallWords) -> mlua::Result<Result<Frame, RedisCallError>> {
        let refused = |message: &str| {
            Ok(Err(RedisCallError {
                message: message.into(),
                counted: false,
            }))
        };
        let command = match words {
            Ok(command) => command,
            Err(message) => return refused(message),
        };
        let outside = || mlua::Error::RuntimeError("redis.call outside a script run".into());
        if !self.lent.get() {
            return Err(outside());
        }
        let mut db = self.db.try_borrow_mut().map_err(mlua::Error::external)?;
        let run = self.command.get().ok_or_else(outside)?;
        let rules = self.rules.get();
        let called = run(&command.slices(), rules, &mut db, self.now_ms.get());
        if let Called::Ran { wrote: true, .. } = called {
            self.wrote.set(true);
            self.rules.set(CallRules {
                out_of_memory: false,
                ..rules
            });
        }
        let (event, result) = match called {
            Called::Ran {
                name,
                reply: Frame::Error(message),
                ..
            } => (
                CallEvent::Ran {
                    name,
                    error: Some(message.clone()),
                },
                Err(message),
            ),
            Called::Ran { name, reply, .. } => (CallEvent::Ran { name, error: None }, Ok(reply)),
            Called::Rejected { name, error } => (
                CallEvent::Rejected {
                    name,
                    error: error.clone(),
                },
                Err(error),
            ),
        };
        self.events.borrow_mut().push(event);
        Ok(result.map_err(|message| RedisCallError {
            message,
            counted: true,
        }))
    }

    /// `redis.acl_check_cmd(command, args…)`: whether the script's user may run the words
    /// (script_lua.c `luaRedisAclCheckCmdPermissionsCommand`).
    fn acl_check(&self, CallWords(words): CallWords) -> mlua::Result<bool> {
        let raise = |message: String| {
            mlua::Error::external(RedisCallError {
                message,
                counted: false,
            })
        };
        let words = words.map_err(|message| raise(message.into()))?;
        if !self.lent.get() {
            return Err(raise(
                "ERR redis.acl_check_cmd can only be called inside a script invocation".into(),
            ));
        }
        let db = self.db.try_borrow().map_err(mlua::Error::external)?;
        db.users.check_for_script(&words.slices()).map_err(raise)
    }
}

/// `redis.REDIS_VERSION_NUM`: major, minor and patch in one byte each (7.0.15 → 0x07000f).
fn version_number(version: &str) -> i64 {
    version
        .split('.')
        .fold(0, |number, part| (number << 8) | part.parse::<i64>().unwrap_or(0))
}
