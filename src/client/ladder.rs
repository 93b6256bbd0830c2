//! The commands each algorithm sends to one node, defects included.
//!
//! [`Lock`](super::Lock) runs these on every node (one for the single-node tiers, N for
//! Redlock) and decides from the answers; this file only says which commands, in which
//! order, and where the [`Step`]s fall between them. The libraries that speak a protocol of
//! their own live beside it in `profiles/`, and share its WAIT rule.

use std::sync::OnceLock;

use super::conn::{Conn, Outgoing};
use super::error::LockError;
use super::options::{Algorithm, ExtendMode, LockOptions, RetryToken, WaitFor};
use super::scripts;
use super::steps::{Step, Steps};
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::cmd::{Condition, Del, Eval, Expire, Get, Incr, Info, Set, SetExpiry, Setnx, Wait};
use crate::redis::connection::Encoded;

/// An attempt's request, the same on every node (its `SET`, a release's script): the first
/// node's request encodes it, from its words, and every node writes those bytes (a frame
/// built per node cost about a thousand instructions and its drop as many again, and
/// encoding it ~800 more, issue 33).
#[derive(Default)]
pub(crate) struct AttemptRequest(OnceLock<Encoded>);

impl AttemptRequest {
    /// The request encoded, `encode` making it if no node has yet.
    fn get_or_encode(&self, encode: impl FnOnce() -> Encoded) -> Outgoing<'_> {
        Outgoing::Encoded(self.0.get_or_init(encode))
    }
}

/// Tries to take the key on one node; `Ok(true)` when this node granted it, and with
/// `wait_replicas`, enough replicas acknowledged it (else [`LockError::NotReplicated`],
/// with the key left on the node for the caller to release). `shared` holds the attempt's
/// `SET` once a node built it.
pub(crate) async fn acquire_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    key: &[u8],
    token: &str,
    steps: &dyn Steps,
    shared: &AttemptRequest,
) -> Result<bool, LockError> {
    let replication = plan_wait(conn, options).await?;
    let granted = match options.algorithm {
        Algorithm::Setnx | Algorithm::SetnxExpire => {
            let setnx = Setnx {
                key: key.to_vec(),
                value: token.as_bytes().to_vec(),
            };
            let granted = integer(conn.request(&setnx.into_frame()).await?)? == 1;
            if granted {
                steps.reached(Step::AfterSetnx).await;
                if options.algorithm == Algorithm::SetnxExpire {
                    // EXPIRE takes seconds: round up so the key never lives shorter than asked.
                    let expire = Expire {
                        key: key.to_vec(),
                        seconds: options.ttl_ms.div_ceil(1000) as i64,
                    };
                    integer(conn.request(&expire.into_frame()).await?)?;
                }
            }
            granted
        }
        Algorithm::UniqueGetDel | Algorithm::LuaRelease | Algorithm::Redlock
            if options.retry_token == RetryToken::ReusedRefreshing && options.expires() =>
        {
            let ttl = options.ttl_ms.to_string();
            eval(
                conn,
                scripts::ACQUIRE_OR_REFRESH,
                key,
                &[token.as_bytes(), ttl.as_bytes()],
            )
            .await?
                == 1
        }
        Algorithm::SetNxPx | Algorithm::UniqueGetDel | Algorithm::LuaRelease | Algorithm::Redlock => {
            let set = shared.get_or_encode(|| {
                Set {
                    key,
                    value: token.as_bytes(),
                    condition: Some(Condition::Nx),
                    // TTL 0: a lock held until released (redis-py's `timeout=None`).
                    expiry: options.expires().then_some(SetExpiry::Px(options.ttl_ms as i64)),
                }
                .encode()
            });
            match conn.request(set).await? {
                Frame::SimpleString(s) if s == b"OK" => true,
                Frame::Null => false,
                other => return Err(LockError::UnexpectedReply(other)),
            }
        }
    };
    if granted {
        confirm_replicated(conn, options, replication).await?;
    }
    Ok(granted)
}

/// What to WAIT for after the next write: `(replicas, needed)`, or nothing.
pub(crate) type WaitPlan = Option<(u32, u32)>;

/// Decides, before a write, what `options.wait_replicas` will WAIT for after it. Redisson
/// reads the master's replica count first and skips WAIT on a master without replicas.
pub(crate) async fn plan_wait<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
) -> Result<WaitPlan, LockError> {
    Ok(match options.wait_replicas.map(|wait| wait.replicas) {
        None => None,
        Some(WaitFor::Exactly(n)) => Some((n, n)),
        Some(WaitFor::Connected) => match connected_replicas(conn).await? {
            0 => None,
            n => Some((n, 1)),
        },
    })
}

/// `connected_slaves` of the node's `INFO replication`.
async fn connected_replicas<C: Connect, K: Clock>(conn: &mut Conn<C, K>) -> Result<u32, LockError> {
    let info = Info {
        sections: vec![b"replication".to_vec()],
    };
    match conn.request(&info.into_frame()).await? {
        Frame::BulkString(text) => Ok(String::from_utf8_lossy(&text)
            .lines()
            .find_map(|line| line.strip_prefix("connected_slaves:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)),
        other => Err(LockError::UnexpectedReply(other)),
    }
}

/// After a write that granted or extended the lock: WAIT as planned; too few
/// acknowledgements are [`LockError::NotReplicated`], the key left on the node.
pub(crate) async fn confirm_replicated<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    plan: WaitPlan,
) -> Result<(), LockError> {
    let (Some((replicas, needed)), Some(wait)) = (plan, options.wait_replicas) else {
        return Ok(());
    };
    let request = Wait {
        replicas: i64::from(replicas),
        timeout_ms: wait.timeout_ms as i64,
    };
    // WAIT blocks on the server for up to its timeout: give the reply that long more.
    let within_ms = wait.timeout_ms + options.request_timeout_ms;
    let acknowledged = integer(conn.request_within(&request.into_frame(), within_ms).await?)?;
    if acknowledged < i64::from(needed) {
        return Err(LockError::NotReplicated { acknowledged, needed });
    }
    Ok(())
}

/// Releases the key on one node; `Ok(true)` when a key was deleted, which for tiers 1–3
/// may have been another client's: that is their defect. `shared` holds the release's
/// script request once a node built it.
pub(crate) async fn release_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    algorithm: Algorithm,
    key: &[u8],
    token: &str,
    steps: &dyn Steps,
    shared: &AttemptRequest,
) -> Result<bool, LockError> {
    let del = Del {
        keys: vec![key.to_vec()],
    };
    match algorithm {
        Algorithm::Setnx | Algorithm::SetnxExpire | Algorithm::SetNxPx => {
            Ok(integer(conn.request(&del.into_frame()).await?)? == 1)
        }
        Algorithm::UniqueGetDel => {
            let get = Get { key: key.to_vec() };
            match conn.request(&get.into_frame()).await? {
                Frame::BulkString(value) if value == token.as_bytes() => {
                    steps.reached(Step::AfterGet).await;
                    Ok(integer(conn.request(&del.into_frame()).await?)? == 1)
                }
                Frame::BulkString(_) | Frame::Null => Ok(false),
                other => Err(LockError::UnexpectedReply(other)),
            }
        }
        Algorithm::LuaRelease | Algorithm::Redlock => {
            let release =
                shared.get_or_encode(|| Eval::encode(scripts::RELEASE, &[key], &[token.as_bytes()]));
            Ok(integer(conn.request(release).await?)? == 1)
        }
    }
}

/// Sets the key's TTL to `ttl_ms` again if it still holds `token`, in one atomic script
/// whose treatment of a missing key or a zero TTL `options.extend` chooses; then WAITs as
/// an acquire does.
pub(crate) async fn extend_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    key: &[u8],
    token: &str,
) -> Result<bool, LockError> {
    let replication = plan_wait(conn, options).await?;
    let script = match options.extend {
        ExtendMode::CompareAndExpire => scripts::EXTEND,
        ExtendMode::Reacquire => scripts::REACQUIRE,
        ExtendMode::SetIfMissing => scripts::EXTEND_OR_SET,
    };
    let ttl = options.ttl_ms.to_string();
    let extended = eval(conn, script, key, &[token.as_bytes(), ttl.as_bytes()]).await? == 1;
    if extended {
        confirm_replicated(conn, options, replication).await?;
    }
    Ok(extended)
}

/// The next fencing token from the counter `key` on this node.
pub(crate) async fn next_fence<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    key: &[u8],
) -> Result<u64, LockError> {
    let incr = Incr { key: key.to_vec() };
    Ok(integer(conn.request(&incr.into_frame()).await?)? as u64)
}

async fn eval<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    script: &str,
    key: &[u8],
    args: &[&[u8]],
) -> Result<i64, LockError> {
    integer(conn.request(&Eval::encode(script, &[key], args)).await?)
}

fn integer(reply: Frame) -> Result<i64, LockError> {
    match reply {
        Frame::Integer(n) => Ok(n),
        other => Err(LockError::UnexpectedReply(other)),
    }
}
