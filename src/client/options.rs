//! What a lock client can be told: the algorithm, its timings, and the client profiles
//! that copy the defaults (and quirks) of widely used lock libraries.
//!
//! Profiles are data ([`Profile::defaults`]): a profile fills in the settings, and any
//! setting given explicitly afterwards overrides it.

use serde::Deserialize;

use crate::platform::Clock;

/// The algorithms of the ladder (lock-algorithms.md), each with its defect kept, plus
/// Redlock over N independent masters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenewalOnError {
    /// Try again at the next interval while the lease lasts.
    #[default]
    Retry,
    /// Stop renewing for good, saying nothing: Redisson's watchdog no longer renewed after
    /// a reconnect (redisson#2515, #3194, fixed in 3.13.6). The key then expires under a
    /// holder that works on.
    GiveUp,
}

/// Which value each retry of one acquire stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptCleanup {
    /// Every node that did not refuse: one whose reply was lost may have set the key
    /// (the distlock page: "unlock all the instances").
    #[default]
    EveryNode,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
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
/// `REPLICAOF` that demoted the node and the `CLIENT KILL` that follows). lock-library-protocols.md
/// §8 has who does which. Every client re-asks for the master on a disconnection: each new
/// connection goes where the controller or a Sentinel says, so the `CLIENT KILL` that comes
/// with every demotion moves them all.
///
/// Not modelled: Redisson polls Sentinel every second and go-redis follows `+switch-master`,
/// so those two leave an old master at the switch, before it is converted; here they leave it
/// when it is converted, as the others do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
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

/// Lock libraries whose defaults and quirks a client can copy; Redisson and
/// python-redis-lock also speak their library's own protocol ([`Protocol`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Redisson RLock, in its own protocol (a reentrant hash per lock, an unlock that
    /// publishes, waiters bounded by the holder's `PTTL`): watchdog renewing every TTL/3;
    /// after each acquire and renewal, WAIT for the replicas the master says it has (none:
    /// no WAIT).
    Redisson,
    /// go-redsync v4: 32 tries 50–250 ms apart with one value, released on every node
    /// between tries, drift `ttl × 0.01` without the 2 ms.
    Redsync,
    /// node-redlock v5: 10 retries 200 ± 100 ms apart, one value for all of them, nothing
    /// released until the last fails, and no validity check on acquire (#296).
    NodeRedlock,
    /// redis-py Lock: single node, a fixed 100 ms retry, one token per acquire, no
    /// elapsed-time check, no clean-up after a failed `SET`.
    RedisPy,
    /// python-redis-lock 4.0.1, in its own protocol (`SET NX EX`, waiters on a `BLPOP`
    /// signal list, a release script that signals one of them); `watchdog` is its
    /// `auto_renewal`, every `expire × 2/3`, which dies silently at the first failed extend.
    PythonRedisLock,
}

impl Profile {
    /// The profile's name, as scenario files write it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Redisson => "redisson",
            Profile::Redsync => "redsync",
            Profile::NodeRedlock => "node-redlock",
            Profile::RedisPy => "redis-py",
            Profile::PythonRedisLock => "python-redis-lock",
        }
    }
}

/// The settings a profile fills in.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileDefaults {
    pub protocol: Protocol,
    pub retry: Retry,
    pub drift: Drift,
    pub validity_check: bool,
    pub validity_clock: ValidityClock,
    /// Renew every `ttl / divisor` (Redisson: 30 s renewed every 10 s).
    pub watchdog_divisor: Option<u64>,
    pub wait_replicas: Option<WaitReplicas>,
    /// Per-node request timeout as a fraction of the TTL (redsync's `timeoutFactor`).
    pub timeout_factor: Option<f64>,
    /// Whether a failed renewal reaches the work (Redisson's does not).
    pub signal_loss: bool,
    pub extend: ExtendMode,
    pub retry_token: RetryToken,
    pub attempt_cleanup: AttemptCleanup,
    /// The lease's expiration counts from before the acquire's first attempt, not from
    /// the attempt that won (node-redlock 5.0.0-beta.2 takes `start` once, before its
    /// retries: #296).
    pub expiration_from_first_attempt: bool,
    pub on_readonly: OnReadonly,
    pub renewal_on_error: RenewalOnError,
}

/// The drift allowance of redlock-rb and the Redis distlock page.
const REDLOCK_DRIFT: Drift = Drift {
    factor: 0.01,
    extra_ms: 2,
};

impl Profile {
    /// The profile's settings, as its library ships them.
    pub fn defaults(self) -> ProfileDefaults {
        match self {
            Profile::Redisson => ProfileDefaults {
                protocol: Protocol::Redisson,
                // A refused client waits for the unlock message, at most the holder's PTTL
                // (no delay of its own); the count bounds one acquire's waits.
                retry: Retry {
                    count: 100,
                    delay_ms: 0,
                    jitter_ms: 0,
                },
                drift: Drift::NONE,
                validity_check: false,
                validity_clock: ValidityClock::Monotonic,
                watchdog_divisor: Some(3),
                // `checkLockSyncedSlaves`: the replicas it sees, `slavesSyncTimeout` 1000 ms.
                wait_replicas: Some(WaitReplicas {
                    replicas: WaitFor::Connected,
                    timeout_ms: 1000,
                }),
                timeout_factor: None,
                // The watchdog stops renewing, and the holder's thread is not interrupted.
                signal_loss: false,
                extend: ExtendMode::CompareAndExpire,
                retry_token: RetryToken::Fresh,
                attempt_cleanup: AttemptCleanup::EveryNode,
                expiration_from_first_attempt: false,
                on_readonly: OnReadonly::Retry,
                renewal_on_error: RenewalOnError::Retry,
            },
            Profile::Redsync => ProfileDefaults {
                protocol: Protocol::Ladder,
                retry: Retry {
                    count: 31,
                    delay_ms: 50,
                    jitter_ms: 200,
                },
                drift: Drift {
                    factor: 0.01,
                    extra_ms: 0,
                },
                validity_check: true,
                validity_clock: ValidityClock::Monotonic,
                watchdog_divisor: None,
                wait_replicas: None,
                timeout_factor: Some(0.05),
                signal_loss: true,
                extend: ExtendMode::CompareAndExpire,
                // One 16-byte value for every try; between tries it releases on every pool.
                retry_token: RetryToken::Reused,
                attempt_cleanup: AttemptCleanup::EveryNode,
                expiration_from_first_attempt: false,
                on_readonly: OnReadonly::Reconnect,
                renewal_on_error: RenewalOnError::Retry,
            },
            Profile::NodeRedlock => ProfileDefaults {
                protocol: Protocol::Ladder,
                retry: Retry {
                    count: 10,
                    delay_ms: 100,
                    jitter_ms: 200,
                },
                drift: REDLOCK_DRIFT,
                // v5.0.0-beta.2 returns the lock without comparing its expiration with
                // the clock (#296; the check is only in the unmerged PR #369).
                validity_check: false,
                validity_clock: ValidityClock::Wall,
                watchdog_divisor: None,
                wait_replicas: None,
                timeout_factor: None,
                signal_loss: true,
                extend: ExtendMode::CompareAndExpire,
                retry_token: RetryToken::Reused,
                attempt_cleanup: AttemptCleanup::AfterFinalFailure,
                expiration_from_first_attempt: true,
                on_readonly: OnReadonly::Retry,
                renewal_on_error: RenewalOnError::Retry,
            },
            Profile::RedisPy => ProfileDefaults {
                protocol: Protocol::Ladder,
                retry: Retry {
                    count: 100,
                    delay_ms: 100,
                    jitter_ms: 0,
                },
                drift: Drift::NONE,
                validity_check: false,
                validity_clock: ValidityClock::Monotonic,
                watchdog_divisor: None,
                wait_replicas: None,
                timeout_factor: None,
                signal_loss: true,
                // The watchdog stands for user code calling `reacquire()` on a timer.
                extend: ExtendMode::Reacquire,
                // `acquire()` draws one `uuid1().hex` and loops on `SET NX` with it; a
                // failed `SET` is never cleaned up.
                retry_token: RetryToken::Reused,
                attempt_cleanup: AttemptCleanup::Never,
                expiration_from_first_attempt: false,
                on_readonly: OnReadonly::Reconnect,
                renewal_on_error: RenewalOnError::Retry,
            },
            Profile::PythonRedisLock => ProfileDefaults {
                protocol: Protocol::PythonRedisLock,
                // Waiters block on the signal list; the count bounds one acquire's waits.
                retry: Retry {
                    count: 100,
                    delay_ms: 0,
                    jitter_ms: 0,
                },
                drift: Drift::NONE,
                validity_check: false,
                validity_clock: ValidityClock::Monotonic,
                // `auto_renewal=False` by default; `watchdog: true` turns it on.
                watchdog_divisor: None,
                wait_replicas: None,
                timeout_factor: None,
                // The renewal thread dies with its exception; the holder is not told.
                signal_loss: false,
                extend: ExtendMode::CompareAndExpire,
                // One id per `Lock` object, sent on every `SET` of its acquire; a `SET`
                // whose reply was lost is never cleaned up.
                retry_token: RetryToken::Reused,
                attempt_cleanup: AttemptCleanup::Never,
                expiration_from_first_attempt: false,
                // redis-py under it: a Sentinel connection disconnects on READONLY.
                on_readonly: OnReadonly::Reconnect,
                renewal_on_error: RenewalOnError::GiveUp,
            },
        }
    }
}

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
    /// Count the lease from before the acquire's first attempt (see [`ProfileDefaults`]).
    pub expiration_from_first_attempt: bool,
    pub on_readonly: OnReadonly,
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
        }
    }

    /// Takes every setting `profile` defines (call before the overriding setters).
    pub fn profile(mut self, profile: Profile) -> Self {
        let d = profile.defaults();
        self.protocol = d.protocol;
        self.retry = d.retry;
        self.drift = d.drift;
        self.validity_check = d.validity_check;
        self.validity_clock = d.validity_clock;
        self.watchdog_interval_ms = d.watchdog_divisor.map(|n| (self.ttl_ms / n).max(1));
        self.wait_replicas = d.wait_replicas;
        self.signal_loss = d.signal_loss;
        self.extend = d.extend;
        self.retry_token = d.retry_token;
        self.attempt_cleanup = d.attempt_cleanup;
        self.expiration_from_first_attempt = d.expiration_from_first_attempt;
        self.on_readonly = d.on_readonly;
        self.renewal_on_error = d.renewal_on_error;
        if let Some(factor) = d.timeout_factor {
            self.request_timeout_ms = ((self.ttl_ms as f64 * factor) as u64).max(1);
        }
        self
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redlock_drift_is_one_percent_plus_two_ms() {
        assert_eq!(REDLOCK_DRIFT.allowance_ms(10_000), 102);
        assert_eq!(Profile::Redsync.defaults().drift.allowance_ms(10_000), 100);
    }

    #[test]
    fn a_profile_fills_in_and_explicit_settings_override() {
        let options = LockOptions::new(Algorithm::LuaRelease, 30_000).profile(Profile::Redisson);
        assert_eq!(options.watchdog_interval_ms, Some(10_000));
        assert_eq!(
            options.wait_replicas.map(|w| w.replicas),
            Some(WaitFor::Connected)
        );
        assert!(!options.signal_loss, "Redisson does not interrupt the holder");
        let options = LockOptions::new(Algorithm::Redlock, 8_000)
            .profile(Profile::Redsync)
            .request_timeout_ms(7);
        assert_eq!(options.retry.count + 1, 32);
        assert_eq!(options.request_timeout_ms, 7);
        let options = LockOptions::new(Algorithm::Redlock, 8_000).profile(Profile::Redsync);
        assert_eq!(options.request_timeout_ms, 400, "timeoutFactor 0.05");
    }
}
