//! `locksim serve`: the fake node on a real port answers any client, lock scripts included.

use crate::support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Stdio};

use support::resp::{RespClient, Value};

/// A `locksim serve` process, killed when dropped.
struct Served {
    addr: SocketAddr,
    child: Child,
    /// Kept open: what the server prints later must not meet a closed pipe (and a test
    /// reads what it says as it shuts down).
    stdout: BufReader<ChildStdout>,
}

impl Served {
    /// Starts `locksim serve --port 0`: the server binds a port the kernel picks and
    /// prints the address, which is where it already listens.
    fn start() -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_locksim"))
            .args(["serve", "--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let _ = stdout.read_line(&mut line); // "" when the server exited first
        let addr: Option<SocketAddr> = line
            .trim_end()
            .split_once(" node listening on ")
            .and_then(|(_, addr)| addr.parse().ok());
        let Some(addr) = addr.filter(|addr| addr.port() != 0) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("locksim serve printed {line:?}, not the address it listens on");
        };
        Served { addr, child, stdout }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn words(text: &str) -> Vec<Vec<u8>> {
    text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

#[test]
fn a_served_node_speaks_resp2_and_resp3() {
    let served = Served::start();
    let mut client = RespClient::connect(served.addr);
    assert_eq!(client.request(&words("PING")), Value::Simple("PONG".into()));
    assert_eq!(client.request(&words("GET nokey")), Value::NullBulk);
    let Value::Map(hello) = client.request(&words("HELLO 3")) else {
        panic!("HELLO 3 answers with a map")
    };
    assert_eq!(
        hello[0],
        (Value::Bulk("server".into()), Value::Bulk("redis".into()))
    );
    assert_eq!(client.request(&words("GET nokey")), Value::Null);
    client.send(b"SET k \"a b\"\r\n");
    assert_eq!(client.read(), Value::Simple("OK".into()));
    assert_eq!(client.request(&words("GET k")), Value::Bulk("a b".into()));
}

#[test]
fn the_lock_scripts_run_on_a_served_node() {
    let served = Served::start();
    let mut client = RespClient::connect(served.addr);
    let set = |token: &str| words(&format!("SET lock {token} NX PX 5000"));
    let release = |token: &str| {
        let mut request = words("EVAL");
        request.push(locksim::client::scripts::RELEASE.as_bytes().to_vec());
        request.extend(words(&format!("1 lock {token}")));
        request
    };
    assert_eq!(client.request(&set("a")), Value::Simple("OK".into()));
    assert_eq!(
        client.request(&set("b")),
        Value::NullBulk,
        "a held lock is refused"
    );
    assert_eq!(
        client.request(&release("b")),
        Value::Int(0),
        "only the holder releases"
    );
    assert_eq!(client.request(&release("a")), Value::Int(1));
    assert_eq!(client.request(&set("b")), Value::Simple("OK".into()));
}

#[test]
fn a_pipeline_is_answered_in_order() {
    let served = Served::start();
    let mut client = RespClient::connect(served.addr);
    let mut pipeline = Vec::new();
    for i in 0..16 {
        pipeline.extend(support::resp::encode(&words(&format!("INCRBY n {i}"))));
    }
    pipeline.extend(support::resp::encode(&words("GET n")));
    client.send(&pipeline);
    let mut total = 0;
    for i in 0..16 {
        total += i;
        assert_eq!(client.read(), Value::Int(total), "reply {i} of the pipeline");
    }
    assert_eq!(client.read(), Value::Bulk("120".into()));
}

#[test]
fn a_thousand_clients_are_served_at_once() {
    const CLIENTS: usize = 1000;
    // The test holds one end of every connection, as the server holds the other.
    let limit = locksim::real::raise_open_files_limit().unwrap();
    assert!(
        limit > CLIENTS as u64 + 64,
        "this host allows only {limit} open files"
    );
    let served = Served::start();
    let mut clients: Vec<RespClient> = (0..CLIENTS).map(|_| RespClient::connect(served.addr)).collect();
    // Every connection is open before any is answered: the server holds them all at once.
    for (i, client) in clients.iter_mut().enumerate() {
        client.send(&support::resp::encode(&words(&format!("SET client:{i} {i}"))));
    }
    for (i, client) in clients.iter_mut().enumerate() {
        assert_eq!(client.read(), Value::Simple("OK".into()), "client {i}");
    }
    let mut last = clients.pop().unwrap();
    assert_eq!(last.request(&words("DBSIZE")), Value::Int(CLIENTS as i64));
}

/// A real redis-server pointed at a served node with `--replicaof` loads the node's
/// keyspace (every type, every database, expiry kept) from the RDB file the node sends,
/// then follows its stream.
#[test]
fn a_real_redis_server_replicates_a_served_node() {
    let served = Served::start();
    let mut master = RespClient::connect(served.addr);
    for request in [
        "SET s v PX 100000",
        "HSET h f1 v1 f2 v2",
        "ZADD z 1.5 a 2 b",
        "RPUSH l x y z",
        "SELECT 3",
        "SET other 1",
        "SELECT 0",
    ] {
        let reply = master.request(&words(request));
        assert!(!matches!(reply, Value::Error(_)), "{request}: {reply:?}");
    }
    let port = served.addr.port().to_string();
    let replica = support::RedisServer::start(&["--replicaof", "127.0.0.1", &port]);
    support::wait_for_link(replica.addr);
    let mut follower = RespClient::connect(replica.addr);
    let bulks = |items: &[&str]| Value::Array(items.iter().map(|i| Value::Bulk(i.to_string())).collect());
    assert_eq!(follower.request(&words("GET s")), Value::Bulk("v".into()));
    let Value::Int(ttl) = follower.request(&words("PTTL s")) else {
        panic!("PTTL answers an integer")
    };
    assert!(0 < ttl && ttl <= 100_000, "the expiry came along: PTTL {ttl}");
    assert_eq!(
        follower.request(&words("HGETALL h")),
        bulks(&["f1", "v1", "f2", "v2"])
    );
    assert_eq!(
        follower.request(&words("ZRANGE z 0 -1 WITHSCORES")),
        bulks(&["a", "1.5", "b", "2"])
    );
    assert_eq!(follower.request(&words("LRANGE l 0 -1")), bulks(&["x", "y", "z"]));
    assert_eq!(follower.request(&words("SELECT 3")), Value::Simple("OK".into()));
    assert_eq!(follower.request(&words("GET other")), Value::Bulk("1".into()));
    support::wait_for_stream(served.addr, replica.addr);
}

/// SIGTERM and SIGINT end `serve` as they end redis-server: it says so and exits 0 (its
/// exit handlers run, which `make pgo-profile` relies on to collect the served node's
/// profile); a client that was connected sees its connection closed.
#[test]
fn a_served_node_shuts_down_on_sigterm_and_sigint() {
    for (signal, said) in [
        (libc::SIGTERM, "SIGTERM: shutting down"),
        (libc::SIGINT, "SIGINT: shutting down"),
    ] {
        let mut served = Served::start();
        let mut client = RespClient::connect(served.addr);
        assert_eq!(client.request(&words("SET k v")), Value::Simple("OK".into()));
        let pid = libc::pid_t::try_from(served.child.id()).unwrap();
        // SAFETY: kill(2) on the child this test started and has not yet waited for.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let mut line = String::new();
        served.stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim_end(), said);
        let status = served.child.wait().unwrap();
        assert!(status.success(), "{said}: exited with {status}");
    }
}
