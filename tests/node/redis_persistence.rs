//! Persistence modes: a node restarted on the same disk starts from what its machine kept.
//! A process crash (stopping a fake server) loses no acknowledged write under either fsync
//! policy: Redis wrote it to the AOF, into the OS's page cache, before replying. A power
//! loss also drops the page cache: under `always` every acknowledged write survives, under
//! `everysec` one before the next fsync is lost, after it none. Without persistence
//! nothing survives. Under RDB a restart starts from the last snapshot: what came after it
//! is lost, and what was deleted after it comes back.

use crate::support;

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

#[test]
fn save_and_bgsave_write_the_snapshot_a_restart_reads_back() {
    let disk = Disk::new();
    // No save points: snapshots only on request.
    let rdb = || Persistence::Rdb {
        disk: disk.clone(),
        save_points: vec![],
    };
    let node = FakeServer::start_with(None, rdb());
    let mut client = RespClient::connect(node.addr);
    let mut request = |text: &str| client.request(&words(text));
    assert_eq!(request("SET saved s"), Value::Simple("OK".into()));
    assert_eq!(request("SAVE"), Value::Simple("OK".into()));
    assert_eq!(request("SET bgsaved b"), Value::Simple("OK".into()));
    assert_eq!(
        request("BGSAVE"),
        Value::Simple("Background saving started".into())
    );
    assert_eq!(request("SET late l"), Value::Simple("OK".into()));
    let info = request("INFO persistence");
    let Value::Bulk(info) = info else {
        panic!("INFO replied {info:?}")
    };
    assert!(info.contains("rdb_changes_since_last_save:1\r\n"), "{info}");
    assert!(info.contains("rdb_saves:2\r\n"), "{info}");
    assert!(info.contains("rdb_last_bgsave_time_sec:0\r\n"), "{info}");
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let Value::Int(last_save_s) = request("LASTSAVE") else {
        panic!("LASTSAVE is an integer")
    };
    assert!((now_s - last_save_s).abs() <= 5, "{last_save_s} is now ({now_s})");
    assert!(info.contains(&format!("rdb_last_save_time:{last_save_s}\r\n")));
    drop(client);
    drop(node);
    disk.lose_page_cache();
    let node = FakeServer::start_with(None, rdb());
    let mut client = RespClient::connect(node.addr);
    assert_eq!(
        client.request(&words("MGET saved bgsaved late")),
        Value::Array(vec![
            Value::Bulk("s".into()),
            Value::Bulk("b".into()),
            Value::NullBulk
        ]),
        "the restart reads BGSAVE's snapshot, without what came after it"
    );
}

/// The snapshot commands' replies and checks that are the same on every redis-server 7.0,
/// and INFO persistence's field names, in RESP2 and RESP3.
#[test]
fn the_snapshot_commands_answer_as_redis_server_7_0_does() {
    use support::differential::same_transcripts_on_real_and_fake;
    const DIALOGUE: &[&str] = &[
        "SAVE|x",
        "LASTSAVE|x",
        "BGSAVE|x",
        "BGSAVE|SCHEDULE|x",
        "SET|a|1",
        "SET|b|2",
        "DEL|a|b|c",
        "INFO|persistence",
        "SAVE",
        "INFO|persistence",
        "SET|a|1",
        "INFO|persistence",
        "EVAL|return redis.call('SAVE')|0",
        "MULTI",
        "SET|a|2",
        "SAVE",
        "EXEC",
        "GET|a",
        "CONFIG|SET|save|1",
        "CONFIG|SET|save|a b",
        "CONFIG|SET|save|1 -1",
        "CONFIG|SET|save|10 1  20 2",
        "CONFIG|SET|save|3600 1 300 100",
        "CONFIG|GET|save",
        "CONFIG|SET|save|",
        "CONFIG|SET|appendfsync|No",
        "CONFIG|GET|appendfsync",
        "CONFIG|SET|appendfsync|everysec",
    ];
    // INFO persistence by field name, with the values that differ between two servers by
    // nature (times, sizes of a real fork) left out.
    let shown = |reply: Value| match reply {
        Value::Bulk(text) | Value::Verbatim(_, text) => Value::Array(
            text.lines()
                .map(|line| {
                    let same_value = [
                        "rdb_changes_since_last_save",
                        "rdb_saves",
                        "rdb_bgsave_in_progress",
                    ]
                    .iter()
                    .any(|field| line.starts_with(field));
                    let shown = if same_value {
                        line
                    } else {
                        line.split(':').next().unwrap_or(line)
                    };
                    Value::Simple(shown.to_string())
                })
                .collect(),
        ),
        Value::Error(text) if text.contains("script:") => {
            Value::Error(text.split(" script:").next().unwrap_or_default().to_string())
        }
        other => other,
    };
    same_transcripts_on_real_and_fake(|addr, resp3| {
        let mut client = RespClient::connect(addr);
        client.request(&words("FLUSHALL"));
        client.request(&words("SAVE"));
        if resp3 {
            client.request(&words("HELLO 3"));
        }
        DIALOGUE
            .iter()
            .map(|request| {
                let words: Vec<Vec<u8>> = request.split('|').map(|w| w.as_bytes().to_vec()).collect();
                (request.to_string(), shown(client.request(&words)))
            })
            .collect()
    });
}

#[test]
fn config_set_appendfsync_always_makes_the_next_write_survive_a_power_loss() {
    let disk = Disk::new();
    let node = FakeServer::start_with(None, aof(&disk, Fsync::EverySec));
    let mut client = RespClient::connect(node.addr);
    let mut request = |text: &str| client.request(&words(text));
    assert_eq!(request("SET before-change a"), Value::Simple("OK".into()));
    assert_eq!(
        request("CONFIG SET appendfsync always"),
        Value::Simple("OK".into())
    );
    assert_eq!(request("SET after-change b"), Value::Simple("OK".into()));
    drop(client);
    drop(node);
    disk.lose_page_cache();
    let restarted = || aof(&disk, Fsync::EverySec);
    assert_eq!(
        get(restarted(), "after-change"),
        Value::Bulk("b".into()),
        "fsynced before its reply"
    );
    // An fsync writes the whole page cache back: the earlier write went with it.
    assert_eq!(get(restarted(), "before-change"), Value::Bulk("a".into()));
}

#[test]
fn config_set_save_makes_a_node_without_save_points_snapshot() {
    let disk = Disk::new();
    let node = FakeServer::start_with(
        None,
        Persistence::Rdb {
            disk: disk.clone(),
            save_points: vec![],
        },
    );
    let mut client = RespClient::connect(node.addr);
    assert_eq!(client.request(&words("SET k v")), Value::Simple("OK".into()));
    assert!(disk.contents().is_empty(), "no save point, no snapshot");
    let mut set_save = words("CONFIG SET save");
    set_save.push(b"0 1".to_vec());
    assert_eq!(client.request(&set_save), Value::Simple("OK".into()));
    // Due once the wall clock's second has turned since the start; the server looks ten
    // times a second.
    let deadline = Instant::now() + Duration::from_secs(10);
    while disk.contents().is_empty() {
        assert!(Instant::now() < deadline, "no snapshot within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    let Value::Bulk(info) = client.request(&words("INFO persistence")) else {
        panic!("INFO is a bulk string in RESP2")
    };
    assert!(info.contains("rdb_saves:1\r\n"), "{info}");
    drop(client);
    drop(node);
    let restarted = FakeServer::start_with(
        None,
        Persistence::Rdb {
            disk: disk.clone(),
            save_points: vec![],
        },
    );
    assert_eq!(
        RespClient::connect(restarted.addr).request(&words("GET k")),
        Value::Bulk("v".into())
    );
}

/// A BGSAVE while one is in progress, as redis-server 7.0 refuses it, in RESP2 and RESP3:
/// BGSAVE (SCHEDULE too), SAVE and a BGSAVE inside EXEC get `Background save already in
/// progress` until the save is done; then BGSAVE starts one, and inside EXEC (where Redis
/// may not fork) it is scheduled. The real server's save is made slow (a second per key)
/// and both servers notice the end at `hz 1`, so the dialogue runs well inside the save.
#[test]
fn bgsave_while_one_is_in_progress_is_refused_as_redis_server_7_0_refuses_it() {
    use support::RedisServer;
    const WHILE_SAVING: &[&str] = &[
        "CONFIG SET hz 1",
        "SET k v",
        "BGSAVE",
        "BGSAVE",
        "BGSAVE SCHEDULE",
        "SAVE",
        "MULTI",
        "BGSAVE",
        "EXEC",
    ];
    const AFTER: &[&str] = &["MULTI", "BGSAVE", "EXEC"];
    /// Whether INFO says a background save is in progress.
    fn saving(client: &mut RespClient) -> bool {
        let info = client.request(&words("INFO persistence"));
        let (Value::Bulk(text) | Value::Verbatim(_, text)) = &info else {
            panic!("INFO replied {info:?}")
        };
        text.contains("rdb_bgsave_in_progress:1\r\n")
    }
    let transcript = |addr, resp3: bool| {
        let mut client = RespClient::connect(addr);
        if resp3 {
            client.request(&words("HELLO 3"));
        }
        let mut replies: Vec<(String, Value)> = WHILE_SAVING
            .iter()
            .map(|request| (request.to_string(), client.request(&words(request))))
            .collect();
        replies.push(("saving".into(), Value::Int(i64::from(saving(&mut client)))));
        let deadline = Instant::now() + Duration::from_secs(10);
        while saving(&mut client) {
            assert!(Instant::now() < deadline, "the background save never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
        replies.extend(
            AFTER
                .iter()
                .map(|request| (request.to_string(), client.request(&words(request)))),
        );
        replies
    };
    for resp3 in [false, true] {
        let real = RedisServer::start(&["--rdb-key-save-delay", "1000000"]);
        let fake = FakeServer::start();
        let (expected, got) = (transcript(real.addr, resp3), transcript(fake.addr, resp3));
        // Redis kills its saving child when it shuts down (a killed server would leave it).
        let mut shutdown = RespClient::connect(real.addr);
        assert_eq!(shutdown.request(&words("SHUTDOWN NOSAVE")), Value::Closed);
        assert_eq!(got, expected, "RESP{}", if resp3 { 3 } else { 2 });
        let refused = Value::Error("ERR Background save already in progress".into());
        assert_eq!(got[3].1, refused, "a second BGSAVE is refused");
    }
}
