//! Numbers written as Redis's C code writes them: `printf`'s `%g` (glibc), which Redis uses
//! for a double in a reply (`%.17g`, `addReplyDouble`), for a number argument of a script's
//! `redis.call` (`%.17g`) and for `redis.sha1hex`'s argument (`%.14g`, Lua 5.1's
//! `LUA_NUMBER_FMT`). Rust's own formatting writes other digits, so this is written once.

/// `x` as C's `printf("%.{precision}g")` writes it (glibc): `precision` significant digits,
/// in exponent form when the exponent is below -4 or at least the precision, with trailing
/// zeros dropped; `inf`, `-inf`, `nan`, `-nan`.
pub fn format_g(x: f64, precision: usize) -> String {
    if !x.is_finite() {
        let sign = if x.is_sign_negative() { "-" } else { "" };
        let word = if x.is_nan() { "nan" } else { "inf" };
        return format!("{sign}{word}");
    }
    let precision = precision.max(1);
    // Rounded to `precision` significant digits first: the exponent is that of the result.
    let scientific = format!("{:.*e}", precision - 1, x);
    let (mantissa, exponent) = scientific.split_once('e').expect("`{:e}` writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes a whole exponent");
    let trim = |digits: &str| -> String {
        match digits.contains('.') {
            true => digits.trim_end_matches('0').trim_end_matches('.').to_string(),
            false => digits.to_string(),
        }
    };
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa), exponent.unsigned_abs());
    }
    let decimals = (precision as i32 - 1 - exponent) as usize;
    trim(&format!("{x:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_printf_writes_them() {
        let cases: [(f64, usize, &str); 14] = [
            (1.0, 17, "1"),
            (100.5, 17, "100.5"),
            (0.1, 17, "0.10000000000000001"),
            (1e17, 17, "1e+17"),
            (1e16, 17, "10000000000000000"),
            (123_456_789_012_345_678.0, 17, "1.2345678901234568e+17"),
            (1e-5, 17, "1.0000000000000001e-05"),
            (0.0001, 17, "0.0001"),
            (-0.0, 17, "-0"),
            (1234.5678, 14, "1234.5678"),
            (1.0 / 3.0, 14, "0.33333333333333"),
            (-2.5e-300, 17, "-2.5e-300"),
            (f64::INFINITY, 17, "inf"),
            (-f64::NAN, 17, "-nan"),
        ];
        for (x, precision, written) in cases {
            assert_eq!(format_g(x, precision), written, "%.{precision}g of {x}");
        }
    }
}
