//! The replication stream, fake against real: a plain client attaches with `SYNC` (as
//! Redis's Tcl suite does), another connection runs commands, and the stream that follows
//! the RDB payload must be what redis-server 7.0 sends for the same commands: each write as
//! Redis 7 propagates it (rewritten where Redis rewrites it), nothing for a read, `SELECT`
//! first, `MULTI`/`EXEC` around a unit of several. Absolute times (13-digit Unix ms) differ
//! between the two servers' runs and are compared masked, after a check that they are the
//! expiry asked for.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use support::resp::{RespClient, Value};
use support::{FakeServer, RedisServer};

/// A command of the stream, its words as text.
type Command = Vec<String>;

/// The last command every dialogue sends: the stream is read up to it.
const TRAILING: [&str; 3] = ["SET", "trailing", "end"];

/// What stands in the stream for an absolute time.
const MASK: &str = "<unix ms>";

fn words(command: &[&str]) -> Vec<Vec<u8>> {
    command.iter().map(|w| w.as_bytes().to_vec()).collect()
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Attaches to `addr`'s replication stream with `SYNC`, skips the payload, runs `commands`
/// on another connection (each must be answered without an error), and returns the
/// commands the stream carried up to the trailing SET (sent on the same connection, so in
/// its last database), with absolute times masked once checked to lie at most `ttl_ms`
/// ahead of the wall clock.
fn stream_after(addr: SocketAddr, commands: &[&[&str]], ttl_ms: u64) -> Vec<Command> {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    (&stream).write_all(b"SYNC\r\n").unwrap();
    let mut line = String::new();
    while !line.starts_with('$') {
        line.clear();
        reader.read_line(&mut line).expect("the SYNC answer");
    }
    let length: usize = line[1..].trim().parse().expect("$<len>");
    let mut payload = vec![0; length];
    reader.read_exact(&mut payload).expect("the payload");
    let mut client = RespClient::connect(addr);
    for command in commands.iter().copied().chain([&TRAILING[..]]) {
        let reply = client.request(&words(command));
        assert!(
            !matches!(reply, Value::Error(_)),
            "{command:?} answered {reply:?}"
        );
    }
    let started = now_ms();
    let mut carried = Vec::new();
    while carried.last().is_none_or(|last: &Command| last != &TRAILING) {
        carried.push(read_command(&mut reader));
    }
    carried
        .into_iter()
        .map(|command| command.into_iter().map(|w| masked(w, started, ttl_ms)).collect())
        .collect()
}

/// One `*N` command of the stream (a keepalive newline skipped).
fn read_command(reader: &mut impl BufRead) -> Command {
    let mut line = String::new();
    while line.trim().is_empty() {
        line.clear();
        reader.read_line(&mut line).expect("a command of the stream");
    }
    let count: usize = line.trim().strip_prefix('*').expect("*N").parse().unwrap();
    (0..count)
        .map(|_| {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let length: usize = line.trim().strip_prefix('$').expect("$len").parse().unwrap();
            let mut word = vec![0; length + 2];
            reader.read_exact(&mut word).unwrap();
            word.truncate(length);
            String::from_utf8(word).unwrap()
        })
        .collect()
}

/// `word` with an absolute time masked, once checked to be at most `ttl_ms` after about
/// `now_ms` (5 s either way).
fn masked(word: String, now_ms: u64, ttl_ms: u64) -> String {
    const SLACK_MS: u64 = 5_000;
    match word.parse::<u64>() {
        Ok(at) if word.len() == 13 => {
            let window = now_ms.saturating_sub(SLACK_MS)..=now_ms + ttl_ms + SLACK_MS;
            assert!(
                window.contains(&at),
                "{at} is not within {ttl_ms} ms of now ({now_ms})"
            );
            MASK.into()
        }
        _ => word,
    }
}

/// Runs `commands` on a fresh redis-server and a fresh fake node and asserts both streams
/// are `expected` (masked, see [`stream_after`]), the trailing SET left out.
fn both_stream(commands: &[&[&str]], ttl_ms: u64, expected: &[&[&str]]) {
    let real = RedisServer::start(&["--repl-ping-replica-period", "3600"]);
    let fake = FakeServer::start();
    let expected: Vec<Command> = expected
        .iter()
        .chain([&&TRAILING[..]])
        .map(|c| c.iter().map(|w| w.to_string()).collect())
        .collect();
    assert_eq!(
        stream_after(real.addr, commands, ttl_ms),
        expected,
        "redis-server"
    );
    assert_eq!(stream_after(fake.addr, commands, ttl_ms), expected, "fake node");
}

#[test]
fn the_stream_selects_the_database_first_and_again_when_it_changes() {
    both_stream(
        &[&["SET", "a", "1"], &["SELECT", "3"], &["SET", "b", "2"]],
        0,
        &[
            &["SELECT", "0"],
            &["SET", "a", "1"],
            &["SELECT", "3"],
            &["SET", "b", "2"],
        ],
    );
}

#[test]
fn a_read_and_a_write_that_changed_nothing_are_not_propagated() {
    both_stream(
        &[
            &["MSET", "a", "1", "b", "2"],
            &["EVAL", "return redis.call('mget', 'a', 'b')", "0"],
            &["SET", "a", "3", "NX"],
            &["DEL", "missing"],
        ],
        0,
        &[&["SELECT", "0"], &["MSET", "a", "1", "b", "2"]],
    );
}

#[test]
fn set_with_a_relative_expiry_goes_out_as_set_pxat_without_its_flags() {
    both_stream(
        &[
            &["set", "k", "v", "NX", "EX", "100"],
            &["psetex", "p", "100000", "v"],
            &["set", "g", "v", "GET"],
        ],
        100_000,
        &[
            &["SELECT", "0"],
            &["SET", "k", "v", "PXAT", MASK],
            &["SET", "p", "v", "PXAT", MASK],
            &["set", "g", "v"],
        ],
    );
}

#[test]
fn expire_goes_out_as_pexpireat_and_an_expiry_in_the_past_as_del() {
    both_stream(
        &[
            &["SET", "k", "v"],
            &[
                "EVAL",
                "return redis.call('expire', KEYS[1], ARGV[1])",
                "1",
                "k",
                "50",
            ],
            &["PEXPIRE", "k", "100000", "GT"],
            &["EXPIREAT", "k", "1"],
        ],
        100_000,
        &[
            &["SELECT", "0"],
            &["SET", "k", "v"],
            &["PEXPIREAT", "k", MASK],
            &["PEXPIREAT", "k", MASK, "GT"],
            &["DEL", "k"],
        ],
    );
}

#[test]
fn getex_and_getdel_go_out_as_pexpireat_persist_and_del() {
    both_stream(
        &[
            &["SET", "k", "v"],
            &["GETEX", "k", "PX", "100000"],
            &["GETEX", "k", "PERSIST"],
            &["GETDEL", "k"],
        ],
        100_000,
        &[
            &["SELECT", "0"],
            &["SET", "k", "v"],
            &["PEXPIREAT", "k", MASK],
            &["PERSIST", "k"],
            &["DEL", "k"],
        ],
    );
}

#[test]
fn incrbyfloat_goes_out_as_set_keepttl() {
    both_stream(
        &[
            &["EVAL", "redis.call('hmget', KEYS[1], 1, 2, 3)", "1", "key"],
            &["EVAL", "redis.call('incrbyfloat', KEYS[1], 1)", "1", "key"],
            &["INCRBYFLOAT", "key", "2.5"],
        ],
        0,
        &[
            &["SELECT", "0"],
            &["SET", "key", "1", "KEEPTTL"],
            &["SET", "key", "3.5", "KEEPTTL"],
        ],
    );
}

#[test]
fn spop_goes_out_as_srem_and_a_count_that_takes_the_whole_set_as_del() {
    both_stream(
        &[
            &["SADD", "s", "a"],
            &["EVAL", "return redis.call('spop', 's')", "0"],
            &["EVAL", "return redis.call('spop', 's')", "0"],
            &["SADD", "s", "b"],
            &["SPOP", "s", "5"],
        ],
        0,
        &[
            &["SELECT", "0"],
            &["SADD", "s", "a"],
            &["SREM", "s", "a"],
            &["SADD", "s", "b"],
            &["DEL", "s"],
        ],
    );
}

#[test]
fn a_script_or_transaction_of_several_writes_goes_out_between_multi_and_exec_and_of_one_bare() {
    both_stream(
        &[
            &[
                "EVAL",
                "redis.call('set', 'a', '1'); redis.call('get', 'a'); redis.call('del', 'a')",
                "0",
            ],
            &["MULTI"],
            &["SET", "b", "1"],
            &["GET", "b"],
            &["EXEC"],
        ],
        0,
        &[
            &["SELECT", "0"],
            &["MULTI"],
            &["set", "a", "1"],
            &["del", "a"],
            &["EXEC"],
            &["SET", "b", "1"],
        ],
    );
}

#[test]
fn a_key_that_expires_goes_out_as_del() {
    let expired = |addr: SocketAddr| {
        // PXAT in the past keeps the key until something looks: the GET deletes it lazily.
        stream_after(addr, &[&["SET", "k", "v", "PXAT", "1"], &["GET", "k"]], 0)
    };
    let real = RedisServer::start(&["--repl-ping-replica-period", "3600"]);
    let fake = FakeServer::start();
    let (real, fake) = (expired(real.addr), expired(fake.addr));
    assert_eq!(fake, real);
    assert_eq!(real[2], vec!["DEL".to_string(), "k".into()], "{real:?}");
}
