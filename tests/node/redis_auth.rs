//! AUTH, `requirepass` (CONFIG SET) and HELLO AUTH on the fake node against redis-server
//! 7.0, reply for reply in RESP2 and RESP3: without a password the default user takes any;
//! with one, a new connection gets NOAUTH for everything but AUTH, HELLO AUTH, QUIT and
//! RESET, while a connection opened before the password was set stays authenticated.

use crate::support;

use std::net::SocketAddr;

use support::differential::same_transcripts_on_real_and_fake;
use support::resp::{RespClient, Value};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// Which connection sends a request: the one opened before the password was set, or one
/// opened after.
#[derive(Clone, Copy)]
enum Conn {
    Before,
    After,
}

const DIALOGUE: &[(Conn, &str)] = &[
    (Conn::Before, "AUTH|x"),
    (Conn::Before, "AUTH|default|x"),
    (Conn::Before, "AUTH|bob|x"),
    (Conn::Before, "AUTH|a|b|c"),
    (Conn::Before, "AUTH"),
    (Conn::Before, "HELLO|3|AUTH|default|anything"),
    (Conn::Before, "HELLO|3|AUTH|bob|anything"),
    (Conn::Before, "SET|k|v"),
    (Conn::Before, "CONFIG|SET|requirepass|secret"),
    (Conn::Before, "GET|k"),
    (Conn::Before, "CONFIG|GET|requirepass"),
    (Conn::After, "PING"),
    (Conn::After, "GET|k"),
    (Conn::After, "FOO|x"),
    (Conn::After, "GET"),
    (Conn::After, "MULTI"),
    (Conn::After, "SUBSCRIBE|x"),
    (Conn::After, "SELECT|1"),
    (Conn::After, "CLIENT|ID"),
    (Conn::After, "EVAL|return 1|0"),
    (Conn::After, "HELLO"),
    (Conn::After, "HELLO|3"),
    (Conn::After, "HELLO|4"),
    (Conn::After, "HELLO|x"),
    (Conn::After, "HELLO|3|AUTH|default"),
    (Conn::After, "HELLO|2|SETNAME|x"),
    (Conn::After, "HELLO|3|AUTH|default|bad"),
    (Conn::After, "AUTH|wrong"),
    (Conn::After, "AUTH|default|wrong"),
    (Conn::After, "AUTH|bob|secret"),
    (Conn::After, "GET|k"),
    (Conn::After, "AUTH|secret"),
    (Conn::After, "GET|k"),
    (Conn::After, "AUTH|wrong"),
    (Conn::After, "GET|k"),
    (Conn::After, "RESET"),
    (Conn::After, "GET|k"),
    (Conn::After, "AUTH|default|secret"),
    (Conn::After, "GET|k"),
    (Conn::After, "RESET"),
    (Conn::After, "HELLO|2|SETNAME|me|AUTH|default|secret"),
    (Conn::After, "CLIENT|GETNAME"),
    (Conn::Before, "PING"),
    (Conn::Before, "AUTH|wrong"),
    (Conn::Before, "PING"),
    (Conn::Before, "CONFIG|SET|requirepass|"),
    (Conn::Before, "AUTH|secret"),
];

/// A reply with HELLO's connection id taken out: ids differ between two servers by nature
/// (how many connections each had before).
fn without_connection_id(reply: Value) -> Value {
    let id = Value::Bulk("id".into());
    match reply {
        Value::Map(pairs) => Value::Map(
            pairs
                .into_iter()
                .map(|(key, value)| {
                    if key == id {
                        (key, Value::Int(0))
                    } else {
                        (key, value)
                    }
                })
                .collect(),
        ),
        Value::Array(mut items) => {
            if let Some(at) = items.iter().position(|item| *item == id)
                && let Some(value) = items.get_mut(at + 1)
            {
                *value = Value::Int(0);
            }
            Value::Array(items)
        }
        other => other,
    }
}

fn transcript(addr: SocketAddr, resp3: bool) -> Vec<(String, Value)> {
    let mut before = RespClient::connect(addr);
    if resp3 {
        before.request(&words("HELLO|3"));
    }
    let mut after: Option<RespClient> = None;
    let mut lines = Vec::new();
    for (conn, request) in DIALOGUE {
        let client = match conn {
            Conn::Before => &mut before,
            Conn::After => after.get_or_insert_with(|| {
                let mut client = RespClient::connect(addr);
                if resp3 {
                    // Refused before authentication: the connection stays RESP2.
                    client.request(&words("HELLO|3"));
                }
                client
            }),
        };
        let reply = without_connection_id(client.request(&words(request)));
        lines.push((request.to_string(), reply));
    }
    // The next transcript starts on a server without a password.
    before.request(&words("CONFIG|SET|requirepass|"));
    lines
}

#[test]
fn auth_and_requirepass_answer_as_redis_server_7_0_does_in_both_protocols() {
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let noauth = Value::Error("NOAUTH Authentication required.".into());
        let refused: Vec<&str> = got
            .iter()
            .filter(|(_, reply)| *reply == noauth)
            .map(|(request, _)| request.as_str())
            .collect();
        assert!(
            refused.contains(&"GET|k") && refused.contains(&"PING"),
            "a connection that had not authenticated was refused (RESP3: {resp3}): {refused:?}"
        );
        assert!(
            got.iter()
                .any(|(request, reply)| request == "GET|k" && *reply == Value::Bulk("v".into())),
            "an authenticated connection reads (RESP3: {resp3})"
        );
    }
}
