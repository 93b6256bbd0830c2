//! The profiles that speak their library's own protocol, in simulation: the keys and
//! replies the library's scripts leave on a node, and how its waiters wake.

use crate::support;

use std::net::SocketAddr;

use locksim::client::{Algorithm, Conn, LockOptions, Profile, Retry};
use locksim::platform::Clock;
use locksim::redis::Frame;
use locksim::redis::request::build as request;
use locksim::world::clock::SimClock;
use locksim::world::net::SimConnector;
use support::sim::{StopAt, client_node, clock, lock, now_ms, simulate, start_redis};

const NAME: &[u8] = b"jobs";

/// A raw connection to `redis`, to look at what a library left there.
fn inspector(redis: SocketAddr) -> Conn<SimConnector, SimClock> {
    Conn::new(SimConnector::to(redis), clock(), 1000)
}

async fn ask(conn: &mut Conn<SimConnector, SimClock>, words: &[&[u8]]) -> Frame {
    conn.request(&request(words.iter().map(|w| w.to_vec())))
        .await
        .expect("the node answers")
}

fn python_redis_lock(ttl_ms: u64) -> LockOptions {
    LockOptions::new(Algorithm::LuaRelease, ttl_ms).profile(Profile::PythonRedisLock)
}

/// Client 1 takes the lock and gives it back after `hold_ms` (or, with `crash`, dies
/// holding it); client 2 starts waiting 100 ms in. When client 2 got the lock.
fn python_waiter_granted_at(ttl_ms: u64, hold_ms: u64, crash: bool) -> u64 {
    simulate(3, || async move {
        let redis = start_redis(1);
        client_node(1).spawn(async move {
            let mut holder = lock(&[redis], python_redis_lock(ttl_ms), 1, StopAt::nowhere());
            let lease = holder.acquire(NAME).await.expect("the free lock is granted");
            clock().sleep_ms(hold_ms).await;
            if crash {
                std::future::pending::<()>().await;
            }
            assert!(holder.release(&lease).await.expect("released"));
        });
        clock().sleep_ms(100).await;
        let waiter = client_node(2).spawn(async move {
            let mut waiter = lock(&[redis], python_redis_lock(ttl_ms), 2, StopAt::nowhere());
            waiter.acquire(NAME).await.expect("granted in the end");
            now_ms()
        });
        waiter.await.unwrap()
    })
}

#[test]
fn python_redis_lock_waiter_wakes_on_the_release_signal_not_after_the_ttl() {
    let at = python_waiter_granted_at(10_000, 500, false);
    assert!(
        (500..600).contains(&at),
        "granted at {at} ms, the release was at ~500 ms"
    );
}

#[test]
fn python_redis_lock_waiter_sleeps_out_its_blpop_when_the_lock_expires_unreleased() {
    // The holder dies: its key expires at ~3 s and no signal is pushed; the waiter, blocked
    // on BLPOP for `expire` (3 s) since ~100 ms, tries again only when that times out.
    let at = python_waiter_granted_at(3_000, 500, true);
    assert!((3_000..3_200).contains(&at), "granted at {at} ms");
}

#[test]
fn python_redis_lock_stores_its_id_under_lock_name_and_signals_on_release() {
    let (during, after) = simulate(5, || async move {
        let redis = start_redis(1);
        let client = client_node(1).spawn(async move {
            let options = python_redis_lock(5_000).retry(Retry {
                count: 0,
                delay_ms: 0,
                jitter_ms: 0,
            });
            let mut holder = lock(&[redis], options, 1, StopAt::nowhere());
            let mut node = inspector(redis);
            let lease = holder.acquire(NAME).await.expect("granted");
            let during = (
                ask(&mut node, &[b"GET", b"lock:jobs"]).await,
                ask(&mut node, &[b"TTL", b"lock:jobs"]).await,
                lease.token.clone(),
            );
            holder.release(&lease).await.expect("released");
            let after = (
                ask(&mut node, &[b"EXISTS", b"lock:jobs"]).await,
                ask(&mut node, &[b"LRANGE", b"lock-signal:jobs", b"0", b"-1"]).await,
                ask(&mut node, &[b"PTTL", b"lock-signal:jobs"]).await,
            );
            (during, after)
        });
        client.await.unwrap()
    });
    let (value, ttl, id) = during;
    assert_eq!(value, Frame::BulkString(id.clone().into_bytes()));
    assert_eq!(id.len(), 24, "b64encode(urandom(18)): {id}");
    assert_eq!(ttl, Frame::Integer(5), "SET NX EX 5");
    let (exists, signal, signal_ttl) = after;
    assert_eq!(exists, Frame::Integer(0));
    assert_eq!(signal, Frame::Array(vec![Frame::BulkString(b"1".to_vec())]));
    assert!(
        matches!(signal_ttl, Frame::Integer(ms) if (900..=1000).contains(&ms)),
        "signal_expire 1000 ms: {signal_ttl:?}"
    );
}

fn redisson(ttl_ms: u64) -> LockOptions {
    LockOptions::new(Algorithm::LuaRelease, ttl_ms).profile(Profile::Redisson)
}

#[test]
fn redisson_counts_reentrant_holds_in_its_hash_and_frees_the_lock_at_zero() {
    let seen = simulate(7, || async move {
        let redis = start_redis(1);
        let client = client_node(1).spawn(async move {
            let mut holder = lock(&[redis], redisson(30_000), 1, StopAt::nowhere());
            let mut rival = lock(&[redis], redisson(30_000), 2, StopAt::nowhere());
            let mut node = inspector(redis);
            let first = holder.acquire(NAME).await.expect("granted");
            let again = holder.acquire(NAME).await.expect("the same thread re-enters");
            let field = first.token.clone();
            let holds = ask(&mut node, &[b"HGET", NAME, field.as_bytes()]).await;
            let once_released = holder.release(&again).await.expect("one hold given back");
            let rival_while_one_hold = rival.try_acquire(NAME).await.expect("answered").is_some();
            let holds_left = ask(&mut node, &[b"HGET", NAME, field.as_bytes()]).await;
            holder.release(&first).await.expect("the last hold given back");
            let gone = ask(&mut node, &[b"EXISTS", NAME]).await;
            let rival_after = rival.try_acquire(NAME).await.expect("answered").is_some();
            (
                field,
                again.token,
                holds,
                once_released,
                rival_while_one_hold,
                holds_left,
                gone,
                rival_after,
            )
        });
        client.await.unwrap()
    });
    let (field, again, holds, once_released, rival_while_one_hold, holds_left, gone, rival_after) = seen;
    assert!(field.ends_with(":1"), "uuid:threadId: {field}");
    assert_eq!(field.len(), 36 + 2, "a UUID and the thread id: {field}");
    assert_eq!(again, field, "re-entry uses the same field");
    assert_eq!(holds, Frame::BulkString(b"2".to_vec()));
    assert!(once_released);
    assert!(!rival_while_one_hold, "one hold is left: the lock is still held");
    assert_eq!(holds_left, Frame::BulkString(b"1".to_vec()));
    assert_eq!(gone, Frame::Integer(0), "the hash is deleted at zero holds");
    assert!(rival_after, "the lock is free once every hold is given back");
}

#[test]
fn redisson_waiter_wakes_on_the_unlock_message_long_before_the_pttl() {
    let (granted_at, published_to) = simulate(9, || async move {
        let redis = start_redis(1);
        client_node(1).spawn(async move {
            let mut holder = lock(&[redis], redisson(30_000), 1, StopAt::nowhere());
            let lease = holder.acquire(NAME).await.expect("granted");
            clock().sleep_ms(500).await;
            assert!(holder.release(&lease).await.expect("released"));
        });
        clock().sleep_ms(100).await;
        let waiter = client_node(2).spawn(async move {
            let mut waiter = lock(&[redis], redisson(30_000), 2, StopAt::nowhere());
            let mut node = inspector(redis);
            clock().sleep_ms(200).await;
            let subscribers = async {
                clock().sleep_ms(100).await;
                ask(
                    &mut node,
                    &[b"PUBSUB", b"NUMSUB", b"redisson_lock__channel:{jobs}"],
                )
                .await
            };
            let (granted, subscribers) = futures::join!(waiter.acquire(NAME), subscribers);
            granted.expect("granted in the end");
            (now_ms(), subscribers)
        });
        waiter.await.unwrap()
    });
    assert!(
        (500..600).contains(&granted_at),
        "granted at {granted_at} ms; the unlock was at ~500 ms and the PTTL ~30 s"
    );
    assert_eq!(
        published_to,
        Frame::Array(vec![
            Frame::BulkString(b"redisson_lock__channel:{jobs}".to_vec()),
            Frame::Integer(1)
        ]),
        "the waiter listens on the lock's channel"
    );
}

/// node-redlock releases a lock whose keys expired on its three masters: how long the
/// release took (ms) and what it said, with and without its release retries.
fn node_redlock_late_release(release_retries: bool) -> (u64, bool) {
    simulate(5, || async move {
        let masters = [start_redis(1), start_redis(2), start_redis(3)];
        let client = client_node(1).spawn(async move {
            let mut options = LockOptions::new(Algorithm::Redlock, 300).profile(Profile::NodeRedlock);
            options.release_retries = release_retries;
            let mut holder = lock(&masters, options, 1, StopAt::nowhere());
            let lease = holder.acquire(NAME).await.expect("the free lock is granted");
            clock().sleep_ms(1_000).await;
            let started = now_ms();
            let released = holder.release(&lease).await.expect("every master answers");
            (now_ms() - started, released)
        });
        client.await.unwrap()
    })
}

/// node-redlock's `release` runs `_execute`, as its acquire does: every master votes
/// against a release of an expired key, so it is sent again after each of the 10 waits
/// of 100–299 ms before it gives up; without the retries it gives up at once.
#[test]
fn node_redlock_retries_a_release_a_quorum_voted_against() {
    let (took_ms, released) = node_redlock_late_release(true);
    assert!(!released, "the keys had expired");
    assert!(
        (1_000..3_500).contains(&took_ms),
        "eleven releases, ten waits of 100-299 ms between them: {took_ms} ms"
    );
    let (took_ms, released) = node_redlock_late_release(false);
    assert!(!released);
    assert!(took_ms < 100, "one release: {took_ms} ms");
}
