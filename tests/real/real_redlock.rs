//! Redlock and the single-node lock against real redis-servers: majorities, dead and
//! frozen nodes, and many clients around a read-modify-write.

use crate::support;

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use locksim::client::{Algorithm, Conn, Lock, LockError, LockOptions, Retry};
use locksim::real::{HostClock, TcpConnector};
use locksim::redis::cmd::Del;
use rand_chacha::ChaCha8Rng;
use support::{RedisServer, real_lock, runtime};

const KEY: &[u8] = b"real:redlock";
/// Per-node timeout: short, as the distlock page advises, but not tight on a loaded machine.
const NODE_TIMEOUT_MS: u64 = 200;

type RealLock = Lock<TcpConnector, HostClock, ChaCha8Rng>;

/// `n` servers and their addresses (which outlive a killed server).
fn servers(n: usize) -> (Vec<RedisServer>, Vec<SocketAddr>) {
    let servers: Vec<RedisServer> = (0..n).map(|_| RedisServer::start(&[])).collect();
    let addrs = servers.iter().map(|s| s.addr).collect();
    (servers, addrs)
}

fn client(addrs: &[SocketAddr], options: LockOptions, seed: u64) -> RealLock {
    real_lock(addrs, seed, options)
}

fn redlock(retry: Retry) -> LockOptions {
    LockOptions::new(Algorithm::Redlock, 10_000)
        .request_timeout_ms(NODE_TIMEOUT_MS)
        .retry(retry)
}

fn retries(count: u32) -> Retry {
    Retry {
        count,
        delay_ms: 20,
        jitter_ms: 20,
    }
}

#[test]
fn redlock_acquires_with_two_of_five_servers_dead_and_excludes_a_second_client() {
    let (mut servers, addrs) = servers(5);
    servers.truncate(3); // a dropped server is killed
    runtime().block_on(async {
        let mut a = client(&addrs, redlock(retries(0)), 1);
        let mut b = client(&addrs, redlock(retries(2)), 2);
        let lease = a.acquire(KEY).await.expect("3 of 5 is a majority");
        assert!(lease.remaining_ms(0) > 9_000);
        match b.acquire(KEY).await {
            Err(LockError::NoQuorum { granted: 0, .. }) => {}
            other => panic!("the second client must be refused, got {other:?}"),
        }
        assert!(a.release(&lease).await.unwrap());
        b.acquire(KEY).await.expect("released, so granted");
    });
}

#[test]
fn redlock_fails_fast_with_no_quorum_when_three_of_five_are_dead() {
    let (mut servers, addrs) = servers(5);
    servers.truncate(2);
    runtime().block_on(async {
        let mut a = client(&addrs, redlock(retries(2)), 1);
        let started = Instant::now();
        let error = a.acquire(KEY).await.expect_err("2 of 5 is no majority");
        assert!(
            matches!(
                error,
                LockError::NoQuorum {
                    granted: 2,
                    needed: 3,
                    failed: 3,
                    ..
                }
            ),
            "{error}"
        );
        // Three attempts, two short retry delays, refused connections: well under a second.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
        // The failed attempts released what they took: another client gets the two nodes.
        let mut b = client(&addrs[..2], redlock(retries(0)).request_timeout_ms(1000), 2);
        b.acquire(KEY)
            .await
            .expect("nothing left behind on the live nodes");
    });
}

#[test]
fn redlock_latency_stays_under_the_node_timeout_when_one_server_is_frozen() {
    let (servers, addrs) = servers(5);
    servers[2].freeze();
    let latencies = runtime().block_on(async {
        let mut a = client(&addrs, redlock(retries(0)), 1);
        let mut latencies = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            let lease = a.acquire(KEY).await.expect("4 of 5 answer");
            latencies.push(started.elapsed());
            a.release(&lease).await.unwrap();
        }
        latencies
    });
    servers[2].thaw();
    // Concurrent fan-out: one timeout, not one per node; generous slack for a loaded host.
    let bound = Duration::from_millis(NODE_TIMEOUT_MS + 800);
    assert!(
        latencies.iter().all(|l| *l < bound),
        "{latencies:?} (bound {bound:?})"
    );
}

/// 8 clients × 50 acquisitions around a read, a pause and a write of a shared counter:
/// any overlap of two holders loses an update.
fn no_lost_update(addrs: &[SocketAddr], algorithm: Algorithm) {
    const CLIENTS: u64 = 8;
    const ROUNDS: u64 = 50;
    let counter = Rc::new(Cell::new(0));
    runtime().block_on(async {
        let tasks = (0..CLIENTS).map(|i| {
            let counter = counter.clone();
            let options = LockOptions::new(algorithm, 5_000)
                .request_timeout_ms(1000)
                .retry(Retry {
                    count: 10_000,
                    delay_ms: 1,
                    jitter_ms: 5,
                });
            let mut lock = client(addrs, options, i);
            async move {
                for _ in 0..ROUNDS {
                    let lease = lock.acquire(KEY).await.expect("acquired in the end");
                    let value = counter.get();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    counter.set(value + 1);
                    assert!(lock.release(&lease).await.unwrap(), "released while still ours");
                }
            }
        });
        futures::future::join_all(tasks).await;
    });
    assert_eq!(counter.get(), CLIENTS * ROUNDS);
}

#[test]
fn eight_clients_lose_no_update_on_one_server() {
    let (_servers, addrs) = servers(1);
    no_lost_update(&addrs, Algorithm::LuaRelease);
}

#[test]
fn eight_clients_lose_no_update_on_five_servers_with_redlock() {
    let (_servers, addrs) = servers(5);
    no_lost_update(&addrs, Algorithm::Redlock);
}

#[test]
fn redlock_extend_renews_on_a_majority_and_reports_a_lost_majority() {
    let (_servers, addrs) = servers(3);
    runtime().block_on(async {
        let mut a = client(&addrs, redlock(retries(0)), 1);
        let lease = a.acquire(KEY).await.expect("granted");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let renewed = a.extend(&lease).await.expect("all three still hold our value");
        assert!(renewed.valid_until_ms > lease.valid_until_ms);
        // Two nodes lose the key (a restart without persistence, an operator's DEL).
        for addr in &addrs[..2] {
            let mut admin = Conn::new(TcpConnector(*addr), HostClock::new(), 1000);
            let del = Del {
                keys: vec![KEY.to_vec()],
            };
            admin.request(&del.into_frame()).await.unwrap();
        }
        match a.extend(&renewed).await {
            Err(LockError::LockLost { reason }) => assert!(reason.contains("1 of 3"), "{reason}"),
            other => panic!("one node of three is no majority, got {other:?}"),
        }
    });
}
