//! The simulated network: madsim TCP behind the [`Listener`] and [`Connect`] seams, and
//! the latency settings of a scenario.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crate::platform::{Connect, Listener};
use crate::scenario::NetworkSpec;

/// The port every fake Redis node listens on.
pub const REDIS_PORT: u16 = 6379;

/// A madsim TCP listening socket.
pub struct SimListener(madsim::net::TcpListener);

impl SimListener {
    pub async fn bind(addr: SocketAddr) -> io::Result<Self> {
        madsim::net::TcpListener::bind(addr).await.map(SimListener)
    }
}

impl Listener for SimListener {
    type Stream = madsim::net::TcpStream;

    async fn accept(&self) -> io::Result<Self::Stream> {
        self.0.accept().await.map(|(stream, _)| stream)
    }
}

/// Opens madsim TCP connections to one address.
#[derive(Debug, Clone)]
pub struct SimConnector(pub SocketAddr);

impl Connect for SimConnector {
    type Stream = madsim::net::TcpStream;

    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send {
        madsim::net::TcpStream::connect(self.0)
    }
}

/// madsim's network settings for a scenario: one-way latency uniform in `[min, max]`.
pub fn net_config(spec: &NetworkSpec) -> madsim::Config {
    let mut config = madsim::Config::default();
    config.net.send_latency = latency_range(spec.latency_ms);
    config
}

/// A latency range in madsim's form. madsim draws from a half-open range; one extra µs
/// makes `max` reachable and keeps `[n, n]` non-empty.
pub fn latency_range([min, max]: [u64; 2]) -> std::ops::Range<Duration> {
    Duration::from_millis(min)..Duration::from_millis(max) + Duration::from_micros(1)
}
