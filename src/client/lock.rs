//! The single-node lock (tier 5 of the ladder): `SET key <random> NX PX ttl`, released by
//! an atomic compare-and-delete script, retried with random jitter.
//!
//! Its known defect is kept on purpose: if the holder's work outlives the TTL (a GC pause,
//! a slow network), the key expires and another client acquires while the first still
//! believes it holds the lock. The simulator exists to show exactly that.

use rand::{Rng, RngExt};

use super::conn::{Conn, RequestError};
use super::scripts;
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::cmd::{Condition, Eval, Set, SetExpiry};

/// How a failed acquire is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// Extra attempts after the first.
    pub count: u32,
    /// Base delay between attempts.
    pub delay_ms: u64,
    /// Up to this much random delay is added, so contenders do not retry in lockstep.
    pub jitter_ms: u64,
}

/// Settings of a lock client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockOptions {
    pub ttl_ms: u64,
    pub retry: Retry,
    /// How long to wait for one reply.
    pub request_timeout_ms: u64,
}

/// A granted lock: what the holder needs to release it, and until when it is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub key: Vec<u8>,
    /// The random value stored in the key; only its owner's release deletes the key.
    pub token: String,
    /// Monotonic time (client clock) before the acquire was sent.
    pub requested_at_ms: u64,
    /// The key certainly lives until this monotonic time: `requested_at_ms + ttl_ms`.
    pub valid_until_ms: u64,
}

/// Why the lock could not be acquired or released.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("lock is held by another client ({attempts} attempts)")]
    Contended { attempts: u32 },
    #[error("request failed: {0}")]
    Request(#[from] RequestError),
    #[error("unexpected reply from Redis: {0:?}")]
    UnexpectedReply(Frame),
}

/// A lock client talking to one Redis node.
pub struct Lock<C: Connect, K: Clock, R: Rng> {
    conn: Conn<C, K>,
    clock: K,
    rng: R,
    options: LockOptions,
}

/// Random bytes in a token: as the Redis distlock page suggests (20 bytes from urandom).
const TOKEN_BYTES: usize = 20;

impl<C: Connect, K: Clock, R: Rng + Send> Lock<C, K, R> {
    /// A client that reaches its node through `connector`, reads time from `clock` and
    /// draws tokens and jitter from `rng`.
    pub fn new(connector: C, clock: K, rng: R, options: LockOptions) -> Self {
        let conn = Conn::new(connector, clock.clone(), options.request_timeout_ms);
        Lock {
            conn,
            clock,
            rng,
            options,
        }
    }

    /// One attempt: `Ok(None)` when another client holds the lock.
    pub async fn try_acquire(&mut self, key: &[u8]) -> Result<Option<Lease>, LockError> {
        let mut token_bytes = [0u8; TOKEN_BYTES];
        self.rng.fill(&mut token_bytes);
        let token: String = token_bytes.iter().map(|b| format!("{b:02x}")).collect();
        let requested_at_ms = self.clock.monotonic_ms();
        let set = Set {
            key: key.to_vec(),
            value: token.clone().into_bytes(),
            condition: Some(Condition::Nx),
            expiry: Some(SetExpiry::Px(self.options.ttl_ms as i64)),
        };
        match self.conn.request(&set.into_frame()).await? {
            Frame::SimpleString(s) if s == b"OK" => Ok(Some(Lease {
                key: key.to_vec(),
                token,
                requested_at_ms,
                valid_until_ms: requested_at_ms + self.options.ttl_ms,
            })),
            Frame::Null => Ok(None),
            other => Err(LockError::UnexpectedReply(other)),
        }
    }

    /// Tries up to `1 + retry.count` times, sleeping `delay + U(0, jitter)` in between.
    pub async fn acquire(&mut self, key: &[u8]) -> Result<Lease, LockError> {
        let attempts = self.options.retry.count + 1;
        for attempt in 1..=attempts {
            match self.try_acquire(key).await {
                Ok(Some(lease)) => return Ok(lease),
                Ok(None) if attempt == attempts => break,
                Err(e) if attempt == attempts => return Err(e),
                Ok(None) | Err(_) => {}
            }
            let jitter = self.rng.random_range(0..=self.options.retry.jitter_ms);
            self.clock.sleep_ms(self.options.retry.delay_ms + jitter).await;
        }
        Err(LockError::Contended { attempts })
    }

    /// Releases atomically; `Ok(false)` when the key no longer held our token (it expired,
    /// and perhaps someone else holds the lock now).
    pub async fn release(&mut self, lease: &Lease) -> Result<bool, LockError> {
        let eval = Eval {
            script: scripts::RELEASE.to_string(),
            keys: vec![lease.key.clone()],
            args: vec![lease.token.clone().into_bytes()],
        };
        match self.conn.request(&eval.into_frame()).await? {
            Frame::Integer(n) => Ok(n == 1),
            other => Err(LockError::UnexpectedReply(other)),
        }
    }
}
