//! CLIENT INFO / LIST / KILL on the fake node against redis-server 7.0, in RESP2 and RESP3:
//! the same checks and errors reply for reply, the same lines (field by field, but for the
//! values that differ between two servers by nature: ids, addresses, sizes, times), and the
//! same counts from CLIENT KILL by TYPE (a subscribed connection is `pubsub`, not `normal`),
//! ID and ADDR, with the killed connections closed. On a master and its replica, TYPE
//! replica and TYPE master close the replication link, which comes back.

use crate::support;

use std::net::SocketAddr;

use support::differential::{on_real_and_fake_replicas, same_transcripts_on_real_and_fake};
use support::resp::{RespClient, Value};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// The fields of CLIENT LIST whose values the two servers share; the others are shown by
/// name only.
const COMPARED_FIELDS: &[&str] = &[
    "name", "flags", "db", "sub", "psub", "ssub", "multi", "events", "cmd", "user", "redir", "resp",
];

/// CLIENT LIST's or INFO's text, each line's fields with the compared values kept.
fn comparable(reply: Value) -> Value {
    let text = match reply {
        Value::Bulk(text) | Value::Verbatim(_, text) => text,
        other => return other,
    };
    Value::Array(
        text.lines()
            .map(|line| {
                let fields = line.split(' ').map(|field| {
                    let (name, _) = field.split_once('=').unwrap_or((field, ""));
                    let shown = if COMPARED_FIELDS.contains(&name) {
                        field
                    } else {
                        name
                    };
                    Value::Simple(shown.to_string())
                });
                Value::Array(fields.collect())
            })
            .collect(),
    )
}

/// The value of `field` in a CLIENT INFO reply.
fn field(reply: &Value, field: &str) -> String {
    let (Value::Bulk(text) | Value::Verbatim(_, text)) = reply else {
        panic!("CLIENT INFO replied {reply:?}")
    };
    field_of(text, field)
}

/// The value of `field` in one line of CLIENT LIST.
fn field_of(line: &str, field: &str) -> String {
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(&format!("{field}=")))
        .unwrap_or_else(|| panic!("no {field} in {line}"))
        .to_string()
}

const REFUSALS: &[&str] = &[
    "CLIENT|LIST|TYPE|bogus",
    "CLIENT|LIST|ID|x",
    "CLIENT|LIST|ID|0",
    "CLIENT|LIST|ID|-5",
    "CLIENT|LIST|ID|1|x",
    "CLIENT|LIST|ID",
    "CLIENT|LIST|x",
    "CLIENT|LIST|TYPE|normal|ID|1",
    "CLIENT|INFO|x",
    "CLIENT|KILL",
    "CLIENT|KILL|ID|x",
    "CLIENT|KILL|ID|0",
    "CLIENT|KILL|ID|-1",
    "CLIENT|KILL|ID|999999",
    "CLIENT|KILL|SKIPME|maybe",
    "CLIENT|KILL|USER|bob",
    "CLIENT|KILL|MAXAGE|1",
    "CLIENT|KILL|TYPE|bogus",
    "CLIENT|KILL|TYPE",
    "CLIENT|KILL|1.2.3.4:5",
    "CLIENT|KILL|ADDR|1.2.3.4:5",
    "CLIENT|KILL|LADDR|1.2.3.4:5",
    "CLIENT|KILL|TYPE|replica",
    "CLIENT|KILL|TYPE|SLAVE",
    "CLIENT|KILL|TYPE|master",
    "CLIENT|KILL|TYPE|normal|x",
    "CLIENT|NOSUCH",
    "CLIENT|LIST|TYPE|replica",
    "CLIENT|LIST|TYPE|master",
];

/// Sends `request` on `client` and notes its reply, comparable, in `lines`.
fn ask(lines: &mut Vec<(String, Value)>, client: &mut RespClient, request: &str) {
    let reply = comparable(client.request(&words(request)));
    lines.push((request.to_string(), reply));
}

fn transcript(addr: SocketAddr, resp3: bool) -> Vec<(String, Value)> {
    let connect = |resp3: bool| {
        let mut client = RespClient::connect(addr);
        if resp3 {
            client.request(&words("HELLO|3"));
        }
        client
    };
    let mut lines = Vec::new();
    let mut killer = connect(resp3);
    // Connections of the earlier transcript are gone, and none of another test's.
    let cleared = killer.request(&words("CLIENT|KILL|SKIPME|yes"));
    assert!(matches!(cleared, Value::Int(_)), "{cleared:?}");
    for request in REFUSALS {
        ask(&mut lines, &mut killer, request);
    }
    let mut named = connect(false);
    ask(&mut lines, &mut named, "CLIENT|SETNAME|named");
    ask(&mut lines, &mut named, "SELECT|3");
    let mut subscriber = connect(false);
    ask(&mut lines, &mut subscriber, "SUBSCRIBE|a|b");
    let mut pattern_subscriber = connect(true);
    ask(&mut lines, &mut pattern_subscriber, "PSUBSCRIBE|p*");
    let mut in_multi = connect(false);
    let Value::Int(in_multi_id) = in_multi.request(&words("CLIENT|ID")) else {
        panic!("CLIENT ID is an integer")
    };
    ask(&mut lines, &mut in_multi, "MULTI");
    ask(&mut lines, &mut in_multi, "GET|k");
    ask(&mut lines, &mut killer, "CLIENT|INFO");
    ask(&mut lines, &mut killer, "CLIENT|LIST");
    ask(&mut lines, &mut killer, "CLIENT|LIST|TYPE|pubsub");
    ask(&mut lines, &mut killer, "CLIENT|LIST|TYPE|normal");
    ask(&mut lines, &mut killer, "CLIENT|KILL|TYPE|pubsub");
    ask(&mut lines, &mut killer, "PUBLISH|a|gone");
    ask(&mut lines, &mut killer, "CLIENT|LIST|TYPE|pubsub");
    let named_addr = field(&named.request(&words("CLIENT|INFO")), "addr");
    let kill_named = format!("CLIENT|KILL|ADDR|{named_addr}");
    let reply = killer.request(&words(&kill_named));
    lines.push(("CLIENT|KILL|ADDR|<named>".into(), reply));
    let reply = killer.request(&words(&format!("CLIENT|KILL|{named_addr}")));
    lines.push(("CLIENT|KILL|<named, killed>".into(), reply));
    let reply = killer.request(&words(&format!("CLIENT|KILL|ID|{in_multi_id}|TYPE|normal")));
    lines.push(("CLIENT|KILL|ID|<in multi>|TYPE|normal".into(), reply));
    ask(&mut lines, &mut killer, "CLIENT|LIST");
    for (who, client) in [
        ("subscriber", &mut subscriber),
        ("pattern subscriber", &mut pattern_subscriber),
        ("named", &mut named),
        ("in multi", &mut in_multi),
    ] {
        lines.push((format!("{who} closed"), Value::Int(i64::from(client.is_closed()))));
    }
    let mut other = connect(false);
    ask(&mut lines, &mut other, "PING");
    ask(&mut lines, &mut killer, "CLIENT|KILL|TYPE|normal");
    ask(&mut lines, &mut killer, "CLIENT|KILL|TYPE|normal|SKIPME|no");
    lines.push(("killer closed".into(), Value::Int(i64::from(killer.is_closed()))));
    lines.push(("other closed".into(), Value::Int(i64::from(other.is_closed()))));
    lines
}

#[test]
fn client_info_list_and_kill_answer_as_redis_server_7_0_does_in_both_protocols() {
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let reply = |request: &str| {
            got.iter()
                .find(|(asked, _)| asked == request)
                .map(|(_, reply)| reply.clone())
        };
        assert_eq!(
            reply("CLIENT|KILL|TYPE|pubsub"),
            Some(Value::Int(2)),
            "both subscribers are pubsub clients (RESP3: {resp3})"
        );
        assert_eq!(reply("PUBLISH|a|gone"), Some(Value::Int(0)));
        assert_eq!(reply("killer closed"), Some(Value::Int(1)));
    }
}

/// What CLIENT LIST TYPE replica / master and CLIENT KILL TYPE replica / master do on a
/// master and its replica, and whether the link came back.
fn replication_links(master: SocketAddr, replica: SocketAddr) -> Vec<(String, Value)> {
    support::wait_for_link(replica);
    let mut on_master = RespClient::connect(master);
    let mut on_replica = RespClient::connect(replica);
    let mut lines = Vec::new();
    // A link's line by its flags only: what it last did differs between two servers.
    let mut note = |client: &mut RespClient, side: &str, request: &str| {
        let reply = match client.request(&words(request)) {
            Value::Bulk(text) | Value::Verbatim(_, text) => Value::Array(
                text.lines()
                    .map(|line| Value::Simple(field_of(line, "flags")))
                    .collect(),
            ),
            other => other,
        };
        lines.push((format!("{side}: {request}"), reply));
    };
    note(&mut on_master, "master", "CLIENT|LIST|TYPE|replica");
    note(&mut on_replica, "replica", "CLIENT|LIST|TYPE|master");
    note(&mut on_master, "master", "CLIENT|KILL|TYPE|normal");
    note(&mut on_master, "master", "CLIENT|KILL|TYPE|replica");
    support::wait_for_link(replica);
    support::wait_for_stream(master, replica);
    note(&mut on_replica, "replica", "CLIENT|KILL|TYPE|master");
    support::wait_for_link(replica);
    support::wait_for_stream(master, replica);
    note(&mut on_master, "master", "CLIENT|KILL|TYPE|slave|SKIPME|yes");
    support::wait_for_link(replica);
    lines
}

#[test]
fn killing_a_replication_link_counts_it_and_the_replica_links_again() {
    let (expected, got) = on_real_and_fake_replicas(replication_links);
    assert_eq!(expected.len(), got.len());
    for ((request, real), (_, fake)) in expected.iter().zip(&got) {
        assert_eq!(real, fake, "{request}");
    }
    assert!(
        got.iter()
            .any(|(request, reply)| request.contains("KILL|TYPE|replica") && *reply == Value::Int(1)),
        "{got:?}"
    );
}
