//! The real side of the seam: the host's clock and tokio TCP, for running the same lock
//! client and fake node outside the simulator (against real redis-server, or on a real
//! port). Never used inside a simulated run: only there would the host clock break
//! determinism.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::platform::{Clock, Connect, Listener};

/// The host's clocks: `SystemTime` for the wall clock, tokio's `Instant` for monotonic
/// time and sleeps.
#[derive(Debug, Clone)]
pub struct HostClock {
    origin: tokio::time::Instant,
}

impl HostClock {
    pub fn new() -> Self {
        HostClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for HostClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for HostClock {
    fn wall_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    fn monotonic_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    fn sleep_until_monotonic(&self, deadline_ms: u64) -> impl Future<Output = ()> + Send {
        tokio::time::sleep_until(self.origin + Duration::from_millis(deadline_ms))
    }
}

/// Opens tokio TCP connections to one address.
#[derive(Debug, Clone)]
pub struct TcpConnector(pub SocketAddr);

impl Connect for TcpConnector {
    type Stream = tokio::net::TcpStream;

    async fn connect(&self) -> io::Result<Self::Stream> {
        let stream = tokio::net::TcpStream::connect(self.0).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

/// Opens tokio TCP connections to any address (a replica dialling its master).
#[derive(Debug, Clone, Copy)]
pub struct TcpDialer;

impl crate::redis::replication::Dialer for TcpDialer {
    type Stream = tokio::net::TcpStream;

    async fn dial(&self, addr: SocketAddr) -> io::Result<Self::Stream> {
        TcpConnector(addr).connect().await
    }
}

/// A tokio TCP listening socket.
pub struct TcpListener(pub tokio::net::TcpListener);

impl Listener for TcpListener {
    type Stream = tokio::net::TcpStream;

    async fn accept(&self) -> io::Result<Self::Stream> {
        let (stream, _) = self.0.accept().await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}
