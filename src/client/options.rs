//! What a lock client can be told: the algorithm, its timings, and the client profiles
//! that copy the defaults (and quirks) of widely used lock libraries.
//!
//! Profiles are data ([`Profile::defaults`](super::Profile::defaults), in `profile.rs`): a profile fills in the settings, and any
//! setting given explicitly afterwards overrides it.

use rand::{Rng, RngExt};
use serde::Deserialize;

use crate::platform::Clock;

/// The algorithms of the ladder (lock-algorithms.md), each with its defect kept, plus
/// Redlock over N independent masters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Tier 1: `SETNX lock 1`, release `DEL`. A holder that dies keeps the lock forever.
    Setnx,
    /// Tier 2: `SETNX lock 1` then `EXPIRE`. Dying between the two leaves a key without TTL.
    SetnxExpire,
    /// Tier 3: `SET lock 1 NX PX ttl`, release `DEL`. A late holder deletes the next one's lock.
    SetNxPx,
    /// Tier 4: a random value; release `GET`, compare, `DEL`: the key can change in between.
    UniqueGetDel,
    /// Tier 5: a random value, released by one compare-and-delete script. Unsafe only when
    /// the work outlives the TTL.
    LuaRelease,
    /// Tier 5 on N independent masters: a majority, and validity after elapsed time and drift.
    Redlock,
}

impl Algorithm {
    /// Whether each acquire stores its own random value (tiers 4, 5, Redlock) rather than `1`.
    pub fn unique_token(self) -> bool {
        matches!(
            self,
            Algorithm::UniqueGetDel | Algorithm::LuaRelease | Algorithm::Redlock
        )
    }
}

/// How a failed acquire is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// Extra attempts after the first.
    pub count: u32,
    /// Base delay between attempts.
    pub delay_ms: u64,
    /// Up to this much random delay is added, so contenders do not retry in lockstep.
    pub jitter_ms: u64,
}

impl Retry {
    /// The wait before the next attempt: `delay_ms + U(0, jitter_ms)`, both ends included,
    /// drawn from the client's own seeded generator (one draw per wait).
    pub fn wait_ms(&self, rng: &mut impl Rng) -> u64 {
        self.delay_ms + rng.random_range(0..=self.jitter_ms)
    }
}

/// Allowance for clock-rate differences between client and servers, subtracted from the
/// validity: `ttl × factor + extra_ms` (redlock-rb: 0.01 and 2 ms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    pub factor: f64,
    pub extra_ms: u64,
}

impl Drift {
    /// No allowance at all (single-node clients that never measure elapsed time).
    pub const NONE: Drift = Drift {
        factor: 0.0,
        extra_ms: 0,
    };

    /// The allowance for a lock of `ttl_ms`.
    pub fn allowance_ms(self, ttl_ms: u64) -> u64 {
        (ttl_ms as f64 * self.factor) as u64 + self.extra_ms
    }
}

/// Which clock the client measures the acquire's elapsed time on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidityClock {
    /// The monotonic clock: immune to clock steps (redsync, rslock, pottery).
    Monotonic,
    /// The wall clock (node-redlock's `Date.now()`): a step during the acquire or the hold
    /// skews validity.
    Wall,
}

impl ValidityClock {
    /// This clock's reading on `clock`, in ms.
    pub fn read(self, clock: &impl Clock) -> u64 {
        match self {
            ValidityClock::Monotonic => clock.monotonic_ms(),
            ValidityClock::Wall => clock.wall_ms(),
        }
    }
}

/// `WAIT` after each write that grants or extends the lock: the write counts only when
/// enough replicas acknowledged it within `timeout_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitReplicas {
    pub replicas: WaitFor,
    pub timeout_ms: u64,
}

/// How many replicas a [`WaitReplicas`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    /// `WAIT n`: fewer than `n` acknowledgements fail the write, so a master without
    /// replicas (a promoted one) can never grant the lock.
    Exactly(u32),
    /// Redisson's synced-slaves check (`RedissonBaseLock.evalWriteSyncedAsync`,
    /// `checkLockSyncedSlaves`): read `connected_slaves` from `INFO replication` first;
    /// with none, send no WAIT at all; else `WAIT connected_slaves`, and fail only when
    /// not one replica acknowledged.
    Connected,
}

/// Where fencing tokens come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Fencing {
    /// No token.
    #[default]
    None,
    /// `INCR` of a counter on the lock's own master: can repeat after a failover.
    MasterIncr,
    /// `INCR` on a separate linearizable counter node.
    Counter,
}

/// How an extend (a watchdog renewal, or an explicit extend) treats the key it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExtendMode {
    /// Reset the TTL only if the key still holds our token; a lock without TTL is only
    /// checked, never given one (the fix proposed for redis-py#4279).
    #[default]
    CompareAndExpire,
    /// redis-py's `reacquire()`: compare, then `PEXPIRE key ttl` whatever the TTL. With a
    /// lock that has no TTL (`timeout=0`) that is `PEXPIRE key 0`, which deletes the key,
    /// and the script still answers success (redis-py#4279).
    Reacquire,
    /// "Extend or lock": when the key has gone, set it again (go-redsync's
    /// `WithSetNXOnExtend`, redis-semaphore before #177, redlock-rb#36). A holder whose key
    /// expired, and which someone else took and released meanwhile, silently re-acquires,
    /// hiding that mutual exclusion was broken (redis-semaphore#175).
    SetIfMissing,
}

/// What the watchdog does after a renewal got no answer (a timeout, a dropped connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RenewalOnError {
    /// Try again at the next interval while the lease lasts (Redisson's watchdog since
    /// 3.44.0: `RenewalTask.run` schedules itself again after an error).
    #[default]
    Retry,
    /// Stop renewing for good, saying nothing: Redisson's watchdog up to 3.43.0
    /// (`RedissonBaseLock.renewExpiration`: an error logs "Can't update lock expiration"
    /// and removes the lock's renewal entry; redisson#2515, #3194). The key then expires
    /// under a holder that works on.
    GiveUp,
}

/// Which value each retry of one acquire stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RetryToken {
    /// Every attempt draws a new random value.
    #[default]
    Fresh,
    /// One value for every attempt of an acquire, stored with `SET NX`, which refuses the
    /// client's own key when an earlier attempt left it behind (a node whose reply was lost
    /// and that [`AttemptCleanup`] does not release): node-redlock blocks
    /// itself until the TTL runs out (PR #369, F2).
    Reused,
    /// One value for every attempt, stored by a script that also takes a key already
    /// holding that value: the fix proposed in node-redlock PR #369.
    ReusedRefreshing,
}

/// Which nodes a failed acquire attempt releases before the next try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptCleanup {
    /// Every node that did not refuse: one whose reply was lost may have set the key
    /// (the distlock page: "unlock all the instances").
    #[default]
    EveryNode,
    /// Every node, those that refused too: with one value for every try, a node may refuse
    /// because it still holds this client's own key from an earlier try whose release was
    /// lost, and the release frees it (go-redsync: `actOnPoolsAsync(m.release)` on every
    /// pool after each failed try).
    AllNodes,
    /// Only the nodes that granted: a node whose reply timed out keeps the key it set, for
    /// a TTL (node-redlock; with one value per acquire it then refuses the client's own
    /// retries, PR #369 F2).
    GrantedNodes,
    /// Nothing between retries; once the last attempt has failed, a release on every node
    /// with the acquire's value (node-redlock v5 `acquire`: `_execute` retries without
    /// releasing, the `catch` sends one RELEASE with `retryCount: 0`).
    AfterFinalFailure,
    /// Nothing, ever: a `SET NX` whose reply was lost leaves its key behind, and with one
    /// value per acquire the client's own retries are refused by it (redis-py `Lock`).
    Never,
}

/// When the watchdog stops renewing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RenewalStops {
    /// When the work ends, before the release is sent.
    #[default]
    WithWork,
    /// Only when a release succeeds: a release that fails (a reset connection, a timeout)
    /// leaves the watchdog renewing a key its client believes released, and nobody gets the
    /// lock again ("renewal outlives unlock": redisson#1626, #7272).
    OnSuccessfulRelease,
}

/// What a client does when a node answers `READONLY` (its connection reached a replica: a
/// Sentinel that still names a demoted master sent it there, or its request came between the
/// `REPLICAOF` that demoted the node and the `CLIENT KILL` that follows); the variants say
/// who does which. Every client re-asks for the master on a disconnection: each new
/// connection goes where the controller or a Sentinel says, so the `CLIENT KILL` that comes
/// with every demotion moves them all.
///
/// Not modelled: Redisson polls Sentinel every second and go-redis follows `+switch-master`,
/// so those two leave an old master at the switch, before it is converted; here they leave it
/// when it is converted, as the others do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnReadonly {
    /// Keep the connection and hand the error to the caller, who retries on it: Redisson
    /// (`RedisExecutor` retries READONLY) and ioredis without `reconnectOnError`
    /// (node-redlock's client). The connection stays on the demoted node, so every later
    /// write is refused until something else breaks it.
    #[default]
    Retry,
    /// Drop the connection and send the request again on a new one, which asks for the
    /// master afresh (from Sentinel, where there is one): redis-py's `SentinelManagedConnection`
    /// disconnects and raises `ConnectionError`, which its `Retry` resends; go-redis discards
    /// the connection and retries.
    Reconnect,
}

/// When one request fanned out to N masters (an acquire attempt, an extend, a release) is
/// decided, and the client goes on, from each library's source:
///
/// | library | decides | so |
/// |---|---|---|
/// | redsync v4 (`actOnPoolsAsync`) | [`AllNodes`](Resolve::AllNodes): every pool, or its 5%-of-TTL context | a slow master delays every acquire by up to the timeout (`WithFailFast` returns at a quorum; not its default) |
/// | node-redlock v5 (`_attemptOperation`) | [`Quorum`](Resolve::Quorum) of votes either way, errors voting against | a slow minority costs nothing |
/// | pottery (`_acquire_masters`, `BailOutExecutor`) | [`GrantQuorum`](Resolve::GrantQuorum): at a majority of grants, a failure only after all | |
/// | aioredlock (`asyncio.gather`) | [`AllNodes`](Resolve::AllNodes) | |
/// | Redisson `RedissonRedLock`/`MultiLock` | one master after the other, in order (not modelled: deprecated, and no profile here) | |
///
/// The requests still out when an attempt is decided are not waited for: each master still
/// applies what it was sent, its late reply is not read, and the next request to it opens
/// a new connection (`fanout.rs`). On one node every rule is the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Resolve {
    /// When every master has answered or timed out (the distlock page's reference clients,
    /// redsync, aioredlock).
    #[default]
    AllNodes,
    /// As soon as a majority granted, or a majority refused or failed (node-redlock v5).
    /// With an even count split half and half node-redlock's promise never settles; here
    /// the request is decided once every master answered, and fails.
    Quorum,
    /// As soon as a majority granted; a failure only once every master answered (pottery).
    GrantQuorum,
}

/// The drift allowance of redlock-rb and the Redis distlock page.
pub(crate) const REDLOCK_DRIFT: Drift = Drift {
    factor: 0.01,
    extra_ms: 2,
};

/// Settings of a lock client; build with [`LockOptions::new`] and the chained setters.
#[derive(Debug, Clone, PartialEq)]
pub struct LockOptions {
    pub algorithm: Algorithm,
    /// The commands sent: the ladder's (the algorithm says which tier) or a library's own.
    pub protocol: Protocol,
    /// Time to live of the key on every node; 0 for a lock that never expires (redis-py's
    /// `timeout=None`): held until released, like tier 1.
    pub ttl_ms: u64,
    pub retry: Retry,
    /// How long to wait for one reply from one node.
    pub request_timeout_ms: u64,
    pub drift: Drift,
    /// Refuse a grant or an extend whose validity (TTL − elapsed − drift) is not positive
    /// (Redlock step 3). Clients without it trust a late reply for a full TTL.
    pub validity_check: bool,
    pub validity_clock: ValidityClock,
    /// Renew the TTL this often while the holder works (`None`: no watchdog).
    pub watchdog_interval_ms: Option<u64>,
    /// Tell the work when a renewal fails ([`LockGuard::lost`](super::LockGuard::lost)); when
    /// off, the loss goes unnoticed until the release, as with Redisson.
    pub signal_loss: bool,
    pub wait_replicas: Option<WaitReplicas>,
    pub fencing: Fencing,
    pub extend: ExtendMode,
    pub renewal_on_error: RenewalOnError,
    pub renewal_stops: RenewalStops,
    pub retry_token: RetryToken,
    pub attempt_cleanup: AttemptCleanup,
    /// Count the lease from before the acquire's first attempt (see
    /// [`ProfileDefaults`](super::ProfileDefaults)).
    pub expiration_from_first_attempt: bool,
    pub on_readonly: OnReadonly,
    /// When a request fanned out to the masters is decided ([`Resolve`]).
    pub resolve: Resolve,
    /// Retry a release that a quorum did not confirm, as an acquire is retried (`retry`'s
    /// count and waits): node-redlock's `release` goes through the same `_execute` loop.
    pub release_retries: bool,
}

/// Retries when nothing else says: 10 more attempts, 100–200 ms apart.
const DEFAULT_RETRY: Retry = Retry {
    count: 10,
    delay_ms: 100,
    jitter_ms: 100,
};

/// Per-node request timeout when nothing else says.
const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 1000;

impl LockOptions {
    /// Whether the key is given a TTL (not tier 1, not a lock with TTL 0).
    pub fn expires(&self) -> bool {
        self.algorithm != Algorithm::Setnx && self.ttl_ms > 0
    }

    /// Plain settings for `algorithm`: Redlock checks validity with the distlock drift,
    /// single-node tiers do not.
    pub fn new(algorithm: Algorithm, ttl_ms: u64) -> Self {
        let redlock = algorithm == Algorithm::Redlock;
        LockOptions {
            algorithm,
            protocol: Protocol::Ladder,
            ttl_ms,
            retry: DEFAULT_RETRY,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            drift: if redlock { REDLOCK_DRIFT } else { Drift::NONE },
            validity_check: redlock,
            validity_clock: ValidityClock::Monotonic,
            watchdog_interval_ms: None,
            signal_loss: true,
            wait_replicas: None,
            fencing: Fencing::None,
            extend: ExtendMode::CompareAndExpire,
            renewal_on_error: RenewalOnError::Retry,
            renewal_stops: RenewalStops::WithWork,
            retry_token: RetryToken::Fresh,
            attempt_cleanup: AttemptCleanup::EveryNode,
            expiration_from_first_attempt: false,
            on_readonly: OnReadonly::Retry,
            resolve: Resolve::AllNodes,
            release_retries: false,
        }
    }

    pub fn retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }

    pub fn request_timeout_ms(mut self, ms: u64) -> Self {
        self.request_timeout_ms = ms;
        self
    }

    pub fn drift(mut self, drift: Drift) -> Self {
        self.drift = drift;
        self
    }

    pub fn validity_check(mut self, check: bool) -> Self {
        self.validity_check = check;
        self
    }

    /// Renew every `interval_ms` while the holder works.
    pub fn watchdog_ms(mut self, interval_ms: u64) -> Self {
        self.watchdog_interval_ms = Some(interval_ms);
        self
    }

    /// Renew at the protocol's usual interval (TTL/3; python-redis-lock: TTL × 2/3).
    pub fn watchdog(self) -> Self {
        let interval = self.protocol.renewal_interval_ms(self.ttl_ms);
        self.watchdog_ms(interval)
    }

    pub fn wait_replicas(mut self, wait: WaitReplicas) -> Self {
        self.wait_replicas = Some(wait);
        self
    }

    pub fn fencing(mut self, fencing: Fencing) -> Self {
        self.fencing = fencing;
        self
    }
}

/// The command sequence a client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// The ladder's tiers and Redlock (`LockOptions::algorithm` says which).
    #[default]
    Ladder,
    /// Redisson `RLock` (3.x).
    Redisson,
    /// python-redis-lock 4.0.1.
    PythonRedisLock,
}

impl Protocol {
    /// The Redis key that holds the lock named `name` (python-redis-lock prefixes `lock:`).
    pub fn redis_key(self, name: &[u8]) -> Vec<u8> {
        match self {
            Protocol::Ladder | Protocol::Redisson => name.to_vec(),
            Protocol::PythonRedisLock => [b"lock:", name].concat(),
        }
    }

    /// The watchdog's interval for a lock of `ttl_ms` when nothing else says: TTL/3 (the
    /// usual choice, Redisson's `lockWatchdogTimeout / 3`), or python-redis-lock's
    /// `expire * 2 / 3`.
    pub fn renewal_interval_ms(self, ttl_ms: u64) -> u64 {
        let interval = match self {
            Protocol::Ladder | Protocol::Redisson => ttl_ms / 3,
            Protocol::PythonRedisLock => ttl_ms * 2 / 3,
        };
        interval.max(1)
    }
}
