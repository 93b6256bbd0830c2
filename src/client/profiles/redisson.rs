//! Redisson `RLock` (3.x) as it speaks to Redis (`RedissonLock.java` and
//! `RedissonBaseLock.java`; the scripts are 3.26.1's).
//!
//! The lock is a hash named after the lock whose one field, `<client uuid>:<thread id>`,
//! counts the holder's holds (reentrancy). Acquire is one script: when the hash is absent or
//! already has our field, `HINCRBY` it and `PEXPIRE` the lease, answering nil; otherwise
//! answer the hash's `PTTL`, which bounds how long a refused client waits before it tries
//! again. Unlock decrements the count, and at zero deletes the hash and `PUBLISH`es `0` on
//! `redisson_lock__channel:{<name>}`; an unlock latch key answers a retried unlock as the
//! first one was answered. A refused client subscribes to that channel on a connection of
//! its own, tries once more, and then waits for an unlock message, at most the `PTTL` it was
//! told, before each further try ([`Subscription`]); without the subscription it waits the
//! `PTTL` out, Redisson's fallback when the message is lost. The watchdog renews through the
//! hash: `PEXPIRE` only while our field is there. Scripts are sent with `EVAL` (EVALSHA became the default only in 3.46).
//! Around each acquire and renewal the WAIT rule of the options applies
//! (`checkLockSyncedSlaves`: see [`WaitFor::Connected`](crate::client::WaitFor::Connected)).

use crate::client::conn::Conn;
use crate::client::error::LockError;
use crate::client::ladder::{confirm_replicated, plan_wait};
use crate::client::observe::{Tap, Traffic};
use crate::client::options::LockOptions;
use crate::client::profiles::Grant;
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::cmd::{Del, Eval};
use crate::redis::connection::{Connection, ConnectionError};
use crate::redis::request::build as request;

/// `RedissonLock.tryLockInnerAsync`: KEYS = \[name\], ARGV = \[leaseMs, uuid:threadId\].
pub const ACQUIRE: &str = "if ((redis.call('exists', KEYS[1]) == 0) \
or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then \
redis.call('hincrby', KEYS[1], ARGV[2], 1); \
redis.call('pexpire', KEYS[1], ARGV[1]); \
return nil; \
end; \
return redis.call('pttl', KEYS[1]);";

/// `RedissonLock.unlockInnerAsync`: KEYS = [name, channel, latch], ARGV = [unlock message,
/// leaseMs, uuid:threadId, publish command, latch lifetime ms]. nil when the field is not
/// ours (`IllegalMonitorStateException`), 0 when holds remain, 1 when the lock was freed.
pub const UNLOCK: &str = "local val = redis.call('get', KEYS[3]); \
if val ~= false then \
return tonumber(val);\
end; \
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then \
return nil;\
end; \
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
if (counter > 0) then \
redis.call('pexpire', KEYS[1], ARGV[2]); \
redis.call('set', KEYS[3], 0, 'px', ARGV[5]); \
return 0; \
else \
redis.call('del', KEYS[1]); \
redis.call(ARGV[4], KEYS[2], ARGV[1]); \
redis.call('set', KEYS[3], 1, 'px', ARGV[5]); \
return 1; \
end; ";

/// `RedissonBaseLock.renewExpirationAsync`: KEYS = \[name\], ARGV = \[leaseMs, uuid:threadId\].
pub const RENEW: &str = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
redis.call('pexpire', KEYS[1], ARGV[1]); \
return 1; \
end; \
return 0;";

/// `LockPubSub.UNLOCK_MESSAGE`: what an unlock publishes.
pub const UNLOCK_MESSAGE: &[u8] = b"0";

/// How long the unlock latch lives: `(timeout + retryInterval) × retryAttempts` with
/// Redisson's defaults (3000 ms, 1500 ms, 3).
pub const LATCH_LIFETIME_MS: u64 = (3000 + 1500) * 3;

/// Random bytes in an unlock request's id (`ServiceManager.generateId`).
pub const REQUEST_ID_BYTES: usize = 16;

/// The thread id in the hash field: the workload runs on one thread per client.
pub const THREAD_ID: u64 = 1;

/// The channel waiters listen on for the lock `name`.
pub fn channel(name: &[u8]) -> Vec<u8> {
    [b"redisson_lock__channel:{", name, b"}"].concat()
}

/// The unlock latch of one unlock request.
pub fn latch(name: &[u8], request_id: &str) -> Vec<u8> {
    [b"redisson_unlock_latch:{", name, b"}:", request_id.as_bytes()].concat()
}

/// The hash field of client `uuid`'s workload thread: the value its holds are counted under.
pub fn field(uuid: &str) -> String {
    format!("{uuid}:{THREAD_ID}")
}

/// A client's subscription to one lock's channel (`PublishSubscribe.subscribe`), on a
/// connection of its own, as Redisson keeps pub/sub apart from commands.
pub(crate) struct Subscription<S> {
    connection: Connection<S>,
    channel: Vec<u8>,
    /// Where the node's traffic is reported, this connection's included.
    tap: Option<Tap>,
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Subscription<S> {
    /// `SUBSCRIBE redisson_lock__channel:{<name>}` on a new connection to `conn`'s node,
    /// once the node confirmed it.
    pub(crate) async fn open<C: Connect<Stream = S>, K: Clock>(
        conn: &Conn<C, K>,
        name: &[u8],
    ) -> Result<Self, ConnectionError> {
        let connection = conn.open_another().await?;
        let mut subscription = Subscription {
            connection,
            channel: channel(name),
            tap: conn.tap().cloned(),
        };
        let subscribe = request([b"SUBSCRIBE".to_vec(), subscription.channel.clone()]);
        subscription.write(&subscribe).await?;
        subscription.read().await?;
        Ok(subscription)
    }

    async fn write(&mut self, frame: &Frame) -> Result<(), ConnectionError> {
        self.report(Traffic::Sent(frame));
        Ok(self.connection.write_frame(frame).await?)
    }

    async fn read(&mut self) -> Result<Frame, ConnectionError> {
        let frame = self
            .connection
            .read_frame()
            .await?
            .ok_or(ConnectionError::Closed)?;
        self.report(Traffic::Received(&frame));
        Ok(frame)
    }

    fn report(&self, traffic: Traffic<'_>) {
        if let Some(tap) = &self.tap {
            tap.report(traffic);
        }
    }

    /// Waits for the next message on the channel (`LockPubSub.onMessage`: an unlock).
    pub(crate) async fn unlocked(&mut self) -> Result<(), ConnectionError> {
        loop {
            if let Frame::Array(parts) = self.read().await?
                && parts.first() == Some(&Frame::BulkString(b"message".to_vec()))
            {
                return Ok(());
            }
        }
    }

    /// `UNSUBSCRIBE` once the waiting is over; the connection goes with it.
    pub(crate) async fn close(mut self) {
        let unsubscribe = request([b"UNSUBSCRIBE".to_vec(), self.channel.clone()]);
        let _ = self.write(&unsubscribe).await;
    }
}

/// One acquire: `Granted`, or `Held` for the `PTTL` the script answered.
pub(crate) async fn acquire_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    field: &str,
) -> Result<Grant, LockError> {
    let replication = plan_wait(conn, options).await?;
    let lease = options.ttl_ms.to_string();
    match eval(conn, ACQUIRE, &[name], &[lease.as_bytes(), field.as_bytes()]).await? {
        Frame::Null => {
            confirm_replicated(conn, options, replication).await?;
            Ok(Grant::Granted)
        }
        Frame::Integer(pttl) => Ok(Grant::Held {
            for_ms: u64::try_from(pttl).ok(),
        }),
        other => Err(LockError::UnexpectedReply(other)),
    }
}

/// One unlock, then the client's `DEL` of the latch: `Ok(false)` when our field was not in
/// the hash (the lease expired, or another client holds the lock).
pub(crate) async fn release_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    field: &str,
    request_id: &str,
) -> Result<bool, LockError> {
    let latch = latch(name, request_id);
    let channel = channel(name);
    let (lease, lifetime) = (options.ttl_ms.to_string(), LATCH_LIFETIME_MS.to_string());
    let args: [&[u8]; 5] = [
        UNLOCK_MESSAGE,
        lease.as_bytes(),
        field.as_bytes(),
        b"publish",
        lifetime.as_bytes(),
    ];
    let owned = match eval(conn, UNLOCK, &[name, &channel, &latch], &args).await? {
        Frame::Integer(0 | 1) => true,
        Frame::Null => false,
        other => return Err(LockError::UnexpectedReply(other)),
    };
    let del = Del { keys: vec![latch] };
    conn.request(&del.into_frame()).await?;
    Ok(owned)
}

/// One watchdog renewal: `PEXPIRE` the lease while our field is in the hash.
pub(crate) async fn extend_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    field: &str,
) -> Result<bool, LockError> {
    let replication = plan_wait(conn, options).await?;
    let lease = options.ttl_ms.to_string();
    let renewed = match eval(conn, RENEW, &[name], &[lease.as_bytes(), field.as_bytes()]).await? {
        Frame::Integer(n) => n == 1,
        other => return Err(LockError::UnexpectedReply(other)),
    };
    if renewed {
        confirm_replicated(conn, options, replication).await?;
    }
    Ok(renewed)
}

async fn eval<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    script: &str,
    keys: &[&[u8]],
    args: &[&[u8]],
) -> Result<Frame, LockError> {
    Ok(conn.request(&Eval::encode(script, keys, args)).await?)
}
