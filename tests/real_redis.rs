//! The lock client the simulator runs, run unchanged on tokio TCP against a real
//! redis-server: the seam in `platform.rs` is real.

mod support;

use locksim::client::{Algorithm, Lock, LockOptions, Retry};
use locksim::real::{HostClock, TcpConnector};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use support::RedisServer;

fn options(ttl_ms: u64) -> LockOptions {
    LockOptions::new(Algorithm::LuaRelease, ttl_ms).retry(Retry {
        count: 0,
        delay_ms: 10,
        jitter_ms: 10,
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_simulated_client_locks_and_releases_on_real_redis() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let clock = HostClock::new();
        let mut a = Lock::new(
            vec![TcpConnector(server.addr)],
            clock.clone(),
            ChaCha8Rng::seed_from_u64(1),
            options(5000),
        );
        let mut b = Lock::new(
            vec![TcpConnector(server.addr)],
            clock.clone(),
            ChaCha8Rng::seed_from_u64(2),
            options(5000),
        );
        let lease = a
            .try_acquire(b"real:lock")
            .await
            .unwrap()
            .expect("a free lock is granted");
        assert!(
            b.try_acquire(b"real:lock").await.unwrap().is_none(),
            "a held lock is refused"
        );
        // The real server runs our release script: b's token does not match, a's does.
        let foreign = locksim::client::Lease {
            token: "not-ours".into(),
            ..lease.clone()
        };
        assert!(!b.release(&foreign).await.unwrap());
        assert!(a.release(&lease).await.unwrap());
        assert!(
            b.try_acquire(b"real:lock").await.unwrap().is_some(),
            "a released lock is granted again"
        );
    });
}

#[test]
fn a_real_key_expires_and_the_late_release_reports_it() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let clock = HostClock::new();
        let mut a = Lock::new(
            vec![TcpConnector(server.addr)],
            clock.clone(),
            ChaCha8Rng::seed_from_u64(3),
            options(100),
        );
        let mut b = Lock::new(
            vec![TcpConnector(server.addr)],
            clock.clone(),
            ChaCha8Rng::seed_from_u64(4),
            options(5000),
        );
        let lease = a.try_acquire(b"real:ttl").await.unwrap().expect("granted");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        assert!(
            b.try_acquire(b"real:ttl").await.unwrap().is_some(),
            "the expired lock is granted to b"
        );
        assert!(
            !a.release(&lease).await.unwrap(),
            "a's late release must not delete b's lock"
        );
    });
}
