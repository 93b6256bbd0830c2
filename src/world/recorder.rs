//! Collects the history of a run as it happens, stamped with true and local time, and,
//! when asked, every frame on the clients' connections beside it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::clock::true_now_ns;
use crate::history::{Direction, Event, EventKind, History, NodeName, Strike, StruckOn, WireRecord};

/// Room for this many events from the start: a seed of the bench workloads records about
/// 9,000, and a log grown by doubling copied each of its (large) events about twice on the
/// way there (issue 33). The memory is only touched as events come.
const EVENTS_RESERVED: usize = 16_384;

/// A shared, append-only event log. Clones append to the same log.
#[derive(Clone)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    recorded: Arc<Notify>,
    /// How many [`Recorder::next_event`] calls are waiting: an event wakes them only when
    /// some are, since most runs have none, and waking nobody still took `Notify`'s lock
    /// for every event (issue 33).
    waiting: Arc<AtomicUsize>,
    strikes: Arc<Mutex<Vec<Strike>>>,
    drawn: Arc<Mutex<Vec<String>>>,
    /// The one [`NodeName`] of each node recorded so far (a handful): every event of a node
    /// shares it ([`Recorder::name`]).
    names: Arc<Mutex<Vec<NodeName>>>,
    /// The clients' wire traffic, for a recorder made with [`Recorder::keeping_wire`].
    wire: Option<Arc<Mutex<Vec<WireRecord>>>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            events: Arc::new(Mutex::new(Vec::with_capacity(EVENTS_RESERVED))),
            recorded: Arc::default(),
            waiting: Arc::default(),
            strikes: Arc::default(),
            drawn: Arc::default(),
            names: Arc::default(),
            wire: None,
        }
    }
}

impl Recorder {
    /// A recorder that also keeps every frame the clients write and read
    /// ([`Recorder::wire`]).
    pub fn keeping_wire() -> Self {
        Recorder {
            wire: Some(Arc::default()),
            ..Recorder::default()
        }
    }

    /// Whether this recorder keeps the clients' wire traffic.
    pub fn keeps_wire(&self) -> bool {
        self.wire.is_some()
    }

    /// Keeps a frame that client `client`, whose wall clock reads `local_us`, wrote to or
    /// read from Redis node `redis` now (`text` as [`WireRecord::text`] says); nothing
    /// unless the recorder keeps wire traffic.
    pub fn wire(&self, client: &str, local_us: i64, redis: &str, direction: Direction, text: String) {
        let Some(wire) = &self.wire else {
            return;
        };
        let record = WireRecord {
            true_us: true_now_ns() / 1000,
            client: client.to_string(),
            local_us,
            redis: redis.to_string(),
            direction,
            text,
            events_before: self.len(),
        };
        wire.lock().expect("recorder lock poisoned").push(record);
    }

    /// The wire traffic kept so far, taken out.
    pub fn take_wire(&self) -> Vec<WireRecord> {
        self.wire
            .as_ref()
            .map(|wire| std::mem::take(&mut *wire.lock().expect("recorder lock poisoned")))
            .unwrap_or_default()
    }

    /// The name this recorder's events of `node` share: whoever records many events holds
    /// it and records them [`Recorder::record_as`] it.
    pub fn name(&self, node: &str) -> NodeName {
        let mut names = self.names.lock().expect("recorder lock poisoned");
        if let Some(name) = names.iter().find(|name| name.as_str() == node) {
            return name.clone();
        }
        let name = NodeName::from(node);
        names.push(name.clone());
        name
    }

    /// Appends an event that happened now on `node`, whose wall clock reads `local_us`.
    pub fn record(&self, node: &str, local_us: i64, kind: EventKind) {
        self.record_as(&self.name(node), local_us, kind);
    }

    /// [`Recorder::record`] by a name this recorder gave ([`Recorder::name`]).
    pub fn record_as(&self, node: &NodeName, local_us: i64, kind: EventKind) {
        let event = Event {
            true_us: true_now_ns() / 1000,
            node: node.clone(),
            local_us,
            kind,
        };
        self.events.lock().expect("recorder lock poisoned").push(event);
        // A waiter counts itself before it looks at the log: if it is not counted yet, it
        // will find this event there.
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.recorded.notify_waiters();
        }
    }

    /// Notes that scheduled fault `fault` strikes now, `on` those nodes (only its first
    /// strike is kept).
    pub fn struck(&self, fault: usize, on: StruckOn) {
        let events_before = self.len();
        let mut strikes = self.strikes.lock().expect("recorder lock poisoned");
        if strikes.iter().all(|strike| strike.fault != fault) {
            strikes.push(Strike {
                fault,
                true_us: true_now_ns() / 1000,
                events_before,
                on,
            });
        }
    }

    /// Keeps a fault the nemesis drew, as a scenario file writes it.
    pub fn drawn(&self, fault: String) {
        self.drawn.lock().expect("recorder lock poisoned").push(fault);
    }

    /// How many events have been recorded so far.
    pub fn len(&self) -> usize {
        self.events.lock().expect("recorder lock poisoned").len()
    }

    /// Whether nothing has been recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first event at index `from` or later that `matches`, waiting for it if needed.
    pub async fn next_event(&self, mut from: usize, matches: impl Fn(&Event) -> bool) -> Event {
        let _counted = Waiting::counted(&self.waiting);
        loop {
            let recorded = self.recorded.notified();
            tokio::pin!(recorded);
            recorded.as_mut().enable();
            {
                let events = self.events.lock().expect("recorder lock poisoned");
                // `finish` may have taken the log while this waiter slept: nothing is left.
                let unseen = events.get(from..).unwrap_or_default();
                if let Some(event) = unseen.iter().find(|e| matches(e)) {
                    return event.clone();
                }
                from = events.len();
            }
            recorded.await;
        }
    }

    /// The client that most recently acquired the lock and still holds it (has neither
    /// sent its release nor crashed).
    pub fn current_holder(&self) -> Option<String> {
        let events = self.events.lock().expect("recorder lock poisoned");
        let mut holders: Vec<&NodeName> = Vec::new();
        for event in events.iter() {
            match event.kind {
                EventKind::Acquired { .. } => holders.push(&event.node),
                EventKind::ReleaseSent { .. } | EventKind::Crashed => holders.retain(|h| **h != event.node),
                _ => {}
            }
        }
        holders.last().map(|h| h.to_string())
    }

    /// The current holder, or if there is none, the next client to acquire.
    pub async fn holder_or_next(&self) -> String {
        let from = self.len();
        match self.current_holder() {
            Some(holder) => holder,
            None => self
                .next_event(from, |e| matches!(e.kind, EventKind::Acquired { .. }))
                .await
                .node
                .into(),
        }
    }

    /// Ends the run: the log so far, closed at the current true time (the world adds the
    /// nodes' clocks, which it owns).
    pub fn finish(&self) -> History {
        let events = std::mem::take(&mut *self.events.lock().expect("recorder lock poisoned"));
        History {
            events,
            end_us: true_now_ns() / 1000,
            strikes: std::mem::take(&mut *self.strikes.lock().expect("recorder lock poisoned")),
            drawn: std::mem::take(&mut *self.drawn.lock().expect("recorder lock poisoned")),
            clocks: Default::default(),
        }
    }
}

/// One [`Recorder::next_event`] counted among the waiting while it lives (it may be dropped
/// unfinished, with the future that waits).
struct Waiting<'r>(&'r AtomicUsize);

impl<'r> Waiting<'r> {
    fn counted(waiting: &'r AtomicUsize) -> Self {
        waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
