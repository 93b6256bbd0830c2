//! The simulated network: madsim TCP behind the [`Listener`] and [`Connect`] seams, and
//! the latency settings of a scenario.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::clock::true_now_ns;
use super::events;
use super::timer::{self, Timer};
use crate::platform::{Connect, Listener};
use crate::redis::replication::Dialer;
use crate::scenario::NetworkSpec;

/// The port every fake Redis node listens on.
pub const REDIS_PORT: u16 = 6379;

/// A madsim TCP listening socket; accepted streams are on the node's [`Nic`].
pub struct SimListener(madsim::net::TcpListener, Nic);

impl SimListener {
    pub async fn bind(addr: SocketAddr, latency: Nic) -> io::Result<Self> {
        madsim::net::TcpListener::bind(addr)
            .await
            .map(|listener| SimListener(listener, latency))
    }
}

impl Listener for SimListener {
    type Stream = Delayed<madsim::net::TcpStream>;

    async fn accept(&self) -> io::Result<Self::Stream> {
        let (stream, peer) = self.0.accept().await?;
        Ok(Delayed::new(stream, self.1.clone(), peer))
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

/// Opens madsim TCP connections to wherever an [`Address`] points at connect time (a
/// client reconnecting after a failover reaches the new master), carrying the connecting
/// node's [`Nic`].
#[derive(Debug, Clone)]
pub struct SimConnector(pub Address, pub Nic);

impl SimConnector {
    /// A connector to one fixed address, with no extra latency.
    pub fn to(addr: SocketAddr) -> Self {
        SimConnector(Address::new(addr), Nic::default())
    }
}

impl Connect for SimConnector {
    type Stream = Delayed<madsim::net::TcpStream>;

    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send {
        let (addr, latency) = (self.0.get(), self.1.clone());
        async move {
            Ok(Delayed::new(
                madsim::net::TcpStream::connect(addr).await?,
                latency,
                addr,
            ))
        }
    }
}

/// How a replica dials its master over madsim TCP.
#[derive(Debug, Clone, Default)]
pub struct SimDialer(pub Nic);

impl Dialer for SimDialer {
    type Stream = Delayed<madsim::net::TcpStream>;

    async fn dial(&self, addr: SocketAddr) -> io::Result<Self::Stream> {
        Ok(Delayed::new(
            madsim::net::TcpStream::connect(addr).await?,
            self.0.clone(),
            addr,
        ))
    }
}

/// One node's network interface, shared by every stream the node opens or accepts: extra
/// delay on its writes, on top of the network's latency, to one peer (a slow link) or to
/// every peer (a congested NIC); and resets of its connections. madsim has one latency for
/// the whole network, and its node reset leaves a stream's sending half working; this is
/// how a single node or link gets slower, and how a reset connection refuses the next
/// request as a real RST does.
#[derive(Debug, Clone, Default)]
pub struct Nic {
    latency: Arc<Mutex<BTreeMap<Option<IpAddr>, [u64; 2]>>>,
    /// Fraction of this node's packets lost, per peer (`None`: to anyone).
    loss: Arc<Mutex<BTreeMap<Option<IpAddr>, f64>>>,
    /// Bumped by each reset: a stream opened under an older count is dead.
    resets: Arc<AtomicU64>,
    /// When (true ns) this node last began a write to each peer socket, before any extra
    /// latency: for a server, the instant it answered that connection's last request.
    writes_began: Arc<Mutex<BTreeMap<SocketAddr, u64>>>,
}

impl Nic {
    /// From now on, every write to `peer` (`None`: to anyone) waits a uniform `[min, max]`
    /// ms first; a `None` range removes that wait.
    pub fn set_latency(&self, peer: Option<IpAddr>, range_ms: Option<[u64; 2]>) {
        let mut ranges = self.latency.lock().expect("latency lock poisoned");
        match range_ms {
            Some(range) => ranges.insert(peer, range),
            None => ranges.remove(&peer),
        };
    }

    /// From now on, a `rate` fraction of the packets this node sends to `peer` (`None`: to
    /// anyone) is lost; `None` removes that loss. TCP resends a lost segment after a
    /// retransmission timeout that doubles each time, so loss shows as delay.
    pub fn set_loss(&self, peer: Option<IpAddr>, rate: Option<f64>) {
        let mut rates = self.loss.lock().expect("loss lock poisoned");
        match rate {
            Some(rate) => rates.insert(peer, rate),
            None => rates.remove(&peer),
        };
    }

    /// Kills every connection open now: their next read or write fails with
    /// `ConnectionReset`. (A read already waiting is not woken: what was in flight is lost
    /// and times out.) Connections opened afterwards work.
    pub fn reset_connections(&self) {
        self.resets.fetch_add(1, Ordering::SeqCst);
    }

    fn resets(&self) -> u64 {
        self.resets.load(Ordering::SeqCst)
    }

    /// When (true ns) this node last began a write to `peer`, if it ever did: a trace
    /// quotes a server's clock at that instant, when it acted, not when its reply landed.
    pub fn last_write_began(&self, peer: SocketAddr) -> Option<u64> {
        let began = self.writes_began.lock().expect("writes lock poisoned");
        began.get(&peer).copied()
    }

    /// The wait of the next write to `peer`, drawn from the run's seeded generator: its
    /// extra latency, plus a retransmission timeout for each time it is lost (the peer's
    /// own settings, else the node's). `None` when neither applies.
    fn draw(&self, peer: IpAddr) -> Option<Duration> {
        let latency = setting(&self.latency.lock().expect("latency lock poisoned"), peer);
        let loss = setting(&self.loss.lock().expect("loss lock poisoned"), peer);
        if latency.is_none() && loss.is_none() {
            return None;
        }
        let mut wait = latency.map_or(Duration::ZERO, |[min, max]| {
            let span_us = (max - min) * 1000 + 1;
            Duration::from_millis(min) + Duration::from_micros(madsim::rand::random::<u64>() % span_us)
        });
        let mut timeout = MIN_RETRANSMISSION_TIMEOUT;
        while loss.is_some_and(|rate| madsim::rand::random::<f64>() < rate) {
            wait += timeout;
            timeout = (timeout * 2).min(MAX_RETRANSMISSION_TIMEOUT);
        }
        Some(wait)
    }
}

/// Linux's bounds on TCP's retransmission timeout (`TCP_RTO_MIN`, `TCP_RTO_MAX`).
const MIN_RETRANSMISSION_TIMEOUT: Duration = Duration::from_millis(200);
const MAX_RETRANSMISSION_TIMEOUT: Duration = Duration::from_secs(120);

/// A NIC setting for writes to `peer`: the peer's own, else the node-wide one.
fn setting<T: Copy>(settings: &BTreeMap<Option<IpAddr>, T>, peer: IpAddr) -> Option<T> {
    settings.get(&Some(peer)).or_else(|| settings.get(&None)).copied()
}

/// A stream on a node's [`Nic`]: its writes wait out the extra latency before they go,
/// and once the node's connections are reset it fails.
pub struct Delayed<S> {
    inner: S,
    nic: Nic,
    /// The NIC's reset count when the stream opened.
    opened_at_reset: u64,
    /// The other end's address: a link's latency applies to writes to it.
    peer: SocketAddr,
    /// The wait of the write in progress, if any.
    wait: Option<Timer>,
    /// The wait is over and the write may go.
    waited: bool,
}

impl<S> Delayed<S> {
    fn new(inner: S, nic: Nic, peer: SocketAddr) -> Self {
        Delayed {
            inner,
            opened_at_reset: nic.resets(),
            nic,
            peer,
            wait: None,
            waited: false,
        }
    }

    /// `Err(ConnectionReset)` once the node's connections have been reset.
    fn alive(&self) -> io::Result<()> {
        match self.nic.resets() == self.opened_at_reset {
            true => Ok(()),
            false => Err(io::ErrorKind::ConnectionReset.into()),
        }
    }
}

impl Delayed<madsim::net::TcpStream> {
    /// This end's address (the port the peer sees the connection come from).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Delayed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.alive()?;
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Delayed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        this.alive()?;
        if !this.waited {
            if this.wait.is_none() {
                let mut began = this.nic.writes_began.lock().expect("writes lock poisoned");
                began.insert(this.peer, true_now_ns());
                drop(began);
                match this.nic.draw(this.peer.ip()) {
                    Some(delay) => this.wait = Some(timer::sleep(delay)),
                    None => this.waited = true,
                }
            }
            if let Some(wait) = &mut this.wait {
                std::task::ready!(Pin::new(wait).poll(cx));
                this.wait = None;
                this.waited = true;
            }
        }
        let written = std::task::ready!(Pin::new(&mut this.inner).poll_write(cx, buf));
        this.waited = false;
        events::message();
        Poll::Ready(written)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.alive()?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
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
