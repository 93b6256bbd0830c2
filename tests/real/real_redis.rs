//! The lock client the simulator runs, run unchanged on tokio TCP against a real
//! redis-server: the seam in `platform.rs` is real.

use crate::support;

use std::time::{Duration, Instant};

use locksim::client::{
    Algorithm, Conn, Lock, LockError, LockOptions, RequestError, Retry, WaitFor, WaitReplicas,
};
use locksim::real::{HostClock, TcpConnector};
use locksim::redis::cmd::Del;
use rand_chacha::ChaCha8Rng;
use support::{RedisServer, real_lock, runtime, until_key_exists, wait_for_link, wait_for_stream};

/// Tier 5 on one node, one attempt.
fn options(ttl_ms: u64) -> LockOptions {
    LockOptions::new(Algorithm::LuaRelease, ttl_ms).retry(Retry {
        count: 0,
        delay_ms: 10,
        jitter_ms: 10,
    })
}

/// A lock client of one real server, its tokens and jitter seeded by `seed`.
fn client(
    addr: std::net::SocketAddr,
    seed: u64,
    options: LockOptions,
) -> Lock<TcpConnector, HostClock, ChaCha8Rng> {
    real_lock(&[addr], seed, options)
}

#[test]
fn the_simulated_client_locks_and_releases_on_real_redis() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let mut a = client(server.addr, 1, options(5000));
        let mut b = client(server.addr, 2, options(5000));
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
        let mut a = client(server.addr, 3, options(100));
        let mut b = client(server.addr, 4, options(5000));
        let lease = a.try_acquire(b"real:ttl").await.unwrap().expect("granted");
        tokio::time::sleep(Duration::from_millis(250)).await;
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

#[test]
fn a_watchdog_keeps_a_one_second_lock_for_three_seconds_and_without_it_the_lock_is_taken() {
    let server = RedisServer::start(&[]);
    let held = Duration::from_secs(3);
    let addr = server.addr;
    let client = |seed: u64, options: LockOptions| client(addr, seed, options);
    let (with_watchdog, without) = runtime().block_on(async {
        // The same contest twice, side by side on two keys: only the watchdog differs.
        let contest = |key: &'static [u8], holder_options: LockOptions, seed: u64| {
            let mut holder = client(seed, holder_options);
            let mut other = client(seed + 1, options(1000));
            async move {
                let holding = holder.with_lock(key, |guard| async move {
                    tokio::time::sleep(held).await;
                    guard.is_lost()
                });
                let contending = async {
                    until_key_exists(addr, key).await; // the holder has it first
                    let started = Instant::now();
                    let mut grants = 0;
                    while started.elapsed() < held - Duration::from_millis(100) {
                        if let Some(lease) = other.try_acquire(key).await.unwrap() {
                            grants += 1;
                            other.release(&lease).await.unwrap();
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    grants
                };
                tokio::join!(holding, contending)
            }
        };
        tokio::join!(
            contest(b"real:watchdog", options(1000).watchdog(), 10),
            contest(b"real:no-watchdog", options(1000), 20),
        )
    });
    let (holder, grants) = with_watchdog;
    assert!(!holder.unwrap(), "the watchdog never lost the lock");
    assert_eq!(grants, 0, "nobody else got the lock while it was renewed");
    let (holder, grants) = without;
    assert!(grants > 0, "without renewal the lock expires under the holder");
    assert!(
        matches!(holder, Err(LockError::LockLost { .. })),
        "with_lock reports that the key expired during the work: {holder:?}"
    );
}

#[test]
fn a_failed_renewal_signals_the_work_and_reports_the_lost_lock() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let clock = HostClock::new();
        let mut holder = client(server.addr, 5, options(1000).watchdog_ms(100));
        let mut admin = Conn::new(TcpConnector(server.addr), clock, 1000);
        let started = Instant::now();
        let holding = holder.with_lock(b"real:lost", |mut guard| async move {
            tokio::select! {
                biased;
                reason = guard.lost() => Some(reason),
                () = tokio::time::sleep(Duration::from_secs(10)) => None,
            }
        });
        let deleting = async {
            until_key_exists(server.addr, b"real:lost").await;
            let del = Del {
                keys: vec![b"real:lost".to_vec()],
            };
            admin.request(&del.into_frame()).await.unwrap();
        };
        let (outcome, ()) = tokio::join!(holding, deleting);
        match outcome {
            Err(LockError::LockLost { reason }) => assert!(reason.contains("0 of 1"), "{reason}"),
            other => panic!("expected a lost lock, got {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the work stopped when told, not after its 10 s"
        );
    });
}

#[test]
fn wait_replicas_accepts_a_replicated_grant_and_refuses_one_too_few_replicas_saw() {
    let master = RedisServer::start(&[]);
    let port = master.addr.port().to_string();
    let replica = RedisServer::start(&["--replicaof", "127.0.0.1", &port]);
    // Linked and streaming first: a write made before the replica attaches is not
    // propagated (it reaches the replica in the snapshot), and a WAIT after it counts
    // any replica that comes online, even one that does not get the stream yet.
    wait_for_link(replica.addr);
    wait_for_stream(master.addr, replica.addr);
    let client = |seed: u64, replicas: u32, retries: u32| {
        let options = options(5000)
            .retry(Retry {
                count: retries,
                delay_ms: 50,
                jitter_ms: 0,
            })
            .wait_replicas(WaitReplicas {
                replicas: WaitFor::Exactly(replicas),
                timeout_ms: 200,
            });
        client(master.addr, seed, options)
    };
    runtime().block_on(async {
        let mut one = client(1, 1, 0);
        let lease = one.acquire(b"real:wait").await.expect("one replica acknowledges");
        assert!(one.release(&lease).await.unwrap());
        let mut two = client(2, 2, 0);
        match two.acquire(b"real:wait").await {
            Err(LockError::NotReplicated {
                acknowledged: 1,
                needed: 2,
            }) => {}
            other => panic!("expected too few replicas, got {other:?}"),
        }
        let mut after = client(3, 1, 0);
        let lease = after.try_acquire(b"real:wait").await.unwrap();
        assert!(
            lease.is_some(),
            "the refused grant was released, not left to expire"
        );
    });
}

#[test]
fn a_dead_server_is_a_connection_error_and_the_client_reconnects_after_a_restart() {
    let mut server = RedisServer::start(&[]);
    runtime().block_on(async {
        let mut a = client(server.addr, 6, options(5000));
        let lease = a.acquire(b"real:reset").await.expect("granted");
        server.restart(); // without persistence: the key is gone, the connection reset
        match a.release(&lease).await {
            Err(LockError::Request(_)) => {}
            Ok(false) => {} // the reset went unnoticed until this request: a new connection
            other => panic!("expected a reset connection or a missing key, got {other:?}"),
        }
        let again = a.try_acquire(b"real:reset").await.unwrap();
        assert!(
            again.is_some(),
            "the client reconnected; the restarted server forgot the key"
        );
        drop(server);
        match a.try_acquire(b"real:reset").await {
            Err(LockError::Request(RequestError::Connection(_))) => {}
            other => panic!("expected a connection error, got {other:?}"),
        }
    });
}

#[test]
fn a_watchdog_rides_out_an_unanswered_renewal_while_the_lease_lasts() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        // TTL 1.5 s, renewals every 500 ms, each given 200 ms: one frozen renewal is missed.
        let mut holder = client(
            server.addr,
            7,
            options(1500).watchdog_ms(500).request_timeout_ms(200),
        );
        let server = &server;
        let outcome = holder
            .with_lock(b"real:frozen", |guard| async move {
                tokio::time::sleep(Duration::from_millis(450)).await;
                server.freeze();
                tokio::time::sleep(Duration::from_millis(400)).await;
                server.thaw();
                tokio::time::sleep(Duration::from_millis(1200)).await;
                guard.is_lost()
            })
            .await;
        assert!(
            !outcome.expect("held throughout"),
            "a missed renewal is not a lost lock"
        );
    });
}

#[test]
fn a_redisson_style_holder_is_not_told_its_renewal_failed() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let clock = HostClock::new();
        let mut options = options(1000).watchdog_ms(100);
        options.signal_loss = false; // Redisson: the watchdog stops, the thread runs on
        let mut holder = client(server.addr, 8, options);
        let mut admin = Conn::new(TcpConnector(server.addr), clock, 1000);
        let holding = holder.with_lock(b"real:unaware", |guard| async move {
            tokio::time::sleep(Duration::from_millis(600)).await;
            guard.is_lost()
        });
        let deleting = async {
            until_key_exists(server.addr, b"real:unaware").await;
            let del = Del {
                keys: vec![b"real:unaware".to_vec()],
            };
            admin.request(&del.into_frame()).await.unwrap();
        };
        let (outcome, ()) = tokio::join!(holding, deleting);
        match outcome {
            Err(LockError::LockLost { reason }) => assert!(reason.contains("at release"), "{reason}"),
            other => panic!("only the release notices, got {other:?}"),
        }
    });
}
