//! What a lock client tells whoever watches it: every node's answer to every request, why
//! each attempt failed, why each renewal did, and every frame it wrote or read on the wire.
//!
//! A Redlock acquire is five conversations; the client acts on their count, but a person
//! reading a counterexample needs each of them (which nodes granted, which timed out, when).
//! The simulator records these into the run's history; a client on real Redis watches
//! nothing ([`Unobserved`]).

use std::sync::Arc;

use super::error::LockError;
use crate::redis::Frame;

/// The request a node answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Acquire,
    Extend,
    Release,
}

impl Request {
    /// The name a trace uses (`acquire`).
    pub fn name(self) -> &'static str {
        match self {
            Request::Acquire => "acquire",
            Request::Extend => "extend",
            Request::Release => "release",
        }
    }
}

/// Told as the client goes; every method is called at the moment it happened.
pub trait Observe: Send + Sync {
    /// Node `node` (its index among the client's nodes) answered `request`: `Ok(true)`
    /// granted, extended or released, `Ok(false)` refused (the key held another value),
    /// `Err` no usable answer (timeout, connection error, unexpected reply).
    fn answered(&self, request: Request, node: usize, answer: &Result<bool, LockError>) {
        let _ = (request, node, answer);
    }

    /// Acquire attempt number `attempt` (from 1) got no lock, for `reason`; more attempts
    /// may follow.
    fn attempt_failed(&self, attempt: u32, reason: &str) {
        let _ = (attempt, reason);
    }

    /// A watchdog renewal did not renew, for `reason`; the watchdog may ride it out.
    fn renewal_failed(&self, reason: &str) {
        let _ = reason;
    }

    /// On a connection to node `node` (its index among the client's nodes; the fencing
    /// counter comes after them), a frame went out or came in, or a request got no reply.
    fn wire(&self, node: usize, traffic: Traffic<'_>) {
        let _ = (node, traffic);
    }

    /// Whether [`Observe::wire`] keeps what it is told: a request encoded without its
    /// frame is read back into one only for an observer that does (`Encoded`).
    fn keeps_wire(&self) -> bool {
        true
    }
}

/// One thing that happened on a client's connection to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic<'a> {
    /// The client wrote this request.
    Sent(&'a Frame),
    /// The client read this frame: a reply, or a pub/sub message.
    Received(&'a Frame),
    /// The last request got no reply, for this reason (a timeout, a broken connection).
    NoReply(&'a str),
}

/// Where one node's connections report their traffic: the client's observer, and the
/// node's index among the client's nodes.
#[derive(Clone)]
pub struct Tap {
    observer: Arc<dyn Observe>,
    node: usize,
}

impl Tap {
    /// Reports node `node`'s traffic to `observer`.
    pub fn new(observer: Arc<dyn Observe>, node: usize) -> Self {
        Tap { observer, node }
    }

    /// Tells the observer of `traffic` on this node's connection.
    pub fn report(&self, traffic: Traffic<'_>) {
        self.observer.wire(self.node, traffic);
    }

    /// Tells the observer of the request `frame` gives, if it keeps the wire's traffic.
    pub fn report_sent<'a>(&self, frame: impl FnOnce() -> &'a Frame) {
        if self.observer.keeps_wire() {
            self.report(Traffic::Sent(frame()));
        }
    }
}

/// The observer of a client nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl Observe for Unobserved {}
