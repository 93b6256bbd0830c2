//! Reading client requests exactly as Redis 7.0's `networking.c` does.
//!
//! A request is a multibulk array (`*N` then N `$len` strings) or, when the first byte is
//! not `*`, an inline line split like a shell command line (what telnet, `redis-cli` in
//! some modes, and RESP3 HELLO encoders send). Redis's parser has quirks a generic RESP
//! decoder lacks, and a faithful fake must share them: a non-positive count is skipped
//! without a reply, the two bytes after a bulk string are skipped unchecked, and every
//! malformed header gets its own protocol error.

use std::ops::Range;

use super::Frame;

/// Builds a request frame from words (what a client sends).
pub fn build(words: impl IntoIterator<Item = Vec<u8>>) -> Frame {
    Frame::Array(words.into_iter().map(Frame::BulkString).collect())
}

/// Longest inline request, and longest `*N`/`$N` header line Redis waits for (64 KiB).
const INLINE_MAX_BYTES: usize = 64 * 1024;

/// Largest bulk string Redis accepts (`proto-max-bulk-len`, 512 MiB).
const MAX_BULK_BYTES: i64 = 512 * 1024 * 1024;

/// What the front of the input buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request yet: read more bytes.
    Incomplete,
    /// A whole request of `consumed` bytes; no words means there is nothing to run (an
    /// empty line, `*0`, `*-1`), and Redis sends no reply.
    Request { words: Vec<Vec<u8>>, consumed: usize },
}

/// Parses one request from the front of `buffer`, its words copied out. `Err` holds the
/// protocol error's text (after `ERR Protocol error: `); Redis sends it and closes the
/// connection.
pub fn parse(buffer: &[u8]) -> Result<Parsed, String> {
    let mut spans = Vec::new();
    Ok(match find(buffer, &mut spans)? {
        Found::Incomplete => Parsed::Incomplete,
        Found::Multibulk { consumed } => Parsed::Request {
            words: spans.into_iter().map(|span| buffer[span].to_vec()).collect(),
            consumed,
        },
        Found::Inline { words, consumed } => Parsed::Request { words, consumed },
    })
}

/// A request found at the front of the input buffer by [`find`], its words left where they
/// are when it can.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Not a whole request yet: read more bytes.
    Incomplete,
    /// A `*N` request of `consumed` bytes, whose words are the spans of the buffer `find`
    /// wrote (none: nothing to run, and no reply).
    Multibulk { consumed: usize },
    /// An inline request of `consumed` bytes: its words are the line's, unquoted and
    /// unescaped, which no span of the buffer holds.
    Inline { words: Vec<Vec<u8>>, consumed: usize },
}

/// Finds one request at the front of `buffer` as [`parse`] does, without copying a
/// multibulk request's words: their places in `buffer` replace what `spans` held. The node
/// parses its commands from those slices (issue 33: a request's words were a `Vec` each,
/// most dropped once parsed).
pub fn find(buffer: &[u8], spans: &mut Vec<Range<usize>>) -> Result<Found, String> {
    spans.clear();
    match buffer.first() {
        None => Ok(Found::Incomplete),
        Some(b'*') => Ok(match parse_multibulk(buffer, Some(spans))? {
            Some(consumed) => Found::Multibulk { consumed },
            None => Found::Incomplete,
        }),
        Some(_) => parse_inline(buffer),
    }
}

/// Whether [`parse`] would find more than [`Parsed::Incomplete`] at the front of `buffer`
/// (a whole request, or a protocol error), without copying out the words: a server asks
/// it after each request of a pipeline, to answer the whole pipeline in one write.
pub fn is_complete(buffer: &[u8]) -> bool {
    match buffer.first() {
        None => false,
        Some(b'*') => !matches!(parse_multibulk(buffer, None), Ok(None)),
        Some(_) => buffer.contains(&b'\n') || buffer.len() > INLINE_MAX_BYTES,
    }
}

fn parse_inline(buffer: &[u8]) -> Result<Found, String> {
    let Some(newline) = buffer.iter().position(|&b| b == b'\n') else {
        if buffer.len() > INLINE_MAX_BYTES {
            return Err("too big inline request".into());
        }
        return Ok(Found::Incomplete);
    };
    let mut line = &buffer[..newline];
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    let words = split_args(line).ok_or("unbalanced quotes in request")?;
    Ok(Found::Inline {
        words,
        consumed: newline + 1,
    })
}

/// The number on the header line starting at `start` (after its type byte; `None` if it is
/// not one) and where the line ends; `None` while the line is incomplete. As in Redis, the
/// byte after `\r` must have arrived but is not checked.
type Header = Option<(Option<i64>, usize)>;

// Inlined into `parse_multibulk`'s loop (a request's every word has a header): called,
// its nested `Result` went back through memory, most of its ~89 instructions.
#[inline(always)]
fn header(buffer: &[u8], start: usize, too_big: &str) -> Result<Header, String> {
    let rest = buffer.get(start..).unwrap_or_default();
    let Some(cr) = rest.iter().position(|&b| b == b'\r') else {
        if rest.len() > INLINE_MAX_BYTES {
            return Err(too_big.into());
        }
        return Ok(None);
    };
    if cr + 2 > rest.len() {
        return Ok(None);
    }
    let digits = rest.get(1..cr).unwrap_or_default();
    Ok(Some((string_to_i64(digits), start + cr + 2)))
}

/// Parses a `*N` request at the front of `buffer`: how many bytes it takes, or `None` while
/// it is incomplete. Where its words are goes to `words`, when given.
fn parse_multibulk(
    buffer: &[u8],
    mut words: Option<&mut Vec<Range<usize>>>,
) -> Result<Option<usize>, String> {
    /// Words reserved at once: a count is only a claim until its words arrive.
    const RESERVED_WORDS: usize = 64;
    let Some((count, mut pos)) = header(buffer, 0, "too big mbulk count string")? else {
        return Ok(None);
    };
    let Some(count) = count.filter(|&n| n <= i64::from(i32::MAX)) else {
        return Err("invalid multibulk length".into());
    };
    if let Some(words) = words.as_mut() {
        words.reserve((count.max(0) as usize).min(RESERVED_WORDS));
    }
    for _ in 0..count.max(0) {
        let Some(&kind) = buffer.get(pos) else {
            return Ok(None);
        };
        let Some((len, start)) = header(buffer, pos, "too big bulk count string")? else {
            return Ok(None);
        };
        if kind != b'$' {
            return Err(format!("expected '$', got '{}'", kind as char));
        }
        let Some(len) = len.filter(|n| (0..=MAX_BULK_BYTES).contains(n)) else {
            return Err("invalid bulk length".into());
        };
        let end = start + len as usize;
        // Redis skips the two bytes after the string without looking at them.
        if buffer.len() < end + 2 {
            return Ok(None);
        }
        if let Some(words) = words.as_mut() {
            words.push(start..end);
        }
        pos = end + 2;
    }
    Ok(Some(pos))
}

/// Redis's `string2ll`: optional `-`, no `+`, no spaces, no leading zeros, no overflow.
pub fn string_to_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    match digits {
        [] => return None,
        [b'0'] if !negative => return Some(0),
        [b'0', ..] => return None,
        _ => {}
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(d - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

/// Redis's `sdssplitargs`: splits an inline line into words, with "double quotes"
/// (`\xHH`, `\n`, `\r`, `\t`, `\b`, `\a` escapes) and 'single quotes' (`\'`). A closing
/// quote must be followed by a space; `None` means unbalanced quotes. Parsing stops at a
/// NUL byte, as the C string functions do.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = &line[..line.iter().position(|&b| b == 0).unwrap_or(line.len())];
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let at = |i: usize| line.get(i).copied();
    let mut words = Vec::new();
    let mut p = 0;
    loop {
        while at(p).is_some_and(is_space) {
            p += 1;
        }
        if p >= line.len() {
            return Some(words);
        }
        let mut word = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let c = at(p);
            if in_double {
                let c = c?;
                let hex = |i| at(i).filter(u8::is_ascii_hexdigit);
                if c == b'\\' && at(p + 1) == Some(b'x') && hex(p + 2).is_some() && hex(p + 3).is_some() {
                    let digits = [at(p + 2)?, at(p + 3)?];
                    word.push(u8::from_str_radix(std::str::from_utf8(&digits).ok()?, 16).ok()?);
                    p += 3;
                } else if c == b'\\' && at(p + 1).is_some() {
                    p += 1;
                    word.push(match at(p)? {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1).is_some_and(|b| !is_space(b)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    word.push(c);
                }
            } else if in_single {
                let c = c?;
                if c == b'\\' && at(p + 1) == Some(b'\'') {
                    p += 1;
                    word.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1).is_some_and(|b| !is_space(b)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    word.push(c);
                }
            } else {
                match c {
                    None | Some(b' ' | b'\n' | b'\r' | b'\t') => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(other) => word.push(other),
                }
            }
            p += 1;
        }
        words.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(words: &[&str], consumed: usize) -> Result<Parsed, String> {
        Ok(Parsed::Request {
            words: words.iter().map(|w| w.as_bytes().to_vec()).collect(),
            consumed,
        })
    }

    // Each case was sent as raw bytes to redis-server 7.0.15 and its answer observed.
    #[test]
    fn multibulk_requests_parse_as_redis_parses_them() {
        assert_eq!(parse(b"*1\r\n$4\r\nPING\r\n"), request(&["PING"], 14));
        assert_eq!(parse(b"*1\r\n$4\r\nPI"), Ok(Parsed::Incomplete));
        assert_eq!(parse(b"*0\r\n"), request(&[], 4));
        assert_eq!(parse(b"*-5\r\n"), request(&[], 5));
        // The two bytes after a bulk string are skipped unchecked.
        assert_eq!(parse(b"*1\r\n$4\r\nPINGxx"), request(&["PING"], 14));
        assert_eq!(parse(b"*1\r\n$2\r\nabc\r\n"), request(&["ab"], 12));
        assert_eq!(parse(b"*x\r\n"), Err("invalid multibulk length".into()));
        assert_eq!(parse(b"*01\r\n"), Err("invalid multibulk length".into()));
        assert_eq!(parse(b"*1\r\n:1\r\n"), Err("expected '$', got ':'".into()));
        assert_eq!(parse(b"*1\r\n$-1\r\n"), Err("invalid bulk length".into()));
        assert_eq!(parse(b"*1\r\n$600000000\r\n"), Err("invalid bulk length".into()));
        assert_eq!(parse(b"*2000000000\r\n"), Ok(Parsed::Incomplete));
    }

    #[test]
    fn inline_requests_split_as_redis_splits_them() {
        assert_eq!(parse(b"PING\r\n"), request(&["PING"], 6));
        assert_eq!(parse(b"set  a   b \r\n"), request(&["set", "a", "b"], 13));
        assert_eq!(parse(b"get a\n"), request(&["get", "a"], 6));
        assert_eq!(parse(b"echo \"a\\x41\\n\"\r\n"), request(&["echo", "aA\n"], 16));
        assert_eq!(parse(b"echo 'a b'\r\n"), request(&["echo", "a b"], 12));
        assert_eq!(parse(b"   \r\n"), request(&[], 5));
        assert_eq!(parse(b"$4\r\n"), request(&["$4"], 4));
        assert_eq!(parse(b"echo \"a\r\n"), Err("unbalanced quotes in request".into()));
        assert_eq!(
            parse(b"echo \"a\"b\r\n"),
            Err("unbalanced quotes in request".into())
        );
        assert_eq!(parse(b"PING"), Ok(Parsed::Incomplete));
    }

    #[test]
    fn a_request_is_complete_exactly_when_parse_finds_more_than_incomplete() {
        let cases: &[&[u8]] = &[
            b"",
            b"*1\r\n$4\r\nPING\r\n",
            b"*1\r\n$4\r\nPI",
            b"*2\r\n$3\r\nGET\r\n",
            b"*0\r\n",
            b"*x\r\n",
            b"*1\r\n:1\r\n",
            b"*1\r\n$-1\r\n",
            b"*2000000000\r\n",
            b"PING\r\n",
            b"PING",
            b"echo \"a\r\n",
            b"*1\r\n$4\r\nPING\r\n*1\r\n",
        ];
        for &bytes in cases {
            let complete = !matches!(parse(bytes), Ok(Parsed::Incomplete));
            assert_eq!(
                is_complete(bytes),
                complete,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        let too_long_inline = vec![b'a'; INLINE_MAX_BYTES + 1];
        assert!(is_complete(&too_long_inline));
        assert!(parse(&too_long_inline).is_err());
    }

    #[test]
    fn integers_parse_as_string2ll() {
        for bad in ["", "-", "+1", " 1", "01", "-0", "1.0", "9223372036854775808"] {
            assert_eq!(string_to_i64(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(string_to_i64(b"0"), Some(0));
        assert_eq!(string_to_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(string_to_i64(b"9223372036854775807"), Some(i64::MAX));
    }
}
