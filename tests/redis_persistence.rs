//! Persistence modes: a node restarted on the same disk starts from what its machine kept.
//! A process crash (stopping a fake server) loses no acknowledged write under either fsync
//! policy: Redis wrote it to the AOF, into the OS's page cache, before replying. A power
//! loss also drops the page cache: under `always` every acknowledged write survives, under
//! `everysec` one before the next fsync is lost, after it none. Without persistence
//! nothing survives. Under RDB a restart starts from the last snapshot: what came after it
//! is lost, and what was deleted after it comes back.

mod support;

use std::time::{Duration, Instant};

use locksim::redis::persistence::{Disk, FSYNC_EVERY_MS, Fsync, Persistence, SavePoint};
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

/// When a node is crashed after its requests, and how.
enum Crash<'a> {
    /// The process is killed at once.
    AtOnce,
    /// The machine loses power at once.
    PowerLossAtOnce(&'a Disk),
    /// The machine loses power once the node has fsynced more to this disk than it held
    /// before the requests.
    PowerLossAfterFsync(&'a Disk),
}

/// Runs `requests` on a node over `persistence`, then crashes it.
fn run_and_crash(persistence: Persistence, requests: &[&str], crash: Crash) {
    let saved_before = match crash {
        Crash::AtOnce | Crash::PowerLossAtOnce(_) => 0,
        Crash::PowerLossAfterFsync(disk) => disk.synced().len(),
    };
    let node = FakeServer::start_with(None, persistence);
    let mut client = RespClient::connect(node.addr);
    for request in requests {
        assert!(
            !matches!(client.request(&words(request)), Value::Error(_)),
            "{request}"
        );
    }
    if let Crash::PowerLossAfterFsync(disk) = crash {
        // The node fsyncs every FSYNC_EVERY_MS on the host clock, in a thread of its own.
        let deadline = Instant::now() + Duration::from_millis(FSYNC_EVERY_MS * 10);
        while disk.synced().len() <= saved_before {
            assert!(
                Instant::now() < deadline,
                "no fsync within {FSYNC_EVERY_MS} ms × 10"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    drop(client);
    drop(node);
    if let Crash::PowerLossAtOnce(disk) | Crash::PowerLossAfterFsync(disk) = crash {
        disk.lose_page_cache();
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
        Crash::PowerLossAtOnce(&disk),
    );
    assert_eq!(get(aof(&disk, Fsync::Always), "lock"), Value::Bulk("a".into()));
    assert_eq!(get(aof(&disk, Fsync::Always), "n"), Value::Bulk("1".into()));
    assert_eq!(get(aof(&disk, Fsync::Always), "gone"), Value::NullBulk);
}

#[test]
fn appendfsync_everysec_loses_the_last_second_to_a_power_loss_and_nothing_to_a_process_crash() {
    let disk = Disk::new();
    // A process crash at once: the write is in the page cache, which the OS keeps.
    run_and_crash(aof(&disk, Fsync::EverySec), &["SET lock a"], Crash::AtOnce);
    assert_eq!(get(aof(&disk, Fsync::EverySec), "lock"), Value::Bulk("a".into()));
    // A power loss at once: the next fsync is a second away, so the write is lost.
    let disk = Disk::new();
    run_and_crash(
        aof(&disk, Fsync::EverySec),
        &["SET lock a"],
        Crash::PowerLossAtOnce(&disk),
    );
    assert_eq!(get(aof(&disk, Fsync::EverySec), "lock"), Value::NullBulk);
    // A power loss after an fsync: the write survives.
    run_and_crash(
        aof(&disk, Fsync::EverySec),
        &["SET lock b"],
        Crash::PowerLossAfterFsync(&disk),
    );
    assert_eq!(get(aof(&disk, Fsync::EverySec), "lock"), Value::Bulk("b".into()));
}

#[test]
fn without_persistence_a_restarted_node_is_empty() {
    run_and_crash(Persistence::None, &["SET lock a"], Crash::AtOnce);
    assert_eq!(get(Persistence::None, "lock"), Value::NullBulk);
}

#[test]
fn rdb_restarts_from_the_last_snapshot_losing_later_writes_and_reviving_later_deletes() {
    let disk = Disk::new();
    // A snapshot after three changes; the two made after it never reach the next one.
    let rdb = || Persistence::Rdb {
        disk: disk.clone(),
        save_points: vec![SavePoint {
            seconds: 0,
            changes: 3,
        }],
    };
    let node = FakeServer::start_with(None, rdb());
    let mut client = RespClient::connect(node.addr);
    for request in ["SET released a PX 600000", "SET kept k", "SET filler f"] {
        assert_eq!(client.request(&words(request)), Value::Simple("OK".into()));
    }
    // Due once the wall clock's second has turned since the start; the server looks ten
    // times a second.
    let deadline = Instant::now() + Duration::from_secs(10);
    while disk.contents().is_empty() {
        assert!(Instant::now() < deadline, "no snapshot within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(client.request(&words("DEL released")), Value::Int(1));
    assert_eq!(client.request(&words("SET late l")), Value::Simple("OK".into()));
    drop(client);
    drop(node);
    disk.lose_page_cache();
    let node = FakeServer::start_with(None, rdb());
    let mut client = RespClient::connect(node.addr);
    let get = |client: &mut RespClient, key: &str| client.request(&words(&format!("GET {key}")));
    assert_eq!(
        get(&mut client, "released"),
        Value::Bulk("a".into()),
        "a delete after the snapshot is undone"
    );
    let pttl = client.request(&words("PTTL released"));
    assert!(
        matches!(pttl, Value::Int(ms) if ms > 500_000),
        "the expiry is kept, absolute: {pttl:?}"
    );
    assert_eq!(get(&mut client, "kept"), Value::Bulk("k".into()));
    assert_eq!(
        get(&mut client, "late"),
        Value::NullBulk,
        "a write after the snapshot is lost"
    );
}
