//! What Lua's C libraries do with their arguments (lauxlib's `luaL_checkinteger` and
//! `lua_typename`), for the libraries locksim writes in Rust (cjson, cmsgpack): the same
//! argument errors, word for word, as Redis's scripts see them.

use mlua::Value;

/// Lua 5.1's `lua_typename` of a value (light userdata is "userdata" too).
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::LightUserData(_) | Value::UserData(_) => "userdata",
        Value::Integer(_) => "number",
        other => other.type_name(),
    }
}

/// A number argument as `luaL_checkinteger` reads it (a numeric string too), truncated.
pub fn integer_argument(value: &Value, position: usize, name: &str) -> Result<i64, String> {
    let number = match value {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(x) => Some(*x),
        Value::String(text) => text.to_str().ok().and_then(|t| t.trim().parse::<f64>().ok()),
        _ => None,
    };
    number.map(|x| x as i64).ok_or_else(|| {
        format!(
            "bad argument #{position} to '{name}' (number expected, got {})",
            type_name(value)
        )
    })
}
