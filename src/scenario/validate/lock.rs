//! The checks of `lock` that serde cannot express: ranges, and settings that contradict
//! the algorithm, the TTL or the profile.

use std::fmt;

use super::super::limits::{MAX_MASTERS, MAX_RETRIES, MAX_TIME_MS, in_range};
use super::super::lock_spec::{Algorithm, ExtendMode, LockSpec, Profile, RetryToken, WaitSpec, WatchdogSpec};

/// The lock settings serde cannot check.
pub(super) fn validate_lock(lock: &LockSpec) -> Result<(), (String, String)> {
    let fail = |field: &str, reason: &dyn fmt::Display| Err((format!("lock.{field}"), reason.to_string()));
    if lock.ttl_ms == 0 {
        let never_expiring = [Algorithm::SetNxPx, Algorithm::UniqueGetDel, Algorithm::LuaRelease];
        if !never_expiring.contains(&lock.algorithm) {
            return fail(
                "ttl_ms",
                &"0 (held until released) is for the single-node tiers set-nx-px, unique-get-del and lua-release",
            );
        }
        let explicit_interval = matches!(lock.watchdog, Some(WatchdogSpec::Every { .. }));
        if lock.options().watchdog_interval_ms.is_some() && !explicit_interval {
            return fail(
                "watchdog",
                &"a watchdog renews every TTL/3 unless told, and the TTL is 0: give {\"interval_ms\": n}",
            );
        }
        if lock.extend == Some(ExtendMode::SetIfMissing) {
            return fail(
                "extend",
                &"`set-if-missing` sets the key again with the TTL, and the TTL is 0",
            );
        }
        if lock.retry_token == Some(RetryToken::ReusedRefreshing) {
            return fail(
                "retry_token",
                &"`reused-refreshing` sets the key again with the TTL, and the TTL is 0",
            );
        }
    }
    let in_range = |field: &str, value: u64, min: u64, max: u64, unit: &str| {
        in_range(&format!("lock.{field}"), value, min, max, unit)
    };
    let ttl = lock.ttl_ms;
    // Any TTL Redis takes (`PX 1` included): a lock of a few ms expires within a round
    // trip or two, which is what such a scenario shows.
    if ttl > MAX_TIME_MS {
        return fail(
            "ttl_ms",
            &format!("{ttl} is out of range: must be 0 (no expiry) or 1..={MAX_TIME_MS} ms"),
        );
    }
    if let Some(timeout) = lock.node_timeout_ms {
        in_range("node_timeout_ms", timeout, 1, MAX_TIME_MS, "ms")?;
    }
    if let Some(retry) = &lock.retry {
        in_range(
            "retry.count",
            retry.count.into(),
            0,
            MAX_RETRIES.into(),
            "retries",
        )?;
        in_range("retry.delay_ms", retry.delay_ms, 0, MAX_TIME_MS, "ms")?;
        in_range("retry.jitter_ms", retry.jitter_ms, 0, MAX_TIME_MS, "ms")?;
    }
    if let Some(WaitSpec::Replicas(n)) = lock.wait_replicas {
        in_range("wait_replicas", n.into(), 0, MAX_MASTERS.into(), "replicas")?;
    }
    if let Some(factor) = lock.drift_factor
        && !(0.0..1.0).contains(&factor)
    {
        return fail("drift_factor", &format!("{factor} is not in [0, 1)"));
    }
    if let Some(WatchdogSpec::Every { interval_ms }) = lock.watchdog {
        in_range("watchdog.interval_ms", interval_ms, 1, MAX_TIME_MS, "ms")?;
    }
    if let Some(WatchdogSpec::Every { interval_ms }) = lock.watchdog
        && (interval_ms == 0 || (lock.ttl_ms > 0 && interval_ms >= lock.ttl_ms))
    {
        return fail(
            "watchdog.interval_ms",
            &format!(
                "{interval_ms} must be positive and below lock.ttl_ms ({})",
                lock.ttl_ms
            ),
        );
    }
    if lock.renewal_stops.is_some() && lock.options().watchdog_interval_ms.is_none() {
        return fail(
            "renewal_stops",
            &"says when the watchdog stops, and there is no watchdog",
        );
    }
    if lock.profile == Some(Profile::RedisPy) && lock.algorithm == Algorithm::Redlock {
        return fail("profile", &"redis-py is a single-node client; it has no Redlock");
    }
    if let Some(profile @ (Profile::Redisson | Profile::PythonRedisLock)) = lock.profile
        && lock.algorithm != Algorithm::LuaRelease
    {
        return fail(
            "algorithm",
            &format!(
                "profile `{}` speaks its library's own single-node protocol (a unique value, released by a script): write `lua-release`",
                profile.name()
            ),
        );
    }
    if lock.profile == Some(Profile::PythonRedisLock) && (ttl == 0 || !ttl.is_multiple_of(1000)) {
        return fail(
            "ttl_ms",
            &format!(
                "{ttl}: python-redis-lock's `expire` is a whole number of seconds (SET NX EX): give a multiple of 1000"
            ),
        );
    }
    if lock.watchdog.is_some_and(|w| w != WatchdogSpec::Enabled(false)) && !lock.algorithm.unique_token() {
        return fail(
            "watchdog",
            &format!(
                "needs a per-client token to renew only its own key; `{:?}` stores the same value for everyone",
                lock.algorithm
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::testing::*;

    #[test]
    fn durations_may_carry_a_unit_and_any_ttl_redis_takes_is_accepted() {
        let s = parse(&replace(r#""ttl_ms": 2000"#, r#""ttl_ms": "2s""#)).unwrap();
        validate(&s).unwrap();
        assert_eq!(s.lock.ttl_ms, 2000);
        for (written, ms) in [("1", 1), ("8", 8), (r#""0.05s""#, 50), (r#""1ms""#, 1)] {
            let s = parse(&replace(r#""ttl_ms": 2000"#, &format!(r#""ttl_ms": {written}"#))).unwrap();
            validate(&s).unwrap_or_else(|e| panic!("{written}: {e:?}"));
            assert_eq!(s.lock.ttl_ms, ms, "{written}");
        }
        let (field, reason) = error_of(&replace(r#""ttl_ms": 2000"#, r#""ttl_ms": "2h""#));
        assert_eq!(field, "lock.ttl_ms");
        assert!(reason.contains("1..=3600000 ms"), "{reason}");
    }

    #[test]
    fn lock_fields_load_and_override_the_profile() {
        let s = parse(&replace(
            r#""ttl_ms": 2000 }"#,
            r#""ttl_ms": 3000, "profile": "redsync", "drift_factor": 0.02, "watchdog": { "interval_ms": 500 },
               "fencing": "counter", "wait_replicas": 1, "retry": { "count": 2, "delay_ms": 5, "jitter_ms": 0 } }"#,
        ))
        .unwrap();
        validate(&s).unwrap();
        let options = s.lock.options();
        assert_eq!(options.drift.factor, 0.02);
        assert_eq!(options.drift.extra_ms, 0, "redsync's drift has no +2 ms");
        assert_eq!(options.watchdog_interval_ms, Some(500));
        assert_eq!(options.fencing, crate::client::Fencing::Counter);
        assert_eq!(options.retry.count, 2);
        assert_eq!(options.request_timeout_ms, 150, "redsync: 5% of the TTL");
        let s = parse(&replace(
            r#""ttl_ms": 2000 }"#,
            r#""ttl_ms": 3000, "watchdog": true }"#,
        ))
        .unwrap();
        assert_eq!(s.lock.options().watchdog_interval_ms, Some(1000));
        let s = parse(&replace(
            r#""ttl_ms": 2000 }"#,
            r#""ttl_ms": 0, "profile": "redis-py", "watchdog": { "interval_ms": 500 }, "renewal_on_error": "give-up" }"#,
        ))
        .unwrap();
        validate(&s).unwrap();
        let options = s.lock.options();
        assert!(!options.expires(), "TTL 0: held until released");
        assert_eq!(
            options.extend,
            crate::client::ExtendMode::Reacquire,
            "redis-py's reacquire()"
        );
        assert_eq!(options.renewal_on_error, crate::client::RenewalOnError::GiveUp);
        let s = parse(&replace(
            r#""ttl_ms": 2000 }"#,
            r#""ttl_ms": 2000, "profile": "redis-py", "extend": "set-if-missing", "validity_check": true }"#,
        ))
        .unwrap();
        let options = s.lock.options();
        assert_eq!(
            options.extend,
            crate::client::ExtendMode::SetIfMissing,
            "the field beats the profile"
        );
        assert!(options.validity_check);
        let s = parse(GOOD).unwrap();
        assert_eq!(s.lock.options().retry.count, 10, "the shipped default");
    }

    #[test]
    fn lock_errors_name_the_field() {
        let cases = [
            (
                r#""algorithm": "lua-release""#,
                r#""algorithm": "setnx-px""#,
                "lock.algorithm",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "node_timeout_ms": 0"#,
                "lock.node_timeout_ms",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "drift_factor": 1.5"#,
                "lock.drift_factor",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "watchdog": { "interval_ms": 2000 }"#,
                "lock.watchdog.interval_ms",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "watchdog": "yes""#,
                "lock.watchdog",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "fencing": "paxos""#,
                "lock.fencing",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "wait_replicas": "all""#,
                "lock.wait_replicas",
            ),
            (
                r#""algorithm": "lua-release", "ttl_ms": 2000"#,
                r#""algorithm": "setnx-expire", "ttl_ms": 0"#,
                "lock.ttl_ms",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 0, "watchdog": true"#,
                "lock.watchdog",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 0, "extend": "set-if-missing", "watchdog": { "interval_ms": 100 }"#,
                "lock.extend",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "extend": "renew""#,
                "lock.extend",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "renewal_on_error": "panic""#,
                "lock.renewal_on_error",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "renewal_stops": "on-successful-release""#,
                "lock.renewal_stops",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 0, "retry_token": "reused-refreshing""#,
                "lock.retry_token",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "attempt_cleanup": "none""#,
                "lock.attempt_cleanup",
            ),
            (
                r#""ttl_ms": 2000"#,
                r#""ttl_ms": 2000, "profile": "jedis""#,
                "lock.profile",
            ),
            (
                r#""algorithm": "lua-release""#,
                r#""algorithm": "redlock", "profile": "redis-py""#,
                "lock.profile",
            ),
            (
                r#""algorithm": "lua-release""#,
                r#""algorithm": "setnx", "watchdog": true"#,
                "lock.watchdog",
            ),
        ];
        for (from, to, field) in cases {
            assert_eq!(error_of(&replace(from, to)).0, field, "{to}");
        }
    }
}
