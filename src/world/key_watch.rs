//! Records the lock key's life on every Redis node: each time a node stores it (an
//! acquire, a renewal, a replica applying its master's stream, a restart reading its AOF)
//! and each time it goes (released, expired, flushed by a resync). The node's own clock
//! stamps each event, and an expiry is given on that clock too, so a trace shows why a key
//! outlived or fell short of its TTL. A key that expired unseen and was replaced by the
//! next client's `SET` in one command is told as gone, then set. A crash takes the key with it silently: the node's
//! `crashed` event says so. The key is the lock's Redis key as its protocol names it; a
//! Redisson lock is a hash, whose token is its one field (`uuid:threadId`).

use std::sync::{Arc, Mutex};

use super::clock::{EPOCH_NS, SimClock};
use super::recorder::Recorder;
use crate::history::EventKind;
use crate::redis::db::Value;
use crate::redis::node::KeyWatch;

/// A watch of `key` for one incarnation of node `name`: it starts believing the key absent,
/// as a freshly started process holds nothing until its AOF or its master says otherwise.
pub fn key_watch(name: &str, key: Vec<u8>, clock: SimClock, recorder: Recorder) -> KeyWatch {
    let name = recorder.name(name);
    let present: Mutex<Option<String>> = Mutex::new(None);
    KeyWatch(Arc::new(move |changes, db| {
        if !changes.cleared && !changes.keys.contains(key.as_slice()) {
            return;
        }
        let mut present = present.lock().expect("key watch lock poisoned");
        let event = match db.raw(&key) {
            Some(entry) => {
                let token = String::from_utf8_lossy(token_of(&entry.value)).into_owned();
                // A key that expired unseen and was set anew by one command (`SET NX` on
                // a master deletes the expired key first): the old one left, then this.
                if let Some(old) = present.replace(token.clone())
                    && old != token
                {
                    recorder.record_as(&name, clock.local_us(), EventKind::KeyGone { token: old });
                }
                EventKind::KeySet {
                    token,
                    expires_at_us: entry
                        .expires_at_ms
                        .map(|at_ms| at_ms as i64 * 1000 - EPOCH_NS / 1000),
                }
            }
            None => match present.take() {
                Some(token) => EventKind::KeyGone { token },
                None => return,
            },
        };
        recorder.record_as(&name, clock.local_us(), event);
    }))
}

/// The holder a lock key names: a string's value, a hash's first field (Redisson).
fn token_of(value: &Value) -> &[u8] {
    match value {
        Value::String(bytes) => bytes,
        Value::Hash(fields) => fields.first().map_or(&[][..], |(field, _)| field),
        Value::List(_) | Value::SortedSet(_) | Value::Set(_) | Value::Stream(_) => &[],
    }
}
