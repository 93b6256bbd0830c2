//! Hand-written histories for the checkers' tests: one short constructor per event.

use super::CheckSettings;
use crate::history::{Answer, Event, EventKind, History};

/// Settings for hand-written histories: TTL 2000 ms and a 500 ms retry cycle, so a lock
/// may stay free and wanted for 2500 ms and a client may wait 5000 ms while others get it.
pub const SETTINGS: CheckSettings = CheckSettings {
    ttl_ms: 2000,
    deadlock_slack_ms: 500,
    liveness_bound_ms: 2500,
    starvation_bound_ms: 5000,
    faults: 0,
    min_grants_after_fault: 1,
};

/// An event at `true_ms` on `node`, with a local clock that reads true time.
pub fn at(true_ms: u64, node: &str, kind: EventKind) -> Event {
    Event {
        true_us: true_ms * 1000,
        node: node.into(),
        local_us: (true_ms * 1000) as i64,
        kind,
    }
}

pub fn acquired(t: u64, node: &str) -> Event {
    fenced_acquired(t, node, None)
}

pub fn fenced_acquired(t: u64, node: &str, fence: Option<u64>) -> Event {
    at(
        t,
        node,
        EventKind::Acquired {
            token: format!("{node}-token"),
            fence,
            validity_ms: 2000,
        },
    )
}

pub fn release(t: u64, node: &str) -> Event {
    at(
        t,
        node,
        EventKind::ReleaseSent {
            token: format!("{node}-token"),
        },
    )
}

pub fn read(t: u64, node: &str, value: i64) -> Event {
    at(t, node, EventKind::ResourceRead { value, fence: None })
}

pub fn write(t: u64, node: &str, value: i64) -> Event {
    at(t, node, EventKind::ResourceWrite { value, fence: None })
}

pub fn fenced_write(t: u64, node: &str, value: i64, fence: u64) -> Event {
    at(
        t,
        node,
        EventKind::ResourceWrite {
            value,
            fence: Some(fence),
        },
    )
}

pub fn crashed(t: u64, node: &str) -> Event {
    at(t, node, EventKind::Crashed)
}

pub fn attempt(t: u64, node: &str) -> Event {
    at(t, node, EventKind::AcquireStarted)
}

/// An acquire that gave up because Redis said someone else holds the lock.
pub fn refused(t: u64, node: &str) -> Event {
    at(
        t,
        node,
        EventKind::AcquireFailed {
            reason: "held by another client".into(),
            contended: true,
        },
    )
}

/// An acquire that gave up because Redis did not answer.
pub fn timed_out(t: u64, node: &str) -> Event {
    at(
        t,
        node,
        EventKind::AcquireFailed {
            reason: "no reply".into(),
            contended: false,
        },
    )
}

/// Redis node `node` stored the lock key holding `token`, to expire `ttl_ms` later.
pub fn key_set(t: u64, node: &str, token: &str, ttl_ms: u64) -> Event {
    at(
        t,
        node,
        EventKind::KeySet {
            token: token.into(),
            expires_at_us: Some(((t + ttl_ms) * 1000) as i64),
        },
    )
}

/// The lock key holding `token` left Redis node `node`.
pub fn key_gone(t: u64, node: &str, token: &str) -> Event {
    at(t, node, EventKind::KeyGone { token: token.into() })
}

/// Redis node `redis` answered `client`'s acquire.
pub fn answered(t: u64, client: &str, redis: &str, answer: Answer) -> Event {
    at(
        t,
        client,
        EventKind::NodeAnswered {
            request: "acquire",
            redis: redis.into(),
            answer,
            redis_local_us: (t * 1000) as i64,
        },
    )
}

/// A history of `events` that ends at `end_ms`.
pub fn history(end_ms: u64, events: Vec<Event>) -> History {
    History {
        events,
        end_us: end_ms * 1000,
        strikes: Vec::new(),
        drawn: Vec::new(),
        clocks: Default::default(),
    }
}

/// client-1 asks at 0 ms; redis-1 stores its key for 2000 ms and says yes at 1 ms, and
/// client-1 believes it holds the lock: the grant the coverage detectors' tests start from.
pub fn granted_by_redis_1() -> Vec<Event> {
    vec![
        attempt(0, "client-1"),
        key_set(1, "redis-1", "client-1-token", 2000),
        answered(1, "client-1", "redis-1", Answer::Yes),
        acquired(1, "client-1"),
    ]
}
