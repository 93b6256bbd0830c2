//! A script past `lua-time-limit` (issue 31, point 7): the dialogue Redis 7.0 holds with
//! the other clients while a script runs too long, pinned against a real redis-server so
//! the texts are Redis's own and not our reading of its source.
//!
//! While the script runs past the limit, another client's request gets BUSY, except the
//! commands Redis allows while busy (SCRIPT KILL, SHUTDOWN NOSAVE …); SCRIPT KILL ends a
//! script that has not written with an error `pcall` cannot swallow, and answers
//! UNKILLABLE for one that wrote; the script's own pipelined request is answered after the
//! script's reply. The fake node holds the same dialogue (its busy pass,
//! `src/redis/server/busy.rs`).

use crate::support;

use std::net::SocketAddr;

use support::resp::{RespClient, Value, encode};
use support::{FakeServer, RedisServer};

/// A read-only script that loops until killed.
const SPINS: &str = "while true do end";
/// One that loops inside `pcall`, which must not catch SCRIPT KILL.
const SPINS_IN_PCALL: &str = "local f = function() while true do end end while true do pcall(f) end";

/// How many PINGs a client sends, each answered, before the script must have become busy.
const PINGS_BEFORE_BUSY: usize = 1000;

const BUSY: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const NOT_BUSY: &str = "NOTBUSY No scripts in execution right now.";
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against \
                          the dataset. You can either wait the script termination or kill the \
                          server in a hard way using the SHUTDOWN NOSAVE command.";

fn words(text: &str) -> Vec<Vec<u8>> {
    text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

fn eval(script: &str) -> Vec<u8> {
    encode(&[b"EVAL".to_vec(), script.as_bytes().to_vec(), b"0".to_vec()])
}

/// Lets scripts run 10 ms before other clients are answered BUSY.
fn set_time_limit(client: &mut RespClient) {
    let reply = client.request(&words("CONFIG SET lua-time-limit 10"));
    assert_eq!(reply, Value::Simple("OK".into()));
}

/// Sends PING from `other` until it is refused as busy; the error it got.
fn ping_until_busy(other: &mut RespClient) -> Value {
    for _ in 0..PINGS_BEFORE_BUSY {
        match other.request(&words("PING")) {
            Value::Simple(pong) if pong == "PONG" => continue,
            refused => return refused,
        }
    }
    panic!("the server still answered PONG after {PINGS_BEFORE_BUSY} PINGs");
}

/// Runs `script` (which loops for ever unless killed) with a pipelined PING after it on
/// the same connection; another client waits for BUSY and sends SCRIPT KILL. Returns what
/// the other client got (busy refusal, SCRIPT KILL's reply) and what the script's
/// connection got (the script's reply, then its PING's), then the node's error statistics.
fn killed_script(addr: SocketAddr, script: &str) -> Vec<Value> {
    let mut runner = RespClient::connect(addr);
    let mut other = RespClient::connect(addr);
    set_time_limit(&mut other);
    assert_eq!(
        other.request(&words("SCRIPT KILL")),
        Value::Error(NOT_BUSY.into())
    );
    let mut pipeline = eval(script);
    pipeline.extend(encode(&words("PING")));
    runner.send(&pipeline);
    let busy = ping_until_busy(&mut other);
    let kill = other.request(&words("SCRIPT KILL"));
    let script_reply = runner.read();
    let pipelined_reply = runner.read();
    let after = other.request(&words("PING"));
    let errors = other.request(&words("INFO errorstats"));
    vec![busy, kill, script_reply, pipelined_reply, after, errors]
}

/// The error a killed `script` replies with (raised from its first line, where it loops).
fn killed(script: &str) -> String {
    let sha = locksim::redis::lua::sha1_hex(script.as_bytes());
    format!("ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.")
}

/// What the dialogue of a killed read-only `script` must be.
fn killed_dialogue(script: &str) -> Vec<Value> {
    vec![
        Value::Error(BUSY.into()),
        Value::Simple("OK".into()),
        Value::Error(killed(script)),
        Value::Simple("PONG".into()),
        Value::Simple("PONG".into()),
        // Each error counted once, the BUSY refusal too (INFO errorstats).
        Value::Bulk(
            "# Errorstats\r\nerrorstat_BUSY:count=1\r\nerrorstat_ERR:count=1\r\nerrorstat_NOTBUSY:count=1\r\n"
                .into(),
        ),
    ]
}

/// A script that wrote cannot be killed; SHUTDOWN NOSAVE ends the server (and the script).
fn unkillable_script(addr: SocketAddr) -> Vec<Value> {
    let mut runner = RespClient::connect(addr);
    let mut other = RespClient::connect(addr);
    set_time_limit(&mut other);
    runner.send(&eval("redis.call('set','x','y') while true do end"));
    let busy = ping_until_busy(&mut other);
    let kill = other.request(&words("SCRIPT KILL"));
    let shutdown = other.request(&words("SHUTDOWN NOSAVE"));
    vec![busy, kill, shutdown, runner.read()]
}

/// A request split across the busy pass: a client pipelines PING and half another PING
/// while the script runs long, and sends the other half after SCRIPT KILL. The first is
/// refused, the half read with it waits, and the whole is answered after the script.
fn split_request(addr: SocketAddr) -> Vec<Value> {
    let mut runner = RespClient::connect(addr);
    let mut other = RespClient::connect(addr);
    let mut splitter = RespClient::connect(addr);
    set_time_limit(&mut other);
    runner.send(&eval(SPINS));
    let busy = ping_until_busy(&mut other);
    let ping = encode(&words("PING"));
    let (head, tail) = ping.split_at(ping.len() - 3);
    let mut pipeline = ping.clone();
    pipeline.extend(head);
    splitter.send(&pipeline);
    let refused = splitter.read();
    let kill = other.request(&words("SCRIPT KILL"));
    let script_reply = runner.read();
    splitter.send(tail);
    vec![busy, refused, kill, script_reply, splitter.read()]
}

fn split_dialogue() -> Vec<Value> {
    vec![
        Value::Error(BUSY.into()),
        Value::Error(BUSY.into()),
        Value::Simple("OK".into()),
        Value::Error(killed(SPINS)),
        Value::Simple("PONG".into()),
    ]
}

fn unkillable_dialogue() -> Vec<Value> {
    vec![
        Value::Error(BUSY.into()),
        Value::Error(UNKILLABLE.into()),
        Value::Closed,
        Value::Closed,
    ]
}

#[test]
fn redis_kills_a_timed_out_read_only_script() {
    let server = RedisServer::start(&[]);
    assert_eq!(killed_script(server.addr, SPINS), killed_dialogue(SPINS));
}

#[test]
fn redis_kills_a_timed_out_script_even_inside_pcall() {
    let server = RedisServer::start(&[]);
    assert_eq!(
        killed_script(server.addr, SPINS_IN_PCALL),
        killed_dialogue(SPINS_IN_PCALL)
    );
}

#[test]
fn redis_refuses_to_kill_a_script_that_wrote() {
    let server = RedisServer::start(&[]);
    assert_eq!(unkillable_script(server.addr), unkillable_dialogue());
}

#[test]
fn the_fake_node_kills_a_timed_out_read_only_script() {
    let server = FakeServer::start();
    assert_eq!(killed_script(server.addr, SPINS), killed_dialogue(SPINS));
}

#[test]
fn the_fake_node_refuses_to_kill_a_script_that_wrote() {
    let server = FakeServer::start();
    assert_eq!(unkillable_script(server.addr), unkillable_dialogue());
}

#[test]
fn the_fake_node_kills_a_timed_out_script_even_inside_pcall() {
    let server = FakeServer::start();
    assert_eq!(
        killed_script(server.addr, SPINS_IN_PCALL),
        killed_dialogue(SPINS_IN_PCALL)
    );
}

#[test]
fn redis_answers_a_request_split_across_a_busy_script_after_it() {
    let server = RedisServer::start(&[]);
    assert_eq!(split_request(server.addr), split_dialogue());
}

#[test]
fn the_fake_node_answers_a_request_split_across_a_busy_script_after_it() {
    let server = FakeServer::start();
    assert_eq!(split_request(server.addr), split_dialogue());
}
