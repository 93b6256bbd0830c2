//! Replicated groups inside the simulation: replicas follow their master over simulated
//! TCP, and the failover controller promotes one when the master dies.

use std::time::Duration;

use locksim::client::Conn;
use locksim::redis::Frame;
use locksim::redis::cmd::{Get, Set};
use locksim::scenario::PersistenceMode;
use locksim::world::clock::{ClockModel, SimClock};
use locksim::world::net::SimConnector;
use locksim::world::topology::Group;

fn clock() -> SimClock {
    SimClock::new(ClockModel::new(0, 0))
}

#[test]
fn a_simulated_replica_receives_its_masters_writes() {
    let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
    let replica_value = runtime.block_on(async {
        let handle = madsim::runtime::Handle::current();
        let group = Group::new(0, vec!["m".into(), "r".into()], PersistenceMode::None);
        for index in 0..2 {
            let node_group = group.clone();
            handle
                .create_node()
                .name(&group.names[index])
                .ip(group.addrs[index].ip())
                .init(move || node_group.clone().serve(index, clock()))
                .build();
        }
        // Connections come from a node of their own, as a client's would.
        let probe = handle
            .create_node()
            .name("probe")
            .ip("10.9.9.9".parse().unwrap())
            .build();
        probe
            .spawn(async move {
                // The replica's first dial may race the master's bind; it redials every second.
                madsim::time::sleep(Duration::from_secs(2)).await;
                let mut master = Conn::new(SimConnector::to(group.addrs[0]), clock(), 1000);
                let mut replica = Conn::new(SimConnector::to(group.addrs[1]), clock(), 1000);
                let set = Set {
                    key: b"k".to_vec(),
                    value: b"v".to_vec(),
                    condition: None,
                    expiry: None,
                };
                assert_eq!(
                    master.request(&set.into_frame()).await.unwrap(),
                    Frame::SimpleString(b"OK".to_vec())
                );
                madsim::time::sleep(Duration::from_millis(100)).await;
                replica
                    .request(&Get { key: b"k".to_vec() }.into_frame())
                    .await
                    .unwrap()
            })
            .await
            .unwrap()
    });
    assert_eq!(replica_value, Frame::BulkString(b"v".to_vec()));
}
