//! Replicated groups inside the simulation: replicas follow their master over simulated
//! TCP, and carry expiry times as the Redis version says.

use std::time::Duration;

use locksim::client::Conn;
use locksim::redis::Frame;
use locksim::redis::cmd::{Get, Pttl, Set, SetExpiry};
use locksim::scenario::{Scenario, load_str};
use locksim::world::clock::{ClockModel, SimClock};
use locksim::world::net::SimConnector;
use locksim::world::topology::Group;

/// A replicated scenario of this Redis version (only its topology matters here).
fn scenario(redis_version: u8) -> Scenario {
    let text = format!(
        r#"{{ "name": "t", "duration_ms": 1000, "topology": {{ "kind": "replicated", "redis_version": {redis_version} }},
              "lock": {{ "algorithm": "lua-release", "ttl_ms": 1000 }}, "clients": {{ "count": 1, "work_ms": [1, 1] }} }}"#
    );
    load_str(std::path::Path::new("(test)"), &text).unwrap()
}

/// A master and one replica of Redis `redis_version`, the replica's wall clock
/// `replica_ahead_ms` ahead; the master sets
/// `k` with a 10 s TTL; returns what the replica then says of `k`: (GET, PTTL).
fn replicate(redis_version: u8, replica_ahead_ms: i64) -> (Frame, Frame) {
    let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
    runtime.block_on(async move {
        let handle = madsim::runtime::Handle::current();
        let group = Group::new(0, vec!["m".into(), "r".into()], &scenario(redis_version));
        for (index, offset_ms) in [(0, 0), (1, replica_ahead_ms)] {
            let node_group = group.clone();
            handle
                .create_node()
                .name(&group.names[index])
                .ip(group.addrs[index].ip())
                .init(move || {
                    node_group.clone().serve(
                        index,
                        SimClock::new(ClockModel::new(offset_ms * 1_000_000, 0)),
                        None,
                        None,
                    )
                })
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
                let clock = SimClock::new(ClockModel::new(0, 0));
                // The replica's first dial may race the master's bind; it redials every second.
                madsim::time::sleep(Duration::from_secs(2)).await;
                let mut master = Conn::new(SimConnector::to(group.addrs[0]), clock.clone(), 1000);
                let mut replica = Conn::new(SimConnector::to(group.addrs[1]), clock, 1000);
                let set = Set {
                    key: b"k".to_vec(),
                    value: b"v".to_vec(),
                    condition: None,
                    expiry: Some(SetExpiry::Px(10_000)),
                };
                assert_eq!(
                    master.request(&set.into_frame()).await.unwrap(),
                    Frame::SimpleString(b"OK".to_vec())
                );
                madsim::time::sleep(Duration::from_millis(100)).await;
                let value = replica
                    .request(&Get { key: b"k".to_vec() }.into_frame())
                    .await
                    .unwrap();
                let pttl = replica
                    .request(&Pttl { key: b"k".to_vec() }.into_frame())
                    .await
                    .unwrap();
                (value, pttl)
            })
            .await
            .unwrap()
    })
}

fn millis(frame: Frame) -> i64 {
    match frame {
        Frame::Integer(ms) => ms,
        other => panic!("expected an integer, got {other:?}"),
    }
}

#[test]
fn a_simulated_replica_receives_its_masters_writes() {
    let (value, pttl) = replicate(7, 0);
    assert_eq!(value, Frame::BulkString(b"v".to_vec()));
    assert!((9_800..=10_000).contains(&millis(pttl)));
}

#[test]
fn redis_7_replicates_absolute_expiry_so_a_replica_clock_ahead_shortens_the_ttl() {
    let pttl = millis(replicate(7, 2_500).1);
    assert!((7_300..=7_500).contains(&pttl), "{pttl}");
}

#[test]
fn redis_6_replicates_the_time_left_so_the_replica_clock_does_not_matter() {
    let pttl = millis(replicate(6, 2_500).1);
    assert!((9_800..=10_000).contains(&pttl), "{pttl}");
}
