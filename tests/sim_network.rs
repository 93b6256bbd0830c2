//! The simulated network's own fault models, below any scenario: a node's NIC resets its
//! connections the way a RST does.

mod support;

use locksim::client::{Conn, RequestError};
use locksim::redis::Frame;
use locksim::redis::cmd::Get;
use locksim::world::net::{Address, Nic, SimConnector};
use support::sim::{client_node, clock, now_ms, simulate, start_redis};

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
        let client = client_node(1).spawn(async move {
            let nic = Nic::default();
            let mut conn = Conn::new(SimConnector(Address::new(redis), nic.clone()), clock(), 60_000);
            conn.request(&get()).await.expect("a clean link answers");
            nic.set_loss(None, Some(0.5));
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
            nic.set_loss(None, None);
            let sent_at = now_ms();
            conn.request(&get()).await.unwrap();
            assert!(now_ms() - sent_at < 50, "no loss, no retransmission");
        });
        client.await.unwrap();
    });
}
