//! EVAL, EVALSHA, their read-only forms EVAL_RO and EVALSHA_RO, and SCRIPT LOAD / EXISTS /
//! FLUSH, run by the node's Lua interpreter (`redis/lua.rs`); FUNCTION and FCALL on a
//! function library that stays empty (the node does not load libraries).

use smallvec::SmallVec;

use super::error::{CallRules, ReplyError, Writes};
use super::spec::{Args, Flags, Handler, Spec, ok};
use crate::redis::Frame;
use crate::redis::connection::{Encoded, Reply};
use crate::redis::lua::{ScriptCall, ScriptCommand, Scripts};
use crate::redis::node::Node;
use crate::redis::request::build as request;

/// The scripting commands.
pub(super) const fn commands<
    C: From<Eval> + From<Evalsha> + From<EvalRo> + From<EvalshaRo> + From<Script> + From<Function>,
>() -> [Spec<C>; 8] {
    [
        Spec {
            name: "eval",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "run a Lua script (cached by SHA1)",
            handler: Handler::Parse(|args| Ok(C::from(Eval::parse(args)?))),
        },
        Spec {
            name: "evalsha",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "run a cached script, or NOSCRIPT",
            handler: Handler::Parse(|args| Ok(C::from(Evalsha::parse(args)?))),
        },
        Spec {
            name: "eval_ro",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "EVAL whose script may not write (runs on replicas too)",
            handler: Handler::Parse(|args| Ok(C::from(EvalRo(Eval::parse(args)?)))),
        },
        Spec {
            name: "evalsha_ro",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "EVALSHA whose script may not write",
            handler: Handler::Parse(|args| Ok(C::from(EvalshaRo(Evalsha::parse(args)?)))),
        },
        Spec {
            name: "script",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "LOAD, EXISTS, FLUSH, KILL (NOTBUSY: no script runs between commands)",
            handler: Handler::Parse(|args| Ok(C::from(Script::parse(args)?))),
        },
        Spec {
            name: "function",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "on an empty library: FLUSH, LIST, STATS, DUMP, KILL, DELETE (LOAD and RESTORE refused)",
            handler: Handler::Parse(|args| Ok(C::from(Function::parse(args)?))),
        },
        Spec {
            name: "fcall",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "no function exists: `Function not found`",
            handler: Handler::Parse(|_| Err(no_such_function())),
        },
        Spec {
            name: "fcall_ro",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "no function exists: `Function not found`",
            handler: Handler::Parse(|_| Err(no_such_function())),
        },
    ]
}

/// `EVAL script numkeys [key ...] [arg ...]`: runs the script, caching it under its SHA1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eval {
    pub script: String,
    pub keys: Vec<Vec<u8>>,
    pub args: Vec<Vec<u8>>,
}

impl Eval {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let script = owned_text(args.next_bytes()?);
        let (keys, args) = keys_and_args(args)?;
        Ok(Eval { script, keys, args })
    }

    pub(crate) fn apply(self, node: &mut Node, now_ms: u64, command: ScriptCommand) -> Frame {
        let writes = node.writes();
        self.run(node, now_ms, command, (writes, "eval"))
    }

    /// Caches and runs the script, its writes refused as `writes` says, for `caller`.
    fn run(self, node: &mut Node, now_ms: u64, command: ScriptCommand, (writes, caller): Runner) -> Frame {
        match node.scripts.load(self.script.as_bytes()) {
            Ok(sha) => run(
                node,
                &sha,
                &self.keys,
                &self.args,
                now_ms,
                command,
                (writes, caller),
            ),
            Err(compile_error) => node.stats.errors.counted(compile_error),
        }
    }

    /// The request frame a client sends (a copy of each word: the tests' round trips; a
    /// client sends [`Eval::encode`]).
    pub fn into_frame(self) -> Frame {
        let keys: SmallVec<[&[u8]; 4]> = self.keys.iter().map(Vec::as_slice).collect();
        let args: SmallVec<[&[u8]; 4]> = self.args.iter().map(Vec::as_slice).collect();
        let mut number = itoa::Buffer::new();
        let words = script_words(b"EVAL", self.script.as_bytes(), &mut number, &keys, &args);
        request(words.iter().map(|word| word.to_vec()))
    }

    /// The request `EVAL script numkeys key… arg…` encoded from borrowed words, without
    /// the owned copies and the frame [`Eval::into_frame`] makes (a lock's release made
    /// nine allocations for them, issue 33).
    pub fn encode(script: &str, keys: &[&[u8]], args: &[&[u8]]) -> Encoded {
        let mut number = itoa::Buffer::new();
        Encoded::of_words(&script_words(b"EVAL", script.as_bytes(), &mut number, keys, args))
    }
}

/// `EVALSHA sha1 numkeys [key ...] [arg ...]`: runs a cached script, or NOSCRIPT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evalsha {
    pub sha: String,
    pub keys: Vec<Vec<u8>>,
    pub args: Vec<Vec<u8>>,
}

impl Evalsha {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let sha = owned_text(args.next_bytes()?);
        let (keys, args) = keys_and_args(args)?;
        Ok(Evalsha { sha, keys, args })
    }

    pub(crate) fn apply(self, node: &mut Node, now_ms: u64, command: ScriptCommand) -> Frame {
        let writes = node.writes();
        run(
            node,
            &self.sha,
            &self.keys,
            &self.args,
            now_ms,
            command,
            (writes, "evalsha"),
        )
    }

    /// The request `EVALSHA sha1 numkeys key… arg…` encoded from borrowed words.
    pub fn encode(sha: &str, keys: &[&[u8]], args: &[&[u8]]) -> Encoded {
        let mut number = itoa::Buffer::new();
        Encoded::of_words(&script_words(b"EVALSHA", sha.as_bytes(), &mut number, keys, args))
    }
}

/// `EVAL_RO script numkeys [key ...] [arg ...]`: EVAL whose script may not call a write
/// command (`ERR Write commands are not allowed from read-only scripts.`); Redis flags it
/// `readonly`, so replicas run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalRo(pub Eval);

impl EvalRo {
    pub(crate) fn apply(self, node: &mut Node, now_ms: u64, command: ScriptCommand) -> Frame {
        self.0
            .run(node, now_ms, command, (Writes::ReadOnlyScript, "eval_ro"))
    }
}

/// `EVALSHA_RO sha1 numkeys [key ...] [arg ...]`: EVALSHA whose script may not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalshaRo(pub Evalsha);

impl EvalshaRo {
    pub(crate) fn apply(self, node: &mut Node, now_ms: u64, command: ScriptCommand) -> Frame {
        let Evalsha { sha, keys, args } = self.0;
        run(
            node,
            &sha,
            &keys,
            &args,
            now_ms,
            command,
            (Writes::ReadOnlyScript, "evalsha_ro"),
        )
    }
}

/// Words of a request: keys, or arguments.
type Words = Vec<Vec<u8>>;

/// Which writes a script may make, and the command that runs it (`eval`, `evalsha_ro`…).
type Runner = (Writes, &'static str);

/// Runs a cached script on the node (EVAL and EVALSHA). A SELECT inside the script changes
/// the script's database only, as in Redis 7.0: the caller's comes back after it.
/// `command` runs each `redis.call` (the dispatcher's, which knows every command); a write
/// the script calls is refused as `writes` says. Every error the run replies, and every
/// command it calls, is counted in the node's statistics here, so the reply goes out as
/// `Reply::Counted`.
fn run(
    node: &mut Node,
    sha: &str,
    keys: &[Vec<u8>],
    args: &[Vec<u8>],
    now_ms: u64,
    command: ScriptCommand,
    (writes, caller): Runner,
) -> Frame {
    let rules = match call_rules(node, sha, writes) {
        Ok(rules) => rules,
        Err(refusal) => return node.stats.errors.counted(refusal.into()),
    };
    let selected = node.db.selected();
    let call = ScriptCall {
        keys,
        args,
        now_ms,
        rules,
        command,
        caller,
    };
    let reply = node.scripts.run(sha, call, &mut node.db, &mut node.stats);
    node.db.select(selected);
    reply
}

/// What a script's calls may do, or why the node refuses to run it at all (script.c
/// `scriptPrepareForRun`, server.c `processCommand` with eval.c `evalGetCommandFlags`).
///
/// `asked` is the runner's rule (`ReadOnlyScript` for the `_ro` commands). A script in
/// compatibility mode (no shebang) keeps it, and if the node is out of memory as it starts,
/// its calls may not grow the dataset until its first write (`scriptVerifyOOM`). A script
/// that declares its flags (a `#!lua` shebang): inside one that declares `no-writes`, every
/// write is refused (and memory does not matter: `no-writes` implies `allow-oom`); one that
/// may write is refused while the node is out of memory unless it declares `allow-oom`
/// (the check comes first: `scriptFlagsToCmdFlags` makes it a `denyoom` command, refused
/// as any), then on a replica, on a master short of good replicas (the refusals a write
/// command gets before it runs), or through a `_ro` command.
fn call_rules(node: &Node, sha: &str, asked: Writes) -> Result<CallRules, ReplyError> {
    let flags = node.scripts.flags(sha);
    let out_of_memory = node.out_of_memory();
    if flags.compat {
        return Ok(CallRules {
            writes: asked,
            out_of_memory,
        });
    }
    if flags.no_writes {
        return Ok(CallRules::writes(Writes::ReadOnlyScript));
    }
    if out_of_memory && !flags.allow_oom {
        return Err(ReplyError::out_of_memory());
    }
    let node_writes = node.writes();
    if let Some(refusal) = node_writes.refusal() {
        return Err(refusal);
    }
    if asked == Writes::ReadOnlyScript {
        return Err(ReplyError(
            "ERR Can not execute a script with write flag using *_ro command.".into(),
        ));
    }
    Ok(CallRules::writes(node_writes))
}

/// `numkeys [key ...] [arg ...]`, shared by EVAL and EVALSHA.
/// A word as text, invalid UTF-8 replaced as `String::from_utf8_lossy` replaces it; a
/// valid word (every script body and SHA1 a client sends) keeps its bytes, uncopied.
fn owned_text(word: Vec<u8>) -> String {
    String::from_utf8(word).unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned())
}

fn keys_and_args(args: &mut Args) -> Result<(Words, Words), ReplyError> {
    let numkeys = args.next_int()?;
    if numkeys < 0 {
        return Err(ReplyError("ERR Number of keys can't be negative".into()));
    }
    if numkeys as u64 > args.len() as u64 {
        return Err(ReplyError(
            "ERR Number of keys can't be greater than number of args".into(),
        ));
    }
    let keys = (0..numkeys)
        .map(|_| args.next_bytes())
        .collect::<Result<_, _>>()?;
    Ok((keys, args.rest()))
}

/// The words of `command body numkeys key… arg…` (EVAL with a script, EVALSHA with its
/// SHA1), the number of keys written into `number`: the one place their order is spelled.
fn script_words<'a>(
    command: &'static [u8],
    body: &'a [u8],
    number: &'a mut itoa::Buffer,
    keys: &[&'a [u8]],
    args: &[&'a [u8]],
) -> SmallVec<[&'a [u8]; 8]> {
    let mut words: SmallVec<[&[u8]; 8]> = SmallVec::new();
    words.extend([command, body, number.format(keys.len()).as_bytes()]);
    words.extend_from_slice(keys);
    words.extend_from_slice(args);
    words
}

/// SCRIPT KILL's and FUNCTION KILL's reply when no script runs: always, between commands
/// (a script that runs long is killed by the server's busy pass, `server/busy.rs`).
fn not_busy() -> Frame {
    Frame::Error("NOTBUSY No scripts in execution right now.".into())
}

/// `SCRIPT LOAD body | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC] | KILL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Script {
    /// Compiles and caches a script; replies with its SHA1.
    Load(Vec<u8>),
    /// 1 or 0 for each SHA1: whether it is cached.
    Exists(Vec<String>),
    /// Empties the cache.
    Flush,
    /// Stops the running script: none runs between commands.
    Kill,
}

impl Script {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let subcommand = args.next_bytes()?;
        let mut rest = args.rest();
        let wrong_arity = |name: &str| ReplyError::wrong_arity(&format!("script|{name}"));
        match subcommand.to_ascii_uppercase().as_slice() {
            b"LOAD" if rest.len() == 1 => Ok(Script::Load(rest.pop().unwrap_or_default())),
            b"LOAD" => Err(wrong_arity("load")),
            b"EXISTS" if rest.is_empty() => Err(wrong_arity("exists")),
            b"EXISTS" => Ok(Script::Exists(
                rest.iter()
                    .map(|sha| String::from_utf8_lossy(sha).into_owned())
                    .collect(),
            )),
            b"KILL" if rest.is_empty() => Ok(Script::Kill),
            b"KILL" => Err(wrong_arity("kill")),
            b"FLUSH" => match rest.as_slice() {
                [] => Ok(Script::Flush),
                [mode] if mode.eq_ignore_ascii_case(b"SYNC") || mode.eq_ignore_ascii_case(b"ASYNC") => {
                    Ok(Script::Flush)
                }
                _ => Err(ReplyError(
                    "ERR SCRIPT FLUSH only support SYNC|ASYNC option".into(),
                )),
            },
            _ => Err(ReplyError(format!(
                "ERR unknown subcommand '{}'. Try SCRIPT HELP.",
                String::from_utf8_lossy(&subcommand)
            ))),
        }
    }

    pub(crate) fn apply(self, scripts: &mut Scripts) -> Frame {
        match self {
            Script::Load(body) => match scripts.load(&body) {
                Ok(sha) => Frame::BulkString(sha.into_bytes()),
                Err(compile_error) => compile_error,
            },
            Script::Exists(shas) => Frame::Array(
                shas.iter()
                    .map(|sha| Frame::Integer(scripts.exists(sha) as i64))
                    .collect(),
            ),
            Script::Flush => {
                scripts.flush();
                ok()
            }
            Script::Kill => not_busy(),
        }
    }
}

/// FCALL's and FCALL_RO's reply: the library is empty, so no function exists.
fn no_such_function() -> ReplyError {
    ReplyError("ERR Function not found".into())
}

/// `FUNCTION FLUSH | LIST | STATS | DUMP | KILL | DELETE`, as Redis 7.0 answers them with
/// no library loaded (the node loads none: LOAD and RESTORE are refused as unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Function {
    /// `FLUSH [ASYNC|SYNC]`: nothing to delete.
    Flush,
    /// `LIST [LIBRARYNAME pattern] [WITHCODE]`: no library.
    List,
    /// `STATS`: no function running, the Lua engine with nothing in it.
    Stats,
    /// `DUMP`: the payload of no library.
    Dump,
    /// `KILL`: no function running.
    Kill,
    /// `DELETE library`: no such library.
    Delete,
}

impl Function {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let subcommand = args.next_bytes()?;
        let rest = args.rest();
        let exactly = |count: usize, function: Function, name: &str| {
            if rest.len() == count {
                Ok(function)
            } else {
                Err(ReplyError::wrong_arity(&format!("function|{name}")))
            }
        };
        match subcommand.to_ascii_uppercase().as_slice() {
            b"FLUSH" => match rest.as_slice() {
                [] => Ok(Function::Flush),
                [mode] if mode.eq_ignore_ascii_case(b"SYNC") || mode.eq_ignore_ascii_case(b"ASYNC") => {
                    Ok(Function::Flush)
                }
                [_] => Err(ReplyError(
                    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into(),
                )),
                _ => Err(ReplyError(
                    "ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP."
                        .into(),
                )),
            },
            b"LIST" => Function::parse_list(rest),
            b"STATS" => exactly(0, Function::Stats, "stats"),
            b"DUMP" => exactly(0, Function::Dump, "dump"),
            b"KILL" => exactly(0, Function::Kill, "kill"),
            b"DELETE" => exactly(1, Function::Delete, "delete"),
            _ => Err(ReplyError(format!(
                "ERR unknown subcommand '{}'. Try FUNCTION HELP.",
                String::from_utf8_lossy(&subcommand)
            ))),
        }
    }

    /// `LIST`'s options, each at most once, checked as Redis checks them.
    fn parse_list(options: Vec<Vec<u8>>) -> Result<Self, ReplyError> {
        let (mut with_code, mut library_name) = (false, false);
        let mut options = options.into_iter();
        while let Some(option) = options.next() {
            if option.eq_ignore_ascii_case(b"WITHCODE") && !with_code {
                with_code = true;
            } else if option.eq_ignore_ascii_case(b"LIBRARYNAME") && !library_name {
                if options.next().is_none() {
                    return Err(ReplyError("ERR library name argument was not given".into()));
                }
                library_name = true;
            } else {
                return Err(ReplyError(format!(
                    "ERR Unknown argument {}",
                    String::from_utf8_lossy(&option)
                )));
            }
        }
        Ok(Function::List)
    }

    pub(crate) fn apply(self) -> Reply {
        let text = |s: &str| Frame::BulkString(s.as_bytes().to_vec());
        match self {
            Function::Flush => ok().into(),
            Function::List => Frame::Array(vec![]).into(),
            Function::Stats => Reply::Nested(vec![
                (text("running_script"), Frame::Null.into()),
                (
                    text("engines"),
                    Reply::Nested(vec![(
                        text("LUA"),
                        Reply::Map(vec![
                            (text("libraries_count"), Frame::Integer(0)),
                            (text("functions_count"), Frame::Integer(0)),
                        ]),
                    )]),
                ),
            ]),
            Function::Dump => Frame::BulkString(crate::redis::rdb::empty_function_dump()).into(),
            Function::Kill => not_busy().into(),
            Function::Delete => Frame::Error("ERR Library not found".into()).into(),
        }
    }
}

#[cfg(test)]
#[path = "scripting_tests.rs"]
mod tests;
