//! A script's errors worded as Redis words them: a `redis.call` error raised into the
//! script ([`RedisCallError`]), a compile error, and a failed run's reply with the script's
//! SHA and the line it failed on ([`ScriptFailure`]).

use mlua::{Lua, Value};

use super::Frame;
use super::lua_reply::{COUNTED_FIELD, ReplyErrors, error_frame, marked_counted};
use super::lua_watchdog::SCRIPT_CHUNK_NAME;

/// Stack levels searched for the script line an error happened on.
const MAX_STACK_LEVELS: usize = 200;

/// An error reply to a script's `redis.call` or `redis.pcall`. `redis.call` raises it as
/// an error value (a script's `pcall` sees its message, as in Redis); `redis.pcall` returns
/// it as an error table.
#[derive(Debug)]
pub(super) struct RedisCallError {
    pub(super) message: String,
    /// Counted when it arose: the called command's own error. The Lua library's checks of
    /// the arguments count only if the error reaches the client, as in Redis.
    pub(super) counted: bool,
}

impl RedisCallError {
    /// `redis.pcall`'s error table: `{err = message}`, and the counted mark.
    pub(super) fn into_table(self, lua: &Lua) -> mlua::Result<Value> {
        let table = lua.create_table_from([("err", lua.create_string(&self.message)?)])?;
        if self.counted {
            table.raw_set(COUNTED_FIELD, true)?;
        }
        Ok(Value::Table(table))
    }
}

impl std::fmt::Display for RedisCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RedisCallError {}

/// The [`RedisCallError`] in an error, however deep mlua wrapped it.
pub(super) fn redis_call_error(error: &mlua::Error) -> Option<&RedisCallError> {
    match error {
        mlua::Error::CallbackError { cause, .. } => redis_call_error(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<RedisCallError>(),
        _ => None,
    }
}

/// Why a script could not be compiled: the reply Redis gives.
pub(super) fn compile_error(error: &mlua::Error) -> Frame {
    let message = match error {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    error_frame(format!("ERR Error compiling script (new function): {message}"))
}

/// The line of the innermost user-script frame on the stack (where an error happened).
pub(super) fn script_line(lua: &Lua) -> Option<usize> {
    (1..MAX_STACK_LEVELS)
        .map_while(|level| {
            lua.inspect_stack(level, |frame| {
                let in_script = frame.source().source.as_deref() == Some(SCRIPT_CHUNK_NAME);
                in_script.then(|| frame.current_line()).flatten()
            })
        })
        .flatten()
        .next()
}

/// A script that raised an error: what it raised and on which line.
pub(super) struct ScriptFailure {
    pub(super) reason: Value,
    pub(super) line: Option<usize>,
}

impl ScriptFailure {
    /// Redis's wording: an error table's own message, any other value after `ERR`, then
    /// `script: SHA, on @user_script:LINE.` Goes to `reply_errors`, counted already if it
    /// is the error a called command replied.
    pub(super) fn into_frame(self, sha: &str, reply_errors: &mut ReplyErrors) -> Frame {
        let counted = match &self.reason {
            Value::Table(table) => marked_counted(table),
            Value::Error(error) => redis_call_error(error).is_some_and(|e| e.counted),
            _ => false,
        };
        let message = match &self.reason {
            Value::Table(table) => match table.raw_get::<Value>("err") {
                Ok(Value::String(err)) => err.to_string_lossy(),
                _ => "ERR unknown error".to_string(),
            },
            Value::String(text) => format!("ERR {}", text.to_string_lossy()),
            Value::Nil => "ERR nil".to_string(),
            Value::Boolean(b) => format!("ERR {b}"),
            Value::Error(error) => match redis_call_error(error) {
                Some(call_error) => call_error.message.clone(),
                None => format!("ERR {}", error_text(error)),
            },
            other => format!("ERR {}", other.type_name()),
        };
        let line = self.line.map_or_else(|| "?".to_string(), |l| l.to_string());
        let frame = error_frame(format!("{message} script: {sha}, on @user_script:{line}."));
        reply_errors.add(&frame, counted);
        frame
    }
}

/// The message of an error raised in Rust (the instruction budget, `math.random`'s checks).
fn error_text(error: &mlua::Error) -> String {
    match error {
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        other => other.to_string(),
    }
}
