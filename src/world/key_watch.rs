//! Records the lock key's life on every Redis node: each time a node stores it (an
//! acquire, a renewal, a replica applying its master's stream, a restart reading its AOF)
//! and each time it goes (released, expired, flushed by a resync). The node's own clock
//! stamps each event, and an expiry is given on that clock too, so a trace shows why a key
//! outlived or fell short of its TTL. A key that expired unseen and was replaced by the
//! next client's `SET` in one command is told as gone, then set. A crash takes the key with it silently: the node's
//! `crashed` event says so.

use std::sync::{Arc, Mutex};

use super::clock::{EPOCH_NS, SimClock};
use super::recorder::Recorder;
use super::workload::LOCK_KEY;
use crate::history::EventKind;
use crate::redis::node::KeyWatch;

/// A watch for one incarnation of node `name`: it starts believing the key absent, as a
/// freshly started process holds nothing until its AOF or its master says otherwise.
pub fn key_watch(name: &str, clock: SimClock, recorder: Recorder) -> KeyWatch {
    let name = name.to_string();
    let present: Mutex<Option<String>> = Mutex::new(None);
    KeyWatch(Arc::new(move |changes, db| {
        if !changes.cleared && !changes.keys.contains(LOCK_KEY) {
            return;
        }
        let mut present = present.lock().expect("key watch lock poisoned");
        let event = match db.raw(LOCK_KEY) {
            Some(entry) => {
                let token = String::from_utf8_lossy(entry.value.as_string().unwrap_or_default()).into_owned();
                // A key that expired unseen and was set anew by one command (`SET NX` on
                // a master deletes the expired key first): the old one left, then this.
                if let Some(old) = present.replace(token.clone())
                    && old != token
                {
                    recorder.record(&name, clock.local_us(), EventKind::KeyGone { token: old });
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
        recorder.record(&name, clock.local_us(), event);
    }))
}
