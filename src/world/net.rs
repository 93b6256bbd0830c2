//! The simulated network: madsim TCP behind the [`Listener`] and [`Connect`] seams, and
//! the latency settings of a scenario.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use madsim::net::NetSim;
use madsim::task::NodeId;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::clock::true_now_ns;
use super::events;
use crate::platform::{Connect, Listener};
use crate::redis::replication::Dialer;
use crate::scenario::NetworkSpec;
use crate::schedule::cover::{Covers, FaultId};

/// A map by socket address, looked up at every message (which node answered, when it
/// began writing) and never iterated: FxHash rather than a tree or SipHash, and no order
/// that could feed a decision.
pub type ByAddress<V> = rustc_hash::FxHashMap<SocketAddr, V>;

/// The port every fake Redis node listens on.
pub const REDIS_PORT: u16 = 6379;

/// A madsim TCP listening socket; accepted streams are on the node's [`Nic`].
pub struct SimListener(madsim::net::TcpListener, Nic);

impl SimListener {
    pub async fn bind(addr: SocketAddr, nic: Nic) -> io::Result<Self> {
        madsim::net::TcpListener::bind(addr)
            .await
            .map(|listener| SimListener(listener, nic))
    }
}

impl Listener for SimListener {
    type Stream = NicStream<madsim::net::TcpStream>;

    async fn accept(&self) -> io::Result<(Self::Stream, SocketAddr)> {
        let (stream, peer) = self.0.accept().await?;
        Ok((NicStream::new(stream, self.1.clone(), peer), peer))
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
    type Stream = NicStream<madsim::net::TcpStream>;

    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send {
        let (addr, nic) = (self.0.get(), self.1.clone());
        async move {
            Ok(NicStream::new(
                madsim::net::TcpStream::connect(addr).await?,
                nic,
                addr,
            ))
        }
    }
}

/// How a replica dials its master over madsim TCP.
#[derive(Debug, Clone, Default)]
pub struct SimDialer(pub Nic);

impl Dialer for SimDialer {
    type Stream = NicStream<madsim::net::TcpStream>;

    async fn dial(&self, addr: SocketAddr) -> io::Result<Self::Stream> {
        Ok(NicStream::new(
            madsim::net::TcpStream::connect(addr).await?,
            self.0.clone(),
            addr,
        ))
    }
}

/// One node's network interface, shared by every stream the node opens or accepts: extra
/// delay on the messages it sends, on top of the network's latency, to one peer (a slow
/// link) or to every peer (a congested NIC); and resets of its connections.
///
/// madsim has one latency for the whole network, and its node reset leaves a stream's
/// sending half working and its reader waiting; this is how a single node or link gets
/// slower (madsim, patched, asks [`Nic::delay`] for each message: see [`Nic::attach`]), and
/// how a reset connection wakes its reader and refuses the next request as a real RST
/// does. A delay never holds the writer back: a write goes into the socket at once, as
/// write(2) into a kernel buffer does, and the message arrives at its send time plus its
/// delay, in order.
#[derive(Debug, Clone, Default)]
pub struct Nic {
    /// Each latency fault's extra latency range (ms), per peer (`None`: to anyone).
    latency: Arc<Mutex<Covers<Option<IpAddr>, [u64; 2]>>>,
    /// Each loss fault's fraction of this node's packets lost, per peer (`None`: to anyone).
    loss: Arc<Mutex<Covers<Option<IpAddr>, f64>>>,
    /// Bumped by each reset: a stream opened under an older count is dead.
    resets: Arc<AtomicU64>,
    /// The read side of every stream open on this node since the last reset: a reset wakes
    /// the task parked on each.
    readers: Arc<Mutex<Readers>>,
    /// When (true ns, plus one: 0 is never) this node last wrote to each peer socket: for
    /// a server, the instant it answered that connection's last request (any extra delay
    /// comes after). Each stream holds its peer's slot, found once when it opens.
    writes_began: Arc<Mutex<ByAddress<Arc<AtomicU64>>>>,
}

impl Nic {
    /// Makes madsim delay every message node `id` sends by this NIC's [`Nic::delay`].
    pub fn attach(&self, id: NodeId) {
        let nic = self.clone();
        NetSim::current().set_link_delay(id, move |peer| nic.delay(peer));
    }

    /// From now on (`Some`), messages to `peer` (`None`: to anyone) also wait a uniform
    /// `[min, max]` ms for fault `id`; `None` lifts that fault's wait. Overlapping latency
    /// faults on a message's path add up: each is a delay of its own.
    pub fn set_latency(&self, peer: Option<IpAddr>, id: FaultId, range_ms: Option<[u64; 2]>) {
        let mut ranges = self.latency.lock().expect("latency lock poisoned");
        match range_ms {
            Some(range) => ranges.cover(peer, id, range),
            None => ranges.uncover(&peer, id),
        };
    }

    /// From now on (`Some`), fault `id` loses a `rate` fraction of the packets this node
    /// sends to `peer` (`None`: to anyone); `None` lifts it. TCP resends a lost segment
    /// after a retransmission timeout that doubles each time, so loss shows as delay.
    /// Overlapping losses are independent: a packet gets through only if each lets it.
    pub fn set_loss(&self, peer: Option<IpAddr>, id: FaultId, rate: Option<f64>) {
        let mut rates = self.loss.lock().expect("loss lock poisoned");
        match rate {
            Some(rate) => rates.cover(peer, id, rate),
            None => rates.uncover(&peer, id),
        };
    }

    /// Kills every connection open now: their next read or write fails with
    /// `ConnectionReset`, and a task parked reading one is woken to see it at once, as a
    /// RST wakes a blocked read(2) with `ECONNRESET`. The parked readers are woken in the
    /// order their streams opened. (madsim's writes and flushes never wait, so no writer is
    /// parked.) Connections opened afterwards work.
    pub fn reset_connections(&self) {
        self.resets.fetch_add(1, Ordering::SeqCst);
        let killed = std::mem::take(&mut self.readers.lock().expect("readers lock poisoned").open);
        for reader in killed.values() {
            reader.wake_if_parked();
        }
    }

    fn resets(&self) -> u64 {
        self.resets.load(Ordering::SeqCst)
    }

    /// When (true ns) this node last began a write to `peer`, if it ever did: a trace
    /// quotes a server's clock at that instant, when it acted, not when its reply landed.
    pub fn last_write_began(&self, peer: SocketAddr) -> Option<u64> {
        let began = self.writes_began.lock().expect("writes lock poisoned");
        let stamp = began.get(&peer)?.load(Ordering::Relaxed);
        stamp.checked_sub(1)
    }

    /// The extra delay of the next message to `peer`, drawn from the run's seeded
    /// generator: the extra latency of each fault on its path (to this peer, or to
    /// anyone), plus a retransmission timeout for each time it is lost. Draws nothing
    /// when no fault covers the path.
    fn delay(&self, peer: IpAddr) -> Duration {
        let latency = self.latency.lock().expect("latency lock poisoned");
        let loss = self.loss.lock().expect("loss lock poisoned");
        // No latency or loss fault on any path (most of a run): nothing to look up.
        if latency.is_empty() && loss.is_empty() {
            return Duration::ZERO;
        }
        let path = [Some(peer), None];
        let mut wait = Duration::ZERO;
        for &[min, max] in path.iter().flat_map(|key| latency.values(key)) {
            let span_us = (max - min) * 1000 + 1;
            wait +=
                Duration::from_millis(min) + Duration::from_micros(madsim::rand::random::<u64>() % span_us);
        }
        let through: f64 = path
            .iter()
            .flat_map(|key| loss.values(key))
            .map(|rate| 1.0 - rate)
            .product();
        let mut timeout = MIN_RETRANSMISSION_TIMEOUT;
        while through < 1.0 && madsim::rand::random::<f64>() >= through {
            wait += timeout;
            timeout = (timeout * 2).min(MAX_RETRANSMISSION_TIMEOUT);
        }
        wait
    }
}

/// Linux's bounds on TCP's retransmission timeout (`TCP_RTO_MIN`, `TCP_RTO_MAX`).
const MIN_RETRANSMISSION_TIMEOUT: Duration = Duration::from_millis(200);
const MAX_RETRANSMISSION_TIMEOUT: Duration = Duration::from_secs(120);

/// The read sides of a node's open streams, by the order they opened.
#[derive(Debug, Default)]
struct Readers {
    /// How many streams the node has opened: the next one's number.
    opened: u64,
    /// The read side of each stream open since the last reset, by stream number.
    open: BTreeMap<u64, Arc<Reader>>,
}

/// The read side of one stream, as a reset of its NIC sees it.
#[derive(Debug, Default)]
struct Reader {
    /// The stream's last read waited: its task is parked on it.
    parked: AtomicBool,
    /// The waker of the task that last waited on the stream.
    waker: Mutex<Option<Waker>>,
}

impl Reader {
    /// Wakes the task parked reading the stream, if one is.
    fn wake_if_parked(&self) {
        if self.parked.swap(false, Ordering::Relaxed)
            && let Some(waker) = &*self.waker.lock().expect("reader lock poisoned")
        {
            waker.wake_by_ref();
        }
    }
}

/// A stream on a node's [`Nic`]: once the node's connections are reset it fails.
pub struct NicStream<S> {
    inner: S,
    nic: Nic,
    /// The NIC's reset count when the stream opened.
    opened_at_reset: u64,
    /// Where [`Nic::last_write_began`] finds this stream's last write (its peer's slot).
    last_write: Arc<AtomicU64>,
    /// This stream's number among the NIC's, and its read side, which a reset wakes.
    number: u64,
    reader: Arc<Reader>,
    /// The waker `reader` holds, kept here too: a read that waits stores its task's waker
    /// only when it is another one (without a lock), which a stream's reads seldom see.
    reader_waker: Option<Waker>,
}

impl<S> NicStream<S> {
    fn new(inner: S, nic: Nic, peer: SocketAddr) -> Self {
        let last_write = nic
            .writes_began
            .lock()
            .expect("writes lock poisoned")
            .entry(peer)
            .or_default()
            .clone();
        let reader = Arc::new(Reader::default());
        let number = {
            let mut readers = nic.readers.lock().expect("readers lock poisoned");
            let number = readers.opened;
            readers.opened += 1;
            readers.open.insert(number, reader.clone());
            number
        };
        NicStream {
            inner,
            opened_at_reset: nic.resets(),
            nic,
            last_write,
            number,
            reader,
            reader_waker: None,
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

impl NicStream<madsim::net::TcpStream> {
    /// This end's address (the port the peer sees the connection come from).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for NicStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.alive()?;
        let this = &mut *self;
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        let parked = read.is_pending();
        if parked
            && !this
                .reader_waker
                .as_ref()
                .is_some_and(|kept| kept.will_wake(cx.waker()))
        {
            let waker = cx.waker().clone();
            *this.reader.waker.lock().expect("reader lock poisoned") = Some(waker.clone());
            this.reader_waker = Some(waker);
        }
        // A reset wakes only a task still parked here.
        this.reader.parked.store(parked, Ordering::Relaxed);
        read
    }
}

impl<S> Drop for NicStream<S> {
    fn drop(&mut self) {
        self.nic
            .readers
            .lock()
            .expect("readers lock poisoned")
            .open
            .remove(&self.number);
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for NicStream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.alive()?;
        let written = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, buf));
        self.last_write.store(true_now_ns() + 1, Ordering::Relaxed);
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
