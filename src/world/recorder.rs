//! Collects the history of a run as it happens, stamped with true and local time.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::clock::true_now_ns;
use crate::history::{Event, EventKind, History};

/// A shared, append-only event log. Clones append to the same log.
#[derive(Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    acquired: Arc<Notify>,
}

impl Recorder {
    /// Appends an event that happened now on `node`, whose wall clock reads `local_us`.
    pub fn record(&self, node: &str, local_us: i64, kind: EventKind) {
        let is_acquire = matches!(kind, EventKind::Acquired { .. });
        let event = Event {
            true_us: true_now_ns() / 1000,
            node: node.to_string(),
            local_us,
            kind,
        };
        self.events.lock().expect("recorder lock poisoned").push(event);
        if is_acquire {
            self.acquired.notify_waiters();
        }
    }

    /// The client that most recently acquired the lock and has not sent its release yet.
    pub fn current_holder(&self) -> Option<String> {
        let events = self.events.lock().expect("recorder lock poisoned");
        let mut holders: Vec<&str> = Vec::new();
        for event in events.iter() {
            match event.kind {
                EventKind::Acquired { .. } => holders.push(&event.node),
                EventKind::ReleaseSent { .. } => holders.retain(|h| *h != event.node),
                _ => {}
            }
        }
        holders.last().map(|h| h.to_string())
    }

    /// The current holder, or if there is none, the next client to acquire.
    pub async fn holder_or_next(&self) -> String {
        loop {
            let acquired = self.acquired.notified();
            tokio::pin!(acquired);
            acquired.as_mut().enable();
            if let Some(holder) = self.current_holder() {
                return holder;
            }
            acquired.await;
        }
    }

    /// Ends the run: the log so far, closed at the current true time.
    pub fn finish(&self) -> History {
        let events = std::mem::take(&mut *self.events.lock().expect("recorder lock poisoned"));
        History {
            events,
            end_us: true_now_ns() / 1000,
        }
    }
}
