//! The simulated network's own fault models, below any scenario: a node's NIC resets its
//! connections the way a RST does, delays messages without holding the writer back, and a
//! connect over a cut link hangs as a dropped SYN does.

mod support;

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
