//! The lock under test (`lock`): the algorithm, a library profile, and every setting that
//! overrides the profile.

use schemars::JsonSchema;
use serde::Deserialize;

use super::limits;
use super::schema_forms::Duration;
pub use crate::client::{
    Algorithm, AttemptCleanup, ExtendMode, Fencing, OnReadonly, Profile, RenewalOnError, RenewalStops,
    Resolve, RetryToken,
};
use crate::client::{LockOptions, Retry, WaitFor, WaitReplicas};

/// The lock algorithm under test and its settings. A `profile` fills in the settings of a
/// lock library; every field given here overrides it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// Which algorithm of the ladder, or `redlock`.
    pub algorithm: Algorithm,
    /// Time to live of the lock key; 0 for a lock held until released (redis-py's
    /// `timeout=None`, single-node tiers 3–5 only).
    #[serde(deserialize_with = "limits::ms")]
    #[schemars(with = "Duration")]
    pub ttl_ms: u64,
    /// Copy the defaults and quirks of a lock library.
    #[serde(default)]
    pub profile: Option<Profile>,
    /// How a client retries a failed acquire.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// How long a client waits for one reply from one node before giving up on it.
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    pub node_timeout_ms: Option<u64>,
    /// Clock-drift allowance as a fraction of the TTL, subtracted from the validity.
    #[serde(default)]
    pub drift_factor: Option<f64>,
    /// Renew the TTL while the holder works: `true` (every TTL/3) or `{"interval_ms": n}`.
    #[serde(default)]
    pub watchdog: Option<WatchdogSpec>,
    /// Where fencing tokens come from: `none`, `master-incr` or `counter`.
    #[serde(default)]
    pub fencing: Option<Fencing>,
    /// After each grant (and renewal), `WAIT` up to `node_timeout_ms`: for this many
    /// replicas, fewer acknowledgements failing it (`0`: no WAIT, even where the profile
    /// has one); or `"connected"`, Redisson's check: for the replicas `INFO replication`
    /// lists, failing only when none acknowledged.
    #[serde(default)]
    pub wait_replicas: Option<WaitSpec>,
    /// How an extend treats the key: `compare-and-expire` (the default), `reacquire`
    /// (redis-py: `PEXPIRE` even with TTL 0, which deletes the key) or `set-if-missing`
    /// (go-redsync's `WithSetNXOnExtend`: a lost key is silently taken again).
    #[serde(default)]
    pub extend: Option<ExtendMode>,
    /// Refuse a grant or an extend that took the whole TTL (Redlock step 3; on by default
    /// for `redlock`). Without it a client trusts every reply for a whole TTL.
    #[serde(default)]
    pub validity_check: Option<bool>,
    /// What the watchdog does after a renewal got no answer: `retry` (the default) or
    /// `give-up` (old Redisson: no more renewals after a reconnect, and nobody is told).
    #[serde(default)]
    pub renewal_on_error: Option<RenewalOnError>,
    /// When the watchdog stops: `with-work` (the default) or `on-successful-release` (a
    /// failed release leaves it renewing for good: "renewal outlives unlock").
    #[serde(default)]
    pub renewal_stops: Option<RenewalStops>,
    /// The value each retry of one acquire stores: `fresh` (a new one per attempt, the
    /// default), `reused` (node-redlock, redsync, redis-py: one per acquire, refused by its
    /// own leftover key)
    /// or `reused-refreshing` (node-redlock PR #369: its own key is taken again).
    #[serde(default)]
    pub retry_token: Option<RetryToken>,
    /// Which nodes a failed attempt releases: `every-node` that did not refuse (the
    /// default), `granted-nodes` only (a node whose reply was lost keeps the key for a
    /// TTL), `after-final-failure` (node-redlock v5) or `never` (redis-py).
    #[serde(default)]
    pub attempt_cleanup: Option<AttemptCleanup>,
    /// What a client does when a node answers `READONLY` (its connection outlived the
    /// master's demotion): `retry` on the same connection (the default; Redisson, ioredis)
    /// or `reconnect` and ask for the master again (redis-py, go-redis).
    #[serde(default)]
    pub on_readonly: Option<OnReadonly>,
    /// When a request fanned out to the masters is decided: `all-nodes` (every master
    /// answered or timed out: the default, redsync, aioredlock), `quorum` (a majority voted
    /// either way: node-redlock v5) or `grant-quorum` (a majority granted; a failure only
    /// after all: pottery).
    #[serde(default)]
    pub resolve: Option<Resolve>,
}

/// `lock.wait_replicas`: a number of replicas, or `"connected"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WaitSpec {
    /// `WAIT n`; 0 turns WAIT off.
    Replicas(u32),
    /// Redisson's synced-slaves check.
    Connected(ConnectedReplicas),
}

/// The one word `lock.wait_replicas` takes besides a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectedReplicas {
    /// The replicas `INFO replication` lists, failing only when none acknowledged.
    Connected,
}

/// `lock.watchdog`: on with the usual interval, or with an explicit one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WatchdogSpec {
    /// `true`: renew every TTL/3; `false`: no watchdog.
    Enabled(bool),
    /// Renew every `interval_ms`.
    Every {
        /// The time between two renewals (below the TTL).
        #[serde(deserialize_with = "limits::ms")]
        #[schemars(with = "Duration")]
        interval_ms: u64,
    },
}

/// Retries of a failed acquire: up to `count` more attempts, each after
/// `delay_ms` plus a random `0..=jitter_ms` so contenders do not retry in lockstep.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Extra attempts after the first.
    pub count: u32,
    /// The pause before each retry.
    #[serde(deserialize_with = "limits::ms")]
    #[schemars(with = "Duration")]
    pub delay_ms: u64,
    /// The most random time added to each pause.
    #[serde(deserialize_with = "limits::ms")]
    #[schemars(with = "Duration")]
    pub jitter_ms: u64,
}

impl LockSpec {
    /// The client settings: plain defaults for the algorithm, then the profile, then every
    /// field the scenario sets.
    pub fn options(&self) -> LockOptions {
        let mut options = LockOptions::new(self.algorithm, self.ttl_ms);
        if let Some(profile) = self.profile {
            options = options.profile(profile);
        }
        if let Some(retry) = &self.retry {
            options.retry = Retry {
                count: retry.count,
                delay_ms: retry.delay_ms,
                jitter_ms: retry.jitter_ms,
            };
        }
        override_with(&mut options.request_timeout_ms, self.node_timeout_ms);
        override_with(&mut options.drift.factor, self.drift_factor);
        match self.watchdog {
            None => {}
            Some(WatchdogSpec::Enabled(true)) => options = options.watchdog(),
            Some(WatchdogSpec::Enabled(false)) => options.watchdog_interval_ms = None,
            Some(WatchdogSpec::Every { interval_ms }) => options.watchdog_interval_ms = Some(interval_ms),
        }
        override_with(&mut options.fencing, self.fencing);
        override_with(&mut options.extend, self.extend);
        override_with(&mut options.validity_check, self.validity_check);
        override_with(&mut options.renewal_on_error, self.renewal_on_error);
        override_with(&mut options.renewal_stops, self.renewal_stops);
        override_with(&mut options.retry_token, self.retry_token);
        override_with(&mut options.attempt_cleanup, self.attempt_cleanup);
        override_with(&mut options.on_readonly, self.on_readonly);
        override_with(&mut options.resolve, self.resolve);
        let wait = |replicas| WaitReplicas {
            replicas,
            timeout_ms: options.request_timeout_ms,
        };
        match self.wait_replicas {
            None => {}
            Some(WaitSpec::Replicas(0)) => options.wait_replicas = None,
            Some(WaitSpec::Replicas(n)) => options.wait_replicas = Some(wait(WaitFor::Exactly(n))),
            Some(WaitSpec::Connected(_)) => options.wait_replicas = Some(wait(WaitFor::Connected)),
        }
        options
    }
}

/// Sets `setting` to the scenario's `value`, when the scenario gives one.
fn override_with<T>(setting: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *setting = value;
    }
}
