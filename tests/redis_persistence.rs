//! Persistence modes: a node restarted on the same disk starts from what it fsynced. Under
//! `always` every acknowledged write survives; under `everysec` a crash before the next
//! fsync loses the last writes, after it none; without persistence nothing survives.
//! (Stopping a fake server is a crash: its unsynced bytes die with it.)

mod support;

use std::time::{Duration, Instant};

use locksim::redis::persistence::{Disk, FSYNC_EVERY_MS, Fsync, Persistence};
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

/// When a node is crashed after its requests.
enum Crash<'a> {
    AtOnce,
    /// Once it has fsynced more to this disk than it held before the requests.
    AfterFsync(&'a Disk),
}

/// Runs `requests` on a node over `persistence`, then crashes it.
fn run_and_crash(persistence: Persistence, requests: &[&str], crash: Crash) {
    let saved_before = match crash {
        Crash::AtOnce => 0,
        Crash::AfterFsync(disk) => disk.contents().len(),
    };
    let node = FakeServer::start_with(None, persistence);
    let mut client = RespClient::connect(node.addr);
    for request in requests {
        assert!(
            !matches!(client.request(&words(request)), Value::Error(_)),
            "{request}"
        );
    }
    if let Crash::AfterFsync(disk) = crash {
        // The node fsyncs every FSYNC_EVERY_MS on the host clock, in a thread of its own.
        let deadline = Instant::now() + Duration::from_millis(FSYNC_EVERY_MS * 10);
        while disk.contents().len() <= saved_before {
            assert!(
                Instant::now() < deadline,
                "no fsync within {FSYNC_EVERY_MS} ms × 10"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
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
        Crash::AtOnce,
    );
    assert_eq!(get(aof(&disk, Fsync::Always), "lock"), Value::Bulk("a".into()));
    assert_eq!(get(aof(&disk, Fsync::Always), "n"), Value::Bulk("1".into()));
    assert_eq!(get(aof(&disk, Fsync::Always), "gone"), Value::NullBulk);
}

#[test]
fn appendfsync_everysec_loses_the_writes_of_the_last_second() {
    let disk = Disk::new();
    // Crashed at once: the first fsync is a second away, so the write is lost.
    run_and_crash(aof(&disk, Fsync::EverySec), &["SET lock a"], Crash::AtOnce);
    assert_eq!(get(aof(&disk, Fsync::EverySec), "lock"), Value::NullBulk);
    // Crashed after an fsync: the write survives.
    run_and_crash(
        aof(&disk, Fsync::EverySec),
        &["SET lock b"],
        Crash::AfterFsync(&disk),
    );
    assert_eq!(get(aof(&disk, Fsync::EverySec), "lock"), Value::Bulk("b".into()));
}

#[test]
fn without_persistence_a_restarted_node_is_empty() {
    run_and_crash(Persistence::None, &["SET lock a"], Crash::AtOnce);
    assert_eq!(get(Persistence::None, "lock"), Value::NullBulk);
}
