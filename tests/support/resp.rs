//! A blocking RESP2/RESP3 client that reads replies into a comparable tree, for tests that
//! talk to the fake node and to a real redis-server the same way.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One reply, keeping every distinction the wire makes (`$-1`, `*-1` and `_` differ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(String),
    NullBulk,
    Array(Vec<Value>),
    NullArray,
    /// RESP3 `_`.
    Null,
    /// RESP3 `,`: a double, as the server wrote it.
    Double(String),
    /// RESP3 `%`.
    Map(Vec<(Value, Value)>),
    /// RESP3 `~`.
    Set(Vec<Value>),
    /// RESP3 `>`: an out-of-band message (pub/sub).
    Push(Vec<Value>),
    /// RESP3 `=`: format and text.
    Verbatim(String, String),
    /// The server closed the connection instead of replying.
    Closed,
    /// No reply within the read timeout.
    NoReply,
    /// Bytes that are not RESP.
    Garbage(String),
}

/// How long a test waits for one reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection to a server.
pub struct RespClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

/// The multibulk encoding of a request.
pub fn encode(words: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for word in words {
        out.extend(format!("${}\r\n", word.len()).as_bytes());
        out.extend(word);
        out.extend(b"\r\n");
    }
    out
}

impl RespClient {
    pub fn connect(addr: SocketAddr) -> RespClient {
        RespClient::try_connect(addr, REPLY_TIMEOUT).unwrap()
    }

    /// Connects, waiting at most `reply_timeout` for each reply; fails if nothing listens.
    pub fn try_connect(addr: SocketAddr, reply_timeout: Duration) -> std::io::Result<RespClient> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(reply_timeout))?;
        Ok(RespClient {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Sends raw bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        let _ = self.writer.write_all(bytes);
    }

    /// Sends a multibulk request and reads its reply.
    pub fn request(&mut self, words: &[Vec<u8>]) -> Value {
        self.send(&encode(words));
        self.read()
    }

    /// Reads one reply.
    pub fn read(&mut self) -> Value {
        match read_value(&mut self.reader) {
            Ok(value) => value,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Value::NoReply
            }
            Err(_) => Value::Closed,
        }
    }

    /// Whether a reply (or the end of the stream) waits to be read: never waits for one.
    pub fn has_pending_reply(&mut self) -> bool {
        if !self.reader.buffer().is_empty() {
            return true;
        }
        let _ = self.writer.set_nonblocking(true);
        let peeked = self.writer.peek(&mut [0; 1]);
        let _ = self.writer.set_nonblocking(false);
        !matches!(peeked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Whether the server has closed the connection (reads end of stream).
    pub fn is_closed(&mut self) -> bool {
        matches!(self.read(), Value::Closed)
    }
}

fn line(reader: &mut impl BufRead) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    if reader.read_until(b'\n', &mut bytes)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.trim_end_matches(['\r', '\n']).to_string())
}

fn blob(reader: &mut impl BufRead, len: usize) -> std::io::Result<String> {
    let mut bytes = vec![0; len + 2];
    reader.read_exact(&mut bytes)?;
    bytes.truncate(len);
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn read_value(reader: &mut impl BufRead) -> std::io::Result<Value> {
    let header = line(reader)?;
    let (kind, rest) = header.split_at(header.len().min(1));
    let number = || rest.parse::<i64>();
    Ok(match kind {
        "+" => Value::Simple(rest.to_string()),
        "-" => Value::Error(rest.to_string()),
        ":" => number().map_or(Value::Garbage(header.clone()), Value::Int),
        "_" => Value::Null,
        "," => Value::Double(rest.to_string()),
        "$" => match number() {
            Ok(-1) => Value::NullBulk,
            Ok(n) if n >= 0 => Value::Bulk(blob(reader, n as usize)?),
            _ => Value::Garbage(header),
        },
        "=" => match number() {
            Ok(n) if n >= 4 => {
                let text = blob(reader, n as usize)?;
                let (format, body) = text.split_at(4);
                Value::Verbatim(format.trim_end_matches(':').to_string(), body.to_string())
            }
            _ => Value::Garbage(header),
        },
        "*" => match number() {
            Ok(-1) => Value::NullArray,
            Ok(n) if n >= 0 => Value::Array((0..n).map(|_| read_value(reader)).collect::<Result<_, _>>()?),
            _ => Value::Garbage(header),
        },
        "~" => match number() {
            Ok(n) if n >= 0 => Value::Set((0..n).map(|_| read_value(reader)).collect::<Result<_, _>>()?),
            _ => Value::Garbage(header),
        },
        ">" => match number() {
            Ok(n) if n >= 0 => Value::Push((0..n).map(|_| read_value(reader)).collect::<Result<_, _>>()?),
            _ => Value::Garbage(header),
        },
        "%" => match number() {
            Ok(n) if n >= 0 => Value::Map(
                (0..n)
                    .map(|_| Ok((read_value(reader)?, read_value(reader)?)))
                    .collect::<std::io::Result<_>>()?,
            ),
            _ => Value::Garbage(header),
        },
        _ => Value::Garbage(header),
    })
}
