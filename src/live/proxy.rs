//! A TCP proxy on one link of a live run (a client to a Redis node, a replica to its
//! master, a client to the resource): the faults the simulator puts on a link, put on real
//! sockets without root or a firewall.
//!
//! What each fault does, as live-mode-facts.md §2 measured and argued:
//! - a **cut** (partition) *holds* bytes: the proxy stops reading, so the kernel's
//!   buffers fill and the writer blocks, and what waited is delivered after the heal
//!   (dropping bytes would desynchronise RESP). It also stops accepting: a new connect
//!   sits in a one-slot backlog, then hangs, rather than being refused. Cuts are counted,
//!   so overlapping partitions nest.
//! - a **stall** holds the upstream's bytes only (a replica's stream from its master; its
//!   acknowledgements still go up), and counts and nests like a cut.
//! - **latency** delays each chunk by a draw from its range (from a seeded generator) on
//!   top of its arrival, in order; chunks of one burst wait one after another.
//! - a **gate** holds bytes too, before the run begins, but accepts: a worker's connect
//!   says it is ready, and none gets ahead of the others.
//! - a **reset** closes every connection open now with an RST (zero linger), as a load
//!   balancer dropping them does; new connections are untouched.
//!
//! A proxy can also be **redirected**: connections opened afterwards go to another
//! upstream (a worker's route to its group's master after a failover), open ones stay.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// The faults on one link now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkFaults {
    /// Partitions cutting the link (0: it carries bytes).
    pub cuts: u32,
    /// Stalls holding the upstream's bytes only (a replica's stream from its master):
    /// what the client sends still goes through.
    pub stalls: u32,
    /// Latency ranges of the latency faults on the link, in ms; each adds a draw.
    pub latencies_ms: Vec<[u64; 2]>,
    /// How many resets have struck: a connection opened before the latest one is closed.
    pub resets: u64,
    /// Before the run begins: connections are accepted (and counted) but carry no bytes
    /// yet, so a worker that is ready first cannot take the lock before the others are.
    pub gated: bool,
}

/// One proxy: where clients connect instead of the upstream, and the switch of its faults.
/// Dropping it closes its listener and every connection through it.
pub struct Proxy {
    /// Where to connect instead of the upstream.
    pub addr: SocketAddr,
    faults: watch::Sender<LinkFaults>,
    /// Where new connections are forwarded.
    upstream: watch::Sender<SocketAddr>,
    /// How many connections it has accepted.
    accepted: watch::Receiver<u64>,
    acceptor: JoinHandle<()>,
}

/// Bytes read from one side at a time.
const CHUNK_BYTES: usize = 32 * 1024;

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`; a
    /// connection the upstream refuses is closed. `seed` draws the link's latencies.
    pub fn start(upstream: SocketAddr, seed: u64) -> io::Result<Proxy> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        // One slot: while the link is cut, one connect completes unanswered and the rest
        // hang, as behind a partition (a closed listener would refuse them instead).
        let listener = socket.listen(1)?;
        let addr = listener.local_addr()?;
        let (faults, watching) = watch::channel(LinkFaults::default());
        let (count, accepted) = watch::channel(0);
        let (upstream, upstream_now) = watch::channel(upstream);
        let acceptor = tokio::spawn(accept(listener, upstream_now, watching, count, seed));
        Ok(Proxy {
            addr,
            faults,
            upstream,
            accepted,
            acceptor,
        })
    }

    /// Changes the link's faults.
    pub fn update(&self, change: impl FnOnce(&mut LinkFaults)) {
        self.faults.send_modify(change);
    }

    /// Starts one more partition of the link.
    pub fn cut(&self) {
        self.update(|f| f.cuts += 1);
    }

    /// Ends one partition of the link; it carries bytes again once none is left.
    pub fn heal(&self) {
        self.update(|f| f.cuts = f.cuts.saturating_sub(1));
    }

    /// Closes every connection open now with an RST.
    pub fn reset(&self) {
        self.update(|f| f.resets += 1);
    }

    /// Forwards connections opened from now on to `upstream`; open ones stay where they go.
    pub fn redirect(&self, upstream: SocketAddr) {
        self.upstream.send_replace(upstream);
    }

    /// Where new connections are forwarded now.
    pub fn upstream(&self) -> SocketAddr {
        *self.upstream.borrow()
    }

    /// Whether anyone has connected through the proxy yet.
    pub fn connected(&self) -> bool {
        *self.accepted.borrow() > 0
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

/// Accepts while the link is not cut; each connection's forwarding lives in a task of
/// the acceptor's, so aborting the acceptor closes them all.
async fn accept(
    listener: TcpListener,
    upstream: watch::Receiver<SocketAddr>,
    mut faults: watch::Receiver<LinkFaults>,
    count: watch::Sender<u64>,
    seed: u64,
) {
    let mut links = JoinSet::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    loop {
        if faults.wait_for(|f| f.cuts == 0).await.is_err() {
            return;
        }
        let mut cuts = faults.clone();
        tokio::select! {
            biased;
            cut = cuts.wait_for(|f| f.cuts > 0) => if cut.is_err() { return },
            connection = listener.accept() => {
                if let Ok((client, _)) = connection {
                    let upstream = *upstream.borrow();
                    links.spawn(forward(client, upstream, faults.clone(), rng.next_u64()));
                    count.send_modify(|n| *n += 1);
                }
            }
        }
        // Reap finished links, so a long run does not keep them all.
        while links.try_join_next().is_some() {}
    }
}

/// Forwards one connection both ways until both sides have closed, or a reset closes both.
async fn forward(
    mut client: TcpStream,
    upstream: SocketAddr,
    faults: watch::Receiver<LinkFaults>,
    seed: u64,
) {
    let opened_after = faults.borrow().resets;
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let reset = {
        let mut resets = faults.clone();
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (up, down) = (rng.next_u64(), rng.next_u64());
        tokio::select! {
            biased;
            _ = resets.wait_for(|f| f.resets != opened_after) => true,
            _ = async {
                tokio::join!(
                    pump(client_read, server_write, faults.clone(), up, Direction::Up),
                    pump(server_read, client_write, faults.clone(), down, Direction::Down),
                )
            } => false,
        }
    };
    if reset {
        let _ = (client.set_zero_linger(), server.set_zero_linger());
    }
}

/// Which way a pump copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// From the client to the upstream.
    Up,
    /// From the upstream to the client: a stall holds these bytes too.
    Down,
}

impl LinkFaults {
    /// Whether bytes going `direction` are held now.
    fn holds(&self, direction: Direction) -> bool {
        self.cuts > 0 || (direction == Direction::Down && self.stalls > 0)
    }
}

/// Copies one direction chunk by chunk, holding bytes while the link is cut (or stalled,
/// downwards) and delaying each chunk by the link's latency; passes the end of the stream on.
async fn pump(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    mut faults: watch::Receiver<LinkFaults>,
    seed: u64,
    direction: Direction,
) -> io::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buffer = vec![0; CHUNK_BYTES];
    loop {
        // While held, read nothing more: the sender's kernel buffers hold the rest.
        let _ = faults.wait_for(|f| !f.holds(direction) && !f.gated).await;
        let read = from.read(&mut buffer).await?;
        if read == 0 {
            return to.shutdown().await;
        }
        let arrived = tokio::time::Instant::now();
        let delay_ms: u64 = faults
            .borrow()
            .latencies_ms
            .iter()
            .map(|&[min, max]| rng.random_range(min..=max))
            .sum();
        tokio::time::sleep_until(arrived + Duration::from_millis(delay_ms)).await;
        // A chunk read just before a cut waits for the heal too.
        let _ = faults.wait_for(|f| !f.holds(direction)).await;
        to.write_all(&buffer[..read]).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// An echo server on a free loopback port.
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut read, mut write) = stream.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        addr
    }

    async fn round_trip(stream: &mut TcpStream, bytes: &[u8], within: Duration) -> Option<Vec<u8>> {
        stream.write_all(bytes).await.unwrap();
        let mut echoed = vec![0; bytes.len()];
        tokio::time::timeout(within, stream.read_exact(&mut echoed))
            .await
            .ok()
            .map(|read| {
                read.unwrap();
                echoed
            })
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    const PATIENCE: Duration = Duration::from_secs(5);
    const SILENCE: Duration = Duration::from_millis(200);

    #[test]
    fn a_cut_holds_bytes_and_new_connects_then_delivers_them_after_the_heal() {
        runtime().block_on(async {
            let proxy = Proxy::start(echo_server().await, 1).unwrap();
            let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
            assert_eq!(round_trip(&mut stream, b"one", PATIENCE).await.unwrap(), b"one");
            proxy.cut();
            proxy.cut();
            assert_eq!(round_trip(&mut stream, b"two", SILENCE).await, None);
            // A connect during the cut completes in the backlog, unanswered.
            let mut late = TcpStream::connect(proxy.addr).await.unwrap();
            assert_eq!(round_trip(&mut late, b"new", SILENCE).await, None);
            proxy.heal();
            assert_eq!(round_trip(&mut stream, b"-", SILENCE).await, None, "cuts nest");
            proxy.heal();
            let mut rest = vec![0; 4];
            tokio::time::timeout(PATIENCE, stream.read_exact(&mut rest))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(rest, b"two-", "what waited arrives in order");
            let mut answer = vec![0; 3];
            tokio::time::timeout(PATIENCE, late.read_exact(&mut answer))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(answer, b"new");
        });
    }

    #[test]
    fn a_stall_holds_the_upstreams_bytes_but_lets_the_clients_through() {
        runtime().block_on(async {
            // A server that counts what it got: the client's bytes reach it during the stall.
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let upstream = listener.local_addr().unwrap();
            let (got, mut received) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut byte = [0; 1];
                while stream.read_exact(&mut byte).await.is_ok() {
                    got.send(byte[0]).unwrap();
                    stream.write_all(&byte).await.unwrap();
                }
            });
            let proxy = Proxy::start(upstream, 6).unwrap();
            let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
            assert_eq!(round_trip(&mut stream, b"a", PATIENCE).await.unwrap(), b"a");
            assert_eq!(received.recv().await, Some(b'a'));
            proxy.update(|f| f.stalls += 1);
            assert_eq!(round_trip(&mut stream, b"b", SILENCE).await, None);
            let arrived = tokio::time::timeout(PATIENCE, received.recv()).await.unwrap();
            assert_eq!(arrived, Some(b'b'), "the client's bytes went up");
            proxy.update(|f| f.stalls -= 1);
            let mut echoed = [0; 1];
            tokio::time::timeout(PATIENCE, stream.read_exact(&mut echoed))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(&echoed, b"b", "the held reply came after the stall");
        });
    }

    #[test]
    fn a_gated_proxy_accepts_and_counts_connections_but_carries_bytes_only_once_opened() {
        runtime().block_on(async {
            let proxy = Proxy::start(echo_server().await, 4).unwrap();
            proxy.update(|f| f.gated = true);
            assert!(!proxy.connected());
            let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
            assert_eq!(round_trip(&mut stream, b"early", SILENCE).await, None);
            assert!(proxy.connected());
            proxy.update(|f| f.gated = false);
            let mut echoed = vec![0; 5];
            tokio::time::timeout(PATIENCE, stream.read_exact(&mut echoed))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(echoed, b"early");
        });
    }

    #[test]
    fn latency_delays_every_chunk_by_its_draw() {
        runtime().block_on(async {
            let proxy = Proxy::start(echo_server().await, 2).unwrap();
            let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
            round_trip(&mut stream, b"warm", PATIENCE).await.unwrap();
            proxy.update(|f| f.latencies_ms.push([100, 100]));
            let sent = Instant::now();
            round_trip(&mut stream, b"slow", PATIENCE).await.unwrap();
            // Both directions cross the proxy: 100 ms each way.
            assert!(
                sent.elapsed() >= Duration::from_millis(200),
                "{:?}",
                sent.elapsed()
            );
        });
    }

    #[test]
    fn a_reset_closes_open_connections_but_not_later_ones() {
        runtime().block_on(async {
            let proxy = Proxy::start(echo_server().await, 3).unwrap();
            let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
            round_trip(&mut stream, b"up", PATIENCE).await.unwrap();
            proxy.reset();
            let mut byte = [0; 1];
            let read = tokio::time::timeout(PATIENCE, stream.read(&mut byte))
                .await
                .unwrap();
            assert!(
                matches!(&read, Ok(0))
                    || matches!(&read, Err(e) if e.kind() == io::ErrorKind::ConnectionReset),
                "{read:?}"
            );
            let mut fresh = TcpStream::connect(proxy.addr).await.unwrap();
            assert_eq!(round_trip(&mut fresh, b"ok", PATIENCE).await.unwrap(), b"ok");
        });
    }

    /// A server on a free loopback port that greets every connection with `tag` and
    /// then echoes.
    async fn tagged_server(tag: &'static [u8]) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    stream.write_all(tag).await.unwrap();
                    let (mut read, mut write) = stream.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        addr
    }

    async fn greeting(stream: &mut TcpStream) -> [u8; 1] {
        let mut tag = [0; 1];
        tokio::time::timeout(PATIENCE, stream.read_exact(&mut tag))
            .await
            .unwrap()
            .unwrap();
        tag
    }

    #[test]
    fn a_redirect_sends_new_connections_to_the_new_upstream_and_keeps_open_ones() {
        runtime().block_on(async {
            let (old, new) = (tagged_server(b"o").await, tagged_server(b"n").await);
            let proxy = Proxy::start(old, 5).unwrap();
            let mut before = TcpStream::connect(proxy.addr).await.unwrap();
            assert_eq!(&greeting(&mut before).await, b"o");
            proxy.redirect(new);
            assert_eq!(proxy.upstream(), new);
            let mut after = TcpStream::connect(proxy.addr).await.unwrap();
            assert_eq!(&greeting(&mut after).await, b"n");
            assert_eq!(
                round_trip(&mut before, b"still", PATIENCE).await.unwrap(),
                b"still"
            );
        });
    }
}
