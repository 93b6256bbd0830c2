//! The history of one live run, stamped with true time: the host's monotonic clock since
//! the run began. Live processes keep their own clocks, which locksim cannot read, so an
//! event's local time is its true time (a locksim node's events could say better, but the
//! checkers judge by true time).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

use crate::history::{Event, EventKind, History, Strike, StruckOn};

/// A shared, append-only event log. Clones append to the same log.
#[derive(Clone)]
pub struct LiveRecorder {
    log: Arc<Mutex<Log>>,
    /// Woken at every event, for the faults waiting for one.
    recorded: Arc<Notify>,
}

struct Log {
    /// True time 0.
    started: Instant,
    events: Vec<Event>,
    strikes: Vec<Strike>,
    /// Every fault a nemesis drew, as a scenario file writes it.
    drawn: Vec<String>,
}

impl LiveRecorder {
    /// A log whose true time 0 is now.
    pub fn start() -> Self {
        LiveRecorder {
            log: Arc::new(Mutex::new(Log {
                started: Instant::now(),
                events: Vec::new(),
                strikes: Vec::new(),
                drawn: Vec::new(),
            })),
            recorded: Arc::new(Notify::new()),
        }
    }

    /// Makes now true time 0, when the run begins (its workers are ready). Nothing is
    /// recorded before: the workers' links carry no bytes until then.
    pub fn begin_now(&self) {
        self.log().started = Instant::now();
    }

    /// True time since the run began, in microseconds.
    pub fn true_us(&self) -> u64 {
        self.log().started.elapsed().as_micros() as u64
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().expect("live recorder lock poisoned")
    }

    /// Appends an event that happened now on `node`.
    pub fn record(&self, node: &str, kind: EventKind) {
        let mut log = self.log();
        let true_us = log.started.elapsed().as_micros() as u64;
        log.events.push(Event {
            true_us,
            node: node.into(),
            local_us: true_us as i64,
            kind,
        });
        self.recorded.notify_waiters();
    }

    /// How many events are recorded so far.
    pub fn events_so_far(&self) -> usize {
        self.log().events.len()
    }

    /// Waits for the first event from index `from` on that `wanted` accepts.
    pub async fn next_event(&self, from: usize, wanted: impl Fn(&Event) -> bool) -> Event {
        let mut from = from;
        loop {
            let recorded = self.recorded.notified();
            tokio::pin!(recorded);
            // Registered before looking, so an event recorded meanwhile wakes it.
            recorded.as_mut().enable();
            {
                let log = self.log();
                if let Some(event) = log.events[from..].iter().find(|e| wanted(e)) {
                    return event.clone();
                }
                from = log.events.len();
            }
            recorded.await;
        }
    }

    /// Notes that scheduled fault `fault` strikes now, `on` those nodes (only its first
    /// strike is kept).
    pub fn struck(&self, fault: usize, on: StruckOn) {
        let mut log = self.log();
        let true_us = log.started.elapsed().as_micros() as u64;
        let events_before = log.events.len();
        if log.strikes.iter().all(|strike| strike.fault != fault) {
            log.strikes.push(Strike {
                fault,
                true_us,
                events_before,
                on,
            });
        }
    }

    /// Keeps a fault a nemesis drew, as a scenario file writes it.
    pub fn drawn(&self, fault: String) {
        self.log().drawn.push(fault);
    }

    /// Whether scheduled fault `fault` has struck.
    pub fn has_struck(&self, fault: usize) -> bool {
        self.log().strikes.iter().any(|strike| strike.fault == fault)
    }

    /// The client that most recently reported holding the lock and has not reported its
    /// release nor been killed since.
    pub fn current_holder(&self) -> Option<String> {
        let log = self.log();
        let mut holders: Vec<&str> = Vec::new();
        for event in &log.events {
            match event.kind {
                EventKind::Acquired { .. } => holders.push(&event.node),
                EventKind::ReleaseSent { .. } | EventKind::Crashed => holders.retain(|h| *h != event.node),
                _ => {}
            }
        }
        holders.last().map(|h| h.to_string())
    }

    /// The token `client` last reported holding, if it still holds it.
    pub fn held_token(&self, client: &str) -> Option<String> {
        let log = self.log();
        let mut token = None;
        for event in log.events.iter().filter(|e| e.node == client) {
            match &event.kind {
                EventKind::Acquired { token: held, .. } => token = Some(held.clone()),
                EventKind::ReleaseSent { .. } | EventKind::Crashed => token = None,
                _ => {}
            }
        }
        token
    }

    /// Ends the run: the log so far, closed now.
    pub fn finish(&self) -> History {
        let mut log = self.log();
        let end_us = log.started.elapsed().as_micros() as u64;
        History {
            events: std::mem::take(&mut log.events),
            end_us,
            strikes: std::mem::take(&mut log.strikes),
            drawn: std::mem::take(&mut log.drawn),
            clocks: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquired(token: &str) -> EventKind {
        EventKind::Acquired {
            token: token.into(),
            fence: None,
            validity_ms: 1000,
        }
    }

    #[test]
    fn the_holder_is_the_latest_client_that_has_not_released() {
        let recorder = LiveRecorder::start();
        assert_eq!(recorder.current_holder(), None);
        recorder.record("client-1", acquired("a"));
        recorder.record("client-2", acquired("b"));
        assert_eq!(recorder.current_holder().as_deref(), Some("client-2"));
        recorder.record("client-2", EventKind::ReleaseSent { token: "b".into() });
        assert_eq!(recorder.current_holder().as_deref(), Some("client-1"));
        assert_eq!(recorder.held_token("client-1").as_deref(), Some("a"));
        assert_eq!(recorder.held_token("client-2"), None);
    }

    #[test]
    fn a_waiter_gets_the_first_wanted_event_recorded_after_it_began_to_wait() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let recorder = LiveRecorder::start();
            recorder.record("client-1", acquired("old"));
            let from = recorder.events_so_far();
            let waiting = recorder.clone();
            let waiter = tokio::spawn(async move {
                waiting
                    .next_event(from, |e| matches!(e.kind, EventKind::Acquired { .. }))
                    .await
            });
            tokio::task::yield_now().await;
            recorder.record("client-1", EventKind::ReleaseSent { token: "old".into() });
            recorder.record("client-2", acquired("new"));
            let event = waiter.await.unwrap();
            assert_eq!((event.node.as_str(), event.kind), ("client-2", acquired("new")));
        });
    }

    #[test]
    fn a_finished_log_keeps_events_in_order_with_the_first_strike_of_each_fault() {
        let recorder = LiveRecorder::start();
        recorder.record("client-1", acquired("a"));
        assert!(!recorder.has_struck(0));
        recorder.struck(0, Default::default());
        recorder.struck(0, Default::default());
        assert!(recorder.has_struck(0));
        let history = recorder.finish();
        assert_eq!(history.events.len(), 1);
        assert_eq!(history.strikes.len(), 1);
        assert_eq!(history.strikes[0].events_before, 1);
        assert!(history.end_us >= history.events[0].true_us);
    }
}
