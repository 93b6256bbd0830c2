//! RESP framing over a byte stream, used by both the fake node and the lock client.

use bytes::{Buf, BytesMut};
use redis_protocol::resp2::{decode::decode, encode::encode, types::Resp2Frame};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::Frame;

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

/// A RESP connection: reads whole frames, writes whole frames.
pub struct Connection<S> {
    stream: S,
    buffer: BytesMut,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Connection<S> {
    /// Wraps a byte stream.
    pub fn new(stream: S) -> Self {
        Connection {
            stream,
            buffer: BytesMut::with_capacity(4096),
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

    /// Writes one frame and flushes it.
    pub async fn write_frame(&mut self, frame: &Frame) -> std::io::Result<()> {
        let mut bytes = vec![0; frame.encode_len(false)];
        encode(&mut bytes, frame, false).map_err(|e| std::io::Error::other(e.details().to_string()))?;
        self.stream.write_all(&bytes).await?;
        self.stream.flush().await
    }
}
