//! The script cache across failover and restart, as redis-server 7.0 keeps it (measured on
//! 7.0.15): SCRIPT LOAD and EVAL on a master put nothing into its replicas' caches (Redis 7
//! replicates a script's effects, never the script), so a promoted replica answers EVALSHA
//! of a script loaded on the old master with NOSCRIPT; and a restarted node has an empty
//! cache even when its AOF brings its keys back. Clients that send EVALSHA must fall back
//! to EVAL after either (redis-py and node-redlock do).

use crate::support;

use std::net::SocketAddr;

use locksim::redis::persistence::{Disk, Fsync, Persistence};
use support::differential::on_real_and_fake_replicas;
use support::resp::{RespClient, Value};
use support::{FakeServer, RedisServer, wait_for_link, wait_for_stream};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// SHA1 of `return 1` and of `return 2`, as SCRIPT LOAD names them.
const LOADED: &str = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
const EVALED: &str = "7f923f79fe76194c868d7e1d0820de36700eb649";

/// Loads one script and runs another on the master, then asks the replica for both, before
/// and after promoting it.
fn failover(master: SocketAddr, replica: SocketAddr) -> Vec<Value> {
    wait_for_link(replica);
    wait_for_stream(master, replica);
    let mut on_master = RespClient::connect(master);
    let mut on_replica = RespClient::connect(replica);
    let mut replies = vec![
        on_master.request(&words("SCRIPT|LOAD|return 1")),
        on_master.request(&words("EVAL|return 2|0")),
    ];
    wait_for_stream(master, replica);
    for request in [
        &format!("SCRIPT|EXISTS|{LOADED}|{EVALED}"),
        "REPLICAOF|NO|ONE",
        &format!("EVALSHA|{LOADED}|0"),
    ] {
        replies.push(on_replica.request(&words(request)));
    }
    replies.push(on_master.request(&words(&format!("EVALSHA|{LOADED}|0"))));
    replies
}

#[test]
fn a_promoted_replica_has_none_of_its_old_masters_scripts_as_in_redis() {
    let (expected, got) = on_real_and_fake_replicas(failover);
    assert_eq!(expected, got);
    assert_eq!(got[0], Value::Bulk(LOADED.into()));
    assert_eq!(
        got[2],
        Value::Array(vec![Value::Int(0), Value::Int(0)]),
        "neither SCRIPT LOAD nor EVAL reached the replica's cache"
    );
    assert_eq!(
        got[4],
        Value::Error("NOSCRIPT No matching script. Please use EVAL.".into())
    );
    assert_eq!(got[5], Value::Int(1), "the old master still has it");
}

/// Loads a script and writes a key, restarts the node by `restart` (which gives the new
/// address and what keeps the restarted node running until the end), and asks for both.
fn across_restart<Running>(addr: SocketAddr, restart: impl FnOnce() -> (SocketAddr, Running)) -> Vec<Value> {
    let mut client = RespClient::connect(addr);
    let mut replies = vec![
        client.request(&words("SCRIPT|LOAD|return 1")),
        client.request(&words("SET|k|v")),
    ];
    let (addr, _running) = restart();
    let mut client = RespClient::connect(addr);
    replies.push(client.request(&words("GET|k")));
    replies.push(client.request(&words(&format!("SCRIPT|EXISTS|{LOADED}"))));
    replies
}

#[test]
fn a_restarted_node_keeps_its_aof_keys_but_not_its_scripts_as_in_redis() {
    // A directory of its own that the restarted redis-server reads its AOF back from.
    let dir = std::env::temp_dir().join(format!("locksim-script-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.display().to_string();
    let mut real = RedisServer::start(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        &dir_arg,
    ]);
    let real_addr = real.addr;
    let expected = across_restart(real_addr, || {
        real.restart();
        (real_addr, ())
    });
    drop(real);
    let _ = std::fs::remove_dir_all(&dir);

    let aof = Persistence::Aof {
        disk: Disk::new(),
        fsync: Fsync::Always,
    };
    let fake = FakeServer::start_with(None, aof.clone());
    let got = across_restart(fake.addr, move || {
        drop(fake);
        // The same disk: the restarted process reads back what the first one wrote.
        let restarted = FakeServer::start_with(None, aof);
        (restarted.addr, restarted)
    });
    assert_eq!(expected, got);
    assert_eq!(got[2], Value::Bulk("v".into()), "the AOF brought the key back");
    assert_eq!(
        got[3],
        Value::Array(vec![Value::Int(0)]),
        "the script cache starts empty"
    );
}
