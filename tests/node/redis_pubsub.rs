//! Pub/sub on the fake node against redis-server 7.0: a subscriber and a publisher
//! connection on each server, the same dialogue, every frame compared (RESP2 and RESP3);
//! PUBLISH carried from a master to a replica's subscribers; and delivery between two
//! connections of a simulated node in the madsim world.

use crate::support;

use std::net::SocketAddr;

use locksim::platform::Connect;
use locksim::redis::connection::Connection;
use locksim::world::net::SimConnector;
use support::differential::{on_real_and_fake_replicas, same_transcripts_on_real_and_fake};
use support::resp::{RespClient, Value, encode};
use support::wait_for_link;

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// Who sends a step: the subscriber or the publisher.
#[derive(Clone, Copy)]
enum Side {
    Subscriber,
    Publisher,
}

/// Sends `request` (if any) and reads every frame the subscriber has until then: the request's
/// replies and any message, up to the PONG of a PING sent after it (a barrier: PING is
/// allowed in every mode, and its reply comes after everything before it).
fn frames_until_pong(client: &mut RespClient, request: Option<&str>) -> Vec<Value> {
    let mut bytes = request.map(|r| encode(&words(r))).unwrap_or_default();
    bytes.extend(encode(&words("PING")));
    client.send(&bytes);
    let pong = |v: &Value| match v {
        Value::Simple(text) => text == "PONG",
        Value::Array(items) => items.first() == Some(&Value::Bulk("pong".into())),
        _ => false,
    };
    let mut frames = Vec::new();
    loop {
        let frame = client.read();
        let last = pong(&frame) || matches!(frame, Value::Closed | Value::NoReply);
        frames.push(frame);
        if last {
            return frames;
        }
    }
}

/// The frames of a step: the publisher's reply, then what reached the subscriber.
fn step(subscriber: &mut RespClient, publisher: &mut RespClient, side: Side, request: &str) -> Vec<Value> {
    match side {
        Side::Subscriber => frames_until_pong(subscriber, Some(request)),
        Side::Publisher => {
            let mut frames = vec![publisher.request(&words(request))];
            frames.extend(frames_until_pong(subscriber, None));
            frames
        }
    }
}

/// The dialogue: subscriptions, messages to channels and patterns, publishing from a
/// script, the RESP2 subscribed-mode refusals, unsubscribing, RESET.
const DIALOGUE: &[(Side, &str)] = &[
    (Side::Publisher, "PUBLISH|redisson_lock__channel:{lock}|0"),
    (
        Side::Subscriber,
        "SUBSCRIBE|redisson_lock__channel:{lock}|b|redisson_lock__channel:{lock}",
    ),
    (Side::Publisher, "PUBLISH|redisson_lock__channel:{lock}|0"),
    (
        Side::Subscriber,
        "PSUBSCRIBE|redisson_lock__channel:*|[ab]|h?llo|x\\*",
    ),
    (Side::Publisher, "PUBLISH|redisson_lock__channel:{lock}|1"),
    (Side::Publisher, "PUBLISH|b|two"),
    (Side::Publisher, "PUBLISH|hello|three"),
    (Side::Publisher, "PUBLISH|x*|four"),
    (Side::Publisher, "PUBLISH|xy|none"),
    (
        Side::Publisher,
        "EVAL|redis.call('del', KEYS[1]) return redis.call('publish', KEYS[2], ARGV[1])|2|lock|b|0",
    ),
    (Side::Publisher, "PUBSUB|NUMSUB|b|nobody|b"),
    (Side::Publisher, "PUBSUB|NUMPAT"),
    (Side::Publisher, "PUBSUB|CHANNELS|b*"),
    (Side::Publisher, "PUBSUB|CHANNELS|a|b"),
    (Side::Publisher, "PUBSUB|NUMPAT|x"),
    (Side::Publisher, "PUBSUB|bogus"),
    (Side::Publisher, "EVAL|return redis.call('subscribe', 'b')|0"),
    (Side::Subscriber, "GET|k"),
    (Side::Subscriber, "CLIENT|GETNAME"),
    (Side::Subscriber, "CLIENT|bogus"),
    (Side::Subscriber, "SET|k|v|bogus"),
    (Side::Subscriber, "GET"),
    (Side::Subscriber, "NOSUCH|a"),
    (Side::Subscriber, "PING|hi"),
    (Side::Subscriber, "PUBLISH|b|self"),
    (Side::Subscriber, "UNSUBSCRIBE|b|never"),
    (Side::Publisher, "PUBLISH|b|after"),
    (Side::Subscriber, "PUNSUBSCRIBE|[ab]"),
    (Side::Subscriber, "UNSUBSCRIBE"),
    (Side::Subscriber, "PUNSUBSCRIBE|h?llo|x\\*"),
    (Side::Subscriber, "PUNSUBSCRIBE"),
    (Side::Subscriber, "PUNSUBSCRIBE"),
    (Side::Subscriber, "GET|k"),
    (Side::Subscriber, "SUBSCRIBE|c"),
    (Side::Subscriber, "RESET"),
    (Side::Publisher, "PUBLISH|c|gone"),
    (Side::Subscriber, "GET|k"),
];

/// Runs the dialogue on one server, the subscriber speaking RESP3 when `resp3`.
fn transcript(addr: SocketAddr, resp3: bool) -> Vec<(String, Vec<Value>)> {
    let mut subscriber = RespClient::connect(addr);
    let mut publisher = RespClient::connect(addr);
    publisher.request(&words("FLUSHALL"));
    if resp3 {
        subscriber.request(&words("HELLO|3"));
    }
    DIALOGUE
        .iter()
        .map(|(side, request)| {
            let frames = step(&mut subscriber, &mut publisher, *side, request);
            (request.to_string(), frames)
        })
        .collect()
}

#[test]
fn subscribers_get_what_redis_server_7_0_sends_them_in_both_protocols() {
    for (_, got) in same_transcripts_on_real_and_fake(transcript) {
        // The dialogue reaches every kind of frame: a message and a pattern message.
        let all = format!("{got:?}");
        assert!(all.contains("Bulk(\"pmessage\")") && all.contains("Bulk(\"message\")"));
    }
}

/// Subscribes on the replica, publishes on the master, and returns what the replica's
/// subscriber read.
fn published_through_replication(master: SocketAddr, replica: SocketAddr) -> Vec<Value> {
    wait_for_link(replica);
    let mut subscriber = RespClient::connect(replica);
    let mut publisher = RespClient::connect(master);
    let mut frames = frames_until_pong(&mut subscriber, Some("SUBSCRIBE|news"));
    frames.push(publisher.request(&words("PUBLISH|news|from-master")));
    frames.push(subscriber.read());
    frames
}

#[test]
fn a_masters_publish_reaches_its_replicas_subscribers_as_in_redis() {
    let (expected, got) = on_real_and_fake_replicas(published_through_replication);
    assert_eq!(expected, got);
    let message = |text: &str| Value::Bulk(text.into());
    assert_eq!(
        got.last(),
        Some(&Value::Array(vec![
            message("message"),
            message("news"),
            message("from-master")
        ])),
        "the replica's subscriber got the master's message"
    );
    assert_eq!(
        got[got.len() - 2],
        Value::Int(0),
        "PUBLISH counts the master's receivers only"
    );
}

#[test]
fn a_simulated_nodes_subscriber_gets_what_another_connection_publishes() {
    let received = support::sim::simulate(3, || async {
        let addr = support::sim::start_redis(1);
        let client = support::sim::client_node(1);
        client
            .spawn(async move {
                let connect = || async { Connection::new(SimConnector::to(addr).connect().await.unwrap()) };
                let (mut first, mut second, mut publisher) =
                    (connect().await, connect().await, connect().await);
                let request = |text: &str| {
                    locksim::redis::Frame::Array(
                        words(text)
                            .into_iter()
                            .map(locksim::redis::Frame::BulkString)
                            .collect(),
                    )
                };
                first.write_frame(&request("SUBSCRIBE|ch")).await.unwrap();
                first.read_frame().await.unwrap();
                second.write_frame(&request("PSUBSCRIBE|c*")).await.unwrap();
                second.read_frame().await.unwrap();
                publisher
                    .write_frame(&request("PUBLISH|ch|released"))
                    .await
                    .unwrap();
                let count = publisher.read_frame().await.unwrap();
                let at_first = first.read_frame().await.unwrap();
                let at_second = second.read_frame().await.unwrap();
                (count, at_first, at_second)
            })
            .await
            .unwrap()
    });
    let bulk = |text: &str| locksim::redis::Frame::BulkString(text.as_bytes().to_vec());
    let (count, at_first, at_second) = received;
    assert_eq!(count, Some(locksim::redis::Frame::Integer(2)));
    assert_eq!(
        at_first,
        Some(locksim::redis::Frame::Array(vec![
            bulk("message"),
            bulk("ch"),
            bulk("released")
        ]))
    );
    assert_eq!(
        at_second,
        Some(locksim::redis::Frame::Array(vec![
            bulk("pmessage"),
            bulk("c*"),
            bulk("ch"),
            bulk("released")
        ]))
    );
}
