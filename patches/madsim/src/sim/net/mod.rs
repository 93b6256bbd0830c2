//! Asynchronous network endpoint and a controlled network simulator.
//!
//! # Examples
//!
//! ```
//! use madsim::{runtime::Runtime, net::Endpoint};
//! use std::sync::Arc;
//! use std::net::SocketAddr;
//!
//! let runtime = Runtime::new();
//! let addr1 = "10.0.0.1:1".parse::<SocketAddr>().unwrap();
//! let addr2 = "10.0.0.2:1".parse::<SocketAddr>().unwrap();
//! let node1 = runtime.create_node().ip(addr1.ip()).build();
//! let node2 = runtime.create_node().ip(addr2.ip()).build();
//! let barrier = Arc::new(tokio::sync::Barrier::new(2));
//! let barrier_ = barrier.clone();
//!
//! node1.spawn(async move {
//!     let net = Endpoint::bind(addr1).await.unwrap();
//!     barrier_.wait().await;  // make sure addr2 has bound
//!
//!     net.send_to(addr2, 1, &[1]).await.unwrap();
//! });
//!
//! let f = node2.spawn(async move {
//!     let net = Endpoint::bind(addr2).await.unwrap();
//!     barrier.wait().await;
//!
//!     let mut buf = vec![0; 0x10];
//!     let (len, from) = net.recv_from(1, &mut buf).await.unwrap();
//!     assert_eq!(from, addr1);
//!     assert_eq!(&buf[..len], &[1]);
//! });
//!
//! runtime.block_on(f);
//! ```

use bytes::Bytes;
use futures_util::StreamExt;
use spin::Mutex;
use std::{
    any::Any,
    collections::HashMap,
    future::Future,
    io,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::Arc,
    task::{ready, Context, Poll},
    time::Instant,
};
use tokio::sync::{mpsc, oneshot};
use tracing::*;

use crate::{
    buggify::buggify_with_prob,
    plugin,
    rand::{GlobalRng, Rng},
    task::{NodeId, NodeInfo, Spawner},
    time::{Duration, Sleep, TimeHandle},
};

mod addr;
mod dns;
mod endpoint;
pub mod ipvs;
mod network;
#[cfg(feature = "rpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "rpc")))]
pub mod rpc;
pub mod tcp;
mod udp;
pub mod unix;

pub use self::addr::{lookup_host, ToSocketAddrs};
use self::dns::DnsServer;
pub use self::endpoint::{Endpoint, Receiver, Sender};
use self::ipvs::{IpVirtualServer, ServiceAddr};
pub use self::network::{Config, Stat};
use self::network::{Direction, IpProtocol, Network, Socket};
pub use self::tcp::{TcpListener, TcpStream};
pub use self::udp::UdpSocket;
pub use self::unix::{UnixDatagram, UnixListener, UnixStream};

/// Network simulator.
#[cfg_attr(docsrs, doc(cfg(madsim)))]
pub struct NetSim {
    network: Mutex<Network>,
    dns: Mutex<DnsServer>,
    ipvs: IpVirtualServer,
    rand: GlobalRng,
    time: TimeHandle,
    hooks_req: Mutex<HashMap<NodeId, MsgHookFn>>,
    hooks_rsp: Mutex<HashMap<NodeId, MsgHookFn>>,
    /// locksim patch: each node's extra delay per message, see [`NetSim::set_link_delay`].
    /// Looked up at every message a node sends: FxHash (as the network's maps), not
    /// SipHash; only `get` and `insert`, never iterated.
    link_delays: Mutex<network::HashMap<NodeId, LinkDelayFn>>,
}

/// Message sent to a network socket.
pub type Payload = Box<dyn Any + Send + Sync>;

type MsgHookFn = Arc<dyn Fn(&Payload) -> bool + Send + Sync>;

/// locksim patch: a node's extra delay for each message it sends to a peer (by the
/// peer's IP), on top of the network's latency.
type LinkDelayFn = Arc<dyn Fn(IpAddr) -> Duration + Send + Sync>;

impl plugin::Simulator for NetSim {
    fn new(_rand: &GlobalRng, _time: &TimeHandle, _config: &crate::Config) -> Self {
        unreachable!()
    }

    fn new1(rand: &GlobalRng, time: &TimeHandle, _task: &Spawner, config: &crate::Config) -> Self {
        NetSim {
            network: Mutex::new(Network::new(rand.clone(), config.net.clone())),
            dns: Mutex::new(DnsServer::default()),
            ipvs: IpVirtualServer::default(),
            rand: rand.clone(),
            time: time.clone(),
            hooks_req: Default::default(),
            hooks_rsp: Default::default(),
            link_delays: Default::default(),
        }
    }

    fn create_node(&self, id: NodeId) {
        let mut network = self.network.lock();
        network.insert_node(id);
    }

    fn reset_node(&self, id: NodeId) {
        self.reset_node(id);
    }
}

impl NetSim {
    /// Get [`NetSim`] of the current simulator.
    pub fn current() -> Arc<Self> {
        plugin::simulator()
    }

    /// Get the statistics.
    pub fn stat(&self) -> Stat {
        self.network.lock().stat().clone()
    }

    /// Update network configurations.
    pub fn update_config(&self, f: impl FnOnce(&mut Config)) {
        let mut network = self.network.lock();
        network.update_config(f);
    }

    /// Reset a node.
    ///
    /// All connections will be closed.
    pub fn reset_node(&self, id: NodeId) {
        let mut network = self.network.lock();
        network.reset_node(id);
    }

    /// Set IP address of a node.
    pub fn set_ip(&self, node: NodeId, ip: IpAddr) {
        let mut network = self.network.lock();
        network.set_ip(node, ip);
    }

    /// Connect a node to the network.
    #[deprecated(since = "0.3.0", note = "use `unclog_node` instead")]
    pub fn connect(&self, id: NodeId) {
        self.unclog_node(id);
    }

    /// Unclog the node.
    pub fn unclog_node(&self, id: NodeId) {
        self.network.lock().unclog_node(id, Direction::Both);
    }

    /// Unclog the node for receive.
    pub fn unclog_node_in(&self, id: NodeId) {
        self.network.lock().unclog_node(id, Direction::In);
    }

    /// Unclog the node for send.
    pub fn unclog_node_out(&self, id: NodeId) {
        self.network.lock().unclog_node(id, Direction::Out);
    }

    /// Disconnect a node from the network.
    #[deprecated(since = "0.3.0", note = "use `clog_node` instead")]
    pub fn disconnect(&self, id: NodeId) {
        self.clog_node(id);
    }

    /// Clog the node.
    pub fn clog_node(&self, id: NodeId) {
        self.network.lock().clog_node(id, Direction::Both);
    }

    /// Clog the node for receive.
    pub fn clog_node_in(&self, id: NodeId) {
        self.network.lock().clog_node(id, Direction::In);
    }

    /// Clog the node for send.
    pub fn clog_node_out(&self, id: NodeId) {
        self.network.lock().clog_node(id, Direction::Out);
    }

    /// locksim patch: from now on, every message `node` sends over a TCP stream to a peer
    /// arrives `delay(peer's IP)` later than the network's latency alone would have it,
    /// still in order: a message sent at t arrives at t + its latency + its delay, or
    /// right after the message before it if that one arrives later. Nothing is drawn
    /// from the network's generator for it, so without a delay the event order is that
    /// of upstream madsim.
    pub fn set_link_delay(&self, node: NodeId, delay: impl Fn(IpAddr) -> Duration + Send + Sync + 'static) {
        self.link_delays.lock().insert(node, Arc::new(delay));
    }

    /// Connect a pair of nodes.
    #[deprecated(since = "0.3.0", note = "call `unclog_link` twice instead")]
    pub fn connect2(&self, node1: NodeId, node2: NodeId) {
        let mut network = self.network.lock();
        network.unclog_link(node1, node2);
        network.unclog_link(node2, node1);
    }

    /// Unclog the link from `src` to `dst`.
    pub fn unclog_link(&self, src: NodeId, dst: NodeId) {
        self.network.lock().unclog_link(src, dst);
    }

    /// Disconnect a pair of nodes.
    #[deprecated(since = "0.3.0", note = "call `clog_link` twice instead")]
    pub fn disconnect2(&self, node1: NodeId, node2: NodeId) {
        let mut network = self.network.lock();
        network.clog_link(node1, node2);
        network.clog_link(node2, node1);
    }

    /// Clog the link from `src` to `dst`.
    pub fn clog_link(&self, src: NodeId, dst: NodeId) {
        self.network.lock().clog_link(src, dst);
    }

    /// Add a DNS record for the cluster.
    pub fn add_dns_record(&self, hostname: &str, ip: IpAddr) {
        self.dns.lock().add(hostname, ip);
    }

    /// Performs a DNS lookup.
    pub(crate) fn lookup_host(&self, hostname: &str) -> Option<IpAddr> {
        self.dns.lock().lookup(hostname)
    }

    /// Get the IPVS for all nodes.
    pub fn global_ipvs(&self) -> &IpVirtualServer {
        &self.ipvs
    }

    /// Add a hook function for RPC requests.
    ///
    /// If the hook function returns `false`, the request will be dropped.
    #[cfg(feature = "rpc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rpc")))]
    pub fn hook_rpc_req<R: 'static>(
        &self,
        node: NodeId,
        f: impl Fn(&R) -> bool + Send + Sync + 'static,
    ) {
        self.hooks_req.lock().insert(
            node,
            Arc::new(move |payload| {
                if let Some((_, payload)) = payload.downcast_ref::<(u64, Payload)>() {
                    if let Some((_, msg, _)) = payload.downcast_ref::<(u64, R, Bytes)>() {
                        return f(msg);
                    }
                }
                true
            }),
        );
    }

    /// Add a hook function for RPC responses.
    ///
    /// If the hook function returns `false`, the response will be dropped.
    #[cfg(feature = "rpc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rpc")))]
    pub fn hook_rpc_rsp<R: 'static>(
        &self,
        node: NodeId,
        f: impl Fn(&R) -> bool + Send + Sync + 'static,
    ) {
        self.hooks_rsp.lock().insert(
            node,
            Arc::new(move |payload| {
                if let Some((_, payload)) = payload.downcast_ref::<(u64, Payload)>() {
                    if let Some((msg, _)) = payload.downcast_ref::<(R, Bytes)>() {
                        return f(msg);
                    }
                }
                true
            }),
        );
    }

    /// Delay a small random time and probably inject failure.
    async fn rand_delay(&self) -> io::Result<()> {
        let mut delay = Duration::from_micros(self.rand.with(|rng| rng.gen_range(0..5)));
        if buggify_with_prob(0.1) {
            delay = Duration::from_secs(self.rand.with(|rng| rng.gen_range(1..5)));
        }
        self.time.sleep(delay).await;
        // TODO: inject failure
        Ok(())
    }

    /// Send a message to the destination.
    pub(crate) async fn send(
        &self,
        node: NodeId,
        port: u16,
        mut dst: SocketAddr,
        protocol: IpProtocol,
        msg: Payload,
    ) -> io::Result<()> {
        self.rand_delay().await?;
        if let Some(hook) = self.hooks_req.lock().get(&node).cloned() {
            if !hook(&msg) {
                return Ok(());
            }
        }
        if let Some(addr) = self
            .ipvs
            .get_server(ServiceAddr::from_addr_proto(dst, protocol))
        {
            dst = addr.parse().expect("invalid socket address");
        }
        if let Some((ip, dst_node, socket, latency)) =
            self.network.lock().try_send(node, dst, protocol)
        {
            trace!(?latency, "delay");
            let hook = self.hooks_rsp.lock().get(&dst_node).cloned();
            self.time.add_timer(latency, move || {
                if let Some(hook) = hook {
                    if !hook(&msg) {
                        return;
                    }
                }
                socket.deliver((ip, port).into(), dst, msg);
            });
        }
        Ok(())
    }

    /// Opens a new connection to destination.
    // TODO: rename
    pub(crate) async fn connect1(
        self: &Arc<Self>,
        node: NodeId,
        port: u16,
        mut dst: SocketAddr,
        protocol: IpProtocol,
    ) -> io::Result<(PayloadSender, PayloadReceiver, SocketAddr)> {
        self.rand_delay().await?;
        if let Some(addr) = self
            .ipvs
            .get_server(ServiceAddr::from_addr_proto(dst, protocol))
        {
            dst = addr.parse().expect("invalid socket address");
        }
        // locksim patch: a SYN over a clogged link is dropped, not refused: the connect
        // hangs, resending its SYN after 1 s, 2 s, 4 s, … as Linux does
        // (`tcp_syn_retries` = 6), and times out after the last one (127 s) if the link is
        // still cut. A link that heals meanwhile lets the next SYN through. The caller's
        // own timeout usually fires first.
        let mut retransmission = Duration::from_secs(1);
        for sent in 0.. {
            if !self.network.lock().link_cut_either_way(node, dst, protocol) {
                break;
            }
            if sent == 7 {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "connection timed out"));
            }
            self.time.sleep(retransmission).await;
            retransmission *= 2;
        }
        let (ip, dst_node, socket, latency) = (self.network.lock().try_send(node, dst, protocol))
            .ok_or_else(|| {
            io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused")
        })?;
        let src = (ip, port).into();
        let (tx1, rx1) = self.channel(node, dst, protocol);
        let (tx2, rx2) = self.channel(dst_node, src, protocol);
        trace!(?latency, "delay");
        // FIXME: delay
        // self.time.add_timer(latency, move || {
        socket.new_connection(src, dst, tx2, rx1);
        // });
        Ok((tx1, rx2, src))
    }

    /// Create a reliable, ordered channel between two endpoints.
    fn channel(
        self: &Arc<Self>,
        node: NodeId,
        dst: SocketAddr,
        protocol: IpProtocol,
    ) -> (PayloadSender, PayloadReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let net = self.clone();
        let test_link = Arc::new(move || {
            let sent = net.network.lock().try_send(node, dst, protocol);
            sent.map(|(_, _, _, latency)| {
                // locksim patch: the sending node's extra delay to this peer.
                let delay = net.link_delays.lock().get(&node).cloned();
                let extra = delay.map_or(Duration::ZERO, |delay| delay(dst.ip()));
                net.time.now_instant() + latency + extra
            })
        });
        let net = self.clone();
        let link_clogged = Arc::new(move || net.network.lock().link_clogged_to(node, dst, protocol));
        let net = self.clone();
        let link_cut = Arc::new(move || net.network.lock().link_cut_either_way(node, dst, protocol));
        let sender = PayloadSender {
            test_link: test_link.clone(),
            link_cut,
            tx,
        };
        let recver = PayloadReceiver {
            rx,
            test_link,
            link_clogged,
            time: self.time.clone(),
            in_flight: None,
            catching_up: false,
            closing: None,
        };
        (sender, recver)
    }
}

#[doc(hidden)]
pub struct PayloadSender {
    test_link: Arc<dyn Fn() -> State + Send + Sync>,
    /// locksim patch: whether the link to the peer is clogged either way now (draws no
    /// random number).
    link_cut: Arc<dyn Fn() -> bool + Send + Sync>,
    tx: mpsc::UnboundedSender<(Payload, State)>,
}

/// The link state when sending a packet.
type State = Option<Instant>;

impl PayloadSender {
    /// Sends a message; `None` when the peer's end is gone and its reset reaches us.
    ///
    /// locksim patch: upstream fails at once (`ConnectionReset` in `TcpStream::poll_flush`)
    /// as soon as the peer dropped its end, even across a clogged link: a process that
    /// died behind a partition was seen dead through it. A real peer's RST answers our
    /// next segment, so it needs the link both ways: while the link is clogged either way
    /// the write goes into the socket as usual (and is lost with the peer), and the reset
    /// is seen on the first write after the heal.
    fn send(&self, value: Payload) -> Option<()> {
        let state = (self.test_link)();
        match self.tx.send((value, state)) {
            Ok(()) => Some(()),
            Err(_) if (self.link_cut)() => Some(()),
            Err(_) => None,
        }
    }

    fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    async fn closed(&self) {
        self.tx.closed().await;
    }
}

/// The receiving half of a channel from [`NetSim::channel`]: delivers each message at
/// its arrival time, after waiting (with exponential backoff) for a clogged link.
///
/// locksim patch: upstream 0.2.34 builds this stream with `async_stream::stream!` (and
/// boxes it), whose generator and yield slot cost a few hundred instructions on every
/// poll of a TCP read. This is the same state machine written by hand: it makes the same
/// `Sleep`s at the same moments and polls them as often, so the timer heap, and with it
/// the simulation's event order, is unchanged.
#[doc(hidden)]
pub struct PayloadReceiver {
    rx: mpsc::UnboundedReceiver<(Payload, State)>,
    test_link: Arc<dyn Fn() -> State + Send + Sync>,
    /// locksim patch: whether the link would hold a segment now (draws no random number).
    link_clogged: Arc<dyn Fn() -> bool + Send + Sync>,
    time: TimeHandle,
    /// The message received from `rx` and not yet delivered.
    in_flight: Option<InFlight>,
    /// locksim patch: the last message delivered had waited out a clogged link, so the
    /// ones sent behind it while the link was down arrive with it (see `poll_next`).
    catching_up: bool,
    /// locksim patch: the sender closed while the link was down; the end of stream (a
    /// FIN) waits for the link like a segment, with this backoff and sleep.
    closing: Option<(Duration, Sleep)>,
}

struct InFlight {
    value: Payload,
    /// When the message arrives, or `None` while the link is down.
    arrive_time: State,
    /// The current backoff before testing a down link again.
    backoff: Duration,
    /// Waits for `arrive_time`, or out the backoff.
    sleep: Sleep,
    /// locksim patch: whether it found the link down (and so was retransmitted).
    held: bool,
}

impl futures_util::Stream for PayloadReceiver {
    type Item = Payload;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Payload>> {
        let this = &mut *self;
        loop {
            if let Some(in_flight) = &mut this.in_flight {
                ready!(Pin::new(&mut in_flight.sleep).poll(cx));
                if in_flight.arrive_time.is_some() {
                    let in_flight = this.in_flight.take().unwrap();
                    this.catching_up = in_flight.held;
                    return Poll::Ready(Some(in_flight.value));
                }
                // backoff
                in_flight.backoff = (in_flight.backoff * 2).min(Duration::from_secs(10));
                // retry
                in_flight.held = true;
                in_flight.arrive_time = (this.test_link)();
                in_flight.sleep = match in_flight.arrive_time {
                    Some(arrive_time) => this.time.sleep_until(arrive_time),
                    None => this.time.sleep(in_flight.backoff),
                };
                continue;
            }
            if let Some((backoff, sleep)) = &mut this.closing {
                ready!(Pin::new(&mut *sleep).poll(cx));
                if !(this.link_clogged)() {
                    this.closing = None;
                    return Poll::Ready(None);
                }
                *backoff = (*backoff * 2).min(Duration::from_secs(10));
                *sleep = this.time.sleep(*backoff);
                continue;
            }
            let Some((value, arrive_time)) = ready!(this.rx.poll_recv(cx)) else {
                // locksim patch: a FIN sent while the link is down waits for it, as a
                // segment does (upstream ends the stream at once, through a partition).
                if (this.link_clogged)() {
                    let backoff = Duration::from_millis(1);
                    this.closing = Some((backoff, this.time.sleep(backoff)));
                    continue;
                }
                return Poll::Ready(None);
            };
            // locksim patch: what was sent while the link was down, behind a message that
            // has just waited it out, arrives with that message, as TCP retransmits a
            // connection's unacknowledged bytes together once the path is back (one
            // retransmission timer per connection, small segments collapsed). Upstream
            // gives each such message a backoff and a latency of its own, spreading a
            // partition's backlog over milliseconds after the heal.
            if arrive_time.is_none() && this.catching_up && !(this.link_clogged)() {
                return Poll::Ready(Some(value));
            }
            // wait until the link is ready
            let backoff = Duration::from_millis(1);
            let sleep = match arrive_time {
                Some(arrive_time) => this.time.sleep_until(arrive_time),
                None => this.time.sleep(backoff),
            };
            this.in_flight = Some(InFlight {
                value,
                arrive_time,
                backoff,
                sleep,
                held: arrive_time.is_none(),
            });
        }
    }
}

/// An RAII structure used to release the bound port.
pub(crate) struct BindGuard {
    net: Arc<NetSim>,
    node: Arc<NodeInfo>,
    /// Bound address.
    addr: SocketAddr,
    protocol: IpProtocol,
}

impl BindGuard {
    /// Bind a socket to the address.
    pub async fn bind(
        addr: impl ToSocketAddrs,
        protocol: IpProtocol,
        socket: Arc<dyn Socket>,
    ) -> io::Result<Self> {
        let net = plugin::simulator::<NetSim>();
        let node = crate::context::current_task().node.clone();

        // attempt to bind to each address
        let mut last_err = None;
        for addr in lookup_host(addr).await? {
            net.rand_delay().await?;
            match net
                .network
                .lock()
                .bind(node.id, addr, protocol, socket.clone())
            {
                Ok(addr) => {
                    return Ok(BindGuard {
                        net: net.clone(),
                        node,
                        addr,
                        protocol,
                    })
                }
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any addresses",
            )
        }))
    }
}

impl Drop for BindGuard {
    fn drop(&mut self) {
        // avoid interfering with restarted node
        if self.node.is_killed() {
            return;
        }
        // avoid panic on panicking
        if let Some(mut network) = self.net.network.try_lock() {
            network.close(self.node.id, self.addr, self.protocol);
        }
    }
}
