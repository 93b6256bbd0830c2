//! A node's error statistics: how many error replies it has sent, in all
//! (`total_error_replies` in `INFO stats`) and by error code (`INFO errorstats`), as Redis
//! 7.0 keeps them until CONFIG RESETSTAT.
//!
//! Redis counts an error where it writes one to a client (`afterErrorReply`), so the server
//! counts each reply it sends ([`ErrorStats::count_reply`]). Scripts are the exception: an
//! error a command returns to `redis.call` or `redis.pcall` counts once when it happens,
//! whether the script swallows it or hands it back, and a script's own error replies count
//! when the script returns them. `lua.rs` applies those rules while the script runs and
//! marks its reply [`Reply::Counted`], which this walk skips.

use std::collections::BTreeMap;

use super::Frame;
use super::connection::Reply;

/// Redis finds an error's code (the text before its first space) within this many bytes of
/// the reply, its leading `-` included; an error without a space there counts as `ERR`.
const CODE_SEARCH_BYTES: usize = 32;

/// Error replies sent since the node started or since CONFIG RESETSTAT.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ErrorStats {
    /// By error code, in byte order (Redis keeps them in a radix tree and lists them so).
    by_code: BTreeMap<Vec<u8>, u64>,
    total: u64,
}

impl ErrorStats {
    /// Counts one error reply; `text` is the reply as sent, without its leading `-`.
    pub fn count(&mut self, text: &str) {
        self.total += 1;
        *self.by_code.entry(code(text).to_vec()).or_default() += 1;
    }

    /// Counts every error in a reply the server sends, EXEC's replies included; a script's
    /// reply ([`Reply::Counted`]) was counted as the script ran.
    pub fn count_reply(&mut self, reply: &Reply) {
        match reply {
            Reply::Frame(frame) => self.count_frame(frame),
            Reply::Map(pairs) => {
                for (key, value) in pairs {
                    self.count_frame(key);
                    self.count_frame(value);
                }
            }
            Reply::Nested(pairs) => {
                for (key, value) in pairs {
                    self.count_frame(key);
                    self.count_reply(value);
                }
            }
            Reply::Replies(replies) => replies.iter().for_each(|reply| self.count_reply(reply)),
            Reply::Counted(_)
            | Reply::Resp3(_)
            | Reply::Verbatim(_)
            | Reply::Double(_)
            | Reply::Scored(_)
            | Reply::NullArray
            | Reply::Pushes(_) => {}
        }
    }

    /// Counts the errors in a frame and hands it back (what a script's run replies).
    pub fn counted(&mut self, frame: Frame) -> Frame {
        self.count_frame(&frame);
        frame
    }

    fn count_frame(&mut self, frame: &Frame) {
        match frame {
            Frame::Error(text) => self.count(text),
            Frame::Array(items) => items.iter().for_each(|item| self.count_frame(item)),
            _ => {}
        }
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&mut self) {
        *self = ErrorStats::default();
    }

    /// Every error reply counted (`total_error_replies`).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// `INFO errorstats`'s lines: `errorstat_CODE:count=N`, codes in byte order.
    pub fn info_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.by_code
            .iter()
            .map(|(code, count)| format!("errorstat_{}:count={count}", String::from_utf8_lossy(code)))
    }
}

/// The code an error counts under: the bytes before the first space, if the space lies
/// within [`CODE_SEARCH_BYTES`] of the `-` that starts the reply; otherwise `ERR`.
fn code(text: &str) -> &[u8] {
    let bytes = text.as_bytes();
    let searched = &bytes[..bytes.len().min(CODE_SEARCH_BYTES - 1)];
    match searched.iter().position(|&b| b == b' ') {
        Some(space) => &bytes[..space],
        None => b"ERR",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> Frame {
        Frame::Error(text.into())
    }

    /// Every expectation below was read from redis-server 7.0.15's `INFO errorstats` after
    /// CONFIG RESETSTAT and the same replies.
    #[test]
    fn errors_count_under_their_code_in_byte_order() {
        let mut stats = ErrorStats::default();
        stats.count("WRONGTYPE Operation against a key holding the wrong kind of value");
        stats.count("ERR unknown command 'nosuch', with args beginning with: ");
        stats.count("WRONGTYPE Operation against a key holding the wrong kind of value");
        stats.count("lower case");
        stats.count("EXECABORT Transaction discarded because of previous errors.");
        assert_eq!(stats.total(), 5);
        assert_eq!(
            stats.info_lines().collect::<Vec<_>>(),
            [
                "errorstat_ERR:count=1",
                "errorstat_EXECABORT:count=1",
                "errorstat_WRONGTYPE:count=2",
                "errorstat_lower:count=1",
            ]
        );
        stats.reset();
        assert_eq!((stats.total(), stats.info_lines().count()), (0, 0));
    }

    #[test]
    fn an_error_without_a_space_in_its_first_bytes_counts_as_err() {
        // `return redis.error_reply('aaa…a b')` with 42 a's: the reply keeps its text, and
        // counts as ERR.
        assert_eq!(code(&format!("{} b", "a".repeat(42))), b"ERR");
        // The space at byte 31 of the reply (30 bytes of code after the `-`) is still found.
        assert_eq!(code(&format!("{} b", "a".repeat(30))), "a".repeat(30).as_bytes());
        assert_eq!(code(&format!("{} b", "a".repeat(31))), b"ERR");
        assert_eq!(code("nospace"), b"ERR");
    }

    #[test]
    fn exec_replies_count_each_error_and_script_replies_are_skipped() {
        let mut stats = ErrorStats::default();
        stats.count_reply(&Reply::Replies(vec![
            Reply::Frame(Frame::SimpleString(b"OK".to_vec())),
            Reply::Frame(error(
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            )),
            Reply::Counted(Frame::Array(vec![error("IN array")])),
            Reply::Frame(error("ERR value is not an integer or out of range")),
        ]));
        assert_eq!(
            stats.info_lines().collect::<Vec<_>>(),
            ["errorstat_ERR:count=1", "errorstat_WRONGTYPE:count=1"]
        );
        assert_eq!(stats.total(), 2);
    }
}
