//! A node's pub/sub registry: each connection's mailbox and who subscribed to what.
//!
//! It sits beside the keyspace ([`Db::pubsub`](super::db::Db::pubsub)) because scripts reach
//! only the keyspace and may PUBLISH; the commands that use it are in `cmd/pubsub.rs`.

use std::collections::BTreeMap;

use tokio::sync::mpsc;

use super::Frame;
use super::connection::Reply;
use super::glob::glob_match;

/// Channels or patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
}

impl Kind {
    pub(crate) fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
        }
    }

    pub(crate) fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
        }
    }
}

/// Who listens on each name of one kind, both ways round.
#[derive(Debug, Default)]
struct Listeners {
    /// Each channel's (or pattern's) subscribers, in the order they subscribed.
    by_name: BTreeMap<Vec<u8>, Vec<u64>>,
    /// Each connection's channels (or patterns), in the order it subscribed.
    by_client: BTreeMap<u64, Vec<Vec<u8>>>,
}

impl Listeners {
    /// Subscribes `id` to `name`; false if it already was.
    fn add(&mut self, id: u64, name: &[u8]) -> bool {
        let names = self.by_client.entry(id).or_default();
        if names.iter().any(|n| n == name) {
            return false;
        }
        names.push(name.to_vec());
        self.by_name.entry(name.to_vec()).or_default().push(id);
        true
    }

    /// Unsubscribes `id` from `name`.
    fn remove(&mut self, id: u64, name: &[u8]) {
        if let Some(names) = self.by_client.get_mut(&id) {
            names.retain(|n| n != name);
            if names.is_empty() {
                self.by_client.remove(&id);
            }
        }
        if let Some(ids) = self.by_name.get_mut(name) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_name.remove(name);
            }
        }
    }

    fn count(&self, id: u64) -> usize {
        self.by_client.get(&id).map_or(0, Vec::len)
    }

    fn names_of(&self, id: u64) -> Vec<Vec<u8>> {
        self.by_client.get(&id).cloned().unwrap_or_default()
    }
}

/// A node's subscriptions and its connections' mailboxes.
#[derive(Debug, Default)]
pub struct PubSub {
    /// Where each open connection's messages go, by connection id.
    mailboxes: BTreeMap<u64, mpsc::UnboundedSender<Reply>>,
    channels: Listeners,
    patterns: Listeners,
    /// Messages published since the server last took them for the replication stream.
    published: Vec<(Vec<u8>, Vec<u8>)>,
}

impl PubSub {
    fn listeners(&mut self, kind: Kind) -> &mut Listeners {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
        }
    }

    /// Subscribes connection `id` to `name` (a channel or a pattern, by `kind`).
    pub fn subscribe(&mut self, kind: Kind, id: u64, name: &[u8]) {
        self.listeners(kind).add(id, name);
    }

    /// Unsubscribes connection `id` from `name`.
    pub fn unsubscribe(&mut self, kind: Kind, id: u64, name: &[u8]) {
        self.listeners(kind).remove(id, name);
    }

    /// The channels (or patterns) connection `id` listens on, in the order it subscribed.
    pub fn names_of(&mut self, kind: Kind, id: u64) -> Vec<Vec<u8>> {
        self.listeners(kind).names_of(id)
    }

    /// The channels with at least one subscriber, in byte order (PUBSUB CHANNELS).
    pub fn channels(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.channels.by_name.keys()
    }

    /// How many connections subscribe to `channel` (PUBSUB NUMSUB).
    pub fn subscribers(&self, channel: &[u8]) -> usize {
        self.channels.by_name.get(channel).map_or(0, Vec::len)
    }

    /// How many patterns someone subscribes to (PUBSUB NUMPAT).
    pub fn patterns(&self) -> usize {
        self.patterns.by_name.len()
    }

    /// Opens connection `id`'s mailbox: messages for it go to `mailbox`.
    pub fn open(&mut self, id: u64, mailbox: mpsc::UnboundedSender<Reply>) {
        self.mailboxes.insert(id, mailbox);
    }

    /// Forgets connection `id` (it closed, or was reset): its subscriptions and mailbox.
    pub fn close(&mut self, id: u64) {
        self.drop_subscriptions(id);
        self.mailboxes.remove(&id);
    }

    /// Drops every subscription of connection `id` without a word (RESET, a closed
    /// connection).
    pub fn drop_subscriptions(&mut self, id: u64) {
        for kind in [Kind::Channel, Kind::Pattern] {
            let listeners = self.listeners(kind);
            for name in listeners.names_of(id) {
                listeners.remove(id, &name);
            }
        }
    }

    /// How many channels and patterns connection `id` listens on.
    pub fn subscriptions(&self, id: u64) -> usize {
        let (channels, patterns) = self.counts(id);
        channels + patterns
    }

    /// How many channels and how many patterns the connection `id` is subscribed to.
    pub fn counts(&self, id: u64) -> (usize, usize) {
        (self.channels.count(id), self.patterns.count(id))
    }

    /// Delivers `message` to every subscriber of `channel` and of each pattern matching it;
    /// how many deliveries that made.
    pub fn publish(&mut self, channel: &[u8], message: &[u8]) -> i64 {
        let bulk = |bytes: &[u8]| Frame::BulkString(bytes.to_vec());
        let mut deliveries = Vec::new();
        for id in self.channels.by_name.get(channel).into_iter().flatten() {
            deliveries.push((*id, vec![bulk(b"message"), bulk(channel), bulk(message)]));
        }
        for (pattern, ids) in &self.patterns.by_name {
            if glob_match(pattern, channel) {
                for id in ids {
                    deliveries.push((
                        *id,
                        vec![bulk(b"pmessage"), bulk(pattern), bulk(channel), bulk(message)],
                    ));
                }
            }
        }
        let receivers = deliveries.len() as i64;
        for (id, push) in deliveries {
            if let Some(mailbox) = self.mailboxes.get(&id) {
                // A mailbox whose connection is gone is closed with it (see `close`).
                let _ = mailbox.send(Reply::Pushes(vec![push]));
            }
        }
        self.published.push((channel.to_vec(), message.to_vec()));
        receivers
    }

    /// The messages published since the last call (for the replication stream).
    pub fn take_published(&mut self) -> Vec<(Vec<u8>, Vec<u8>)> {
        std::mem::take(&mut self.published)
    }
}
