//! The lock libraries a client can copy, and the settings each fills in: data, read by
//! [`LockOptions::profile`](super::LockOptions::profile). Every setting is the library's
//! own default or quirk, with the source that shows it cited beside it.

use serde::Deserialize;

use super::options::{
    AttemptCleanup, Drift, ExtendMode, LockOptions, OnReadonly, Protocol, REDLOCK_DRIFT, RenewalOnError,
    Resolve, Retry, RetryToken, ValidityClock, WaitFor, WaitReplicas,
};

/// Lock libraries whose defaults and quirks a client can copy; Redisson and
/// python-redis-lock also speak their library's own protocol ([`Protocol`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Redisson RLock (3.26.1's scripts), in its own protocol (a reentrant hash per lock, an
    /// unlock that publishes, waiters bounded by the holder's `PTTL`): watchdog renewing
    /// every TTL/3, which stops for good after a renewal that errs (up to 3.43.0); after
    /// each acquire and renewal, WAIT for the replicas the master says it has (none: no
    /// WAIT).
    Redisson,
    /// go-redsync v4: 32 tries 50–249 ms apart with one value, released on every node
    /// (those that refused too) after each failed try, drift `ttl × 0.01` without the 2 ms,
    /// each request cut off at 5% of the TTL (`timeoutFactor`: a context deadline, which
    /// go-redis v9 honours only with `ContextTimeoutEnabled`; with its defaults a reply is
    /// waited for up to its 3 s `ReadTimeout`: set `node_timeout_ms` to 3000 for that).
    Redsync,
    /// node-redlock v5: 10 retries 100–299 ms apart (200 + ⌊U(−100, 100)⌋), one value for
    /// all of them, nothing released until the last fails, no validity check on acquire
    /// (#296), every request decided as soon as a quorum of masters voted
    /// ([`Resolve::Quorum`]), and a release that a quorum voted against retried as an
    /// acquire is (`release` runs `_execute`). node-redlock sets no per-request timeout
    /// and ioredis's `commandTimeout` is off by default, so a vote split among the live
    /// masters with a frozen minority would wait for good; the node timeout (1 s unless the
    /// scenario says) stands for a `commandTimeout` the user set.
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
    /// When a request fanned out to the masters is decided.
    pub resolve: Resolve,
    /// A release not confirmed by a quorum is retried as an acquire is (node-redlock).
    pub release_retries: bool,
}

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
                // The scripts are 3.26.1's, whose `renewExpiration` removes the renewal
                // entry after an error (up to 3.43.0; 3.44.0 retries: `retry`).
                renewal_on_error: RenewalOnError::GiveUp,
                // One node: the rule changes nothing.
                resolve: Resolve::AllNodes,
                release_retries: false,
            },
            Profile::Redsync => ProfileDefaults {
                protocol: Protocol::Ladder,
                // v4 `redsync.go`: `tries: 32`, and before every try but the first
                // `rand.Intn(maxRetryDelayMilliSec-minRetryDelayMilliSec) +
                // minRetryDelayMilliSec` ms, 250 and 50: a whole number in 50..=249 (`Intn(n)`
                // is below n).
                retry: Retry {
                    count: 31,
                    delay_ms: 50,
                    jitter_ms: 199,
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
                // One value for every try (`genValueFunc` once per `lockContext`); after
                // each failed try it releases on every pool, those that refused too.
                retry_token: RetryToken::Reused,
                attempt_cleanup: AttemptCleanup::AllNodes,
                expiration_from_first_attempt: false,
                on_readonly: OnReadonly::Reconnect,
                renewal_on_error: RenewalOnError::Retry,
                // `actOnPoolsAsync` reads every pool's reply (or its context's timeout).
                resolve: Resolve::AllNodes,
                release_retries: false,
            },
            Profile::NodeRedlock => ProfileDefaults {
                protocol: Protocol::Ladder,
                // 5.0.0-beta.2 `src/index.ts`: `retryCount: 10`, `retryDelay: 200`,
                // `retryJitter: 100` (the code's defaults; its README says 200), and `_execute`
                // waits `Math.max(0, retryDelay + Math.floor((Math.random() * 2 - 1) *
                // retryJitter))` after every failed attempt but the last (`retryCount + 1`
                // attempts, then `ExecutionError`): a whole number of ms in 100..=299.
                retry: Retry {
                    count: 10,
                    delay_ms: 100,
                    jitter_ms: 199,
                },
                // `Math.round(driftFactor * duration) + 2`, `driftFactor: 0.01`: the same as
                // this truncation for every TTL whose hundredth is whole (all the catalogue's).
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
                // `_attemptOperation` resolves once a quorum voted either way.
                resolve: Resolve::Quorum,
                // `release` runs `_execute` with the lock's settings: a release that a
                // quorum voted against (a key already expired counts against) is tried
                // again, up to `retryCount` more times, the same waits apart.
                release_retries: true,
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
                resolve: Resolve::AllNodes,
                release_retries: false,
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
                resolve: Resolve::AllNodes,
                release_retries: false,
            },
        }
    }
}

impl LockOptions {
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
        self.resolve = d.resolve;
        self.release_retries = d.release_retries;
        if let Some(factor) = d.timeout_factor {
            self.request_timeout_ms = ((self.ttl_ms as f64 * factor) as u64).max(1);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Algorithm;

    #[test]
    fn redlock_drift_is_one_percent_plus_two_ms() {
        assert_eq!(REDLOCK_DRIFT.allowance_ms(10_000), 102);
        assert_eq!(Profile::Redsync.defaults().drift.allowance_ms(10_000), 100);
    }

    /// Every wait a profile's retry drew in 20,000 draws, and its attempts in all.
    fn waits_and_attempts(profile: Profile) -> (std::collections::BTreeSet<u64>, u32) {
        use rand::SeedableRng;
        let retry = profile.defaults().retry;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let waits = (0..20_000).map(|_| retry.wait_ms(&mut rng)).collect();
        (waits, retry.count + 1)
    }

    /// node-redlock 5.0.0-beta.2 waits `retryDelay + Math.floor((Math.random() * 2 - 1) *
    /// retryJitter)` ms, 200 and 100 by default: every whole number from 100 to 299, and
    /// never 300 (`Math.random()` is below 1).
    #[test]
    fn node_redlock_waits_100_to_299_ms_between_attempts() {
        let (waits, attempts) = waits_and_attempts(Profile::NodeRedlock);
        assert_eq!(waits, (100..=299).collect(), "node-redlock's 200 ± 100, floored");
        assert_eq!(attempts, 11, "retryCount 10: eleven attempts");
    }

    /// go-redsync v4 waits `rand.Intn(250 - 50) + 50` ms: every whole number from 50 to
    /// 249, and never 250.
    #[test]
    fn redsync_waits_50_to_249_ms_between_tries() {
        let (waits, attempts) = waits_and_attempts(Profile::Redsync);
        assert_eq!(waits, (50..=249).collect(), "redsync's Intn(200) + 50");
        assert_eq!(attempts, 32, "tries: 32");
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
