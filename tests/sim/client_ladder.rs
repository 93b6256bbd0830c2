//! The ladder in simulation: each tier's defect, shown under the crash or pause between
//! two commands that exposes it, and the next tier surviving the same schedule.

use crate::support;

use locksim::client::{Algorithm, Lease, LockOptions, Retry, Step};
use locksim::platform::Clock;
use support::sim::{StopAt, client_node, clock, lock, now_ms, simulate, start_redis};

const KEY: &[u8] = b"ladder:lock";
const TTL_MS: u64 = 1000;
/// Long enough that a lock with a TTL has certainly come free again.
const PATIENCE_MS: u64 = 30 * TTL_MS;

fn options(algorithm: Algorithm) -> LockOptions {
    LockOptions::new(algorithm, TTL_MS).retry(Retry {
        count: 0,
        delay_ms: 0,
        jitter_ms: 0,
    })
}

/// A client that keeps trying every 50 ms for `PATIENCE_MS`.
fn patient(algorithm: Algorithm) -> LockOptions {
    options(algorithm).retry(Retry {
        count: (PATIENCE_MS / 50) as u32,
        delay_ms: 50,
        jitter_ms: 0,
    })
}

/// Client 1 acquires and then dies at `crash`; returns when (if ever, within
/// `PATIENCE_MS`) client 2 gets the lock.
fn acquired_after_crash(algorithm: Algorithm, crash: Step) -> Option<u64> {
    simulate(1, || async move {
        let redis = start_redis(1);
        client_node(1).spawn(async move {
            let mut a = lock(&[redis], options(algorithm), 1, StopAt::crash(crash));
            let lease = a.acquire(KEY).await.expect("the free lock is granted");
            let _ = a.release(&lease).await;
        });
        clock().sleep_ms(100).await;
        let b = client_node(2).spawn(async move {
            let mut b = lock(&[redis], patient(algorithm), 2, StopAt::nowhere());
            b.acquire(KEY).await.ok().map(|_| now_ms())
        });
        b.await.unwrap()
    })
}

#[test]
fn setnx_holder_dying_before_release_locks_everyone_out_for_good() {
    assert_eq!(acquired_after_crash(Algorithm::Setnx, Step::BeforeRelease), None);
}

#[test]
fn setnx_expire_dying_between_setnx_and_expire_locks_everyone_out_for_good() {
    assert_eq!(
        acquired_after_crash(Algorithm::SetnxExpire, Step::AfterSetnx),
        None
    );
    // Dying after EXPIRE went out is survived: the key expires.
    let at = acquired_after_crash(Algorithm::SetnxExpire, Step::BeforeRelease).expect("expires");
    assert!(at <= 2 * TTL_MS, "acquired at {at} ms");
}

#[test]
fn set_nx_px_survives_any_crash_of_the_holder() {
    for step in [Step::AfterAcquire, Step::BeforeRelease] {
        let at = acquired_after_crash(Algorithm::SetNxPx, step).expect("the key expires");
        assert!(at <= 2 * TTL_MS, "{step}: acquired at {at} ms");
    }
}

/// What happened when client 1's release was held up at `pause` past its TTL.
struct LateRelease {
    /// Client 1's release said it deleted the key.
    deleted: bool,
    /// Client 3 was granted the lock while client 2's lease was still valid.
    third_in_while_second_holds: bool,
}

/// Client 1 acquires and releases at once, but freezes at `pause` for 1.5 TTL. Client 2
/// takes the expired lock and holds it; after client 1's release, client 3 tries.
fn late_release(algorithm: Algorithm, pause: Step) -> LateRelease {
    simulate(2, || async move {
        let redis = start_redis(1);
        let a = client_node(1).spawn(async move {
            let mut a = lock(
                &[redis],
                options(algorithm),
                1,
                StopAt::pause(pause, TTL_MS * 3 / 2),
            );
            let lease = a.acquire(KEY).await.expect("the free lock is granted");
            a.release(&lease).await.expect("the release is answered")
        });
        clock().sleep_ms(50).await;
        let b = client_node(2).spawn(async move {
            let mut b = lock(&[redis], patient(algorithm), 2, StopAt::nowhere());
            b.acquire(KEY).await.expect("the expired lock is granted")
        });
        let second: Lease = b.await.unwrap();
        let deleted = a.await.unwrap();
        let c = client_node(3).spawn(async move {
            let mut c = lock(&[redis], options(algorithm), 3, StopAt::nowhere());
            c.try_acquire(KEY).await.unwrap().map(|_| now_ms())
        });
        let third_at = c.await.unwrap();
        LateRelease {
            deleted,
            third_in_while_second_holds: third_at.is_some_and(|at| at < second.valid_until_ms),
        }
    })
}

#[test]
fn set_nx_px_late_release_deletes_the_next_holders_lock() {
    let outcome = late_release(Algorithm::SetNxPx, Step::BeforeRelease);
    assert!(outcome.deleted, "DEL removes whatever key is there");
    assert!(outcome.third_in_while_second_holds);
}

#[test]
fn unique_get_del_late_release_is_harmless_but_a_pause_between_get_and_del_is_not() {
    let outcome = late_release(Algorithm::UniqueGetDel, Step::BeforeRelease);
    assert!(!outcome.deleted, "GET sees another client's value");
    assert!(!outcome.third_in_while_second_holds);
    let outcome = late_release(Algorithm::UniqueGetDel, Step::AfterGet);
    assert!(
        outcome.deleted,
        "the DEL after a stale GET removes the next holder's key"
    );
    assert!(outcome.third_in_while_second_holds);
}

#[test]
fn lua_release_late_release_leaves_the_next_holder_alone() {
    let outcome = late_release(Algorithm::LuaRelease, Step::BeforeRelease);
    assert!(!outcome.deleted, "the script compares and deletes atomically");
    assert!(!outcome.third_in_while_second_holds);
}

#[test]
fn lua_release_admits_a_second_holder_when_the_work_outlives_the_ttl() {
    let (first_released_at, second_acquired_at) = simulate(3, || async {
        let redis = start_redis(1);
        let a = client_node(1).spawn(async move {
            let mut a = lock(&[redis], options(Algorithm::LuaRelease), 1, StopAt::nowhere());
            let lease = a.acquire(KEY).await.expect("granted");
            clock().sleep_ms(TTL_MS * 2).await; // the work (or a GC pause) outlives the TTL
            let released_at = now_ms();
            assert!(
                !a.release(&lease).await.unwrap(),
                "the key expired under the holder"
            );
            released_at
        });
        clock().sleep_ms(50).await;
        let b = client_node(2).spawn(async move {
            let mut b = lock(&[redis], patient(Algorithm::LuaRelease), 2, StopAt::nowhere());
            b.acquire(KEY)
                .await
                .map(|_| now_ms())
                .expect("granted after the TTL")
        });
        (a.await.unwrap(), b.await.unwrap())
    });
    assert!(
        second_acquired_at < first_released_at,
        "client 2 acquired at {second_acquired_at} ms, while client 1 worked until {first_released_at} ms"
    );
}
