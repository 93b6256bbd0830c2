//! What a lock client tells whoever watches it: every node's answer to every request, why
//! each attempt failed, why each renewal did.
//!
//! A Redlock acquire is five conversations; the client acts on their count, but a person
//! reading a counterexample needs each of them (which nodes granted, which timed out, when).
//! The simulator records these into the run's history; a client on real Redis watches
//! nothing ([`Unobserved`]).

use super::error::LockError;

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
}

/// The observer of a client nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl Observe for Unobserved {}
