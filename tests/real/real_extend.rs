//! The client's scripts beyond acquire and release — the three ways to extend a lock, and
//! node-redlock's fixed acquire — run against a real redis-server and against the fake
//! node on real TCP, with the same assertions: their edge cases (a lock without TTL, a key
//! that has gone, a key holding our own value) come out the same on both.

use crate::support;

use std::net::SocketAddr;

use locksim::client::scripts;
use locksim::client::{Algorithm, Conn, ExtendMode, Lease, Lock, LockError, LockOptions, Retry};
use locksim::real::{HostClock, TcpConnector};
use locksim::redis::Frame;
use locksim::redis::cmd::{Del, Eval, Get};
use rand_chacha::ChaCha8Rng;
use support::{FakeServer, RedisServer, real_lock, runtime};

/// Tier 5 on one node, one attempt, extending as `mode` says.
fn client(
    addr: SocketAddr,
    seed: u64,
    ttl_ms: u64,
    mode: ExtendMode,
) -> Lock<TcpConnector, HostClock, ChaCha8Rng> {
    let mut options = LockOptions::new(Algorithm::LuaRelease, ttl_ms).retry(Retry {
        count: 0,
        delay_ms: 0,
        jitter_ms: 0,
    });
    options.extend = mode;
    real_lock(&[addr], seed, options)
}

/// What the server holds under `key`, read on a connection of its own.
async fn stored(addr: SocketAddr, key: &[u8]) -> Option<Vec<u8>> {
    let mut admin = Conn::new(TcpConnector(addr), HostClock::new(), 1000);
    match admin
        .request(&Get { key: key.to_vec() }.into_frame())
        .await
        .unwrap()
    {
        Frame::BulkString(value) => Some(value),
        Frame::Null => None,
        other => panic!("GET answered {other:?}"),
    }
}

async fn delete(addr: SocketAddr, key: &[u8]) {
    let mut admin = Conn::new(TcpConnector(addr), HostClock::new(), 1000);
    let del = Del {
        keys: vec![key.to_vec()],
    };
    admin.request(&del.into_frame()).await.unwrap();
}

/// A lock without TTL, extended in `mode`: does the extend say yes, and is the key still
/// there afterwards?
async fn extend_a_lock_without_ttl(addr: SocketAddr, key: &[u8], mode: ExtendMode) -> (bool, bool) {
    let mut holder = client(addr, 1, 0, mode);
    let lease = holder
        .try_acquire(key)
        .await
        .unwrap()
        .expect("a free lock is granted");
    assert_eq!(stored(addr, key).await, Some(lease.token.clone().into_bytes()));
    let extended = holder.extend(&lease).await.is_ok();
    let kept = stored(addr, key).await.is_some();
    delete(addr, key).await;
    (extended, kept)
}

/// A lock whose key vanished (expired, taken and released by another client), extended in
/// `mode`: the extend's verdict, and the value now stored.
async fn extend_a_vanished_lock(
    addr: SocketAddr,
    key: &[u8],
    mode: ExtendMode,
) -> (Result<Lease, LockError>, Option<Vec<u8>>) {
    let mut holder = client(addr, 2, 5000, mode);
    let lease = holder
        .try_acquire(key)
        .await
        .unwrap()
        .expect("a free lock is granted");
    delete(addr, key).await;
    let extended = holder.extend(&lease).await;
    let value = stored(addr, key).await;
    delete(addr, key).await;
    (extended, value)
}

/// Every assertion, against the server at `addr`.
async fn extend_modes_behave_as_documented(addr: SocketAddr) {
    // redis-py#4279: reacquire() on a lock without TTL sends PEXPIRE key 0, which deletes
    // the key, and still reports success.
    assert_eq!(
        extend_a_lock_without_ttl(addr, b"extend:reacquire", ExtendMode::Reacquire).await,
        (true, false),
        "reacquire deletes a lock without TTL and says it renewed it"
    );
    assert_eq!(
        extend_a_lock_without_ttl(addr, b"extend:compare", ExtendMode::CompareAndExpire).await,
        (true, true),
        "compare-and-expire only checks a lock without TTL"
    );
    // A key that has gone: compare-and-expire reports the loss, set-if-missing takes the
    // key again and reports a renewal (redis-semaphore#175, redsync WithSetNXOnExtend).
    let (extended, value) = extend_a_vanished_lock(addr, b"extend:gone", ExtendMode::CompareAndExpire).await;
    assert!(
        matches!(extended, Err(LockError::LockLost { .. })),
        "{extended:?}"
    );
    assert_eq!(value, None);
    let (extended, value) = extend_a_vanished_lock(addr, b"extend:gone", ExtendMode::SetIfMissing).await;
    let lease = extended.expect("set-if-missing reports a renewal");
    assert_eq!(value, Some(lease.token.into_bytes()), "and the key is ours again");
    // But set-if-missing never takes a key someone else holds.
    let mut holder = client(addr, 3, 5000, ExtendMode::SetIfMissing);
    let mut other = client(addr, 4, 5000, ExtendMode::CompareAndExpire);
    let lease = holder.try_acquire(b"extend:taken").await.unwrap().unwrap();
    delete(addr, b"extend:taken").await;
    let theirs = other.try_acquire(b"extend:taken").await.unwrap().unwrap();
    assert!(matches!(
        holder.extend(&lease).await,
        Err(LockError::LockLost { .. })
    ));
    assert_eq!(
        stored(addr, b"extend:taken").await,
        Some(theirs.token.into_bytes())
    );
}

/// node-redlock PR #369's acquire: takes a free key or one holding our own value, never
/// another client's.
async fn acquire_or_refresh_takes_only_a_free_or_own_key(addr: SocketAddr) {
    let mut conn = Conn::new(TcpConnector(addr), HostClock::new(), 1000);
    let mut acquire = async |value: &str| {
        let eval = Eval {
            script: scripts::ACQUIRE_OR_REFRESH.to_string(),
            keys: vec![b"acquire:own".to_vec()],
            args: vec![value.as_bytes().to_vec(), b"5000".to_vec()],
        };
        conn.request(&eval.into_frame()).await.unwrap()
    };
    assert_eq!(acquire("ours").await, Frame::Integer(1), "a free key");
    assert_eq!(acquire("ours").await, Frame::Integer(1), "our own key, again");
    assert_eq!(acquire("theirs").await, Frame::Integer(0), "not another value's");
    assert_eq!(stored(addr, b"acquire:own").await, Some(b"ours".to_vec()));
    delete(addr, b"acquire:own").await;
}

#[test]
fn acquire_or_refresh_on_real_redis_and_the_fake_node() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    runtime().block_on(async {
        acquire_or_refresh_takes_only_a_free_or_own_key(real.addr).await;
        acquire_or_refresh_takes_only_a_free_or_own_key(fake.addr).await;
    });
}

#[test]
fn extend_modes_on_real_redis() {
    let server = RedisServer::start(&[]);
    runtime().block_on(extend_modes_behave_as_documented(server.addr));
}

#[test]
fn extend_modes_on_the_fake_node() {
    let server = FakeServer::start();
    runtime().block_on(extend_modes_behave_as_documented(server.addr));
}
