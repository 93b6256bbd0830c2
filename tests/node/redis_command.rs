//! COMMAND on the fake node against redis-server 7.0: COUNT and LIST name the commands of
//! the node's tables, INFO and DOCS describe each as Redis 7.0 does, reply for reply in
//! RESP2 and RESP3. The descriptions are Redis's own, read from a real redis-server into
//! src/redis/cmd/redis-7.0-commands.resp3; this test fails when what the node serves from
//! that file differs from what redis-server says, and `UPDATE_COMMAND_DESCRIPTIONS=1`
//! rewrites it.

use crate::support;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use locksim::redis::cmd::command::DESCRIPTIONS_FILE;
use locksim::redis::cmd::descriptions::element_end;
use support::differential::{in_one_order, same_transcripts_on_real_and_fake};
use support::resp::{RespClient, Value, encode};
use support::{FakeServer, RedisServer};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// The names of a COMMAND LIST reply.
fn names(reply: Value) -> Vec<String> {
    let Value::Array(items) = reply else {
        panic!("COMMAND LIST replied {reply:?}")
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Bulk(name) => name,
            other => panic!("a name is a bulk string: {other:?}"),
        })
        .collect()
}

/// The raw RESP3 bytes of one reply of `addr` to `request`.
fn raw_resp3_reply(stream: &mut TcpStream, request: &[Vec<u8>]) -> Vec<u8> {
    stream.write_all(&encode(request)).unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        if let Some(end) = element_end(&bytes, 0) {
            assert_eq!(end, bytes.len(), "one reply and nothing after it");
            return bytes;
        }
        let read = stream.read(&mut chunk).unwrap();
        assert!(read > 0, "the server hung up");
        bytes.extend_from_slice(&chunk[..read]);
    }
}

/// What redis-server says of `commands`: its RESP3 replies to COMMAND INFO and COMMAND DOCS.
fn descriptions_of(addr: SocketAddr, commands: &[String]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    raw_resp3_reply(&mut stream, &words("HELLO|3"));
    let ask = |subcommand: &str| {
        let mut request = words(&format!("COMMAND|{subcommand}"));
        request.extend(commands.iter().map(|name| name.as_bytes().to_vec()));
        request
    };
    let mut out = raw_resp3_reply(&mut stream, &ask("INFO"));
    out.extend(raw_resp3_reply(&mut stream, &ask("DOCS")));
    out
}

#[test]
fn the_descriptions_are_what_redis_server_7_0_says_of_the_tables_commands() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    let commands = names(RespClient::connect(fake.addr).request(&words("COMMAND|LIST")));
    if std::env::var_os("UPDATE_COMMAND_DESCRIPTIONS").is_some() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DESCRIPTIONS_FILE);
        std::fs::write(&path, descriptions_of(real.addr, &commands)).unwrap();
        return;
    }
    for subcommand in ["INFO", "DOCS"] {
        let mut request = words(&format!("COMMAND|{subcommand}"));
        request.extend(commands.iter().map(|name| name.as_bytes().to_vec()));
        let said = |addr: SocketAddr| {
            let mut client = RespClient::connect(addr);
            client.request(&words("HELLO|3"));
            in_one_order(client.request(&request))
        };
        assert!(
            said(fake.addr) == said(real.addr),
            "COMMAND {subcommand} differs from what redis-server says of the tables' commands; \
             rewrite {DESCRIPTIONS_FILE} with UPDATE_COMMAND_DESCRIPTIONS=1 cargo test --locked \
             --test node redis_command::"
        );
    }
}

const DIALOGUE: &[&str] = &[
    "COMMAND|INFO|get",
    "COMMAND|INFO|GET|nosuch|set|hset|eval|blpop|client|config",
    "COMMAND|INFO|nosuch",
    "COMMAND|DOCS|get|nosuch|zadd|eval|blpop",
    "COMMAND|DOCS|nosuch",
    "COMMAND|COUNT|x",
    "COMMAND|LIST|x",
    "COMMAND|LIST|FILTERBY|bogus|x",
    "COMMAND|LIST|FILTERBY|PATTERN",
    "COMMAND|LIST|FILTERBY|MODULE|x",
    "COMMAND|BOGUS",
    "EVAL|return #redis.call('COMMAND','INFO','get','set')|0",
];

#[test]
fn command_info_and_docs_answer_as_redis_server_7_0_does_in_both_protocols() {
    same_transcripts_on_real_and_fake(|addr, resp3| {
        let mut client = RespClient::connect(addr);
        if resp3 {
            client.request(&words("HELLO|3"));
        }
        DIALOGUE
            .iter()
            .map(|request| (request.to_string(), in_one_order(client.request(&words(request)))))
            .collect()
    });
}

#[test]
fn count_and_list_name_the_tables_commands_and_filter_as_redis_does() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    let mut on_real = RespClient::connect(real.addr);
    let mut on_fake = RespClient::connect(fake.addr);
    let listed = names(on_fake.request(&words("COMMAND|LIST")));
    assert!(listed.len() > 100, "{listed:?}");
    assert_eq!(
        on_fake.request(&words("COMMAND|COUNT")),
        Value::Int(listed.len() as i64)
    );
    let real_names: BTreeSet<String> = names(on_real.request(&words("COMMAND|LIST")))
        .into_iter()
        .collect();
    let ours: BTreeSet<String> = listed.iter().cloned().collect();
    assert!(ours.is_subset(&real_names), "{:?}", ours.difference(&real_names));
    for filter in [
        "PATTERN|h*",
        "PATTERN|*set*",
        "ACLCAT|hash",
        "ACLCAT|WRITE",
        "ACLCAT|nosuch",
    ] {
        let request = words(&format!("COMMAND|LIST|FILTERBY|{filter}"));
        let expected: BTreeSet<String> = names(on_real.request(&request))
            .into_iter()
            .filter(|name| ours.contains(name))
            .collect();
        let got: BTreeSet<String> = names(on_fake.request(&request)).into_iter().collect();
        assert_eq!(got, expected, "FILTERBY {filter}");
    }
    // COMMAND alone is COMMAND INFO of every command.
    let mut info_all = words("COMMAND|INFO");
    info_all.extend(listed.iter().map(|name| name.as_bytes().to_vec()));
    assert_eq!(
        in_one_order(on_fake.request(&words("COMMAND"))),
        in_one_order(on_real.request(&info_all))
    );
}
