//! The lock libraries whose own wire protocol the client speaks, beside the generic ladder.
//!
//! A [`Protocol`] says which commands go to a node for an acquire, a renewal and a release,
//! and how a refused client waits before it tries again: the ladder's tiers
//! (`ladder.rs`: `SET NX PX` and friends, a sleep between attempts), Redisson's hash per
//! lock ([`redisson`]) or python-redis-lock's `SET NX EX` with its `BLPOP` signal list
//! ([`python_redis_lock`]). [`Lock`](super::Lock) counts the answers and keeps the lease
//! whatever the protocol; each library's module owns its scripts and key names.

pub mod python_redis_lock;
pub mod redisson;

use super::conn::Conn;
use super::error::LockError;
use super::ladder;
use super::options::{LockOptions, Protocol};
use super::steps::Steps;
use crate::platform::{Clock, Connect};

/// One node's answer to one acquire attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// The node granted the lock (and, with a WAIT rule, enough replicas acknowledged).
    Granted,
    /// Another client holds it; Redisson's acquire says for how much longer (its `PTTL`,
    /// `None` for a key without expiry), the other protocols do not say.
    Held { for_ms: Option<u64> },
}

/// One acquire attempt on one node, in the options' protocol (`shared`: the ladder's
/// request, built once for every node of the attempt).
pub(crate) async fn acquire_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    token: &str,
    steps: &dyn Steps,
    shared: &ladder::AttemptRequest,
) -> Result<Grant, LockError> {
    let granted = match options.protocol {
        Protocol::Ladder => ladder::acquire_on(conn, options, name, token, steps, shared).await?,
        Protocol::Redisson => return redisson::acquire_on(conn, options, name, token).await,
        Protocol::PythonRedisLock => python_redis_lock::acquire_on(conn, options, name, token).await?,
    };
    Ok(match granted {
        true => Grant::Granted,
        false => Grant::Held { for_ms: None },
    })
}

/// Releases on one node; `Ok(true)` when the key held our value and the release took
/// (Redisson: one hold of a reentrant lock given back). `request_id` names Redisson's
/// unlock latch; the other protocols have none. `shared`: the ladder's release request,
/// built once for every node of the release.
pub(crate) async fn release_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    token: &str,
    request_id: &str,
    steps: &dyn Steps,
    shared: &ladder::AttemptRequest,
) -> Result<bool, LockError> {
    match options.protocol {
        Protocol::Ladder => ladder::release_on(conn, options.algorithm, name, token, steps, shared).await,
        Protocol::Redisson => redisson::release_on(conn, options, name, token, request_id).await,
        Protocol::PythonRedisLock => python_redis_lock::release_on(conn, name, token).await,
    }
}

/// Renews the TTL on one node if the key still holds our value.
pub(crate) async fn extend_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    token: &str,
) -> Result<bool, LockError> {
    match options.protocol {
        Protocol::Ladder => ladder::extend_on(conn, options, name, token).await,
        Protocol::Redisson => redisson::extend_on(conn, options, name, token).await,
        Protocol::PythonRedisLock => python_redis_lock::extend_on(conn, options, name, token).await,
    }
}
