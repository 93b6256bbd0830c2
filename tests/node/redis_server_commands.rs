//! The server commands on the fake node against redis-server 7.0: CONFIG GET/SET/REWRITE/
//! RESETSTAT and TIME's and INFO's checks, reply for reply in RESP2 and RESP3; the values
//! that differ between two servers by nature (TIME's clock, INFO's numbers) are held to
//! their shape and to the host clock instead.

use crate::support;

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use support::FakeServer;
use support::differential::same_transcripts_on_real_and_fake;
use support::resp::{RespClient, Value};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// Requests whose replies are the same on every Redis 7.0 started as the tests start it.
const DIALOGUE: &[&str] = &[
    "TIME|x",
    "CONFIG",
    "CONFIG|FOO",
    "CONFIG|GET",
    "CONFIG|GET|hz",
    "CONFIG|GET|HZ",
    "CONFIG|GET|h?",
    "CONFIG|GET|appendonly",
    "CONFIG|GET|appendfsync",
    "CONFIG|GET|save",
    "CONFIG|GET|min-replicas-to-write",
    "CONFIG|GET|min-replicas-max-lag",
    "CONFIG|GET|repl-timeout",
    "CONFIG|GET|repl-ping-replica-period",
    "CONFIG|GET|repl-diskless-sync-delay",
    "CONFIG|GET|timeout",
    "CONFIG|GET|databases",
    "CONFIG|GET|requirepass",
    "CONFIG|GET|notify-keyspace-events",
    "CONFIG|GET|maxmemory",
    "CONFIG|GET|nomatch",
    "CONFIG|SET|foo|1",
    "CONFIG|SET|hz|abc",
    "CONFIG|SET|appendfsync|bogus",
    "CONFIG|SET|appendonly|maybe",
    "CONFIG|SET|min-replicas-to-write|-1",
    "CONFIG|SET|min-replicas-max-lag|x",
    "CONFIG|SET|databases|4",
    "CONFIG|SET|Hz|10|hz|11",
    "CONFIG|SET|hz|1|foo",
    "CONFIG|SET|hz",
    "CONFIG|SET|repl-timeout|30|timeout|5",
    "CONFIG|GET|repl-timeout",
    "CONFIG|GET|timeout",
    "CONFIG|SET|min-replicas-to-write|1",
    "SET|k|v",
    "CONFIG|SET|min-replicas-to-write|0",
    "SET|k|v",
    "INFO|keyspace",
    "CONFIG|REWRITE",
    "CONFIG|REWRITE|x",
    "CONFIG|RESETSTAT",
    "CONFIG|RESETSTAT|x",
    "EVAL|return redis.call('CONFIG', 'GET', 'hz')|0",
];

fn transcript(addr: SocketAddr, resp3: bool) -> Vec<(String, Value)> {
    let mut client = RespClient::connect(addr);
    client.request(&words("FLUSHALL"));
    if resp3 {
        client.request(&words("HELLO|3"));
    }
    DIALOGUE
        .iter()
        .map(|request| (request.to_string(), client.request(&words(request))))
        .collect()
}

#[test]
fn config_answers_as_redis_server_7_0_does_in_both_protocols() {
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let refused = got.iter().any(|(request, reply)| {
            request == "SET|k|v"
                && *reply == Value::Error("NOREPLICAS Not enough good replicas to write.".into())
        });
        assert!(
            refused,
            "CONFIG SET min-replicas-to-write 1 made the master refuse writes (RESP3: {resp3})"
        );
    }
}

/// The `# Section` headers of an INFO reply.
fn headers(reply: &Value) -> Vec<String> {
    let text = match reply {
        Value::Bulk(text) | Value::Verbatim(_, text) => text,
        other => panic!("INFO replied {other:?}"),
    };
    text.lines()
        .filter(|line| line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// INFO with each way of naming sections, the headers of each reply.
fn info_headers(addr: SocketAddr, resp3: bool) -> Vec<(String, Vec<String>)> {
    let mut client = RespClient::connect(addr);
    if resp3 {
        client.request(&words("HELLO|3"));
    }
    [
        "INFO",
        "INFO|default",
        "INFO|all",
        "INFO|everything",
        "INFO|server|KEYSPACE",
        "INFO|memory",
        "INFO|persistence",
        "INFO|stats",
        "INFO|cpu",
        "INFO|modules",
        "INFO|errorstats",
        "INFO|cluster",
        "INFO|clients",
        "INFO|bogus",
    ]
    .iter()
    .map(|request| (request.to_string(), headers(&client.request(&words(request)))))
    .collect()
}

#[test]
fn info_has_every_section_redis_server_7_0_has() {
    let both = same_transcripts_on_real_and_fake(info_headers);
    assert!(
        both.iter().all(|(_, got)| got[2].1.len() == 13),
        "INFO all lists 13 sections"
    );
}

/// The value of `field` in an INFO reply's text.
fn field(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .map(str::to_string)
}

#[test]
fn info_and_time_give_the_fields_clients_parse() {
    let fake = FakeServer::start();
    let mut client = RespClient::connect(fake.addr);
    client.request(&words("SET|a|1"));
    client.request(&words("SET|b|22|PX|60000"));
    let Value::Bulk(text) = client.request(&words("INFO")) else {
        panic!("INFO is a bulk string in RESP2");
    };
    assert_eq!(field(&text, "redis_version").as_deref(), Some("7.0.15"));
    assert_eq!(field(&text, "role").as_deref(), Some("master"));
    assert_eq!(field(&text, "connected_clients").as_deref(), Some("1"));
    assert_eq!(
        field(&text, "used_memory").as_deref(),
        Some("876293"),
        "an empty redis-server 7.0.15's 876160 bytes, 64 per key, and the 5 bytes of keys and values"
    );
    let keyspace = field(&text, "db0").expect("database 0 has keys");
    let avg_ttl: u64 = keyspace
        .strip_prefix("keys=2,expires=1,avg_ttl=")
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("db0:{keyspace}"));
    assert!((59_000..=60_000).contains(&avg_ttl), "avg_ttl={avg_ttl}");

    let host_s = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let before = host_s();
    let time = client.request(&words("TIME"));
    let from_script = client.request(&words("EVAL|return redis.call('TIME')|0"));
    let after = host_s();
    for reply in [time, from_script] {
        let Value::Array(parts) = &reply else {
            panic!("TIME replied {reply:?}")
        };
        let [Value::Bulk(seconds), Value::Bulk(micros)] = parts.as_slice() else {
            panic!("TIME replied {reply:?}")
        };
        let seconds: u64 = seconds.parse().unwrap();
        let micros: u64 = micros.parse().unwrap();
        assert!(
            (before..=after).contains(&seconds),
            "{seconds} is the host clock's second"
        );
        assert!(micros < 1_000_000);
    }
}
