//! The simulated network: madsim TCP behind the [`Listener`] and [`Connect`] seams, and
//! the latency settings of a scenario.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::platform::{Connect, Listener};
use crate::redis::replication::Dialer;
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

/// Where a node is reached. Fixed for a plain node; for a replicated group the failover
/// controller moves it to the promoted replica, as Sentinel tells its clients.
#[derive(Debug, Clone)]
pub struct Address(Arc<Mutex<SocketAddr>>);

impl Address {
    pub fn new(addr: SocketAddr) -> Self {
        Address(Arc::new(Mutex::new(addr)))
    }

    pub fn get(&self) -> SocketAddr {
        *self.0.lock().expect("address lock poisoned")
    }

    pub fn set(&self, addr: SocketAddr) {
        *self.0.lock().expect("address lock poisoned") = addr;
    }
}

/// Opens madsim TCP connections to wherever an [`Address`] points at connect time: a
/// client reconnecting after a failover reaches the new master.
#[derive(Debug, Clone)]
pub struct SimConnector(pub Address);

impl SimConnector {
    /// A connector to one fixed address.
    pub fn to(addr: SocketAddr) -> Self {
        SimConnector(Address::new(addr))
    }
}

impl Connect for SimConnector {
    type Stream = madsim::net::TcpStream;

    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send {
        madsim::net::TcpStream::connect(self.0.get())
    }
}

/// How a replica dials its master over madsim TCP.
#[derive(Debug, Clone, Copy)]
pub struct SimDialer;

impl Dialer for SimDialer {
    type Stream = madsim::net::TcpStream;

    async fn dial(&self, addr: SocketAddr) -> io::Result<Self::Stream> {
        madsim::net::TcpStream::connect(addr).await
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
