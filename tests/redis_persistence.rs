//! Persistence modes: a node restarted on the same disk starts from what it fsynced. Under
//! `always` every acknowledged write survives; under `everysec` a crash before the next
//! fsync loses the last writes, after it none; without persistence nothing survives.
//! (Stopping a fake server is a crash: its unsynced bytes die with it.)

mod support;

use std::time::{Duration, Instant};

use locksim::redis::persistence::{Disk, Fsync, Persistence};
use support::FakeServer;
use support::resp::{RespClient, Value};

fn words(text: &str) -> Vec<Vec<u8>> {
    text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

fn aof(disk: &Disk, fsync: Fsync) -> Persistence {
    Persistence::Aof {
        disk: disk.clone(),
        fsync,
    }
}

/// Runs `requests` on a node over `persistence`, waits until `until` holds, then crashes it.
fn run_and_crash(persistence: Persistence, requests: &[&str], until: impl Fn() -> bool) {
    let node = FakeServer::start_with(None, persistence);
    let mut client = RespClient::connect(node.addr);
    for request in requests {
        assert!(
            !matches!(client.request(&words(request)), Value::Error(_)),
            "{request}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !until() {
        assert!(Instant::now() < deadline, "the node never got there");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Crash at once.
fn now() -> bool {
    true
}

fn get(persistence: Persistence, key: &str) -> Value {
    let node = FakeServer::start_with(None, persistence);
    RespClient::connect(node.addr).request(&words(&format!("GET {key}")))
}

#[test]
fn appendfsync_always_keeps_every_acknowledged_write() {
    let disk = Disk::new();
    run_and_crash(
        aof(&disk, Fsync::Always),
        &["SET lock a PX 600000", "INCR n", "SET gone x", "DEL gone"],
        now,
    );
    assert_eq!(get(aof(&disk, Fsync::Always), "lock"), Value::Bulk("a".into()));
    assert_eq!(get(aof(&disk, Fsync::Always), "n"), Value::Bulk("1".into()));
    assert_eq!(get(aof(&disk, Fsync::Always), "gone"), Value::NullBulk);
}

#[test]
fn appendfsync_everysec_loses_the_writes_of_the_last_second() {
    let disk = Disk::new();
    // Crashed at once: the first fsync is a second away, so the write is lost.
    run_and_crash(aof(&disk, Fsync::EverySec), &["SET lock a"], now);
    assert_eq!(get(aof(&disk, Fsync::EverySec), "lock"), Value::NullBulk);
    // Crashed after an fsync (the once-a-second one put it on the disk): the write survives.
    let synced = || String::from_utf8_lossy(&disk.contents()).contains("lock\r\n$1\r\nb");
    run_and_crash(aof(&disk, Fsync::EverySec), &["SET lock b"], synced);
    assert_eq!(get(aof(&disk, Fsync::EverySec), "lock"), Value::Bulk("b".into()));
}

#[test]
fn without_persistence_a_restarted_node_is_empty() {
    run_and_crash(Persistence::None, &["SET lock a"], now);
    assert_eq!(get(Persistence::None, "lock"), Value::NullBulk);
}
