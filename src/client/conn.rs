//! One request/reply connection to one Redis node, with a per-request timeout and
//! reconnection after any failure.
//!
//! After a timeout the late reply may still arrive; reading it as the answer to the next
//! request would be wrong, so any failure drops the connection and the next request
//! opens a new one. The same holds for a request whose future was dropped before its
//! reply came (a watchdog cancelled mid-renewal when the work ended): its reply is still
//! on the way, so the next request on that connection starts on a new one.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use super::error::RequestError;
use super::observe::{Tap, Traffic};
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::connection::{Connection, ConnectionError, Encoded};
use crate::woken::Woken;

/// A connection to one node that reconnects on demand.
pub struct Conn<C: Connect, K: Clock> {
    link: Link<C>,
    clock: K,
    timeout_ms: u64,
    /// Polls each request's timeout only when its timer (or a step of the clock) woke it.
    timeout_wakes: Woken,
    /// A request was sent and its reply not read: set before each exchange, cleared after.
    awaiting_reply: bool,
}

/// What an exchange works with, apart from the clock: a request borrows this mutably while
/// its timeout borrows the clock, so no request clones the clock (issue 33).
struct Link<C: Connect> {
    connector: C,
    connection: Option<Connection<C::Stream>>,
    /// On a `READONLY` reply, drop the connection and send the request again on a new one.
    reconnect_on_readonly: bool,
    /// Told every frame written and read, when someone watches the client.
    tap: Option<Tap>,
}

/// What a request sends: a frame, encoded as it is written, or a request encoded already
/// (one a fan-out sends to every node).
#[derive(Clone, Copy)]
pub enum Outgoing<'a> {
    Frame(&'a Frame),
    Encoded(&'a Encoded),
}

impl<'a> From<&'a Frame> for Outgoing<'a> {
    fn from(frame: &'a Frame) -> Self {
        Outgoing::Frame(frame)
    }
}

impl<'a> From<&'a Encoded> for Outgoing<'a> {
    fn from(request: &'a Encoded) -> Self {
        Outgoing::Encoded(request)
    }
}

impl Outgoing<'_> {
    fn frame(&self) -> &Frame {
        match self {
            Outgoing::Frame(frame) => frame,
            Outgoing::Encoded(request) => request.frame(),
        }
    }
}

/// Whether `reply` is a demoted master's refusal of a write (or of a script that writes).
pub fn is_readonly(reply: &Frame) -> bool {
    matches!(reply, Frame::Error(message) if message.starts_with("READONLY"))
}

impl<C: Connect, K: Clock> Conn<C, K> {
    /// A connection that is opened on first use; each request may take `timeout_ms`.
    pub fn new(connector: C, clock: K, timeout_ms: u64) -> Self {
        Conn {
            link: Link {
                connector,
                connection: None,
                reconnect_on_readonly: false,
                tap: None,
            },
            clock,
            timeout_ms,
            timeout_wakes: Woken::default(),
            awaiting_reply: false,
        }
    }

    /// Reports every frame this connection writes and reads to `tap`.
    pub fn tapped(&mut self, tap: Tap) {
        self.link.tap = Some(tap);
    }

    /// Where this node's traffic is reported, for a connection of its own beside this one
    /// ([`Conn::open_another`]).
    pub fn tap(&self) -> Option<&Tap> {
        self.link.tap.as_ref()
    }

    /// Makes a `READONLY` reply drop the connection and resend the request once on a new
    /// one (see [`OnReadonly::Reconnect`](super::options::OnReadonly::Reconnect)).
    pub fn reconnect_on_readonly(mut self, reconnect: bool) -> Self {
        self.link.reconnect_on_readonly = reconnect;
        self
    }

    /// Sends one request and waits for its reply (connecting first if needed).
    pub fn request<'a>(
        &'a mut self,
        request: impl Into<Outgoing<'a>>,
    ) -> impl Future<Output = Result<Frame, RequestError>> + 'a {
        let timeout_ms = self.timeout_ms;
        self.send_within(request.into(), timeout_ms)
    }

    /// As [`Conn::request`], for a command that may take `timeout_ms` on the server (WAIT).
    pub fn request_within<'a>(
        &'a mut self,
        request: impl Into<Outgoing<'a>>,
        timeout_ms: u64,
    ) -> impl Future<Output = Result<Frame, RequestError>> + 'a {
        self.send_within(request.into(), timeout_ms)
    }

    /// The one future both make, whatever form their request came in.
    async fn send_within(&mut self, request: Outgoing<'_>, timeout_ms: u64) -> Result<Frame, RequestError> {
        if self.awaiting_reply {
            // The last request was abandoned mid-way: its reply would answer this one.
            self.link.connection = None;
        }
        self.awaiting_reply = true;
        let result = {
            // The exchange raced against its timeout, the exchange polled first (a
            // `biased` `select!` moved both futures into a tuple of its own at each
            // request; these are pinned where they are made). Declared in this order so
            // that they are dropped as that tuple dropped them: the exchange first. The
            // timeout is polled only when something woke it (`woken.rs`).
            let mut timeout = pin!(self.clock.sleep_ms(timeout_ms));
            let mut exchange = pin!(self.link.exchange_following_master(request));
            let timeout_wakes = &mut self.timeout_wakes;
            timeout_wakes.start();
            std::future::poll_fn(|cx| match exchange.as_mut().poll(cx) {
                Poll::Ready(result) => Poll::Ready(result.map_err(RequestError::from)),
                Poll::Pending => timeout_wakes
                    .poll(timeout.as_mut(), cx)
                    .map(|()| Err(RequestError::Timeout(timeout_ms))),
            })
            .await
        };
        self.awaiting_reply = false;
        if let Err(e) = &result {
            self.link.connection = None;
            if let Some(tap) = &self.link.tap {
                tap.report(Traffic::NoReply(&e.to_string()));
            }
        }
        result
    }

    /// A new connection of its own to the same node, for a conversation that is not
    /// request/reply (a pub/sub subscription).
    pub async fn open_another(&self) -> Result<Connection<C::Stream>, ConnectionError> {
        Ok(Connection::new(self.link.connector.connect_aside().await?))
    }
}

impl<C: Connect> Link<C> {
    /// One exchange; with [`Conn::reconnect_on_readonly`], a `READONLY` reply drops the
    /// connection and the request goes once more on a new one (whose reply stands, whatever
    /// it is: the new connection may find the same demoted node when nobody has failed over).
    async fn exchange_following_master(&mut self, request: Outgoing<'_>) -> Result<Frame, ConnectionError> {
        let reply = self.exchange(request).await?;
        if !(self.reconnect_on_readonly && is_readonly(&reply)) {
            return Ok(reply);
        }
        self.connection = None;
        let reply = self.exchange(request).await?;
        if is_readonly(&reply) {
            self.connection = None;
        }
        Ok(reply)
    }

    async fn exchange(&mut self, request: Outgoing<'_>) -> Result<Frame, ConnectionError> {
        let connection = match &mut self.connection {
            Some(connection) => connection,
            None => self
                .connection
                .insert(Connection::new(self.connector.connect().await?)),
        };
        if let Some(tap) = &self.tap {
            tap.report_sent(|| request.frame());
        }
        match request {
            Outgoing::Frame(frame) => connection.write_frame(frame).await?,
            Outgoing::Encoded(request) => connection.write_encoded(request).await?,
        }
        let reply = connection.read_frame().await?.ok_or(ConnectionError::Closed)?;
        if let Some(tap) = &self.tap {
            tap.report(Traffic::Received(&reply));
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncWriteExt, DuplexStream};
    use tokio::sync::mpsc;

    use super::*;
    use crate::real::HostClock;
    use crate::redis::request::build as request;

    /// Connections over in-memory pipes; the test plays the server on the far ends.
    struct Pipes(mpsc::UnboundedSender<DuplexStream>);

    impl Connect for Pipes {
        type Stream = DuplexStream;

        async fn connect(&self) -> std::io::Result<DuplexStream> {
            let (client, server) = tokio::io::duplex(1024);
            self.0.send(server).map_err(std::io::Error::other)?;
            Ok(client)
        }
    }

    #[tokio::test]
    async fn a_request_dropped_before_its_reply_does_not_answer_the_next() {
        let (pipes, mut servers) = mpsc::unbounded_channel();
        let mut conn = Conn::new(Pipes(pipes), HostClock::new(), 5_000);
        let ping = request([b"PING".to_vec()]);
        tokio::select! {
            biased;
            _ = conn.request(&ping) => panic!("nobody answered yet"),
            () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
        // The abandoned request's reply arrives after all.
        let mut first = servers.recv().await.expect("the first request connected");
        first.write_all(b":0\r\n").await.unwrap();
        let answer_on_a_new_connection = async {
            let mut second = servers.recv().await.expect("the next request reconnects");
            second.write_all(b"+PONG\r\n").await.unwrap();
            std::future::pending::<()>().await
        };
        let reply = tokio::select! {
            biased;
            reply = conn.request(&ping) => reply.unwrap(),
            () = answer_on_a_new_connection => unreachable!("it never ends"),
        };
        assert_eq!(
            reply,
            Frame::SimpleString(b"PONG".to_vec()),
            "the late reply answered the next request"
        );
    }

    /// Plays a demoted master on the first connection (every request: READONLY) and the new
    /// master on any later one (`+OK`); returns the replies to two requests and how many
    /// connections the client opened.
    async fn against_a_demoted_master(reconnect: bool) -> (Frame, Frame, usize) {
        use tokio::io::AsyncReadExt;
        let (pipes, mut servers) = mpsc::unbounded_channel();
        let mut conn = Conn::new(Pipes(pipes), HostClock::new(), 5_000).reconnect_on_readonly(reconnect);
        let set = request([b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()]);
        let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = opened.clone();
        let serve = async move {
            let mut tasks = Vec::new();
            while let Some(mut server) = servers.recv().await {
                let first = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
                tasks.push(tokio::spawn(async move {
                    let mut buf = [0u8; 256];
                    while server.read(&mut buf).await.is_ok_and(|n| n > 0) {
                        let reply: &[u8] = match first {
                            true => b"-READONLY You can't write against a read only replica.\r\n",
                            false => b"+OK\r\n",
                        };
                        if server.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                }));
            }
        };
        let client = async {
            let first = conn.request(&set).await.unwrap();
            let second = conn.request(&set).await.unwrap();
            (first, second)
        };
        let (first, second) = tokio::select! {
            biased;
            replies = client => replies,
            () = serve => unreachable!("the client holds the sender"),
        };
        (first, second, opened.load(std::sync::atomic::Ordering::SeqCst))
    }

    #[tokio::test]
    async fn on_readonly_a_retrying_client_keeps_its_connection_and_a_reconnecting_one_asks_again() {
        let readonly = Frame::Error("READONLY You can't write against a read only replica.".into());
        // Redisson, node-redlock (ioredis): the error reaches the caller, the connection stays.
        assert_eq!(
            against_a_demoted_master(false).await,
            (readonly.clone(), readonly, 1)
        );
        // redis-py's Sentinel connection, go-redis: a new connection, the request sent again.
        let ok = Frame::SimpleString(b"OK".to_vec());
        assert_eq!(against_a_demoted_master(true).await, (ok.clone(), ok, 2));
    }
}
