//! SYNC from a plain client, fake against real: Redis's Tcl suite reads the replication
//! stream by sending `SYNC` on an ordinary connection (attach_to_replication_stream), and
//! redis-server 7.0 answers with the RDB payload as one `$<len>` bulk (no `+FULLRESYNC`
//! line, newlines as keepalives while it saves). The fake node must answer the same way.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use support::{FakeServer, RedisServer};

/// Sends `SYNC` and returns the first line of the answer (keepalive newlines skipped) and
/// the payload that line announces.
fn sync_payload(addr: SocketAddr) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream.write_all(b"SYNC\r\n").expect("send SYNC");
    let mut byte = [0u8; 1];
    let mut line = Vec::new();
    loop {
        stream.read_exact(&mut byte).expect("read the SYNC answer");
        match byte[0] {
            b'\n' if line.is_empty() => {}
            b'\n' => break,
            b'\r' => {}
            other => line.push(other),
        }
    }
    let line = String::from_utf8(line).expect("a text line");
    let length: usize = line
        .strip_prefix('$')
        .and_then(|length| length.parse().ok())
        .unwrap_or_else(|| panic!("SYNC answered {line:?}, not $<len>"));
    let mut payload = vec![0; length];
    stream.read_exact(&mut payload).expect("read the payload");
    (line, payload)
}

#[test]
fn sync_from_a_plain_client_gets_an_rdb_payload_as_redis_server_sends_it() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    let (_, real_payload) = sync_payload(real.addr);
    let (_, fake_payload) = sync_payload(fake.addr);
    assert!(
        real_payload.starts_with(b"REDIS"),
        "redis-server: {real_payload:?}"
    );
    assert!(fake_payload.starts_with(b"REDIS"), "fake node: {fake_payload:?}");
}
