//! What passes between a script and the node: a script's return value becomes a reply,
//! a command's reply becomes what `redis.call` returns, both by Redis 7.0's rules
//! (script_lua.c `luaReplyToRedisReply`, `redisProtocolToLuaType`), and the error replies
//! a return value holds are gathered for the node's error statistics.

use mlua::{Lua, Table, Value};

use super::Frame;

/// Lua → reply conversion stops past this nesting depth (a table can contain itself).
const MAX_REPLY_DEPTH: usize = 64;

/// The field Redis 7.0 sets on the error table of an error already counted; a script may
/// see it (`pairs`), and its reply does not count the error again.
pub(super) const COUNTED_FIELD: &str = "ignore_error_stats_update";

/// Whether an error table carries the counted mark.
pub(super) fn marked_counted(table: &Table) -> bool {
    matches!(table.raw_get::<Value>(COUNTED_FIELD), Ok(value) if !matches!(value, Value::Nil | Value::Boolean(false)))
}

/// The error replies in what a script returns: those no call counted, which count as the
/// reply goes out, and how many a call counted already (each fails the script's call
/// again, without a new error, as Redis's `afterErrorReply` does).
#[derive(Default)]
pub(super) struct ReplyErrors {
    pub(super) uncounted: Vec<String>,
    pub(super) recounted: u64,
}

impl ReplyErrors {
    pub(super) fn add(&mut self, frame: &Frame, counted: bool) {
        match frame {
            Frame::Error(_) if counted => self.recounted += 1,
            Frame::Error(message) => self.uncounted.push(message.clone()),
            _ => {}
        }
    }
}

/// An error reply; Redis turns CR and LF in error and status text into spaces.
pub(super) fn error_frame(message: String) -> Frame {
    Frame::Error(message.replace(['\r', '\n'], " "))
}

/// A status reply, CR and LF turned into spaces as for errors.
fn status_frame(text: &[u8]) -> Frame {
    Frame::SimpleString(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect(),
    )
}

/// A Lua number as Redis returns it: truncated toward zero; out of range (NaN included) gives
/// what the C cast gives on x86-64, i64::MIN.
fn lua_number_to_integer(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Converts a script's return value to a reply, by Redis's rules: `false`/`nil` → nil,
/// `true` → 1, numbers truncated, `{err=…}` → error, `{ok=…}` → status, other tables →
/// arrays up to the first nil. Each error goes to `reply_errors`.
pub(super) fn lua_to_frame(value: Value, depth: usize, reply_errors: &mut ReplyErrors) -> Frame {
    match value {
        Value::Boolean(true) => Frame::Integer(1),
        Value::Integer(n) => Frame::Integer(n),
        Value::Number(n) => Frame::Integer(lua_number_to_integer(n)),
        Value::String(s) => Frame::BulkString(s.as_bytes().to_vec()),
        Value::Table(table) => {
            let error = if depth >= MAX_REPLY_DEPTH {
                Some((error_frame("ERR reached lua stack limit".into()), false))
            } else if let Ok(Value::String(err)) = table.raw_get::<Value>("err") {
                Some((error_frame(err.to_string_lossy()), marked_counted(&table)))
            } else {
                None
            };
            if let Some((frame, counted)) = error {
                reply_errors.add(&frame, counted);
                return frame;
            }
            if let Ok(Value::String(ok)) = table.raw_get::<Value>("ok") {
                return status_frame(&ok.as_bytes());
            }
            let items = (1..)
                .map_while(|i| match table.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => None,
                    Ok(item) => Some(lua_to_frame(item, depth + 1, reply_errors)),
                })
                .collect();
            Frame::Array(items)
        }
        _ => Frame::Null,
    }
}

/// Converts a command's reply to what `redis.call` returns: nil → `false`, status →
/// `{ok=…}`, error → `{err=…}`, arrays → tables.
pub(super) fn frame_to_lua(lua: &Lua, frame: Frame) -> mlua::Result<Value> {
    Ok(match frame {
        Frame::Integer(n) => Value::Number(n as f64),
        Frame::BulkString(bytes) => Value::String(lua.create_string(bytes)?),
        Frame::SimpleString(text) => Value::Table(lua.create_table_from([("ok", lua.create_string(text)?)])?),
        Frame::Error(text) => Value::Table(lua.create_table_from([("err", lua.create_string(text)?)])?),
        Frame::Null => Value::Boolean(false),
        Frame::Array(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                table.raw_set(i + 1, frame_to_lua(lua, item)?)?;
            }
            Value::Table(table)
        }
    })
}
