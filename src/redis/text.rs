//! Frames as a person reads them in a trace: a request as its words, a reply as redis-cli
//! prints one (`OK`, `(integer) 1`, `(nil)`, `"value"`, `(error) …`, `[…]`).
//!
//! A script body shows as the commands it calls (`<script: exists, hincrby, pexpire (234
//! bytes)>`), other long words are cut, so one request stays one line of a replay.

use super::Frame;

/// Words longer than this (script bodies) are shown cut, with their length.
const SHOWN_WORD_CHARS: usize = 48;

/// A request (an array of words) as its words, space-separated; a word that is not plain
/// printable ASCII is quoted with escapes, and a long one cut.
pub fn request_text(request: &Frame) -> String {
    match request {
        Frame::Array(words) => words.iter().map(word_of).collect::<Vec<_>>().join(" "),
        other => reply_text(other),
    }
}

/// A reply (or a pub/sub message) as redis-cli prints it, on one line.
pub fn reply_text(reply: &Frame) -> String {
    match reply {
        Frame::SimpleString(text) => String::from_utf8_lossy(text).into_owned(),
        Frame::Error(message) => format!("(error) {message}"),
        Frame::Integer(n) => format!("(integer) {n}"),
        Frame::BulkString(bytes) => quoted(bytes),
        Frame::Null => "(nil)".into(),
        Frame::Array(items) => {
            let items: Vec<String> = items.iter().map(reply_text).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

/// One word of a request: a script as the commands it calls; bare when it is printable
/// ASCII without spaces or quotes; quoted otherwise.
fn word_of(frame: &Frame) -> String {
    match frame {
        Frame::BulkString(bytes) if let Some(calls) = script_calls(bytes) => {
            format!("<script: {} ({} bytes)>", calls.join(", "), bytes.len())
        }
        Frame::BulkString(bytes) | Frame::SimpleString(bytes)
            if !bytes.is_empty()
                && bytes.len() <= SHOWN_WORD_CHARS
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_graphic() && *b != b'"' && *b != b'\\') =>
        {
            String::from_utf8_lossy(bytes).into_owned()
        }
        Frame::BulkString(bytes) | Frame::SimpleString(bytes) => quoted(bytes),
        other => reply_text(other),
    }
}

/// The commands a Lua script calls, in order of first call (`redis.call('hincrby', …)` is
/// `hincrby`; a command named by an argument, `redis.call(ARGV[4], …)`, is `ARGV[4]`), or
/// `None` when `bytes` calls none: it is not a script.
fn script_calls(bytes: &[u8]) -> Option<Vec<String>> {
    let body = std::str::from_utf8(bytes).ok()?;
    let mut calls: Vec<String> = Vec::new();
    for (at, _) in body.match_indices("call(") {
        if !(body[..at].ends_with("redis.") || body[..at].ends_with("redis.p")) {
            continue;
        }
        let call = body[at + "call(".len()..].trim_start();
        let name = match call.chars().next() {
            Some(quote @ ('\'' | '"')) => call[1..]
                .split(quote)
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase(),
            _ => call
                .split([',', ')'])
                .next()
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        if !calls.contains(&name) {
            calls.push(name);
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// Bytes in double quotes with Rust's escapes, cut after [`SHOWN_WORD_CHARS`] characters
/// with the whole length given.
fn quoted(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() <= SHOWN_WORD_CHARS {
        return format!("{text:?}");
    }
    let cut: String = text.chars().take(SHOWN_WORD_CHARS).collect();
    format!("{cut:?}…({} bytes)", bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::request::build as request;

    #[test]
    fn a_request_reads_as_its_words_with_odd_words_quoted() {
        let set = request([
            b"SET".to_vec(),
            b"locksim:lock".to_vec(),
            b"a b".to_vec(),
            b"NX".to_vec(),
            b"PX".to_vec(),
            b"5000".to_vec(),
        ]);
        assert_eq!(request_text(&set), r#"SET locksim:lock "a b" NX PX 5000"#);
    }

    #[test]
    fn a_script_reads_as_the_commands_it_calls() {
        let script = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call(\"DEL\", KEYS[1]) \
                      elseif redis.call('get', KEYS[1]) then redis.call(ARGV[4], KEYS[2]) end";
        let eval = request([b"EVAL".to_vec(), script.as_bytes().to_vec(), b"1".to_vec()]);
        assert_eq!(
            request_text(&eval),
            format!("EVAL <script: get, del, ARGV[4] ({} bytes)> 1", script.len())
        );
    }

    #[test]
    fn a_long_word_is_cut_with_its_length() {
        let long = vec![b'x'; 100];
        let text = request_text(&request([b"SET".to_vec(), b"k".to_vec(), long]));
        assert_eq!(
            text,
            format!("SET k \"{}\"…(100 bytes)", "x".repeat(SHOWN_WORD_CHARS))
        );
    }

    #[test]
    fn replies_read_as_redis_cli_prints_them() {
        assert_eq!(reply_text(&Frame::SimpleString(b"OK".to_vec())), "OK");
        assert_eq!(reply_text(&Frame::Integer(-2)), "(integer) -2");
        assert_eq!(reply_text(&Frame::Null), "(nil)");
        assert_eq!(
            reply_text(&Frame::Error("NOSCRIPT No matching script".into())),
            "(error) NOSCRIPT No matching script"
        );
        let message = Frame::Array(vec![
            Frame::BulkString(b"message".to_vec()),
            Frame::BulkString(b"ch".to_vec()),
            Frame::BulkString(b"0".to_vec()),
        ]);
        assert_eq!(reply_text(&message), r#"["message", "ch", "0"]"#);
    }
}
