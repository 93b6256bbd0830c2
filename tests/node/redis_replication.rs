//! Replication, fake against real: a master and a replica of fake nodes (on real TCP, as
//! `locksim serve --replicaof` runs them) and of redis-server 7.0 go through the same steps,
//! and every reply must agree (offsets, ids and replication ids aside; TTLs within a
//! tolerance; INFO by its field names and the fields that describe the link).

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use locksim::redis::persistence::Persistence;
use support::proxy::Proxy;
use support::resp::{RespClient, Value};
use support::{FakeServer, RedisServer, wait_for_link, wait_for_stream};

const PTTL_TOLERANCE_MS: i64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Master,
    Replica,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    Exact,
    Millis,
    Seconds,
    /// ROLE: everything but the offsets.
    Role,
    /// INFO replication: the same field names, and equal values for these fields.
    Info,
    /// HELLO: everything but the client id.
    Hello,
}

/// Fields of INFO replication that must be equal; the rest (ids, offsets) may differ.
const INFO_FIELDS_COMPARED: &[&str] = &[
    "role",
    "connected_slaves",
    "master_host",
    "master_link_status",
    "master_sync_in_progress",
    "slave_read_only",
    "master_failover_state",
];

fn steps() -> Vec<(Node, &'static str, Check)> {
    use Check::*;
    use Node::*;
    vec![
        (Master, "SET lock tok NX PX 30000", Exact),
        (Master, "WAIT 1 2000", Exact),
        (Replica, "GET lock", Exact),
        (Replica, "PTTL lock", Millis),
        (Replica, "SET x y", Exact),
        (Replica, "SET x y bogus", Exact),
        (Replica, "EVAL return~redis.call('set','q','1') 0", Exact),
        (Replica, "EVAL return~redis.pcall('set','q','1') 0", Exact),
        (Replica, "EVAL return~redis.call('get','lock') 0", Exact),
        (Replica, "WAIT 0 0", Exact),
        (Replica, "HELLO 2", Hello),
        (Master, "HELLO 2", Hello),
        (Replica, "ROLE", Role),
        (Master, "INFO replication", Info),
        (Replica, "INFO replication", Info),
        (Master, "PEXPIREAT lock 1", Exact),
        (Master, "SET k v PX 100000", Exact),
        (Master, "EXPIRE k 50 GT", Exact),
        (Master, "EVAL return~redis.call('incr',KEYS[1]) 1 n", Exact),
        (Master, "WAIT 1 2000", Exact),
        (Replica, "EXISTS lock", Exact),
        (Replica, "TTL k", Seconds),
        (Replica, "GET n", Exact),
        (Master, "FLUSHALL", Exact),
        (Master, "WAIT 1 2000", Exact),
        (Replica, "DBSIZE", Exact),
        (Replica, "REPLICAOF NO ONE", Exact),
        (Replica, "SET x y", Exact),
        (Replica, "ROLE", Role),
    ]
}

/// Words of a step; `~` stands for a space inside a word.
fn words(step: &str) -> Vec<Vec<u8>> {
    step.split(' ')
        .map(|w| w.replace('~', " ").into_bytes())
        .collect()
}

fn info_fields(value: &Value) -> Vec<(String, String)> {
    let text = match value {
        Value::Bulk(text) | Value::Verbatim(_, text) => text.as_str(),
        _ => "",
    };
    text.lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn agree(real: &Value, fake: &Value, check: Check) -> bool {
    match (check, real, fake) {
        (Check::Millis, Value::Int(a), Value::Int(b)) => (a - b).abs() <= PTTL_TOLERANCE_MS,
        (Check::Seconds, Value::Int(a), Value::Int(b)) => (a - b).abs() <= 1,
        (Check::Role, Value::Array(a), Value::Array(b)) => {
            let shape = |items: &[Value]| {
                items
                    .iter()
                    .map(|v| match v {
                        Value::Int(_) => Value::Int(0),
                        Value::Array(_) => Value::Array(vec![]),
                        other => other.clone(),
                    })
                    .collect::<Vec<_>>()
            };
            shape(a) == shape(b)
        }
        (Check::Info, _, _) => {
            let (real, fake) = (info_fields(real), info_fields(fake));
            let names =
                |fields: &[(String, String)]| fields.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
            let compared = |fields: &[(String, String)]| {
                fields
                    .iter()
                    .filter(|(k, _)| INFO_FIELDS_COMPARED.contains(&k.as_str()))
                    .cloned()
                    .collect::<Vec<_>>()
            };
            !real.is_empty() && names(&real) == names(&fake) && compared(&real) == compared(&fake)
        }
        (Check::Hello, Value::Array(a), Value::Array(b)) => {
            let without_id = |items: &[Value]| {
                let mut items = items.to_vec();
                if let Some(i) = items.iter().position(|v| *v == Value::Bulk("id".into())) {
                    items[i + 1] = Value::Int(0);
                }
                items
            };
            without_id(a) == without_id(b)
        }
        _ => real == fake,
    }
}

/// A real master/replica pair and a fake one, both linked up.
struct Pairs {
    real_master: RedisServer,
    real_replica: RedisServer,
    fake_master: FakeServer,
    fake_replica: FakeServer,
}

impl Pairs {
    fn start() -> Pairs {
        let real_master = RedisServer::start(&[]);
        let port = real_master.addr.port().to_string();
        let real_replica = RedisServer::start(&["--replicaof", "127.0.0.1", &port]);
        let fake_master = FakeServer::start();
        let fake_replica = FakeServer::start_with(Some(fake_master.addr), Persistence::None);
        wait_for_link(real_replica.addr);
        wait_for_link(fake_replica.addr);
        Pairs {
            real_master,
            real_replica,
            fake_master,
            fake_replica,
        }
    }
}

#[test]
fn a_fake_master_and_replica_answer_as_redis_server_pairs_do() {
    let Pairs {
        real_master,
        real_replica,
        fake_master,
        fake_replica,
    } = Pairs::start();

    let connect =
        |master: SocketAddr, replica: SocketAddr| (RespClient::connect(master), RespClient::connect(replica));
    let (mut real_m, mut real_r) = connect(real_master.addr, real_replica.addr);
    let (mut fake_m, mut fake_r) = connect(fake_master.addr, fake_replica.addr);
    let mut transcript = Vec::new();
    for (node, step, check) in steps() {
        let request = words(step);
        let (real, fake) = match node {
            Node::Master => (real_m.request(&request), fake_m.request(&request)),
            Node::Replica => (real_r.request(&request), fake_r.request(&request)),
        };
        let ok = agree(&real, &fake, check);
        transcript.push(format!(
            "{} {node:?}: {step}\n      redis-server: {real:?}\n      fake node:    {fake:?}",
            if ok { "  " } else { "!!" }
        ));
        assert!(ok, "replies differ:\n{}", transcript.join("\n"));
    }
}

/// Runs `steps` on a master/replica pair, waiting for the link after a REPLICAOF.
fn run_pair(master: SocketAddr, replica: SocketAddr, steps: &[(Node, String)]) -> Vec<Value> {
    let (mut m, mut r) = (RespClient::connect(master), RespClient::connect(replica));
    steps
        .iter()
        .map(|(node, step)| {
            let reply = match node {
                Node::Master => m.request(&words(step)),
                Node::Replica => r.request(&words(step)),
            };
            if step.starts_with("REPLICAOF 127.0.0.1") {
                wait_for_link(replica);
            }
            reply
        })
        .collect()
}

#[test]
fn a_replica_that_left_catches_up_when_it_follows_again() {
    let Pairs {
        real_master,
        real_replica,
        fake_master,
        fake_replica,
    } = Pairs::start();
    let steps = |master: SocketAddr| {
        vec![
            (Node::Master, "SET early e".to_string()),
            (Node::Master, "WAIT 1 2000".to_string()),
            (Node::Replica, "REPLICAOF NO ONE".to_string()),
            (Node::Master, "SET late l".to_string()),
            (Node::Master, "DEL early".to_string()),
            (Node::Master, "WAIT 1 300".to_string()),
            (Node::Replica, "GET late".to_string()),
            (Node::Replica, "GET early".to_string()),
            (Node::Replica, format!("REPLICAOF 127.0.0.1 {}", master.port())),
            (Node::Master, "WAIT 1 2000".to_string()),
            (Node::Replica, "GET late".to_string()),
            (Node::Replica, "GET early".to_string()),
        ]
    };
    let real = run_pair(real_master.addr, real_replica.addr, &steps(real_master.addr));
    let fake = run_pair(fake_master.addr, fake_replica.addr, &steps(fake_master.addr));
    let transcript: Vec<String> = steps(fake_master.addr)
        .iter()
        .zip(real.iter().zip(&fake))
        .map(|((node, step), (real, fake))| {
            format!("{node:?}: {step}\n  redis-server: {real:?}\n  fake node: {fake:?}")
        })
        .collect();
    assert_eq!(real, fake, "replies differ:\n{}", transcript.join("\n"));
    assert_eq!(fake[10], Value::Bulk("l".into()), "the replica caught up");
}

#[test]
fn a_partitioned_replica_falls_behind_and_catches_up() {
    let master = FakeServer::start();
    let proxy = Proxy::start(master.addr);
    let replica = FakeServer::start_with(Some(proxy.addr), Persistence::None);
    wait_for_link(replica.addr);
    let (mut m, mut r) = (
        RespClient::connect(master.addr),
        RespClient::connect(replica.addr),
    );
    assert_eq!(m.request(&words("SET a 1")), Value::Simple("OK".into()));
    assert_eq!(m.request(&words("WAIT 1 2000")), Value::Int(1));
    assert_eq!(r.request(&words("GET a")), Value::Bulk("1".into()));

    proxy.cut();
    assert_eq!(
        m.request(&words("SET lock mine NX PX 30000")),
        Value::Simple("OK".into())
    );
    assert_eq!(
        m.request(&words("WAIT 1 200")),
        Value::Int(0),
        "no replica acknowledges across the cut"
    );
    assert_eq!(
        r.request(&words("GET lock")),
        Value::NullBulk,
        "the replica fell behind"
    );

    proxy.heal();
    assert_eq!(m.request(&words("WAIT 1 5000")), Value::Int(1));
    assert_eq!(
        r.request(&words("GET lock")),
        Value::Bulk("mine".into()),
        "and caught up"
    );
}

/// The steps of [`wait_counts_only_replicas_that_have_the_write`] on one master whose
/// replica links through `proxy`: each request with its reply, and how long the WAIT
/// across the cut took.
fn wait_across_a_cut(
    master: SocketAddr,
    replica: SocketAddr,
    proxy: &Proxy,
) -> (Vec<(String, Value)>, Duration) {
    wait_for_link(replica);
    wait_for_stream(master, replica);
    let (mut m, mut r) = (RespClient::connect(master), RespClient::connect(replica));
    let mut replies = Vec::new();
    let mut step = |client: &mut RespClient, node: &str, request: &str| {
        let reply = client.request(&words(request));
        replies.push((format!("{node}: {request}"), reply));
    };
    step(&mut m, "master", "SET k v");
    step(&mut m, "master", "WAIT 1 100");
    proxy.cut();
    step(&mut m, "master", "SET k2 v");
    let started = Instant::now();
    step(&mut m, "master", "WAIT 1 100");
    let waited = started.elapsed();
    step(&mut r, "replica", "GET k");
    step(&mut r, "replica", "GET k2");
    proxy.heal();
    step(&mut m, "master", "WAIT 1 5000");
    step(&mut r, "replica", "GET k2");
    (replies, waited)
}

/// WAIT counts a replica only once it has acknowledged the write: across a cut link (both
/// connections open, nothing crossing, as in a partition) the replica is still connected
/// but has not got the write, and WAIT times out with 0, on redis-server as on the fake.
#[test]
fn wait_counts_only_replicas_that_have_the_write() {
    let real_master = RedisServer::start(&[]);
    let real_proxy = Proxy::start(real_master.addr);
    let proxy_port = real_proxy.addr.port().to_string();
    let real_replica = RedisServer::start(&["--replicaof", "127.0.0.1", &proxy_port]);
    let fake_master = FakeServer::start();
    let fake_proxy = Proxy::start(fake_master.addr);
    let fake_replica = FakeServer::start_with(Some(fake_proxy.addr), Persistence::None);

    let (real, real_waited) = wait_across_a_cut(real_master.addr, real_replica.addr, &real_proxy);
    let (fake, fake_waited) = wait_across_a_cut(fake_master.addr, fake_replica.addr, &fake_proxy);
    let transcript: Vec<String> = real
        .iter()
        .zip(&fake)
        .map(|((step, real), (_, fake))| format!("{step}\n  redis-server: {real:?}\n  fake node: {fake:?}"))
        .collect();
    let transcript = transcript.join("\n");
    assert_eq!(real, fake, "replies differ:\n{transcript}");
    let replies: Vec<&Value> = fake.iter().map(|(_, reply)| reply).collect();
    let ok = Value::Simple("OK".into());
    let v = Value::Bulk("v".into());
    assert_eq!(
        replies,
        [
            &ok,
            &Value::Int(1),
            &ok,
            &Value::Int(0),
            &v,
            &Value::NullBulk,
            &Value::Int(1),
            &v
        ],
        "the connected replica has the first write, not the one across the cut:\n{transcript}"
    );
    eprintln!("WAIT 1 100 across the cut: redis-server {real_waited:?}, fake node {fake_waited:?}");
    // Redis times WAIT out in whole milliseconds of its clock, so it may answer a fraction
    // of a millisecond before 100 ms of ours have passed.
    for (server, waited) in [("redis-server", real_waited), ("fake node", fake_waited)] {
        assert!(
            waited >= Duration::from_millis(99),
            "{server} answered WAIT 1 100 across the cut after {waited:?}, before its timeout"
        );
    }
}
