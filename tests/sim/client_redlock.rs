//! Redlock's clock rules in simulation: the validity check after the replies, on the
//! monotonic clock, and the clients that skip it or read the wall clock instead; and when
//! an attempt on N masters is decided, as each library decides it (node-redlock at a
//! quorum, redsync once every master answered).

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use locksim::client::{
    Algorithm, Conn, LockError, LockOptions, Profile, Resolve, Retry, Step, ValidityClock,
};
use locksim::platform::Clock;
use locksim::redis::Frame;
use locksim::redis::request::build as request;
use locksim::scenario::{Expectation, Scenario};
use locksim::world::net::SimConnector;
use madsim::runtime::Handle;
use support::sim::{
    StopAt, client_node, clock, lock, lock_with_clock, now_ms, simulate, start_redis, start_redis_node,
};

const KEY: &[u8] = b"redlock:lock";
const TTL_MS: u64 = 1000;
/// When the contested acquire starts, connections already open.
const ACQUIRE_AT_MS: u64 = 1000;
/// How long the client is frozen while its requests are in flight: longer than the TTL.
const FREEZE_MS: u64 = 1500;
/// How long after the freeze the rival starts trying.
const RIVAL_AFTER_MS: u64 = 20;

fn single_attempt(options: LockOptions) -> LockOptions {
    options.request_timeout_ms(10 * TTL_MS).retry(Retry {
        count: 0,
        delay_ms: 0,
        jitter_ms: 0,
    })
}

/// What the frozen client and a rival saw.
struct Frozen {
    /// The frozen client's verdict on its acquire.
    verdict: Result<bool, LockError>,
    /// When the frozen client's acquire returned.
    returned_at: u64,
    /// The rival's lease end, if it got the lock (it keeps it).
    rival_valid_until: Option<u64>,
}

/// Client 1 sends its acquire to `nodes` Redis nodes at `ACQUIRE_AT_MS` and is frozen
/// (a GC pause) `FREEZE_MS` while its requests are in flight; the keys are set at once and
/// expire while it sleeps. `jump_ms` steps its wall clock during the freeze. A rival keeps
/// trying meanwhile.
fn frozen_during_acquire(nodes: u8, options: LockOptions, jump_ms: i64) -> Frozen {
    simulate(4, || async move {
        let redis: Vec<SocketAddr> = (1..=nodes).map(start_redis).collect();
        let rival_redis = redis.clone();
        let frozen_node = client_node(1);
        let frozen_clock = clock();
        let jumper = frozen_clock.clone();
        let frozen_id = frozen_node.id();
        let frozen = frozen_node.spawn(async move {
            let mut a = lock_with_clock(&redis, single_attempt(options), 1, frozen_clock.clone());
            let warm = a.acquire(b"warm-up").await.expect("connections open");
            a.release(&warm).await.unwrap();
            frozen_clock.sleep_until_monotonic(ACQUIRE_AT_MS).await;
            let verdict = a.try_acquire(KEY).await.map(|lease| lease.is_some());
            (verdict, now_ms())
        });
        // Freeze client 1 half a millisecond after it sent: before any reply (≥ 1 ms away).
        madsim::time::sleep(Duration::from_micros(ACQUIRE_AT_MS * 1000 + 500)).await;
        Handle::current().pause(frozen_id);
        jumper.jump_ms(jump_ms);
        let rival = client_node(2).spawn(async move {
            // Only once client 1's keys are set (madsim's latency is at most 10 ms): a rival
            // whose SET overtook client 1's would win the key, and client 1 would be refused.
            madsim::time::sleep(Duration::from_millis(RIVAL_AFTER_MS)).await;
            let patient = LockOptions::new(Algorithm::Redlock, 10 * TTL_MS).retry(Retry {
                count: 1000,
                delay_ms: 50,
                jitter_ms: 0,
            });
            let mut b = lock(&rival_redis, patient, 2, StopAt::nowhere());
            b.acquire(KEY).await.ok().map(|lease| lease.valid_until_ms)
        });
        clock().sleep_ms(FREEZE_MS).await;
        Handle::current().resume(frozen_id);
        let (verdict, returned_at) = frozen.await.unwrap();
        Frozen {
            verdict,
            returned_at,
            rival_valid_until: rival.await.unwrap(),
        }
    })
}

#[test]
fn redlock_refuses_a_majority_whose_replies_came_back_after_the_ttl() {
    let frozen = frozen_during_acquire(3, LockOptions::new(Algorithm::Redlock, TTL_MS), 0);
    match frozen.verdict {
        Err(LockError::NoValidityLeft { elapsed_ms, .. }) => assert!(elapsed_ms >= FREEZE_MS),
        other => panic!("expected no validity left, got {other:?}"),
    }
    assert!(
        frozen.rival_valid_until.is_some(),
        "the rival took the expired lock"
    );
}

#[test]
fn a_client_without_the_elapsed_time_check_believes_a_lock_that_already_expired() {
    // redis-py: single node, no elapsed-time check.
    let options = LockOptions::new(Algorithm::LuaRelease, TTL_MS).profile(Profile::RedisPy);
    let frozen = frozen_during_acquire(1, options, 0);
    assert!(matches!(frozen.verdict, Ok(true)), "{:?}", frozen.verdict);
    let rival_until = frozen.rival_valid_until.expect("the rival took the expired key");
    assert!(
        frozen.returned_at < rival_until,
        "two holders: granted at {} ms while the rival holds until {rival_until} ms",
        frozen.returned_at
    );
}

#[test]
fn validity_on_the_wall_clock_is_fooled_by_a_clock_step_back_during_the_acquire() {
    let redlock = |clock: ValidityClock| {
        let mut options = LockOptions::new(Algorithm::Redlock, TTL_MS);
        options.validity_clock = clock;
        options
    };
    // node-redlock measures with Date.now(): the freeze is hidden by the step back.
    let frozen = frozen_during_acquire(3, redlock(ValidityClock::Wall), -(FREEZE_MS as i64));
    assert!(matches!(frozen.verdict, Ok(true)), "{:?}", frozen.verdict);
    assert!(
        frozen
            .rival_valid_until
            .is_some_and(|until| frozen.returned_at < until)
    );
    // The monotonic clock does not step.
    let frozen = frozen_during_acquire(3, redlock(ValidityClock::Monotonic), -(FREEZE_MS as i64));
    assert!(
        matches!(frozen.verdict, Err(LockError::NoValidityLeft { .. })),
        "{:?}",
        frozen.verdict
    );
    assert_eq!(
        LockOptions::new(Algorithm::Redlock, TTL_MS)
            .profile(Profile::NodeRedlock)
            .validity_clock,
        ValidityClock::Wall
    );
}

/// Client 1 acquires on three masters and pauses `pause_ms` right after the grant (before
/// fetching anything else): the validity its lease had left when the acquire returned, or
/// why it got none.
fn paused_after_the_grant(pause_ms: u64) -> Result<u64, LockError> {
    simulate(4, || async move {
        let redis: Vec<SocketAddr> = (1..=3).map(start_redis).collect();
        let options = single_attempt(LockOptions::new(Algorithm::Redlock, TTL_MS));
        let steps = StopAt::pause(Step::AfterAcquire, pause_ms);
        let acquired = client_node(1).spawn(async move {
            let mut a = lock(&redis, options, 1, steps);
            let lease = a.acquire(KEY).await?;
            Ok(lease.remaining_on(&clock()))
        });
        acquired.await.unwrap()
    })
}

#[test]
fn a_pause_after_the_grant_eats_into_the_lease_counted_from_the_request() {
    // Redlock's drift allowance on a 1000 ms TTL: 1% + 2 ms.
    let drift_ms = TTL_MS / 100 + 2;
    let left = paused_after_the_grant(300).expect("300 ms of a 1000 ms lease is no loss");
    // The round trip (2-20 ms on madsim's network) and the pause both count.
    assert!(
        left <= TTL_MS - drift_ms - 300 && left > TTL_MS - drift_ms - 300 - 25,
        "{left} ms left"
    );
}

#[test]
fn a_careful_client_paused_after_the_grant_past_the_ttl_gives_the_lock_back() {
    match paused_after_the_grant(FREEZE_MS) {
        Err(LockError::NoValidityLeft { elapsed_ms, .. }) => assert!(elapsed_ms >= FREEZE_MS),
        other => panic!("expected no validity left, got {other:?}"),
    }
}

#[test]
fn node_redlock_v5_hands_the_caller_a_lock_whose_keys_already_expired() {
    // 5.0.0-beta.2 never compares the expiration with the clock (#296).
    let options = single_attempt(LockOptions::new(Algorithm::Redlock, TTL_MS).profile(Profile::NodeRedlock));
    let frozen = frozen_during_acquire(3, options, 0);
    assert!(matches!(frozen.verdict, Ok(true)), "{:?}", frozen.verdict);
    let rival_until = frozen.rival_valid_until.expect("the rival took the expired keys");
    assert!(frozen.returned_at < rival_until, "two holders");
}

/// A node-redlock client asks for the lock while a rival holds it for `HELD_MS`: the
/// lease it gets once the rival lets go, and the wall-clock reading its acquire began at.
fn node_redlock_after_a_wait(ttl_ms: u64) -> (u64, u64, u64) {
    const HELD_MS: u64 = 600;
    simulate(5, || async move {
        let redis: Vec<SocketAddr> = (1..=3).map(start_redis).collect();
        let rival_redis = redis.clone();
        let rival = client_node(2).spawn(async move {
            let mut b = lock(
                &rival_redis,
                LockOptions::new(Algorithm::Redlock, ttl_ms),
                2,
                StopAt::nowhere(),
            );
            let lease = b.acquire(KEY).await.unwrap();
            clock().sleep_ms(HELD_MS).await;
            b.release(&lease).await.unwrap();
        });
        let waiter = client_node(1).spawn(async move {
            clock().sleep_ms(50).await;
            let options = LockOptions::new(Algorithm::Redlock, ttl_ms).profile(Profile::NodeRedlock);
            let mut a = lock(&redis, options, 1, StopAt::nowhere());
            let started = ValidityClock::Wall.read(&clock());
            let lease = a.acquire(KEY).await.unwrap();
            (started, lease.valid_until_ms, ValidityClock::Wall.read(&clock()))
        });
        rival.await.unwrap();
        waiter.await.unwrap()
    })
}

#[test]
fn node_redlock_v5_counts_the_lease_from_before_its_retries() {
    let ttl_ms = 10_000;
    let drift_ms = ttl_ms / 100 + 2;
    let (started, valid_until, granted_at) = node_redlock_after_a_wait(ttl_ms);
    assert!(
        granted_at >= started + 500,
        "the acquire waited out the rival: {started}..{granted_at}"
    );
    assert_eq!(
        valid_until,
        started + ttl_ms - drift_ms,
        "counted from the first attempt"
    );
}

/// What one acquire on five masters, two of them frozen, came to.
struct FrozenMinority {
    /// Whether the lock was granted.
    granted: bool,
    /// How long the acquire took.
    took_ms: u64,
    /// What a frozen master holds under the key once it thaws: the value the attempt was
    /// decided without still reaches it.
    thawed_value: Frame,
    /// The token the attempt stored.
    token: String,
}

/// One attempt of a client with `options` on five masters, `redis-4` and `redis-5` frozen
/// just before it (connections already open); then the two thaw.
fn acquire_with_a_frozen_minority(options: LockOptions) -> FrozenMinority {
    simulate(6, || async move {
        let started: Vec<_> = (1..=5).map(start_redis_node).collect();
        let redis: Vec<SocketAddr> = started.iter().map(|(addr, _)| *addr).collect();
        let frozen = [started[3].1, started[4].1];
        let thawed = redis[3];
        let client = client_node(1).spawn(async move {
            let options = options.retry(Retry {
                count: 0,
                delay_ms: 0,
                jitter_ms: 0,
            });
            let mut a = lock(&redis, options, 1, StopAt::nowhere());
            let warm = a.acquire(b"warm-up").await.expect("connections open");
            a.release(&warm).await.unwrap();
            clock().sleep_until_monotonic(ACQUIRE_AT_MS).await;
            let began = now_ms();
            let lease = a.try_acquire(KEY).await;
            (lease, now_ms() - began)
        });
        madsim::time::sleep(Duration::from_millis(ACQUIRE_AT_MS - 1)).await;
        for node in frozen {
            Handle::current().pause(node);
        }
        let (lease, took_ms) = client.await.unwrap();
        let lease = lease.ok().flatten();
        madsim::time::sleep(Duration::from_millis(5_000)).await;
        for node in frozen {
            Handle::current().resume(node);
        }
        madsim::time::sleep(Duration::from_millis(100)).await;
        let inspect = client_node(2).spawn(async move {
            let mut conn = Conn::new(SimConnector::to(thawed), clock(), 1000);
            conn.request(&request([b"GET".to_vec(), KEY.to_vec()]))
                .await
                .unwrap()
        });
        FrozenMinority {
            granted: lease.is_some(),
            took_ms,
            thawed_value: inspect.await.unwrap(),
            token: lease.map(|lease| lease.token).unwrap_or_default(),
        }
    })
}

#[test]
fn node_redlock_decides_at_a_quorum_and_redsync_waits_for_every_master() {
    // node-redlock v5's `_attemptOperation`: three grants of five decide the attempt.
    let node_redlock = acquire_with_a_frozen_minority(
        LockOptions::new(Algorithm::Redlock, TTL_MS).profile(Profile::NodeRedlock),
    );
    assert!(node_redlock.granted);
    assert!(
        node_redlock.took_ms < 30,
        "decided in a round trip: {} ms",
        node_redlock.took_ms
    );
    assert_eq!(
        node_redlock.thawed_value,
        Frame::BulkString(node_redlock.token.clone().into_bytes()),
        "the SET the attempt was decided without still reached the frozen master"
    );
    // redsync's `actOnPoolsAsync` reads every pool, or its 5%-of-TTL context.
    let ttl_ms = 10_000;
    let redsync = acquire_with_a_frozen_minority(
        LockOptions::new(Algorithm::Redlock, ttl_ms).profile(Profile::Redsync),
    );
    assert!(redsync.granted);
    assert!(
        redsync.took_ms >= ttl_ms / 20,
        "waited out its node timeout: {} ms",
        redsync.took_ms
    );
    assert_eq!(Profile::Redsync.defaults().resolve, Resolve::AllNodes);
    // The switch alone makes the difference.
    let waiting = LockOptions::new(Algorithm::Redlock, TTL_MS).profile(Profile::NodeRedlock);
    let waiting = LockOptions {
        resolve: Resolve::AllNodes,
        ..waiting
    };
    let waited = acquire_with_a_frozen_minority(waiting);
    assert!(
        waited.took_ms >= 1000,
        "waited for the frozen two: {} ms",
        waited.took_ms
    );
}

/// The catalogue's slow-minority scenario, changed by `change`: the seeds that broke
/// mutual exclusion and validity, of 40, and each seed's digest.
fn slow_minority(change: impl FnOnce(&mut Scenario)) -> (usize, usize, Vec<String>) {
    let file = std::path::Path::new("scenarios/profile-node-redlock-slow-minority.json");
    let mut scenario = locksim::scenario::load(file).unwrap();
    change(&mut scenario);
    let runs = locksim::sweep::sweep(&std::sync::Arc::new(scenario), 0..40, 2);
    let summaries: Vec<_> = runs.into_iter().map(|run| run.outcome.unwrap()).collect();
    let violated = |checker: &str| {
        summaries
            .iter()
            .filter(|s| {
                s.verdicts
                    .iter()
                    .any(|v| v.checker == checker && v.violation.is_some())
            })
            .count()
    };
    let digests = summaries.iter().map(|s| s.digest.clone()).collect();
    (violated("mutual_exclusion"), violated("validity"), digests)
}

#[test]
fn a_frozen_minority_breaks_a_client_that_waits_for_every_master_and_not_node_redlock() {
    let (mutex, validity, _) = slow_minority(|_| {});
    assert_eq!((mutex, validity), (0, 0), "node-redlock at a quorum holds");
    let (_, validity, _) = slow_minority(|s| s.lock.resolve = Some(Resolve::AllNodes));
    assert_eq!(validity, 40, "waiting out the node timeout works on expired keys");
    // redsync waits for every master already: naming the rule changes no event.
    let redsync = |resolve| {
        move |s: &mut Scenario| {
            s.lock.profile = Some(Profile::Redsync);
            s.lock.resolve = resolve;
            s.expect.validity = Some(Expectation::Holds);
        }
    };
    let (_, _, by_profile) = slow_minority(redsync(None));
    let (_, _, named) = slow_minority(redsync(Some(Resolve::AllNodes)));
    assert_eq!(by_profile, named);
}
