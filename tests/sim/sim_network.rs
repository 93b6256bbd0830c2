//! The simulated network's own fault models, below any scenario: a node's NIC resets its
//! connections the way a RST does, delays messages without holding the writer back, and a
//! connect over a cut link hangs as a dropped SYN does. Nothing from a peer that closes or
//! dies behind a cut link (data, FIN, RST) crosses it before the heal.

use crate::support;

use locksim::client::{Conn, RequestError};
use locksim::redis::Frame;
use locksim::redis::cmd::Get;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use locksim::platform::{Connect, Listener};
use locksim::world::net::{Address, Nic, SimConnector, SimListener};
use madsim::net::NetSim;
use madsim::runtime::Handle;
use support::sim::{client_node, clock, now_ms, simulate, start_redis};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn get() -> Frame {
    Get { key: b"k".to_vec() }.into_frame()
}

#[test]
fn a_reset_connection_refuses_the_next_request_at_once_and_the_one_after_reconnects() {
    simulate(1, || async {
        let redis = start_redis(1);
        let client = client_node(1).spawn(async move {
            let nic = Nic::default();
            let mut conn = Conn::new(SimConnector(Address::new(redis), nic.clone()), clock(), 1000);
            conn.request(&get()).await.expect("a fresh connection answers");
            nic.reset_connections();
            let sent_at = now_ms();
            let refused = conn.request(&get()).await;
            assert!(
                matches!(refused, Err(RequestError::Connection(_))),
                "the reset connection refuses: {refused:?}"
            );
            assert_eq!(now_ms(), sent_at, "at once, not after the 1000 ms timeout");
            conn.request(&get()).await.expect("the next request reconnects");
        });
        client.await.unwrap();
    });
}

/// A request parked on its reply when the connection is reset fails at the reset's instant,
/// as a read(2) blocked on a socket returns `ECONNRESET` when the RST arrives: the peer at
/// 10.0.0.9 accepts and never answers, so only the reset can end the wait before the
/// request's 1000 ms timeout.
#[test]
fn a_reset_wakes_a_request_parked_on_its_reply_at_once() {
    simulate(7, || async {
        let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), 7000);
        Handle::current()
            .create_node()
            .name("silent")
            .ip(addr.ip())
            .init(move || async move {
                let listener = SimListener::bind(addr, Nic::default()).await.unwrap();
                let (_stream, _) = listener.accept().await.unwrap();
                madsim::time::sleep(Duration::from_secs(3600)).await;
            })
            .build();
        let nic = Nic::default();
        let client_nic = nic.clone();
        let client = client_node(1).spawn(async move {
            let mut conn = Conn::new(SimConnector(Address::new(addr), client_nic), clock(), 1000);
            let failed = conn.request(&get()).await;
            (failed, now_ms())
        });
        madsim::time::sleep(Duration::from_millis(100)).await;
        let reset_at = now_ms();
        nic.reset_connections();
        let (failed, failed_at) = client.await.unwrap();
        assert!(
            matches!(failed, Err(RequestError::Connection(_))),
            "the reset reaches the parked request: {failed:?}"
        );
        assert_eq!(failed_at, reset_at, "at the reset, not at the 1000 ms timeout");
    });
}

#[test]
fn a_lossy_nic_delays_writes_by_retransmission_timeouts_and_recovers() {
    simulate(2, || async {
        let redis = start_redis(1);
        let node = client_node(1);
        let nic = Nic::default();
        nic.attach(node.id());
        let client = node.spawn(async move {
            let mut conn = Conn::new(SimConnector(Address::new(redis), nic.clone()), clock(), 60_000);
            conn.request(&get()).await.expect("a clean link answers");
            nic.set_loss(None, 1, Some(0.5));
            let mut slowest_ms = 0;
            for _ in 0..20 {
                let sent_at = now_ms();
                conn.request(&get()).await.expect("TCP resends what is lost");
                slowest_ms = slowest_ms.max(now_ms() - sent_at);
            }
            assert!(
                slowest_ms >= 200,
                "some write was lost and resent after a 200 ms timeout: {slowest_ms} ms"
            );
            nic.set_loss(None, 1, None);
            let sent_at = now_ms();
            conn.request(&get()).await.unwrap();
            assert!(now_ms() - sent_at < 50, "no loss, no retransmission");
        });
        client.await.unwrap();
    });
}

/// A node `sink` at 10.0.0.9 that accepts one connection and sends back the time (ms) at
/// which each byte arrived, as one byte per arrival: the arrival ms since the start / 10.
fn start_sink() -> (SocketAddr, madsim::task::NodeId) {
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), 7000);
    let node = Handle::current()
        .create_node()
        .name("sink")
        .ip(addr.ip())
        .init(move || async move {
            let listener = SimListener::bind(addr, Nic::default()).await.unwrap();
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut byte = [0u8; 1];
            while stream.read_exact(&mut byte).await.is_ok() {
                let arrived = (now_ms() / 10) as u8;
                stream.write_all(&[arrived]).await.unwrap();
                stream.flush().await.unwrap();
            }
        })
        .build();
    (addr, node.id())
}

#[test]
fn latency_delays_each_message_without_throttling_the_stream() {
    simulate(3, || async {
        let (sink, _) = start_sink();
        let node = client_node(1);
        let nic = Nic::default();
        nic.attach(node.id());
        let client = node.spawn(async move {
            let mut stream = SimConnector(Address::new(sink), nic.clone())
                .connect()
                .await
                .unwrap();
            nic.set_latency(None, 1, Some([1000, 1000]));
            let start_ms = now_ms();
            let mut sent_ms = Vec::new();
            for _ in 0..20 {
                sent_ms.push(now_ms());
                stream.write_all(&[1]).await.unwrap();
                stream.flush().await.unwrap();
                madsim::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(
                now_ms() - start_ms < 250,
                "a write into the socket returns at once"
            );
            let mut arrived = [0u8; 20];
            stream.read_exact(&mut arrived).await.unwrap();
            for (sent, arrived) in sent_ms.iter().zip(arrived) {
                let lag_ms = u64::from(arrived) * 10 - sent / 10 * 10;
                // 1000 ms of latency plus madsim's 1–10 ms, seen at 10 ms resolution.
                assert!(
                    (990..1030).contains(&lag_ms),
                    "sent at {sent} ms, lag {lag_ms} ms"
                );
            }
        });
        client.await.unwrap();
    });
}

#[test]
fn a_connect_over_a_cut_link_hangs_until_the_heal_instead_of_being_refused() {
    simulate(4, || async {
        let (sink, sink_id) = start_sink();
        let node = client_node(1);
        let client_id = node.id();
        NetSim::current().clog_link(sink_id, client_id);
        let client = node.spawn(async move {
            let connector = SimConnector(Address::new(sink), Nic::default());
            let timed_out = madsim::time::timeout(Duration::from_millis(500), connector.connect()).await;
            assert!(
                timed_out.is_err(),
                "the SYN is dropped: the caller's timeout fires"
            );
            let started_ms = now_ms();
            connector
                .connect()
                .await
                .expect("the next SYN after the heal gets through");
            let waited_ms = now_ms() - started_ms;
            // Healed at 2000 ms: SYNs at ~500, 1500, 3500 ms; the third gets through.
            assert!(
                (2900..3100).contains(&waited_ms),
                "connected after {waited_ms} ms"
            );
        });
        madsim::time::sleep(Duration::from_millis(2000)).await;
        NetSim::current().unclog_link(sink_id, client_id);
        client.await.unwrap();
    });
}

/// What a killed process wrote is delivered after its delay: its kernel sends the socket's
/// buffer. A sink counts the bytes it receives; the writer dies 10 ms after writing them.
#[test]
fn bytes_written_before_a_kill_arrive_after_their_delay() {
    for latency_ms in [20, 200] {
        let received = simulate(5, || async move {
            let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), 7000);
            let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let counted = count.clone();
            Handle::current()
                .create_node()
                .name("sink")
                .ip(addr.ip())
                .init(move || {
                    let counted = counted.clone();
                    async move {
                        let listener = SimListener::bind(addr, Nic::default()).await.unwrap();
                        let (mut stream, _) = listener.accept().await.unwrap();
                        let mut byte = [0u8; 1];
                        while stream.read_exact(&mut byte).await.is_ok() {
                            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                })
                .build();
            let node = client_node(1);
            let nic = Nic::default();
            nic.attach(node.id());
            let writer = node.id();
            node.spawn(async move {
                let mut stream = SimConnector(Address::new(addr), nic.clone())
                    .connect()
                    .await
                    .unwrap();
                nic.set_latency(None, 1, Some([latency_ms, latency_ms]));
                stream.write_all(&[1, 2, 3]).await.unwrap();
                stream.flush().await.unwrap();
                madsim::time::sleep(Duration::from_secs(60)).await;
            });
            madsim::time::sleep(Duration::from_millis(50)).await;
            Handle::current().kill(writer);
            madsim::time::sleep(Duration::from_secs(2)).await;
            count.load(std::sync::atomic::Ordering::SeqCst)
        });
        assert_eq!(received, 3, "latency {latency_ms} ms");
    }
}

/// How the peer in [`a_vanished_peer_is_seen_only_after_the_heal`] goes away.
#[derive(Debug, Clone, Copy)]
enum Vanish {
    /// Its process closes the connection (a FIN).
    Close,
    /// Its process dies (the kernel closes the socket; a write to it gets a RST).
    Die,
}

/// A peer at 10.0.0.9 behind a partition (both ways, 500–3000 ms) writes "bye" at 1000 ms
/// and then closes the connection or dies. Nothing of it crosses the cut: the client's
/// writes go into its socket as usual, and its reads wait. After the heal the client
/// reads "bye", then the end of the stream, and its next write is reset.
fn a_vanished_peer_is_seen_only_after_the_heal(vanish: Vanish) {
    simulate(6, || async move {
        let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), 7000);
        let peer = Handle::current()
            .create_node()
            .name("peer")
            .ip(addr.ip())
            .init(move || async move {
                let listener = SimListener::bind(addr, Nic::default()).await.unwrap();
                let (mut stream, _) = listener.accept().await.unwrap();
                madsim::time::sleep(Duration::from_millis(1000) - Duration::from_millis(now_ms())).await;
                stream.write_all(b"bye").await.unwrap();
                stream.flush().await.unwrap();
                if let Vanish::Close = vanish {
                    drop(stream);
                    madsim::time::sleep(Duration::from_secs(3600)).await;
                } else {
                    // Killed at 1100 ms with the connection open.
                    madsim::time::sleep(Duration::from_secs(3600)).await;
                    drop(stream);
                }
            })
            .build();
        let (peer_id, node) = (peer.id(), client_node(1));
        let client_id = node.id();
        let client = node.spawn(async move {
            let mut stream = SimConnector(Address::new(addr), Nic::default())
                .connect()
                .await
                .unwrap();
            madsim::time::sleep(Duration::from_millis(1500) - Duration::from_millis(now_ms())).await;
            stream.write_all(b"ping").await.unwrap();
            let written = stream.flush().await;
            assert!(
                written.is_ok(),
                "{vanish:?}: the peer's reset cannot cross the cut: {written:?}"
            );
            let mut buf = [0u8; 16];
            let read = madsim::time::timeout(Duration::from_millis(1400), stream.read(&mut buf)).await;
            assert!(
                read.is_err(),
                "{vanish:?}: neither its data nor its close cross the cut: {read:?} at {} ms",
                now_ms()
            );
            // Healed at 3000 ms: what the peer sent arrives in order, then its close.
            let n = stream.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"bye", "{vanish:?}");
            assert!(now_ms() >= 3000, "{vanish:?}: read at {} ms", now_ms());
            let n = stream.read(&mut buf).await.unwrap();
            assert_eq!(n, 0, "{vanish:?}: then the end of the stream");
            stream.write_all(b"ping").await.unwrap();
            let reset = stream.flush().await;
            assert!(
                matches!(&reset, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
                "{vanish:?}: a write after the heal is reset: {reset:?}"
            );
        });
        madsim::time::sleep(Duration::from_millis(500)).await;
        NetSim::current().clog_link(peer_id, client_id);
        NetSim::current().clog_link(client_id, peer_id);
        if let Vanish::Die = vanish {
            madsim::time::sleep(Duration::from_millis(600)).await;
            Handle::current().kill(peer_id);
        }
        madsim::time::sleep(Duration::from_millis(3000) - Duration::from_millis(now_ms())).await;
        NetSim::current().unclog_link(peer_id, client_id);
        NetSim::current().unclog_link(client_id, peer_id);
        client.await.unwrap();
    });
}

#[test]
fn a_close_across_a_cut_link_is_seen_only_after_the_heal() {
    a_vanished_peer_is_seen_only_after_the_heal(Vanish::Close);
}

#[test]
fn a_peer_that_dies_behind_a_cut_link_is_seen_only_after_the_heal() {
    a_vanished_peer_is_seen_only_after_the_heal(Vanish::Die);
}
