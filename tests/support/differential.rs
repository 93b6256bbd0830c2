//! Running one client dialogue on redis-server and on the fake node, and comparing what
//! each answered, for the tests that hold the fake node to Redis 7.0 reply for reply.

use std::fmt::Debug;
use std::net::SocketAddr;

use super::resp::Value;
use super::{FakeServer, RedisServer};

/// Runs `dialogue(master, replica)` on a real redis-server master and its replica, then on
/// a fake master and its replica; returns what each run gave, real first.
pub fn on_real_and_fake_replicas<T>(dialogue: impl Fn(SocketAddr, SocketAddr) -> T) -> (T, T) {
    let real_master = RedisServer::start(&[]);
    let real_replica =
        RedisServer::start(&["--replicaof", "127.0.0.1", &real_master.addr.port().to_string()]);
    let fake_master = FakeServer::start();
    let fake_replica = FakeServer::start_with(
        Some(fake_master.addr),
        locksim::redis::persistence::Persistence::None,
    );
    let expected = dialogue(real_master.addr, real_replica.addr);
    let got = dialogue(fake_master.addr, fake_replica.addr);
    (expected, got)
}

/// Runs `transcript(addr, resp3)` on a redis-server and on a fake node, in RESP2 and then
/// RESP3, and asserts that each pair is equal; returns the fake node's two transcripts, as
/// `(resp3, transcript)`, for what a test checks beyond equality.
pub fn same_transcripts_on_real_and_fake<R: PartialEq + Debug>(
    transcript: impl Fn(SocketAddr, bool) -> Vec<(String, R)>,
) -> Vec<(bool, Vec<(String, R)>)> {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    [false, true]
        .into_iter()
        .map(|resp3| {
            let expected = transcript(real.addr, resp3);
            let got = transcript(fake.addr, resp3);
            assert_same_transcript(&expected, &got, resp3);
            (resp3, got)
        })
        .collect()
}

/// Asserts that two transcripts of `(request, replies)` are equal, showing every step with
/// both servers' replies and marking those that differ when they are not.
fn assert_same_transcript<R: PartialEq + Debug>(expected: &[(String, R)], got: &[(String, R)], resp3: bool) {
    let shown: Vec<String> = expected
        .iter()
        .zip(got)
        .map(|((request, real_reply), (_, fake_reply))| {
            let mark = if real_reply == fake_reply { "  " } else { "!!" };
            format!(
                "{mark} {request}\n      redis-server: {real_reply:?}\n      fake node:    {fake_reply:?}"
            )
        })
        .collect();
    assert!(
        expected == got,
        "the servers differ (RESP{}):\n{}",
        if resp3 { 3 } else { 2 },
        shown.join("\n")
    );
}

/// A reply with what differs between two redis-server processes by nature put in one
/// order: a command's subcommands (the tenth element of its COMMAND INFO entry) and a map's
/// pairs (COMMAND DOCS of a command with subcommands), which Redis lists in its hash
/// table's order, seeded anew by each process.
pub fn in_one_order(reply: Value) -> Value {
    let sorted = |mut items: Vec<Value>| {
        items.sort_by_key(|item| format!("{item:?}"));
        items
    };
    match reply {
        Value::Array(items) if items.len() == 10 && matches!(items[0], Value::Bulk(_)) => {
            let mut items: Vec<Value> = items.into_iter().map(in_one_order).collect();
            if let Value::Array(subcommands) = &mut items[9] {
                *subcommands = sorted(std::mem::take(subcommands));
            }
            Value::Array(items)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(in_one_order).collect()),
        Value::Map(pairs) => {
            let mut pairs: Vec<(Value, Value)> = pairs
                .into_iter()
                .map(|(key, value)| (in_one_order(key), in_one_order(value)))
                .collect();
            pairs.sort_by_key(|pair| format!("{pair:?}"));
            Value::Map(pairs)
        }
        other => other,
    }
}
