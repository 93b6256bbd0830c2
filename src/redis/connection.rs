//! RESP framing over a byte stream, used by both the fake node and the lock client: the
//! one place that knows the wire format. Clients write requests and read frames; the node
//! reads requests (as Redis's own parser does, see [`super::request`]) and writes replies
//! in the RESP version each connection chose with HELLO.

use std::ops::Range;
use std::sync::OnceLock;

use bytes::{Buf, BytesMut};
use redis_protocol::resp2::decode::decode;
use smallvec::SmallVec;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::Frame;
use super::number::format_g;
use super::request::{self, Found};

/// A request's words, borrowed from the connection's buffer until its command is parsed:
/// up to eight in place (a lock client's longest request, `SET key value NX PX ms`, has six).
pub type RequestWords<'a> = SmallVec<[&'a [u8]; 8]>;

/// The RESP version a connection speaks: 2 until HELLO 3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

/// A reply of the node: a RESP2 frame, or one of the shapes whose RESP3 form differs. Each
/// is encoded in the connection's protocol; scripts see the RESP2 form
/// ([`Reply::into_resp2`]), as Redis's `redis.call` does.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Frame(Frame),
    /// HELLO's and HGETALL's reply: `%N` in RESP3, a flat array of keys and values in RESP2.
    Map(Vec<(Frame, Frame)>),
    /// A map whose values have shapes of their own (FUNCTION STATS): `%N` in RESP3, a flat
    /// array of keys and values in RESP2.
    Nested(Vec<(Frame, Reply)>),
    /// A reply as Redis wrote it in RESP3 (COMMAND INFO and DOCS): as is in RESP3, with
    /// its maps and sets as arrays and its nulls as `$-1` in RESP2.
    Resp3(Vec<u8>),
    /// INFO's reply: `=N` with `txt:` in RESP3, a bulk string in RESP2.
    Verbatim(Vec<u8>),
    /// A score: `,` in RESP3, a bulk string in RESP2, written as Redis 7.0 writes doubles
    /// ([`format_double`]).
    Double(f64),
    /// Members and scores (ZRANGE WITHSCORES): `[member, score]` pairs in RESP3, one flat
    /// array in RESP2.
    Scored(Vec<(Vec<u8>, f64)>),
    /// No array (a blocking pop's timeout, a counted pop of a missing list): `*-1` in
    /// RESP2, `_` in RESP3.
    NullArray,
    /// A set's members (SMEMBERS, SPOP with a count): `~N` in RESP3, an array in RESP2.
    Set(Vec<Vec<u8>>),
    /// Values by key (XREAD's streams): `%N` in RESP3, an array of `[key, value]` pairs in
    /// RESP2.
    Keyed(Vec<(Frame, Frame)>),
    /// Out-of-band messages (pub/sub confirmations and messages), one after another: each
    /// a `>N` push frame in RESP3, an array in RESP2.
    Pushes(Vec<Vec<Frame>>),
    /// An array of replies, each in its own shape (EXEC's).
    Replies(Vec<Reply>),
    /// EXEC's or a script's reply, sent as the reply inside: its errors were counted in the
    /// node's statistics as its calls ran (see [`super::stats`]).
    Counted(Box<Reply>),
}

impl From<Frame> for Reply {
    fn from(frame: Frame) -> Reply {
        Reply::Frame(frame)
    }
}

/// A double as Redis 7.0 replies with one (`addReplyDouble`): `%.17g`, and `inf`/`-inf`.
pub fn format_double(value: f64) -> String {
    format_g(value, 17)
}

impl Reply {
    /// The RESP2 form, as a frame (what a script's `redis.call` converts).
    pub fn into_resp2(self) -> Frame {
        let bulk = Frame::BulkString;
        match self {
            Reply::Frame(frame) => frame,
            Reply::Counted(reply) => reply.into_resp2(),
            Reply::Map(pairs) => Frame::Array(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()),
            Reply::Nested(pairs) => Frame::Array(
                pairs
                    .into_iter()
                    .flat_map(|(key, value)| [key, value.into_resp2()])
                    .collect(),
            ),
            Reply::Resp3(bytes) => match decode(&super::cmd::descriptions::resp3_to_resp2(&bytes)) {
                Ok(Some((frame, _))) => frame,
                _ => Frame::Null,
            },
            Reply::Verbatim(text) => bulk(text),
            Reply::Double(value) => bulk(format_double(value).into_bytes()),
            Reply::Scored(pairs) => Frame::Array(
                pairs
                    .into_iter()
                    .flat_map(|(member, score)| [bulk(member), bulk(format_double(score).into_bytes())])
                    .collect(),
            ),
            Reply::NullArray => Frame::Null,
            Reply::Set(members) => Frame::Array(members.into_iter().map(bulk).collect()),
            Reply::Keyed(pairs) => {
                Frame::Array(pairs.into_iter().map(|(k, v)| Frame::Array(vec![k, v])).collect())
            }
            Reply::Pushes(pushes) => Frame::Array(pushes.into_iter().map(Frame::Array).collect()),
            Reply::Replies(replies) => Frame::Array(replies.into_iter().map(Reply::into_resp2).collect()),
        }
    }

    /// The bytes of this reply in `protocol`.
    pub fn encode(&self, protocol: Protocol) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        self.encode_into(protocol, &mut out);
        out
    }

    /// Appends the bytes of this reply in `protocol` to `out` (a connection's output
    /// buffer, reused from reply to reply).
    pub fn encode_into(&self, protocol: Protocol, out: &mut Vec<u8>) {
        match (self, protocol) {
            (Reply::Frame(frame), _) => encode_frame(frame, protocol, out),
            (Reply::Counted(reply), _) => reply.encode_into(protocol, out),
            (Reply::Map(pairs), Protocol::Resp2) => {
                out.extend(format!("*{}\r\n", pairs.len() * 2).as_bytes());
                for (key, value) in pairs {
                    encode_frame(key, protocol, out);
                    encode_frame(value, protocol, out);
                }
            }
            (Reply::Keyed(pairs), Protocol::Resp2) => {
                push_line(out, b'*', pairs.len() as i64);
                for (key, value) in pairs {
                    out.extend(b"*2\r\n");
                    encode_frame(key, protocol, out);
                    encode_frame(value, protocol, out);
                }
            }
            (Reply::Map(pairs) | Reply::Keyed(pairs), Protocol::Resp3) => {
                out.extend(format!("%{}\r\n", pairs.len()).as_bytes());
                for (key, value) in pairs {
                    encode_frame(key, protocol, out);
                    encode_frame(value, protocol, out);
                }
            }
            (Reply::Nested(pairs), _) => {
                let (prefix, count) = match protocol {
                    Protocol::Resp2 => (b'*', pairs.len() * 2),
                    Protocol::Resp3 => (b'%', pairs.len()),
                };
                push_line(out, prefix, count as i64);
                for (key, value) in pairs {
                    encode_frame(key, protocol, out);
                    value.encode_into(protocol, out);
                }
            }
            (Reply::Resp3(bytes), Protocol::Resp3) => out.extend(bytes),
            (Reply::Resp3(bytes), Protocol::Resp2) => {
                out.extend(super::cmd::descriptions::resp3_to_resp2(bytes))
            }
            (Reply::Verbatim(text), Protocol::Resp2) => {
                encode_frame(&Frame::BulkString(text.clone()), protocol, out)
            }
            (Reply::Verbatim(text), Protocol::Resp3) => {
                out.extend(format!("={}\r\ntxt:", text.len() + 4).as_bytes());
                out.extend(text);
                out.extend(b"\r\n");
            }
            (Reply::Double(value), Protocol::Resp3) => {
                out.extend(format!(",{}\r\n", format_double(*value)).as_bytes());
            }
            (Reply::Scored(pairs), Protocol::Resp3) => {
                push_line(out, b'*', pairs.len() as i64);
                for (member, score) in pairs {
                    out.extend(b"*2\r\n");
                    encode_frame(&Frame::BulkString(member.clone()), protocol, out);
                    Reply::Double(*score).encode_into(protocol, out);
                }
            }
            (Reply::NullArray, Protocol::Resp2) => out.extend(b"*-1\r\n"),
            (Reply::NullArray, Protocol::Resp3) => out.extend(b"_\r\n"),
            (Reply::Set(members), _) => {
                let prefix = match protocol {
                    Protocol::Resp2 => b'*',
                    Protocol::Resp3 => b'~',
                };
                push_line(out, prefix, members.len() as i64);
                for member in members {
                    encode_frame(&Frame::BulkString(member.clone()), protocol, out);
                }
            }
            (Reply::Replies(replies), _) => {
                push_line(out, b'*', replies.len() as i64);
                for reply in replies {
                    reply.encode_into(protocol, out);
                }
            }
            (Reply::Pushes(pushes), _) => {
                let prefix = match protocol {
                    Protocol::Resp2 => b'*',
                    Protocol::Resp3 => b'>',
                };
                for push in pushes {
                    push_line(out, prefix, push.len() as i64);
                    for frame in push {
                        encode_frame(frame, protocol, out);
                    }
                }
            }
            (Reply::Double(_) | Reply::Scored(_), Protocol::Resp2) => {
                encode_frame(&self.clone().into_resp2(), protocol, out)
            }
        }
    }
}

fn encode_frame(frame: &Frame, protocol: Protocol, out: &mut Vec<u8>) {
    match frame {
        Frame::SimpleString(text) => {
            out.push(b'+');
            out.extend(text);
            out.extend(b"\r\n");
        }
        Frame::Error(text) => {
            out.push(b'-');
            out.extend(text.as_bytes());
            out.extend(b"\r\n");
        }
        Frame::Integer(n) => push_line(out, b':', *n),
        Frame::BulkString(bytes) => {
            push_line(out, b'$', bytes.len() as i64);
            out.extend(bytes);
            out.extend(b"\r\n");
        }
        Frame::Array(items) => {
            push_line(out, b'*', items.len() as i64);
            for item in items {
                encode_frame(item, protocol, out);
            }
        }
        Frame::Null if protocol == Protocol::Resp3 => out.extend(b"_\r\n"),
        Frame::Null => out.extend(b"$-1\r\n"),
    }
}

/// Room for `frame`'s RESP2 bytes, at least: its words, and 24 bytes for each line's type,
/// number and CRLF (a request encoded by itself grows no buffer).
fn room(frame: &Frame) -> usize {
    /// A type byte, a sign and 19 digits, CRLF.
    const LINE: usize = 24;
    match frame {
        Frame::SimpleString(text) => text.len() + LINE,
        Frame::Error(text) => text.len() + LINE,
        Frame::BulkString(bytes) => bytes.len() + 2 * LINE,
        Frame::Array(items) => LINE + items.iter().map(room).sum::<usize>(),
        _ => LINE,
    }
}

/// Appends `<prefix><n>\r\n` (an integer reply, a length) without a formatted string. The
/// line is built whole and appended at once: one capacity check and one copy, where a
/// push per part cost three of each (issue 33; most lines are a one-digit length).
fn push_line(out: &mut Vec<u8>, prefix: u8, n: i64) {
    if let Ok(digit @ 0..=9) = u8::try_from(n) {
        out.extend_from_slice(&[prefix, b'0' + digit, b'\r', b'\n']);
        return;
    }
    let mut number = itoa::Buffer::new();
    let digits = number.format(n).as_bytes();
    // The prefix, a sign and 19 digits at most, CRLF.
    let mut line = [0u8; 23];
    let end = digits.len() + 3;
    line[0] = prefix;
    line[1..end - 2].copy_from_slice(digits);
    line[end - 2..end].copy_from_slice(b"\r\n");
    out.extend_from_slice(&line[..end]);
}

/// Why reading a frame failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
    #[error("the peer closed the connection")]
    Closed,
    /// The bytes are not RESP. Redis answers `-ERR Protocol error: …` and hangs up.
    #[error("Protocol error: {0}")]
    Protocol(String),
}

/// A RESP connection: reads whole frames, writes whole frames. Replies can be queued and
/// written together ([`Connection::queue_reply`], [`Connection::flush`]): a pipeline's
/// replies then leave in one write, as Redis sends what a client's buffer holds before
/// the event loop sleeps.
pub struct Connection<S> {
    stream: S,
    buffer: BytesMut,
    /// Encoded replies not yet written to the stream.
    out: Vec<u8>,
    /// The request [`Connection::next_request`] found at the front of `buffer`, until
    /// [`Connection::end_request`]: where its words are (a multibulk request's), ...
    spans: Vec<Range<usize>>,
    /// ... or its words (an inline request's), and its length in bytes.
    inline: Vec<Vec<u8>>,
    consumed: usize,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Connection<S> {
    /// Wraps a byte stream.
    pub fn new(stream: S) -> Self {
        Connection {
            stream,
            buffer: BytesMut::with_capacity(4096),
            out: Vec::new(),
            spans: Vec::new(),
            inline: Vec::new(),
            consumed: 0,
        }
    }

    /// Reads the next frame; `Ok(None)` when the peer closed cleanly between frames.
    pub async fn read_frame(&mut self) -> Result<Option<Frame>, ConnectionError> {
        loop {
            if !self.buffer.is_empty() {
                match decode(&self.buffer) {
                    Ok(Some((frame, used))) => {
                        self.buffer.advance(used);
                        return Ok(Some(frame));
                    }
                    Ok(None) => {}
                    Err(e) => return Err(ConnectionError::Protocol(e.details().to_string())),
                }
            }
            if self.stream.read_buf(&mut self.buffer).await? == 0 {
                return if self.buffer.is_empty() {
                    Ok(None)
                } else {
                    Err(ConnectionError::Closed)
                };
            }
        }
    }

    /// Reads the next request's words, parsed as Redis parses them, copied out of the
    /// buffer; `Ok(None)` when the peer closed cleanly between requests. Empty words mean
    /// a request with nothing to run (Redis answers nothing).
    pub async fn read_request(&mut self) -> Result<Option<Vec<Vec<u8>>>, ConnectionError> {
        if !self.next_request().await? {
            return Ok(None);
        }
        let words = self.request_words().into_iter().map(<[u8]>::to_vec).collect();
        self.end_request();
        Ok(Some(words))
    }

    /// Reads until a whole request is at the front of the buffer, parsed as Redis parses
    /// them: its words are then [`Connection::request_words`] until
    /// [`Connection::end_request`]. `Ok(false)` when the peer closed cleanly between
    /// requests. Cancel-safe: a request is taken only as this returns.
    pub async fn next_request(&mut self) -> Result<bool, ConnectionError> {
        self.end_request();
        loop {
            match request::find(&self.buffer, &mut self.spans) {
                Ok(Found::Multibulk { consumed }) => {
                    self.consumed = consumed;
                    return Ok(true);
                }
                Ok(Found::Inline { words, consumed }) => {
                    self.inline = words;
                    self.consumed = consumed;
                    return Ok(true);
                }
                Ok(Found::Incomplete) => {}
                Err(reason) => return Err(ConnectionError::Protocol(reason)),
            }
            if self.stream.read_buf(&mut self.buffer).await? == 0 {
                return if self.buffer.is_empty() {
                    Ok(false)
                } else {
                    Err(ConnectionError::Closed)
                };
            }
        }
    }

    /// The words of the request [`Connection::next_request`] found, borrowed from the
    /// buffer (no words: nothing to run, and Redis answers nothing). A lock client's
    /// requests fit in place: no list is allocated for them.
    pub fn request_words(&self) -> RequestWords<'_> {
        if self.inline.is_empty() {
            self.spans.iter().map(|span| &self.buffer[span.clone()]).collect()
        } else {
            self.inline.iter().map(Vec::as_slice).collect()
        }
    }

    /// Takes the request [`Connection::next_request`] found out of the buffer (nothing if
    /// it found none since the last call).
    pub fn end_request(&mut self) {
        self.buffer.advance(std::mem::take(&mut self.consumed));
        self.spans.clear();
        self.inline.clear();
    }

    /// Reads whatever bytes arrive next into the buffer, without parsing them (a blocked
    /// connection watching for its client to hang up); `Ok(0)` when the client closed.
    pub async fn read_more(&mut self) -> std::io::Result<usize> {
        self.stream.read_buf(&mut self.buffer).await
    }

    /// Whether the bytes already read hold another whole request (or bytes that are not
    /// RESP, which the next read reports): a pipeline the node answers before it writes.
    pub fn has_request(&self) -> bool {
        request::is_complete(&self.buffer)
    }

    /// Whether nothing is half read and nothing unwritten: the connection stands between
    /// requests.
    pub fn is_drained(&self) -> bool {
        self.buffer.is_empty() && self.out.is_empty()
    }

    /// Queues one reply in the connection's protocol; [`Connection::flush`] writes it.
    pub fn queue_reply(&mut self, reply: &Reply, protocol: Protocol) {
        reply.encode_into(protocol, &mut self.out);
    }

    /// Writes every queued reply and flushes the stream. Cancel-safe: what was written
    /// leaves the queue as it goes, so a flush cut short resumes where it stopped.
    pub async fn flush(&mut self) -> std::io::Result<()> {
        while !self.out.is_empty() {
            let written = self.stream.write(&self.out).await?;
            if written == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.out.drain(..written);
        }
        self.stream.flush().await
    }

    /// Writes one reply in the connection's protocol, after any queued ones, and flushes.
    pub async fn write_reply(&mut self, reply: &Reply, protocol: Protocol) -> std::io::Result<()> {
        self.queue_reply(reply, protocol);
        self.flush().await
    }

    /// The byte stream back, with the bytes read but not yet parsed (a connection that
    /// becomes a replication link). Replies still queued are dropped: flush first.
    pub fn into_parts(self) -> (S, Vec<u8>) {
        (self.stream, self.buffer.to_vec())
    }

    /// Writes one frame (RESP2, as clients send requests) and flushes it. It is encoded
    /// into the connection's output buffer, whose allocation is kept from request to
    /// request. What an earlier write left unsent (it was cancelled, a timeout) is dropped
    /// first, as it was when each request had a buffer of its own: a request cut short is
    /// never sent later.
    pub async fn write_frame(&mut self, frame: &Frame) -> std::io::Result<()> {
        self.out.clear();
        encode_frame(frame, Protocol::Resp2, &mut self.out);
        self.flush().await
    }

    /// As [`Connection::write_frame`], for a request encoded already: the same bytes,
    /// copied rather than encoded again.
    pub async fn write_encoded(&mut self, request: &Encoded) -> std::io::Result<()> {
        self.out.clear();
        self.out.extend_from_slice(&request.bytes);
        self.flush().await
    }
}

/// A request with its bytes as a client writes them (RESP2), encoded once: a lock attempt
/// sends the same `SET`, and a release the same script, to every node of a fan-out
/// (encoding a lock's `SET` cost ~800 instructions, issue 33).
pub struct Encoded {
    bytes: Vec<u8>,
    /// The request as a frame: given, or read back from `bytes` when first asked for.
    frame: OnceLock<Frame>,
}

impl Encoded {
    pub fn new(frame: Frame) -> Self {
        let mut bytes = Vec::with_capacity(room(&frame));
        encode_frame(&frame, Protocol::Resp2, &mut bytes);
        Encoded {
            bytes,
            frame: OnceLock::from(frame),
        }
    }

    /// The request of `words`, encoded straight from them: no frame is built (one word
    /// allocated each) unless someone asks for it, which only a watcher of the wire does
    /// (a lock's `SET` built as a frame cost eight allocations an attempt, issue 33).
    pub fn of_words(words: &[&[u8]]) -> Self {
        /// A type byte, a sign and 19 digits, CRLF (as [`room`] counts a line).
        const LINE: usize = 24;
        let room = LINE + words.iter().map(|word| word.len() + 2 * LINE).sum::<usize>();
        let mut bytes = Vec::with_capacity(room);
        push_line(&mut bytes, b'*', words.len() as i64);
        for word in words {
            push_line(&mut bytes, b'$', word.len() as i64);
            bytes.extend_from_slice(word);
            bytes.extend_from_slice(b"\r\n");
        }
        Encoded {
            bytes,
            frame: OnceLock::new(),
        }
    }

    /// The request as a frame (what a watcher of the client's traffic is told).
    pub fn frame(&self) -> &Frame {
        self.frame.get_or_init(|| match request::parse(&self.bytes) {
            Ok(request::Parsed::Request { words, .. }) => request::build(words),
            _ => unreachable!("an encoded request reads back as itself"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_lengths_encode_as_resp_writes_them() {
        let encode = |frame: Frame| Reply::Frame(frame).encode(Protocol::Resp2);
        assert_eq!(encode(Frame::Integer(0)), b":0\r\n");
        assert_eq!(encode(Frame::Integer(9)), b":9\r\n");
        assert_eq!(encode(Frame::Integer(10)), b":10\r\n");
        assert_eq!(encode(Frame::Integer(-1)), b":-1\r\n");
        assert_eq!(encode(Frame::Integer(i64::MAX)), b":9223372036854775807\r\n");
        assert_eq!(encode(Frame::Integer(-42)), b":-42\r\n");
        assert_eq!(encode(Frame::Integer(i64::MIN)), b":-9223372036854775808\r\n");
        assert_eq!(encode(Frame::BulkString(b"token".to_vec())), b"$5\r\ntoken\r\n");
        assert_eq!(
            encode(Frame::Array(vec![
                Frame::Integer(7),
                Frame::Error("ERR no".into())
            ])),
            b"*2\r\n:7\r\n-ERR no\r\n"
        );
    }

    /// A request encoded once goes out as the very bytes `write_frame` writes, after
    /// whatever an earlier write left unsent was dropped, as there.
    #[tokio::test]
    async fn an_encoded_request_is_written_as_its_frame_would_be() {
        let frame =
            crate::redis::request::build([b"SET".to_vec(), b"lock".to_vec(), b"token-1234567890".to_vec()]);
        let mut written = Vec::new();
        for encoded in [false, true] {
            let (client, mut server) = tokio::io::duplex(1024);
            let mut connection = Connection::new(client);
            connection.out.extend_from_slice(b"left over");
            match encoded {
                false => connection.write_frame(&frame).await.unwrap(),
                true => connection
                    .write_encoded(&Encoded::new(frame.clone()))
                    .await
                    .unwrap(),
            }
            drop(connection);
            let mut bytes = Vec::new();
            server.read_to_end(&mut bytes).await.unwrap();
            written.push(bytes);
        }
        assert_eq!(
            written[0],
            b"*3\r\n$3\r\nSET\r\n$4\r\nlock\r\n$16\r\ntoken-1234567890\r\n"
        );
        assert_eq!(written[1], written[0]);
        assert_eq!(Encoded::new(frame.clone()).frame(), &frame);
    }

    /// A request encoded from its words is the one its frame encodes to, and reads back
    /// as that frame, whatever the words hold (empty, CRLF, long enough for two digits).
    #[test]
    fn a_request_encoded_from_its_words_is_its_frame_encoded() {
        let long = vec![b'x'; 300];
        let cases: [&[&[u8]]; 3] = [
            &[b"SET", b"lock", b"token", b"NX", b"PX", b"2000"],
            &[b"EVAL", b"return 1\r\n", b"0"],
            &[b"GET", b"", &long],
        ];
        for words in cases {
            let frame = request::build(words.iter().map(|word| word.to_vec()));
            let from_words = Encoded::of_words(words);
            assert_eq!(from_words.bytes, Encoded::new(frame.clone()).bytes);
            assert_eq!(from_words.frame(), &frame);
        }
    }
}
