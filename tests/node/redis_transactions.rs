//! MULTI/EXEC/DISCARD/WATCH/UNWATCH on the fake node against redis-server 7.0: a two-
//! connection dialogue with every reply compared (RESP2 and RESP3), and a WATCH on a replica
//! aborted by a write that reached it through replication. (A watched key that expires
//! between WATCH and EXEC is proven in `src/redis/cmd/transactions.rs`, on the node's clock.)

use crate::support;

use std::net::SocketAddr;

use support::differential::{on_real_and_fake_replicas, same_transcripts_on_real_and_fake};
use support::resp::{RespClient, Value};
use support::{wait_for_link, wait_for_stream};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// Steps as `(connection, request)`: `a` runs the transactions, `b` changes keys under them.
const DIALOGUE: &[(char, &str)] = &[
    ('a', "EXEC"),
    ('a', "DISCARD"),
    ('a', "MULTI"),
    ('a', "MULTI"),
    ('a', "WATCH|k"),
    ('a', "SET|k|v|bogus"),
    ('a', "SET|k|v"),
    ('a', "INCR|k"),
    ('a', "BLPOP|l|0"),
    ('a', "WAIT|0|0"),
    ('a', "EVAL|return redis.call('get', KEYS[1])|1|k"),
    ('a', "SELECT|1"),
    ('a', "GET|k"),
    ('a', "EXEC"),
    ('a', "GET|k"),
    ('a', "SELECT|0"),
    ('a', "MULTI"),
    ('a', "CLIENT|FOO"),
    ('a', "CONFIG|GET"),
    ('a', "SCRIPT|BAR"),
    ('a', "CONFIG|SET|hz|abc"),
    ('a', "EXEC"),
    ('a', "MULTI"),
    ('a', "CONFIG|SET|hz|abc"),
    ('a', "CLIENT|KILL|TYPE|bogus"),
    ('a', "EXEC"),
    ('a', "MULTI"),
    ('a', "GET"),
    ('a', "NOSUCH|x"),
    ('a', "SET|k|1"),
    ('a', "EXEC"),
    ('a', "GET|k"),
    ('a', "WATCH|k"),
    ('b', "SET|k|2"),
    ('a', "MULTI"),
    ('a', "GET|k"),
    ('a', "EXEC"),
    ('a', "WATCH|k|nokey"),
    ('b', "SET|nokey|1"),
    ('a', "MULTI"),
    ('a', "EXEC"),
    ('a', "WATCH|k"),
    ('a', "SET|k|mine"),
    ('a', "MULTI"),
    ('a', "EXEC"),
    ('a', "WATCH|absent"),
    ('b', "FLUSHDB"),
    ('a', "MULTI"),
    ('a', "SET|absent|1"),
    ('a', "EXEC"),
    ('a', "WATCH|absent"),
    ('b', "FLUSHALL"),
    ('a', "MULTI"),
    ('a', "EXEC"),
    ('a', "WATCH|k"),
    ('b', "SET|k|3|NX"),
    ('b', "SET|k|4|XX"),
    ('a', "UNWATCH"),
    ('a', "MULTI"),
    ('a', "HSET|h|f|1"),
    ('a', "HGETALL|h"),
    ('a', "ZADD|z|1.5|m"),
    ('a', "ZSCORE|z|m"),
    ('a', "EXEC"),
    ('a', "WATCH"),
    ('a', "UNWATCH|x"),
    ('a', "MULTI"),
    ('a', "DISCARD|x"),
    ('a', "PING"),
    ('a', "DISCARD"),
    ('a', "GET|k"),
    ('a', "MULTI"),
    ('a', "SET|k|5"),
    ('a', "RESET"),
    ('a', "EXEC"),
    ('a', "GET|k"),
    // An EXEC refused before it runs (its arity) discards the transaction and the watches:
    // the next request runs at once, and a later write to the watched key aborts nothing.
    ('a', "EXEC|x"),
    ('a', "WATCH|k"),
    ('a', "MULTI"),
    ('a', "SET|k|6"),
    ('a', "EXEC|x"),
    ('a', "GET|k"),
    ('b', "SET|k|7"),
    ('a', "MULTI"),
    ('a', "GET|k"),
    ('a', "EXEC"),
];

fn transcript(addr: SocketAddr, resp3: bool) -> Vec<(String, Value)> {
    let mut a = RespClient::connect(addr);
    let mut b = RespClient::connect(addr);
    b.request(&words("FLUSHALL"));
    if resp3 {
        a.request(&words("HELLO|3"));
    }
    DIALOGUE
        .iter()
        .map(|(who, request)| {
            let client = if *who == 'a' { &mut a } else { &mut b };
            (format!("{who}: {request}"), client.request(&words(request)))
        })
        .collect()
}

#[test]
fn transactions_answer_as_redis_server_7_0_does_in_both_protocols() {
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let aborted = if resp3 { Value::Null } else { Value::NullArray };
        assert!(
            got.iter().any(|(_, reply)| *reply == aborted),
            "a WATCH aborted an EXEC"
        );
    }
}

/// WATCHes a key on the replica, writes it on the master, and runs a transaction on the
/// replica once the write arrived.
fn watched_through_replication(master: SocketAddr, replica: SocketAddr) -> Vec<Value> {
    wait_for_link(replica);
    wait_for_stream(master, replica);
    let mut watcher = RespClient::connect(replica);
    let mut writer = RespClient::connect(master);
    let mut replies = vec![watcher.request(&words("WATCH|k"))];
    replies.push(writer.request(&words("SET|k|from-master")));
    wait_for_stream(master, replica);
    for request in ["MULTI", "GET|k", "EXEC", "MULTI", "GET|k", "EXEC"] {
        replies.push(watcher.request(&words(request)));
    }
    replies
}

#[test]
fn a_write_replicated_to_a_watched_key_aborts_exec_as_in_redis() {
    let (expected, got) = on_real_and_fake_replicas(watched_through_replication);
    assert_eq!(expected, got);
    assert_eq!(got[4], Value::NullArray, "the replicated write aborted the EXEC");
    assert_eq!(
        got[7],
        Value::Array(vec![Value::Bulk("from-master".into())]),
        "the next transaction runs"
    );
}
