//! The `cmsgpack` library Redis loads into its Lua (lua-cmsgpack 0.4.0,
//! deps/lua/src/lua_cmsgpack.c): MessagePack packing and unpacking of Lua values, for
//! scripts that keep compact blobs.
//!
//! The encodings are rmp's, which picks the same smallest forms cmsgpack does (fixint,
//! uint 8…64 for positive whole numbers, int 8…64 for negative ones, float 32 when the
//! number survives the round trip, else float 64, str 8/16/32, array and map 16/32). What
//! is cmsgpack's own is written here: which numbers count as whole, when a table is an
//! array, nesting cut at 16 levels (deeper tables are packed as nil, so circular tables
//! pack), what cannot be packed becoming nil, and the decoder, which reads what cmsgpack
//! reads and nothing more (bin and ext types are "Bad data format in input.").
//!
//! A failure is returned as `false, message` and raised by the prelude as a Lua string
//! error, as cmsgpack's `luaL_error` does (see `prelude.lua`).

use super::lua_args::{integer_argument, type_name};
use mlua::{IntoLuaMulti, Lua, MultiValue, Result, Table, Value, Variadic};
use rmp::Marker;
use rmp::encode;

/// Tables nested deeper than this are packed as nil (`LUACMSGPACK_MAX_NESTING`).
const MAX_NESTING: usize = 16;

/// What a library function returns: its results, or the message cmsgpack raises.
type Outcome = std::result::Result<MultiValue, String>;

/// The library's table, to be published read-only as `cmsgpack`.
pub fn library(lua: &Lua) -> Result<Table> {
    let cmsgpack = lua.create_table()?;
    let function = |body: fn(&Lua, Variadic<Value>) -> Outcome| {
        lua.create_function(move |lua, args: Variadic<Value>| match body(lua, args) {
            Ok(results) => (true, results).into_lua_multi(lua),
            Err(message) => (false, message).into_lua_multi(lua),
        })
    };
    cmsgpack.set("pack", function(pack)?)?;
    cmsgpack.set(
        "unpack",
        function(|lua, args| unpack(lua, &args, "unpack", Limit::All))?,
    )?;
    cmsgpack.set(
        "unpack_one",
        function(|lua, args| {
            let offset = optional_integer(&args, 1, "unpack_one")?;
            unpack(lua, &args, "unpack_one", Limit::Some { limit: 1, offset })
        })?,
    )?;
    cmsgpack.set(
        "unpack_limit",
        function(|lua, args| {
            let limit = integer_argument(args.get(1).unwrap_or(&Value::Nil), 2, "unpack_limit")?;
            let offset = optional_integer(&args, 2, "unpack_limit")?;
            unpack(lua, &args, "unpack_limit", Limit::Some { limit, offset })
        })?,
    )?;
    cmsgpack.set("_NAME", "cmsgpack")?;
    cmsgpack.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    cmsgpack.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    cmsgpack.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(cmsgpack)
}

/// `luaL_optinteger(L, index + 1, 0)`.
fn optional_integer(args: &Variadic<Value>, index: usize, name: &str) -> std::result::Result<i64, String> {
    match args.get(index) {
        None | Some(Value::Nil) => Ok(0),
        Some(value) => integer_argument(value, index + 1, name),
    }
}

/// `cmsgpack.pack(value, ...)`: every argument packed, one after the other.
fn pack(lua: &Lua, args: Variadic<Value>) -> Outcome {
    if args.is_empty() {
        return Err("bad argument #0 to 'pack' (MessagePack pack needs input.)".into());
    }
    let mut out = Vec::new();
    for value in args.iter() {
        pack_value(&mut out, value, 0).map_err(|e| e.to_string())?;
    }
    let packed = lua.create_string(&out).map_err(|e| e.to_string())?;
    Value::String(packed)
        .into_lua_multi(lua)
        .map_err(|e| e.to_string())
}

/// `mp_encode_lua_type`: one value, `level` tables deep.
fn pack_value(out: &mut Vec<u8>, value: &Value, level: usize) -> Result<()> {
    let written = match value {
        Value::String(text) => {
            let bytes = text.as_bytes();
            let written = encode::write_str_len(out, bytes.len() as u32).map(drop);
            out.extend_from_slice(&bytes);
            written
        }
        Value::Boolean(b) => encode::write_bool(out, *b).map_err(encode::ValueWriteError::InvalidMarkerWrite),
        Value::Integer(n) => encode::write_sint(out, *n).map(drop),
        Value::Number(x) => pack_number(out, *x),
        Value::Table(table) if level < MAX_NESTING => return pack_table(out, table, level),
        _ => encode::write_nil(out).map_err(encode::ValueWriteError::InvalidMarkerWrite),
    };
    written.map_err(mlua::Error::external)
}

/// `mp_encode_lua_number`: a whole number that fits 64 bits as an integer, any other as
/// a float 32 when that keeps its value, else a float 64.
fn pack_number(out: &mut Vec<u8>, x: f64) -> std::result::Result<(), encode::ValueWriteError> {
    // C's `(int64_t)x == x`, without its undefined behaviour outside the range.
    const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_finite() && x.trunc() == x && (-TWO_TO_63..TWO_TO_63).contains(&x) {
        return encode::write_sint(out, x as i64).map(drop);
    }
    let single = x as f32;
    if f64::from(single) == x {
        return encode::write_f32(out, single);
    }
    encode::write_f64(out, x)
}

/// `mp_encode_lua_table`: an array when the keys are exactly 1..n, else a map, in the
/// order Lua's `next` visits them. The table is walked twice, as cmsgpack walks it (to
/// count, then to pack), never holding its pairs: mlua keeps each live value on a Lua stack
/// that Lua 5.1 caps at 8000 slots.
fn pack_table(out: &mut Vec<u8>, table: &Table, level: usize) -> Result<()> {
    let (mut count, mut max, mut array) = (0_i64, 0_i64, true);
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        count += 1;
        match array_index(&key) {
            Some(index) => max = max.max(index),
            None => array = false,
        }
    }
    if array && max == count {
        let length = table.raw_len();
        encode::write_array_len(out, length as u32).map_err(mlua::Error::external)?;
        for index in 1..=length {
            pack_value(out, &table.get::<Value>(index)?, level + 1)?;
        }
        return Ok(());
    }
    encode::write_map_len(out, count as u32).map_err(mlua::Error::external)?;
    for pair in table.pairs::<Value, Value>() {
        let (key, value) = pair?;
        pack_value(out, &key, level + 1)?;
        pack_value(out, &value, level + 1)?;
    }
    Ok(())
}

/// A key as `table_is_an_array` accepts it: a positive whole number that fits a C `int`.
fn array_index(key: &Value) -> Option<i64> {
    let k = match key {
        Value::Integer(n) => *n as f64,
        Value::Number(x) => *x,
        _ => return None,
    };
    (k > 0.0 && k.trunc() == k && k <= f64::from(i32::MAX)).then_some(k as i64)
}

/// How many values an unpack reads, and from where.
#[derive(Clone, Copy)]
enum Limit {
    /// `unpack`: every value, from the start.
    All,
    /// `unpack_one`, `unpack_limit`: up to `limit` values (0: every one) from byte
    /// `offset`; the offset after them comes first in the results (-1 at the end).
    Some { limit: i64, offset: i64 },
}

/// `mp_unpack_full`: the values packed in the first argument.
fn unpack(lua: &Lua, args: &Variadic<Value>, name: &str, limit: Limit) -> Outcome {
    let bytes = match args.first() {
        Some(Value::String(text)) => text.as_bytes().to_vec(),
        Some(Value::Integer(n)) => n.to_string().into_bytes(),
        Some(Value::Number(x)) => super::number::format_g(*x, 14).into_bytes(),
        other => {
            return Err(format!(
                "bad argument #1 to '{name}' (string expected, got {})",
                type_name(other.unwrap_or(&Value::Nil))
            ));
        }
    };
    let (count, offset) = match limit {
        Limit::All => (i64::MAX, 0),
        Limit::Some { limit, offset } => {
            if offset < 0 || limit < 0 {
                // cmsgpack prints the input's length where it means the limit.
                return Err(format!(
                    "Invalid request to unpack with offset of {offset} and limit of {}.",
                    bytes.len()
                ));
            }
            if offset as u64 > bytes.len() as u64 {
                return Err(format!(
                    "Start offset {offset} greater than input length {}.",
                    bytes.len()
                ));
            }
            (
                if limit == 0 && offset == 0 {
                    i64::MAX
                } else {
                    limit
                },
                offset,
            )
        }
    };
    let mut cursor = Cursor {
        lua,
        bytes: &bytes,
        at: offset as usize,
    };
    let mut values = Vec::new();
    while cursor.at < bytes.len() && (values.len() as i64) < count {
        values.push(cursor.value().map_err(|failure| failure.message().to_string())?);
    }
    if let Limit::Some { .. } = limit {
        let next = if cursor.at == bytes.len() {
            -1
        } else {
            cursor.at as i64
        };
        values.insert(0, Value::Integer(next));
    }
    Ok(MultiValue::from_iter(values))
}

/// Why unpacking stopped.
enum Failure {
    /// The input ended inside a value (`MP_CUR_ERROR_EOF`).
    Missing,
    /// A type byte cmsgpack does not read (`MP_CUR_ERROR_BADFMT`).
    BadFormat,
    /// Lua could not hold the value.
    Lua(String),
}

impl Failure {
    fn message(&self) -> &str {
        match self {
            Failure::Missing => "Missing bytes in input.",
            Failure::BadFormat => "Bad data format in input.",
            Failure::Lua(message) => message,
        }
    }
}

impl From<mlua::Error> for Failure {
    fn from(error: mlua::Error) -> Self {
        Failure::Lua(error.to_string())
    }
}

/// Reads packed values from `bytes`, from byte `at` on (`mp_cur`).
struct Cursor<'a> {
    lua: &'a Lua,
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The next `count` bytes, consumed.
    fn take(&mut self, count: usize) -> std::result::Result<&[u8], Failure> {
        let end = self.at.checked_add(count).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or(Failure::Missing)?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    /// A big-endian unsigned number of `count` bytes.
    fn unsigned(&mut self, count: usize) -> std::result::Result<u64, Failure> {
        Ok(self.take(count)?.iter().fold(0, |n, &b| (n << 8) | u64::from(b)))
    }

    /// `mp_decode_to_lua_type`: one value.
    fn value(&mut self) -> std::result::Result<Value, Failure> {
        let marker = Marker::from_u8(self.take(1)?[0]);
        let number = |x: f64| Ok(Value::Number(x));
        match marker {
            Marker::FixPos(n) => number(f64::from(n)),
            Marker::FixNeg(n) => number(f64::from(n)),
            Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => {
                let width = unsigned_width(marker);
                number(self.unsigned(width)? as f64)
            }
            Marker::I8 => number(f64::from(self.unsigned(1)? as u8 as i8)),
            Marker::I16 => number(f64::from(self.unsigned(2)? as u16 as i16)),
            Marker::I32 => number(f64::from(self.unsigned(4)? as u32 as i32)),
            Marker::I64 => number(self.unsigned(8)? as i64 as f64),
            Marker::Null => Ok(Value::Nil),
            Marker::True => Ok(Value::Boolean(true)),
            Marker::False => Ok(Value::Boolean(false)),
            Marker::F32 => number(f64::from(f32::from_bits(self.unsigned(4)? as u32))),
            Marker::F64 => number(f64::from_bits(self.unsigned(8)?)),
            Marker::FixStr(length) => self.string(usize::from(length)),
            Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let length = self.unsigned(length_width(marker))? as usize;
                self.string(length)
            }
            Marker::FixArray(length) => self.array(usize::from(length)),
            Marker::Array16 | Marker::Array32 => {
                let length = self.unsigned(length_width(marker))? as usize;
                self.array(length)
            }
            Marker::FixMap(length) => self.map(usize::from(length)),
            Marker::Map16 | Marker::Map32 => {
                let length = self.unsigned(length_width(marker))? as usize;
                self.map(length)
            }
            _ => Err(Failure::BadFormat),
        }
    }

    fn string(&mut self, length: usize) -> std::result::Result<Value, Failure> {
        let lua = self.lua;
        let bytes = self.take(length)?;
        Ok(Value::String(lua.create_string(bytes)?))
    }

    fn array(&mut self, length: usize) -> std::result::Result<Value, Failure> {
        let table = self.lua.create_table()?;
        for index in 1..=length {
            let item = self.value()?;
            table.raw_set(index, item)?;
        }
        Ok(Value::Table(table))
    }

    fn map(&mut self, length: usize) -> std::result::Result<Value, Failure> {
        let table = self.lua.create_table()?;
        for _ in 0..length {
            let key = self.value()?;
            let value = self.value()?;
            table.raw_set(key, value)?;
        }
        Ok(Value::Table(table))
    }
}

/// The width of an unsigned integer marker's payload.
fn unsigned_width(marker: Marker) -> usize {
    match marker {
        Marker::U8 => 1,
        Marker::U16 => 2,
        Marker::U32 => 4,
        _ => 8,
    }
}

/// The width of a string, array or map marker's length.
fn length_width(marker: Marker) -> usize {
    match marker {
        Marker::Str8 => 1,
        Marker::Str16 | Marker::Array16 | Marker::Map16 => 2,
        _ => 4,
    }
}
