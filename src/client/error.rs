//! Why a lock could not be acquired, kept or released: one error type for the client, its
//! per-node commands ([`super::ladder`]) and whoever observes it ([`super::observe`]).

use crate::redis::Frame;
use crate::redis::connection::ConnectionError;

/// Why a request got no reply.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("no reply within {0} ms")]
    Timeout(u64),
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

/// Why the lock could not be acquired, kept, or released.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("lock is held by another client ({attempts} attempts)")]
    Contended { attempts: u32 },
    #[error(
        "no quorum: {granted} of {nodes} nodes granted, {needed} needed, {failed} failed (last error: {last_error})"
    )]
    NoQuorum {
        granted: usize,
        needed: usize,
        nodes: usize,
        failed: usize,
        last_error: String,
    },
    #[error("acquired, but the acquire took {elapsed_ms} ms of a {ttl_ms} ms TTL: no validity left")]
    NoValidityLeft { elapsed_ms: u64, ttl_ms: u64 },
    #[error("written, but only {acknowledged} of the {needed} replicas required acknowledged it")]
    NotReplicated { acknowledged: i64, needed: u32 },
    #[error(
        "extend unconfirmed: {extended} nodes extended, {needed} needed, the others failed ({last_error})"
    )]
    ExtendUnconfirmed {
        extended: usize,
        needed: usize,
        last_error: String,
    },
    #[error("lock lost: {reason}")]
    LockLost { reason: String },
    #[error("fencing is `counter` but the client was given no counter node")]
    NoFenceCounter,
    #[error("request failed: {0}")]
    Request(#[from] RequestError),
    /// A master's answer to a request fanned out to every master, which a quorum of the
    /// others decided before it came (see `Resolve::Quorum`): the client went on without it.
    #[error("not waited for: a quorum of the other nodes had decided the request")]
    NotWaitedFor,
    #[error("unexpected reply from Redis: {0:?}")]
    UnexpectedReply(Frame),
}
