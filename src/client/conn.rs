//! One request/reply connection to one Redis node, with a per-request timeout and
//! reconnection after any failure.
//!
//! After a timeout the late reply may still arrive; reading it as the answer to the next
//! request would be wrong, so any failure drops the connection and the next request
//! opens a new one.

use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::connection::{Connection, ConnectionError};

/// Why a request got no reply.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("no reply within {0} ms")]
    Timeout(u64),
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

/// A connection to one node that reconnects on demand.
pub struct Conn<C: Connect, K: Clock> {
    connector: C,
    clock: K,
    timeout_ms: u64,
    connection: Option<Connection<C::Stream>>,
}

impl<C: Connect, K: Clock> Conn<C, K> {
    /// A connection that is opened on first use; each request may take `timeout_ms`.
    pub fn new(connector: C, clock: K, timeout_ms: u64) -> Self {
        Conn {
            connector,
            clock,
            timeout_ms,
            connection: None,
        }
    }

    /// Sends one request and waits for its reply (connecting first if needed).
    pub async fn request(&mut self, request: &Frame) -> Result<Frame, RequestError> {
        self.request_within(request, self.timeout_ms).await
    }

    /// As [`Conn::request`], for a command that may take `timeout_ms` on the server (WAIT).
    pub async fn request_within(&mut self, request: &Frame, timeout_ms: u64) -> Result<Frame, RequestError> {
        let clock = self.clock.clone();
        let result = tokio::select! {
            biased;
            result = self.exchange(request) => result.map_err(RequestError::from),
            () = clock.sleep_ms(timeout_ms) => Err(RequestError::Timeout(timeout_ms)),
        };
        if result.is_err() {
            self.connection = None;
        }
        result
    }

    async fn exchange(&mut self, request: &Frame) -> Result<Frame, ConnectionError> {
        let connection = match &mut self.connection {
            Some(connection) => connection,
            None => self
                .connection
                .insert(Connection::new(self.connector.connect().await?)),
        };
        connection.write_frame(request).await?;
        connection.read_frame().await?.ok_or(ConnectionError::Closed)
    }
}
