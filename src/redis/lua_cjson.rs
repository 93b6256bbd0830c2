//! The `cjson` library Redis loads into its Lua (Lua CJSON 2.1.0, deps/lua/src/lua_cjson.c):
//! scripts that keep JSON documents in strings encode and decode them with it.
//!
//! Decoding is serde_json's parser, driven by a visitor that builds the Lua values in
//! document order (so a decoded object's keys are inserted, and iterate, as cjson's do).
//! Encoding walks the Lua value by hand, because cjson's output is its own: numbers as
//! `%.14g` (`encode_number_precision`), `/` escaped as `\/`, DEL as `\u007f`, other bytes
//! as they are, a table an array only when its keys are 1..n (with cjson's rule for sparse
//! ones), and an empty table `{}`.
//!
//! A failure is returned as `false, message`; the prelude raises the message as a Lua
//! string error, as cjson's `luaL_error` does (see `prelude.lua`). Where the messages
//! differ from cjson's: a decoding error is serde_json's description (cjson says "Expected
//! value but found invalid token at character 1"), and JSON text that is not UTF-8, or
//! numbers cjson's `strtod` reads but JSON does not (`NaN`, `Infinity`, hexadecimal), are
//! refused.

use std::cell::Cell;
use std::fmt;
use std::rc::Rc;

use super::lua_args::{integer_argument, type_name};
use mlua::{IntoLuaMulti, LightUserData, Lua, MultiValue, Result, Table, Value, Variadic};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

use super::number::format_g;

/// The library's settings (`json_config_t`), shared by the functions of one `cjson` table.
#[derive(Debug, Clone, Copy)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    /// 0 `off`: NaN and infinities are an error; 1 `on`: written as `nan`, `inf`; 2 `null`.
    encode_invalid_numbers: usize,
    decode_invalid_numbers: bool,
    encode_keep_buffer: bool,
    encode_number_precision: i64,
}

/// cjson's defaults (`DEFAULT_*` in lua_cjson.c).
const DEFAULTS: Config = Config {
    sparse_convert: false,
    sparse_ratio: 2,
    sparse_safe: 10,
    encode_max_depth: 1000,
    decode_max_depth: 1000,
    encode_invalid_numbers: 0,
    decode_invalid_numbers: true,
    encode_keep_buffer: true,
    encode_number_precision: 14,
};

/// `encode_invalid_numbers`' words, by setting.
const INVALID_NUMBER_OPTIONS: &[&str] = &["off", "on", "null"];
/// The words of an on/off setting.
const BOOLEAN_OPTIONS: &[&str] = &["off", "on"];

/// What a library function returns: its results, or the message cjson raises.
type Outcome = std::result::Result<MultiValue, String>;

/// The library's table, to be published read-only as `cjson`: encode, decode, their
/// settings, `new` (a table with settings of its own), `null`, `_NAME`, `_VERSION`.
pub fn library(lua: &Lua) -> Result<Table> {
    let config = Rc::new(Cell::new(DEFAULTS));
    let cjson = lua.create_table()?;
    let function = |body: fn(&Lua, &Cell<Config>, Variadic<Value>) -> Outcome| {
        let config = config.clone();
        lua.create_function(move |lua, args: Variadic<Value>| match body(lua, &config, args) {
            Ok(results) => (true, results).into_lua_multi(lua),
            Err(message) => (false, message).into_lua_multi(lua),
        })
    };
    cjson.set("encode", function(encode)?)?;
    cjson.set("decode", function(decode)?)?;
    cjson.set("encode_sparse_array", function(encode_sparse_array)?)?;
    cjson.set(
        "encode_max_depth",
        function(|lua, config, args| {
            integer_option(lua, config, args, "encode_max_depth", 1, i32::MAX.into(), |c| {
                &mut c.encode_max_depth
            })
        })?,
    )?;
    cjson.set(
        "decode_max_depth",
        function(|lua, config, args| {
            integer_option(lua, config, args, "decode_max_depth", 1, i32::MAX.into(), |c| {
                &mut c.decode_max_depth
            })
        })?,
    )?;
    cjson.set(
        "encode_number_precision",
        function(|lua, config, args| {
            integer_option(lua, config, args, "encode_number_precision", 1, 14, |c| {
                &mut c.encode_number_precision
            })
        })?,
    )?;
    cjson.set(
        "encode_keep_buffer",
        function(|lua, config, args| {
            boolean_option(lua, config, args, "encode_keep_buffer", |c| {
                &mut c.encode_keep_buffer
            })
        })?,
    )?;
    cjson.set(
        "decode_invalid_numbers",
        function(|lua, config, args| {
            boolean_option(lua, config, args, "decode_invalid_numbers", |c| {
                &mut c.decode_invalid_numbers
            })
        })?,
    )?;
    cjson.set("encode_invalid_numbers", function(encode_invalid_numbers)?)?;
    cjson.set(
        "new",
        lua.create_function(|lua, ()| (true, library(lua)?).into_lua_multi(lua))?,
    )?;
    cjson.set("null", null())?;
    cjson.set("_NAME", "cjson")?;
    cjson.set("_VERSION", "2.1.0")?;
    Ok(cjson)
}

/// `cjson.null`: a light userdata holding NULL, what JSON `null` decodes to.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// A Lua number's value (mlua hands whole numbers over as integers).
fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(x) => Some(*x),
        _ => None,
    }
}

/// `luaL_argcheck(l, lua_gettop(l) <= count, …, "found too many arguments")` of the
/// settings functions (`json_arg_init`).
fn at_most(args: &Variadic<Value>, count: usize, name: &str) -> std::result::Result<(), String> {
    if args.len() > count {
        return Err(format!(
            "bad argument #{} to '{name}' (found too many arguments)",
            count + 1
        ));
    }
    Ok(())
}

/// `json_integer_option`: sets the setting when the argument is given (within
/// `min..=max`), and returns it.
fn integer_option(
    lua: &Lua,
    config: &Cell<Config>,
    args: Variadic<Value>,
    name: &str,
    min: i64,
    max: i64,
    setting: fn(&mut Config) -> &mut i64,
) -> Outcome {
    at_most(&args, 1, name)?;
    let mut current = config.get();
    if let Some(value) = args.first().filter(|v| !v.is_nil()) {
        let number = integer_argument(value, 1, name)?;
        if !(min..=max).contains(&number) {
            return Err(format!(
                "bad argument #1 to '{name}' (expected integer between {min} and {max})"
            ));
        }
        *setting(&mut current) = number;
        config.set(current);
    }
    (*setting(&mut current))
        .into_lua_multi(lua)
        .map_err(|e| e.to_string())
}

/// `json_enum_option`: the setting given as a boolean or one of `options`' words, as its
/// index; `None` when the argument is nil.
fn enum_argument(value: &Value, options: &[&str], name: &str) -> std::result::Result<Option<usize>, String> {
    match value {
        Value::Nil => Ok(None),
        Value::Boolean(on) => Ok(Some(usize::from(*on))),
        Value::String(text) => {
            let word = text.to_string_lossy();
            options
                .iter()
                .position(|option| *option == word)
                .map(Some)
                .ok_or_else(|| format!("bad argument #1 to '{name}' (invalid option '{word}')"))
        }
        other => Err(format!(
            "bad argument #1 to '{name}' (string expected, got {})",
            type_name(other)
        )),
    }
}

/// An on/off setting: set when given, returned as a boolean.
fn boolean_option(
    lua: &Lua,
    config: &Cell<Config>,
    args: Variadic<Value>,
    name: &str,
    setting: fn(&mut Config) -> &mut bool,
) -> Outcome {
    at_most(&args, 1, name)?;
    let mut current = config.get();
    if let Some(index) = enum_argument(args.first().unwrap_or(&Value::Nil), BOOLEAN_OPTIONS, name)? {
        *setting(&mut current) = index == 1;
        config.set(current);
    }
    (*setting(&mut current))
        .into_lua_multi(lua)
        .map_err(|e| e.to_string())
}

/// `cjson.encode_invalid_numbers([setting])`: `off`/false, `on`/true or `null`; returns
/// a boolean for the first two, the word `null` for the third.
fn encode_invalid_numbers(lua: &Lua, config: &Cell<Config>, args: Variadic<Value>) -> Outcome {
    let name = "encode_invalid_numbers";
    at_most(&args, 1, name)?;
    let mut current = config.get();
    if let Some(index) = enum_argument(args.first().unwrap_or(&Value::Nil), INVALID_NUMBER_OPTIONS, name)? {
        current.encode_invalid_numbers = index;
        config.set(current);
    }
    let result = match current.encode_invalid_numbers {
        setting @ (0 | 1) => (setting == 1).into_lua_multi(lua),
        setting => INVALID_NUMBER_OPTIONS[setting].into_lua_multi(lua),
    };
    result.map_err(|e| e.to_string())
}

/// `cjson.encode_sparse_array([convert [, ratio [, safe]]])`: how tables with holes are
/// encoded; returns the three settings.
fn encode_sparse_array(lua: &Lua, config: &Cell<Config>, args: Variadic<Value>) -> Outcome {
    let name = "encode_sparse_array";
    at_most(&args, 3, name)?;
    let mut current = config.get();
    let arg = |i: usize| args.get(i).filter(|v| !v.is_nil());
    if let Some(index) = enum_argument(arg(0).unwrap_or(&Value::Nil), BOOLEAN_OPTIONS, name)? {
        current.sparse_convert = index == 1;
    }
    for (position, setting) in [(1, &mut current.sparse_ratio), (2, &mut current.sparse_safe)] {
        if let Some(value) = arg(position) {
            let number = integer_argument(value, position + 1, name)?;
            if !(0..=i64::from(i32::MAX)).contains(&number) {
                return Err(format!(
                    "bad argument #1 to '{name}' (expected integer between 0 and {})",
                    i32::MAX
                ));
            }
            *setting = number;
        }
    }
    config.set(current);
    (current.sparse_convert, current.sparse_ratio, current.sparse_safe)
        .into_lua_multi(lua)
        .map_err(|e| e.to_string())
}

/// `cjson.encode(value)`: the JSON text of one value.
fn encode(lua: &Lua, config: &Cell<Config>, args: Variadic<Value>) -> Outcome {
    let [value] = args.as_slice() else {
        return Err("bad argument #1 to 'encode' (expected 1 argument)".into());
    };
    let mut encoder = Encoder {
        config: config.get(),
        out: Vec::new(),
    };
    encoder.value(value, 0)?;
    let text = lua.create_string(&encoder.out).map_err(|e| e.to_string())?;
    Value::String(text).into_lua_multi(lua).map_err(|e| e.to_string())
}

/// Writes a Lua value as cjson writes it (`json_append_data`).
struct Encoder {
    config: Config,
    out: Vec<u8>,
}

impl Encoder {
    fn value(&mut self, value: &Value, depth: i64) -> std::result::Result<(), String> {
        if let Some(x) = as_number(value) {
            return self.number(x);
        }
        match value {
            Value::String(text) => self.string(&text.as_bytes()),
            Value::Boolean(b) => self.out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(pointer) if pointer.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(table) => self.table(table, depth + 1)?,
            other => {
                return Err(format!(
                    "Cannot serialise {}: type not supported",
                    type_name(other)
                ));
            }
        }
        Ok(())
    }

    /// `json_append_string`: each byte as it is, but for cjson's escapes.
    fn string(&mut self, bytes: &[u8]) {
        self.out.push(b'"');
        for &byte in bytes {
            match byte {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                0x08 => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                0x0c => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => self.out.extend_from_slice(format!("\\u{byte:04x}").as_bytes()),
                _ => self.out.push(byte),
            }
        }
        self.out.push(b'"');
    }

    /// `json_append_number`: `%.14g` (the precision setting), NaN and infinities as
    /// `encode_invalid_numbers` says.
    fn number(&mut self, x: f64) -> std::result::Result<(), String> {
        match self.config.encode_invalid_numbers {
            0 if !x.is_finite() => return Err("Cannot serialise number: must not be NaN or Inf".into()),
            1 if x.is_nan() => {
                self.out.extend_from_slice(b"nan");
                return Ok(());
            }
            2 if !x.is_finite() => {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
        let precision = self.config.encode_number_precision as usize;
        self.out.extend_from_slice(format_g(x, precision).as_bytes());
        Ok(())
    }

    /// A table, `depth` tables deep: an array when `array_length` finds one, else an object.
    fn table(&mut self, table: &Table, depth: i64) -> std::result::Result<(), String> {
        if depth > self.config.encode_max_depth {
            return Err(format!("Cannot serialise, excessive nesting ({depth})"));
        }
        match self.array_length(table)? {
            Some(length) if length > 0 => {
                self.out.push(b'[');
                for index in 1..=length {
                    if index > 1 {
                        self.out.push(b',');
                    }
                    let item: Value = table.raw_get(index).map_err(|e| e.to_string())?;
                    self.value(&item, depth)?;
                }
                self.out.push(b']');
            }
            _ => {
                self.out.push(b'{');
                for (index, pair) in table.pairs::<Value, Value>().enumerate() {
                    let (key, value) = pair.map_err(|e| e.to_string())?;
                    let key = &key;
                    if index > 0 {
                        self.out.push(b',');
                    }
                    if let Some(x) = as_number(key) {
                        self.out.push(b'"');
                        self.number(x)?;
                        self.out.extend_from_slice(b"\":");
                    } else if let Value::String(text) = key {
                        self.string(&text.as_bytes());
                        self.out.push(b':');
                    } else {
                        return Err(format!(
                            "Cannot serialise {}: table key must be a number or string",
                            type_name(key)
                        ));
                    }
                    self.value(&value, depth)?;
                }
                self.out.push(b'}');
            }
        }
        Ok(())
    }

    /// `lua_array_length`: the largest key when every key is a whole number from 1 on,
    /// `None` for an object; an excessively sparse array is an object when
    /// `encode_sparse_array` converts, else an error. (The pairs are walked, never held:
    /// mlua keeps each live value on a Lua stack that Lua 5.1 caps at 8000 slots.)
    fn array_length(&self, table: &Table) -> std::result::Result<Option<usize>, String> {
        let (mut max, mut items) = (0_i64, 0_i64);
        for pair in table.pairs::<Value, Value>() {
            let (key, _) = pair.map_err(|e| e.to_string())?;
            let Some(k) = as_number(&key) else {
                return Ok(None);
            };
            if k == 0.0 || k.floor() != k || k < 1.0 {
                return Ok(None);
            }
            max = max.max(k as i64);
            items += 1;
        }
        let config = self.config;
        if config.sparse_ratio > 0 && max > items * config.sparse_ratio && max > config.sparse_safe {
            if !config.sparse_convert {
                return Err("Cannot serialise table: excessively sparse array".into());
            }
            return Ok(None);
        }
        Ok(Some(max as usize))
    }
}

/// `cjson.decode(text)`: the Lua value of one JSON text.
fn decode(lua: &Lua, config: &Cell<Config>, args: Variadic<Value>) -> Outcome {
    let [argument] = args.as_slice() else {
        return Err("bad argument #1 to 'decode' (expected 1 argument)".into());
    };
    let text = match argument {
        Value::String(text) => text.as_bytes().to_vec(),
        Value::Integer(n) => format_g(*n as f64, 14).into_bytes(),
        Value::Number(x) => format_g(*x, 14).into_bytes(),
        other => {
            return Err(format!(
                "bad argument #1 to 'decode' (string expected, got {})",
                type_name(other)
            ));
        }
    };
    let mut deserializer = serde_json::Deserializer::from_slice(&text);
    deserializer.disable_recursion_limit();
    let builder = LuaBuilder {
        lua,
        depth: 0,
        max_depth: config.get().decode_max_depth,
    };
    let value = builder
        .deserialize(&mut deserializer)
        .map_err(|e| e.to_string())?;
    deserializer.end().map_err(|e| e.to_string())?;
    value.into_lua_multi(lua).map_err(|e| e.to_string())
}

/// Builds the Lua value of the JSON value being read, `depth` arrays and objects deep.
#[derive(Clone, Copy)]
struct LuaBuilder<'a> {
    lua: &'a Lua,
    depth: i64,
    max_depth: i64,
}

impl LuaBuilder<'_> {
    /// The builder of a value one level deeper, or cjson's complaint past the limit.
    fn descend<E: serde::de::Error>(self) -> std::result::Result<Self, E> {
        let depth = self.depth + 1;
        if depth > self.max_depth {
            return Err(E::custom(format!(
                "Found too many nested data structures ({depth})"
            )));
        }
        Ok(LuaBuilder {
            lua: self.lua,
            depth,
            max_depth: self.max_depth,
        })
    }
}

impl<'de> DeserializeSeed<'de> for LuaBuilder<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LuaBuilder<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> std::result::Result<Value, E> {
        Ok(Value::Boolean(b))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(n as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(n as f64))
    }

    fn visit_f64<E: serde::de::Error>(self, x: f64) -> std::result::Result<Value, E> {
        Ok(Value::Number(x))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> std::result::Result<Value, E> {
        self.lua.create_string(text).map(Value::String).map_err(E::custom)
    }

    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<Value, E> {
        Ok(null())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> std::result::Result<Value, A::Error> {
        let inner = self.descend()?;
        let table = self.lua.create_table().map_err(A::Error::custom)?;
        let mut index = 1;
        while let Some(item) = items.next_element_seed(inner)? {
            table.raw_set(index, item).map_err(A::Error::custom)?;
            index += 1;
        }
        Ok(Value::Table(table))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> std::result::Result<Value, A::Error> {
        let inner = self.descend()?;
        let table = self.lua.create_table().map_err(A::Error::custom)?;
        while let Some(key) = entries.next_key::<String>()? {
            let value = entries.next_value_seed(inner)?;
            table.raw_set(key, value).map_err(A::Error::custom)?;
        }
        Ok(Value::Table(table))
    }
}
