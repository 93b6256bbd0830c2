//! Pub/sub: PUBLISH, SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBSUB
//! CHANNELS/NUMSUB/NUMPAT, and the RESP2 subscribed-mode rules.
//!
//! A node's [`PubSub`] knows each connection's mailbox (opened by the server with the
//! connection) and who subscribed to what. PUBLISH puts the message into the mailboxes of
//! the channel's subscribers, in the order they subscribed, then of each matching pattern's
//! (patterns in byte order), and replies with how many it reached; the server writes a
//! mailbox out to its connection (`>` push frames in RESP3, arrays in RESP2). The registry
//! sits on the keyspace ([`Db::pubsub`]) because scripts reach only the keyspace and may
//! PUBLISH (Redisson's unlock script does). What is published is also kept for the
//! replication stream: a master sends `PUBLISH` to its replicas, which deliver it to their
//! own subscribers, as Redis does (never to the AOF).

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::Db;
use crate::redis::glob::glob_match;
use crate::redis::subscriptions::{Kind, PubSub};

/// The pub/sub commands.
pub(super) const fn commands<C: From<Subscribe> + From<Unsubscribe>>() -> [Spec<C>; 6] {
    [
        Spec {
            name: "publish",
            arity: 3,
            flags: Flags::READ,
            summary: "send a message to a channel's subscribers: how many received it",
            handler: Handler::Keyspace(publish),
        },
        Spec {
            name: "subscribe",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "listen on channels",
            handler: Handler::Parse(|args| Ok(C::from(Subscribe::parse(Kind::Channel, args)))),
        },
        Spec {
            name: "unsubscribe",
            arity: -1,
            flags: Flags::NOSCRIPT,
            summary: "stop listening on channels (all of them without arguments)",
            handler: Handler::Parse(|args| Ok(C::from(Unsubscribe::parse(Kind::Channel, args)))),
        },
        Spec {
            name: "psubscribe",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "listen on channels matching glob patterns",
            handler: Handler::Parse(|args| Ok(C::from(Subscribe::parse(Kind::Pattern, args)))),
        },
        Spec {
            name: "punsubscribe",
            arity: -1,
            flags: Flags::NOSCRIPT,
            summary: "stop listening on patterns (all of them without arguments)",
            handler: Handler::Parse(|args| Ok(C::from(Unsubscribe::parse(Kind::Pattern, args)))),
        },
        Spec {
            name: "pubsub",
            arity: -2,
            flags: Flags::READ,
            summary: "CHANNELS [pattern], NUMSUB [channel ...], NUMPAT",
            handler: Handler::Keyspace(pubsub),
        },
    ]
}

/// The commands a RESP2 connection may send while it has subscriptions (Redis 7.0's
/// `processCommand`).
const ALLOWED_WHILE_SUBSCRIBED: &[&str] = &[
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ping",
    "quit",
    "reset",
];

/// How a RESP2 connection with subscriptions refuses a command other than
/// [`ALLOWED_WHILE_SUBSCRIBED`], after its name and arity were checked; `parse_error` is
/// what parsing its arguments refused, if it did (an unknown subcommand is reported as such
/// first, as Redis finds it while looking the command up).
pub(super) fn refusal_while_subscribed(
    name: &str,
    words: &[&[u8]],
    parse_error: Option<&ReplyError>,
) -> Option<ReplyError> {
    if ALLOWED_WHILE_SUBSCRIBED.contains(&name) {
        return None;
    }
    if parse_error.is_some_and(ReplyError::is_found_at_lookup) {
        return None;
    }
    let full_name = super::full_name(words);
    Some(ReplyError(format!(
        "ERR Can't execute '{full_name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET \
         are allowed in this context"
    )))
}

/// `SUBSCRIBE channel ...` / `PSUBSCRIBE pattern ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribe {
    pub kind: Kind,
    pub names: Vec<Vec<u8>>,
}

impl Subscribe {
    fn parse(kind: Kind, args: &mut Args) -> Self {
        Subscribe {
            kind,
            names: args.rest(),
        }
    }

    /// Subscribes connection `id`; one confirmation per name, with the connection's count
    /// of subscriptions after it.
    pub(crate) fn apply(self, pubsub: &mut PubSub, id: u64) -> Reply {
        let mut pushes = Vec::with_capacity(self.names.len());
        for name in self.names {
            pubsub.subscribe(self.kind, id, &name);
            pushes.push(confirmation(
                self.kind.subscribe_word(),
                Some(name),
                pubsub.subscriptions(id),
            ));
        }
        Reply::Pushes(pushes)
    }
}

/// `UNSUBSCRIBE [channel ...]` / `PUNSUBSCRIBE [pattern ...]`: without names, every one of
/// the connection's (in the order it subscribed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsubscribe {
    pub kind: Kind,
    pub names: Vec<Vec<u8>>,
}

impl Unsubscribe {
    fn parse(kind: Kind, args: &mut Args) -> Self {
        Unsubscribe {
            kind,
            names: args.rest(),
        }
    }

    /// Unsubscribes connection `id`; one confirmation per name (a name it did not listen on
    /// too), or one with a nil name when it had none to drop.
    pub(crate) fn apply(self, pubsub: &mut PubSub, id: u64) -> Reply {
        let word = self.kind.unsubscribe_word();
        let names = match self.names.is_empty() {
            true => pubsub.names_of(self.kind, id),
            false => self.names,
        };
        if names.is_empty() {
            return Reply::Pushes(vec![confirmation(word, None, pubsub.subscriptions(id))]);
        }
        let mut pushes = Vec::with_capacity(names.len());
        for name in names {
            pubsub.unsubscribe(self.kind, id, &name);
            pushes.push(confirmation(word, Some(name), pubsub.subscriptions(id)));
        }
        Reply::Pushes(pushes)
    }
}

/// `[kind, name, count]`: what (P)(UN)SUBSCRIBE answers per name.
fn confirmation(word: &[u8], name: Option<Vec<u8>>, count: usize) -> Vec<Frame> {
    vec![
        Frame::BulkString(word.to_vec()),
        name.map_or(Frame::Null, Frame::BulkString),
        Frame::Integer(count as i64),
    ]
}

/// PING's reply on a RESP2 connection with subscriptions: `["pong", message or ""]`.
pub(crate) fn subscribed_pong(message: Option<Vec<u8>>) -> Reply {
    Frame::Array(vec![
        Frame::BulkString(b"pong".to_vec()),
        Frame::BulkString(message.unwrap_or_default()),
    ])
    .into()
}

/// `PUBLISH channel message`: the number of subscribers (and pattern subscriptions) that
/// received it.
fn publish(args: &mut Args, db: &mut Db, _now_ms: u64) -> Result<Reply, ReplyError> {
    let channel = args.next_bytes()?;
    let message = args.next_bytes()?;
    Ok(Frame::Integer(db.pubsub.publish(&channel, &message)).into())
}

/// `PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT`.
fn pubsub(args: &mut Args, db: &mut Db, _now_ms: u64) -> Result<Reply, ReplyError> {
    let subcommand = args.next_bytes()?;
    let rest = args.rest();
    let bulk = |bytes: &[u8]| Frame::BulkString(bytes.to_vec());
    let registry = &db.pubsub;
    match (subcommand.to_ascii_uppercase().as_slice(), rest.as_slice()) {
        (b"CHANNELS", [] | [_]) => {
            let pattern = rest.first();
            let channels = registry
                .channels()
                .filter(|channel| pattern.is_none_or(|p| glob_match(p, channel)))
                .map(|channel| bulk(channel))
                .collect();
            Ok(Frame::Array(channels).into())
        }
        (b"NUMSUB", channels) => Ok(Frame::Array(
            channels
                .iter()
                .flat_map(|channel| {
                    let count = registry.subscribers(channel);
                    [bulk(channel), Frame::Integer(count as i64)]
                })
                .collect(),
        )
        .into()),
        (b"NUMPAT", []) => Ok(Frame::Integer(registry.patterns() as i64).into()),
        (b"NUMPAT", _) => Err(ReplyError::wrong_arity("pubsub|numpat")),
        (b"CHANNELS", _) => Err(ReplyError(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&subcommand)
        ))),
        _ => Err(ReplyError(format!(
            "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&subcommand)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc;

    use super::*;

    fn bulk(text: &str) -> Frame {
        Frame::BulkString(text.as_bytes().to_vec())
    }

    fn subscribe(pubsub: &mut PubSub, id: u64, kind: Kind, names: &[&str]) -> Reply {
        Subscribe {
            kind,
            names: names.iter().map(|n| n.as_bytes().to_vec()).collect(),
        }
        .apply(pubsub, id)
    }

    // Replies read from redis-server 7.0.15 for the same requests.
    #[test]
    fn publish_reaches_channel_subscribers_in_order_then_patterns() {
        let mut pubsub = PubSub::default();
        let (first_box, mut first) = mpsc::unbounded_channel();
        let (second_box, mut second) = mpsc::unbounded_channel();
        pubsub.open(1, first_box);
        pubsub.open(2, second_box);
        assert_eq!(
            subscribe(&mut pubsub, 1, Kind::Channel, &["c1", "c2", "c1"]),
            Reply::Pushes(vec![
                vec![bulk("subscribe"), bulk("c1"), Frame::Integer(1)],
                vec![bulk("subscribe"), bulk("c2"), Frame::Integer(2)],
                vec![bulk("subscribe"), bulk("c1"), Frame::Integer(2)],
            ])
        );
        subscribe(&mut pubsub, 2, Kind::Channel, &["c1"]);
        subscribe(&mut pubsub, 1, Kind::Pattern, &["c*"]);
        assert_eq!(pubsub.publish(b"c1", b"m"), 3);
        assert_eq!(pubsub.publish(b"nobody", b"m"), 0);
        let message = |words: &[&str]| Reply::Pushes(vec![words.iter().map(|w| bulk(w)).collect()]);
        assert_eq!(first.try_recv().unwrap(), message(&["message", "c1", "m"]));
        assert_eq!(first.try_recv().unwrap(), message(&["pmessage", "c*", "c1", "m"]));
        assert_eq!(second.try_recv().unwrap(), message(&["message", "c1", "m"]));
        assert!(first.try_recv().is_err() && second.try_recv().is_err());
        pubsub.close(1);
        assert_eq!(
            pubsub.publish(b"c1", b"m"),
            1,
            "a closed connection listens no more"
        );
        assert_eq!(
            pubsub.take_published().len(),
            3,
            "every message goes to the replicas"
        );
    }

    #[test]
    fn unsubscribe_without_names_drops_all_then_answers_with_a_nil_name() {
        let mut pubsub = PubSub::default();
        subscribe(&mut pubsub, 1, Kind::Channel, &["a", "b"]);
        subscribe(&mut pubsub, 1, Kind::Pattern, &["p*"]);
        let all = Unsubscribe {
            kind: Kind::Channel,
            names: vec![],
        };
        assert_eq!(
            all.clone().apply(&mut pubsub, 1),
            Reply::Pushes(vec![
                vec![bulk("unsubscribe"), bulk("a"), Frame::Integer(2)],
                vec![bulk("unsubscribe"), bulk("b"), Frame::Integer(1)],
            ])
        );
        assert_eq!(
            all.apply(&mut pubsub, 1),
            Reply::Pushes(vec![vec![bulk("unsubscribe"), Frame::Null, Frame::Integer(1)]])
        );
        assert_eq!(pubsub.subscriptions(1), 1);
    }

    #[test]
    fn only_the_subscription_commands_run_while_subscribed() {
        let words = |ws: &[&'static str]| ws.iter().map(|w| w.as_bytes()).collect::<Vec<_>>();
        assert_eq!(refusal_while_subscribed("ping", &words(&["PING"]), None), None);
        assert_eq!(
            refusal_while_subscribed("client", &words(&["CLIENT", "ID"]), None),
            Some(ReplyError(
                "ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
                 RESET are allowed in this context"
                    .into()
            ))
        );
        let unknown = ReplyError("ERR unknown subcommand 'foo'. Try CLIENT HELP.".into());
        assert_eq!(
            refusal_while_subscribed("client", &words(&["CLIENT", "foo"]), Some(&unknown)),
            None
        );
    }
}
