//! The Lua stack paths of a script run, written against Lua's C API rather than through
//! mlua's values: a script's KEYS and ARGV tables, the call that runs it, the words of its
//! `redis.call` and the reply it gets back. mlua keeps every value it hands to Rust in a
//! reference slot (a push, a move and a release each); these paths are every EVAL's, so
//! they read and push on the stack itself. What they do is what mlua's values did.
//!
//! Why the raw calls cannot raise a Lua error here (none of them is protected): the node's
//! interpreter has no memory limit (`Scripts::new`), so a failed allocation aborts the
//! process in mlua's allocator instead of raising, as mlua itself assumes for its
//! unprotected pushes; Lua 5.1 raises from `lua_pushlstring` otherwise only for a string
//! near `usize::MAX` bytes, which no request holds; and a garbage collection step they may
//! take runs only mlua's own finalizers, which do not raise.

use std::ffi::c_int;

use mlua::state::RawLua;
use mlua::{FromLuaMulti, Function, IntoLua, Lua, MultiValue, Value, ffi};
use smallvec::SmallVec;

use super::Frame;
use super::connection::RequestWords;
use super::lua_reply::frame_to_lua;
use super::number::format_g;

/// What `redis.call` refuses as no argument at all.
const NO_ARGUMENTS: &str = "ERR Please specify at least one argument for this redis lib call";
/// What `redis.call` refuses as an argument that is neither a string nor a number.
const NOT_A_WORD: &str = "ERR Lua redis lib command arguments must be strings or integers";

/// The arguments of a `redis.call` (or `redis.acl_check_cmd`) as a command's words, or the
/// library's refusal; read off the stack, their bytes copied once, into one buffer.
pub(super) struct CallWords(pub(super) Result<Words, &'static str>);

/// A command's words one after another in one buffer, and where each ends: one allocation
/// for a call's words rather than one for each and one for the list (issue 33; a lock's
/// release script makes two calls a run).
pub(super) struct Words {
    bytes: Vec<u8>,
    ends: SmallVec<[usize; 8]>,
}

impl Words {
    /// Each word's bytes, in order.
    pub(super) fn slices(&self) -> RequestWords<'_> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let word = &self.bytes[start..end];
                start = end;
                word
            })
            .collect()
    }
}

/// One argument as the library reads it.
enum Argument<'a> {
    Bytes(&'a [u8]),
    Number(f64),
    Other,
}

impl CallWords {
    /// The words of `count` arguments, the `i`th read by `argument(i)`.
    fn read<'a>(count: usize, argument: impl Fn(usize) -> Argument<'a>) -> Self {
        /// Room for a number's text (`%.17g`: at most 24 bytes).
        const NUMBER_ROOM: usize = 24;
        if count == 0 {
            return CallWords(Err(NO_ARGUMENTS));
        }
        // Each argument read once, then its bytes copied into a buffer made to fit them all.
        let arguments: SmallVec<[Argument; 8]> = (0..count).map(argument).collect();
        let room = arguments
            .iter()
            .map(|argument| match argument {
                Argument::Bytes(bytes) => bytes.len(),
                Argument::Number(_) => NUMBER_ROOM,
                Argument::Other => 0,
            })
            .sum();
        let mut words = Words {
            bytes: Vec::with_capacity(room),
            ends: SmallVec::with_capacity(count),
        };
        for argument in arguments {
            match argument {
                Argument::Bytes(bytes) => words.bytes.extend_from_slice(bytes),
                // As Redis's C code turns them into strings (`%.17g`), in Rust: a call of
                // Lua's `string.format` would need stack room that a call with 7999
                // arguments (all Lua 5.1 gives a C function) does not leave.
                Argument::Number(x) => words.bytes.extend_from_slice(format_g(x, 17).as_bytes()),
                Argument::Other => return CallWords(Err(NOT_A_WORD)),
            }
            words.ends.push(words.bytes.len());
        }
        CallWords(Ok(words))
    }
}

impl FromLuaMulti for CallWords {
    fn from_lua_multi(values: MultiValue, _: &Lua) -> mlua::Result<Self> {
        let strings: Vec<_> = values
            .iter()
            .map(|value| match value {
                Value::String(text) => Some(text.as_bytes()),
                _ => None,
            })
            .collect();
        Ok(CallWords::read(values.len(), |i| {
            match (&values[i], &strings[i]) {
                (_, Some(bytes)) => Argument::Bytes(bytes),
                (Value::Integer(n), _) => Argument::Number(*n as f64),
                (Value::Number(x), _) => Argument::Number(*x),
                _ => Argument::Other,
            }
        }))
    }

    unsafe fn from_stack_args(nargs: c_int, _: usize, _: Option<&str>, lua: &RawLua) -> mlua::Result<Self> {
        let state = lua.state();
        let count = usize::try_from(nargs).unwrap_or(0);
        Ok(CallWords::read(count, |i| {
            // The arguments are the top `nargs` values of the callback's stack.
            let index = i as c_int - nargs;
            // SAFETY: `index` is one of the callback's own arguments, on its stack; a string
            // is read in place (no conversion, so no allocation), and the bytes are copied
            // before the callback returns and Lua may collect it.
            unsafe {
                match ffi::lua_type(state, index) {
                    ffi::LUA_TSTRING => {
                        let mut len = 0;
                        let data = ffi::lua_tolstring(state, index, &mut len);
                        Argument::Bytes(std::slice::from_raw_parts(data.cast::<u8>(), len))
                    }
                    ffi::LUA_TNUMBER => Argument::Number(ffi::lua_tonumber(state, index)),
                    _ => Argument::Other,
                }
            }
        }))
    }
}

/// What `redis.call` or `redis.pcall` returns to the script: a number, a bulk string or nil
/// (what a lock script's commands reply) as a reply still, pushed as it is; any other reply
/// (or `redis.pcall`'s error table) as the Lua value it becomes (see [`frame_to_lua`]).
pub(super) enum CallReply {
    Plain(Frame),
    Converted(Value),
}

impl CallReply {
    /// `frame` as `redis.call` returns it.
    pub(super) fn new(lua: &Lua, frame: Frame) -> mlua::Result<Self> {
        Ok(match frame {
            Frame::Integer(_) | Frame::Null | Frame::BulkString(_) => CallReply::Plain(frame),
            other => CallReply::Converted(frame_to_lua(lua, other)?),
        })
    }
}

impl IntoLua for CallReply {
    fn into_lua(self, lua: &Lua) -> mlua::Result<Value> {
        match self {
            CallReply::Plain(frame) => frame_to_lua(lua, frame),
            CallReply::Converted(value) => Ok(value),
        }
    }

    unsafe fn push_into_stack(self, lua: &RawLua) -> mlua::Result<()> {
        let state = lua.state();
        // SAFETY: a callback's return values go on its own stack, which Lua gives room for
        // (`LUA_MINSTACK`); see the module comment for why the pushes cannot raise.
        unsafe {
            match self {
                CallReply::Plain(Frame::Integer(n)) => ffi::lua_pushnumber(state, n as f64),
                CallReply::Plain(Frame::BulkString(bytes)) => push_bytes(state, &bytes),
                CallReply::Plain(_) => ffi::lua_pushboolean(state, 0),
                CallReply::Converted(value) => lua.push_value(&value)?,
            }
        }
        Ok(())
    }
}

/// Pushes a Lua string of `bytes`.
///
/// # Safety
/// `state` has room for one more value (see the module comment for why this cannot raise).
unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: as the caller promises.
    unsafe {
        ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
    }
}

/// Pushes a new sequence of `words` as Lua strings: KEYS or ARGV.
///
/// # Safety
/// `state` has room for two more values (see the module comment for why this cannot raise).
unsafe fn push_sequence(state: *mut ffi::lua_State, words: &[Vec<u8>]) {
    // SAFETY: as the caller promises: the table, then each string above it until it is set.
    unsafe {
        ffi::lua_createtable(state, c_int::try_from(words.len()).unwrap_or(c_int::MAX), 0);
        for (i, word) in words.iter().enumerate() {
            push_bytes(state, word);
            ffi::lua_rawseti(state, -2, i as ffi::lua_Integer + 1);
        }
    }
}

/// Runs a compiled script as Redis does: KEYS and ARGV made new tables of the words and set
/// as globals, then the script called under `on_error` as its message handler (which sees
/// the stack where the error happened, to find the script's line). Whether it ran without
/// error, and its first result or what `on_error` made of its error: what `xpcall` would
/// return, without a Lua function around it to make that call.
pub(super) fn call_script(
    lua: &Lua,
    script: &Function,
    on_error: &Function,
    (keys, args): (&[Vec<u8>], &[Vec<u8>]),
) -> mlua::Result<(bool, Value)> {
    /// The handler, the script, and a global's table above them before it is set.
    const STACK_ROOM: c_int = 4;
    lua.exec_raw_lua(|raw| {
        let state = raw.state();
        // SAFETY: the stack is grown for the values before anything is pushed, and put back
        // to where it was on every way out; the functions are this interpreter's own (their
        // pushes copy a reference); the globals table has no `__newindex`, so setting KEYS
        // and ARGV only stores them (see the module comment for why nothing here raises but
        // the script, whose errors `lua_pcall` catches).
        unsafe {
            let top = ffi::lua_gettop(state);
            if ffi::lua_checkstack(state, STACK_ROOM) == 0 {
                return Err(mlua::Error::StackError);
            }
            for (name, words) in [(c"KEYS", keys), (c"ARGV", args)] {
                push_sequence(state, words);
                ffi::lua_setfield(state, ffi::LUA_GLOBALSINDEX, name.as_ptr());
            }
            let pushed = raw.push(on_error).and_then(|()| raw.push(script));
            if let Err(error) = pushed {
                ffi::lua_settop(state, top);
                return Err(error);
            }
            let ran = ffi::lua_pcall(state, 0, 1, top + 1) == 0;
            let outcome = raw.pop_value();
            ffi::lua_settop(state, top);
            Ok((ran, outcome))
        }
    })
}
