//! The `bit` library Redis loads into its Lua (LuaBitOp 1.0.2, deps/lua/src/lua_bit.c):
//! 32-bit operations on Lua's numbers, which some scripts use for flags and hashes.
//!
//! Every argument is read as LuaBitOp reads it: the number plus 2^52 + 2^51, whose low 32
//! bits are the integer (rounded to nearest, modulo 2^32); results are signed 32-bit.

use mlua::{Lua, Result, Table, Variadic};

/// The library's table, to be published read-only as `bit`.
pub fn library(lua: &Lua) -> Result<Table> {
    let bit = lua.create_table()?;
    bit.set("tobit", lua.create_function(|_, x: f64| Ok(number(bits(x))))?)?;
    bit.set("bnot", lua.create_function(|_, x: f64| Ok(number(!bits(x))))?)?;
    bit.set(
        "bswap",
        lua.create_function(|_, x: f64| Ok(number(bits(x).swap_bytes())))?,
    )?;
    bit.set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| Ok(hex(bits(x), n.map(bits))))?,
    )?;
    for (name, fold) in [
        ("band", (|a, b| a & b) as fn(u32, u32) -> u32),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ] {
        let function = lua.create_function(move |_, (first, rest): (f64, Variadic<f64>)| {
            Ok(number(
                rest.iter().fold(bits(first), |acc, &x| fold(acc, bits(x))),
            ))
        })?;
        bit.set(name, function)?;
    }
    for (name, shift) in [
        ("lshift", (|b: u32, n| b << n) as fn(u32, u32) -> u32),
        ("rshift", |b, n| b >> n),
        ("arshift", |b, n| ((b as i32) >> n) as u32),
        ("rol", |b, n| b.rotate_left(n)),
        ("ror", |b, n| b.rotate_right(n)),
    ] {
        let function =
            lua.create_function(move |_, (x, n): (f64, f64)| Ok(number(shift(bits(x), bits(n) & 31))))?;
        bit.set(name, function)?;
    }
    Ok(bit)
}

/// The 32 bits LuaBitOp reads a number as.
fn bits(x: f64) -> u32 {
    (x + 6_755_399_441_055_744.0).to_bits() as u32
}

/// A result, as the signed 32-bit number LuaBitOp returns.
fn number(bits: u32) -> f64 {
    f64::from(bits as i32)
}

/// `bit.tohex(x [, n])`: the low `n` hex digits of `x` (8 by default; upper case when `n`
/// is negative; at most 8).
fn hex(mut bits: u32, digits: Option<u32>) -> String {
    let signed = digits.map_or(8, |n| n as i32);
    let (count, alphabet) = match signed {
        n if n < 0 => (n.unsigned_abs().min(8), b"0123456789ABCDEF"),
        n => (n.unsigned_abs().min(8), b"0123456789abcdef"),
    };
    let mut out = vec![b'0'; count as usize];
    for digit in out.iter_mut().rev() {
        *digit = alphabet[(bits & 15) as usize];
        bits >>= 4;
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(script: &str) -> f64 {
        let lua = Lua::new();
        lua.globals().set("bit", library(&lua).unwrap()).unwrap();
        lua.load(script).eval::<f64>().unwrap()
    }

    #[test]
    fn operations_are_32_bit_as_lua_bitop_gives_them() {
        assert_eq!(eval("return bit.tobit(1)"), 1.0);
        assert_eq!(eval("return bit.tobit(0xffffffff)"), -1.0);
        assert_eq!(eval("return bit.tobit(2^32 + 5)"), 5.0);
        assert_eq!(eval("return bit.band(1)"), 1.0);
        assert_eq!(eval("return bit.bxor(1, 2)"), 3.0);
        assert_eq!(eval("return bit.bor(1, 2, 4, 8, 16, 32, 64, 128)"), 255.0);
        assert_eq!(eval("return bit.bnot(0)"), -1.0);
        assert_eq!(eval("return bit.lshift(1, 31)"), -2_147_483_648.0);
        assert_eq!(eval("return bit.lshift(1, 33)"), 2.0);
        assert_eq!(eval("return bit.rshift(-1, 28)"), 15.0);
        assert_eq!(eval("return bit.arshift(-256, 4)"), -16.0);
        assert_eq!(eval("return bit.rol(0x12345678, 8)"), f64::from(0x3456_7812));
        assert_eq!(eval("return bit.ror(0x12345678, 8)"), f64::from(0x7812_3456));
        assert_eq!(eval("return bit.bswap(0x12345678)"), f64::from(0x7856_3412));
    }

    #[test]
    fn tohex_gives_the_low_digits_in_the_case_asked() {
        assert_eq!(hex(bits(1.0), None), "00000001");
        assert_eq!(hex(bits(-1.0), Some(bits(-4.0))), "FFFF");
        assert_eq!(hex(bits(f64::from(0x1234_5678)), Some(bits(20.0))), "12345678");
        assert_eq!(hex(255, Some(2)), "ff");
    }
}
