//! The checks serde cannot express, each failure worded as "field: reason": the
//! scenario's own fields and its topology here, a fault's in [`fault`], the lock's in
//! [`lock`].

mod fault;
mod lock;

use std::fmt;

use super::limits::{
    MAX_CLIENTS, MAX_CLOCK_STEP_MS, MAX_DRIFT_PPM, MAX_EVENTS_PER_S, MAX_FAULTS, MAX_MASTERS, MAX_MIN_GRANTS,
    MAX_NAME_CHARS, MAX_SEEDS, MAX_SENTINELS, MAX_TIME_MS, MAX_WALL_S, did_you_mean, in_range, pair_in_range,
};
use super::lock_spec::Algorithm;
use super::schema::Scenario;
use super::topology::{DEFAULT_SENTINELS, PersistenceMode, TopologyKind};

/// The checks serde cannot express: every number in its range (see [`limits`](super::limits)), every
/// name naming something.
pub(super) fn validate(s: &Scenario) -> Result<(), (String, String)> {
    let fail = |field: &str, reason: &dyn fmt::Display| Err((field.to_string(), reason.to_string()));
    if s.name.trim().is_empty() {
        return fail("name", &"must not be empty");
    }
    let name_chars = s.name.chars().count();
    if name_chars > MAX_NAME_CHARS {
        return fail(
            "name",
            &format!(
                "is {name_chars} characters long: at most {MAX_NAME_CHARS} (a name heads a row of the verdict table; say the rest in `description`)"
            ),
        );
    }
    if s.name.chars().any(char::is_control) {
        return fail(
            "name",
            &"holds a line break or another control character: a name is one line of the verdict table",
        );
    }
    in_range("duration_ms", s.duration_ms, 1, MAX_TIME_MS, "ms")?;
    in_range("seeds", s.seeds, 1, MAX_SEEDS, "seeds")?;
    // Before anything lists the clients: a count of billions would allocate their names.
    in_range("clients.count", s.clients.count, 1, MAX_CLIENTS, "clients")?;
    if s.faults.len() > MAX_FAULTS {
        return fail(
            "faults",
            &format!("{} faults is out of range: at most {MAX_FAULTS}", s.faults.len()),
        );
    }
    validate_topology(s)?;
    let masters = s.master_names().len();
    if masters > 1 && s.lock.algorithm != Algorithm::Redlock {
        return fail(
            "lock.algorithm",
            &format!("a single-node algorithm cannot run on {masters} masters: use `redlock`"),
        );
    }
    lock::validate_lock(&s.lock)?;
    pair_in_range("clients.work_ms", s.clients.work_ms, 0, MAX_TIME_MS, "ms")?;
    let clients = s.client_names();
    for (name, client) in &s.clients.per_client {
        if !clients.contains(name) {
            return fail(
                &format!("clients.per_client.{name}"),
                &format!(
                    "no such client{} (clients: {})",
                    did_you_mean(name, clients.iter().map(String::as_str)),
                    clients.join(", ")
                ),
            );
        }
        if let Some(work) = client.work_ms {
            pair_in_range(
                &format!("clients.per_client.{name}.work_ms"),
                work,
                0,
                MAX_TIME_MS,
                "ms",
            )?;
        }
    }
    pair_in_range("clients.think_ms", s.clients.think_ms, 0, MAX_TIME_MS, "ms")?;
    if let Some(delay) = s.clients.write_delay_ms {
        pair_in_range("clients.write_delay_ms", delay, 0, MAX_TIME_MS, "ms")?;
    }
    if let Some(command) = &s.clients.command
        && command.first().is_none_or(|program| program.is_empty())
    {
        return fail(
            "clients.command",
            &"names no program: give the worker as a list, program first ([\"python3\", \"worker.py\"])",
        );
    }
    pair_in_range("network.latency_ms", s.network.latency_ms, 1, MAX_TIME_MS, "ms")?;
    pair_in_range(
        "clocks.offset_ms",
        s.clocks.offset_ms,
        -MAX_CLOCK_STEP_MS,
        MAX_CLOCK_STEP_MS,
        "ms",
    )?;
    pair_in_range(
        "clocks.drift_ppm",
        s.clocks.drift_ppm,
        -MAX_DRIFT_PPM,
        MAX_DRIFT_PPM,
        "ppm",
    )?;
    for (field, bound) in [
        ("checks.liveness_bound_ms", s.checks.liveness_bound_ms),
        ("checks.starvation_bound_ms", s.checks.starvation_bound_ms),
    ] {
        if let Some(bound) = bound {
            in_range(field, bound, 1, MAX_TIME_MS, "ms (leave it out for the default)")?;
        }
    }
    if let Some(grants) = s.checks.min_grants_after_fault {
        in_range(
            "checks.min_grants_after_fault",
            grants,
            0,
            MAX_MIN_GRANTS,
            "grants",
        )?;
    }
    if let Some(per_s) = s.budget.events_per_s {
        in_range(
            "budget.events_per_s",
            per_s,
            1,
            MAX_EVENTS_PER_S,
            "events per simulated second",
        )?;
    }
    if let Some(wall_s) = s.budget.wall_s {
        in_range("budget.wall_s", wall_s, 1, MAX_WALL_S, "s")?;
    }
    for (i, fault) in s.faults.iter().enumerate() {
        fault::validate_fault(s, fault)
            .map_err(|(field, reason)| (format!("faults[{i}].{field}"), reason))?;
    }
    Ok(())
}

/// The checks of `topology` (kinds, counts, per-node exceptions, Sentinel, persistence).
fn validate_topology(s: &Scenario) -> Result<(), (String, String)> {
    let fail = |field: &str, reason: &dyn fmt::Display| Err((field.to_string(), reason.to_string()));
    let topology = &s.topology;
    match (topology.kind, topology.masters) {
        (TopologyKind::Single | TopologyKind::Replicated, Some(_)) => {
            return fail("topology.masters", &"only a `redlock` topology has several");
        }
        (TopologyKind::Redlock, Some(n)) => in_range("topology.masters", n, 1, MAX_MASTERS, "masters")?,
        _ => {}
    }
    match (topology.kind, topology.replicas) {
        (TopologyKind::Single, Some(_)) => {
            return fail("topology.replicas", &"a `single` node has none: use `replicated`");
        }
        (TopologyKind::Replicated, Some(n)) => in_range("topology.replicas", n, 1, MAX_MASTERS, "replicas")?,
        (_, Some(n)) => in_range("topology.replicas", n, 0, MAX_MASTERS, "replicas")?,
        _ => {}
    }
    if topology.down_after_ms.is_some() && s.redis_groups()[0].len() < 2 {
        return fail(
            "topology.down_after_ms",
            &"only a topology with replicas fails over",
        );
    }
    if let Some(down_after_ms) = topology.down_after_ms {
        in_range("topology.down_after_ms", down_after_ms, 1, MAX_TIME_MS, "ms")?;
    }
    validate_sentinel(s)?;
    in_range(
        "topology.restart_delay_ms",
        topology.restart_delay_ms,
        0,
        MAX_TIME_MS,
        "ms",
    )?;
    in_range(
        "topology.replication_lag_ms",
        topology.replication_lag_ms,
        0,
        MAX_TIME_MS,
        "ms",
    )?;
    let check_version = |field: &str, version: Option<u8>| match version {
        Some(v) if !(6..=7).contains(&v) => fail(field, &format!("{v}: locksim models Redis 6 and 7")),
        _ => Ok(()),
    };
    check_version("topology.redis_version", topology.redis_version)?;
    let redis = s.redis_names();
    for (name, node) in &topology.nodes {
        if !redis.contains(name) {
            return fail(
                &format!("topology.nodes.{name}"),
                &format!(
                    "no Redis node named `{name}`{} (Redis nodes: {})",
                    did_you_mean(name, redis.iter().map(String::as_str)),
                    redis.join(", ")
                ),
            );
        }
        check_version(
            &format!("topology.nodes.{name}.redis_version"),
            node.redis_version,
        )?;
        if let Some(delay) = node.restart_delay_ms {
            in_range(
                &format!("topology.nodes.{name}.restart_delay_ms"),
                delay,
                0,
                MAX_TIME_MS,
                "ms",
            )?;
        }
    }
    Ok(())
}

/// The checks of `topology.sentinel`, of `min-replicas-to-write` and of the RDB save points.
fn validate_sentinel(s: &Scenario) -> Result<(), (String, String)> {
    let fail = |field: &str, reason: &dyn fmt::Display| Err((field.to_string(), reason.to_string()));
    let topology = &s.topology;
    let replicas = s.redis_groups()[0].len() as u32 - 1;
    if let Some(spec) = &topology.sentinel {
        if replicas == 0 {
            return fail(
                "topology.sentinel",
                &"Sentinel fails a master over to a replica, and this topology has none: give `replicas`",
            );
        }
        if topology.down_after_ms.is_some() && spec.down_after_ms.is_some() {
            return fail(
                "topology.down_after_ms",
                &"`topology.sentinel.down_after_ms` says it too: give one",
            );
        }
        if let Some(count) = spec.count {
            in_range("topology.sentinel.count", count, 1, MAX_SENTINELS, "Sentinels")?;
        }
        let count = spec.count.unwrap_or(DEFAULT_SENTINELS);
        if let Some(quorum) = spec.quorum {
            in_range(
                "topology.sentinel.quorum",
                quorum,
                1,
                count,
                "Sentinels (at most `count`)",
            )?;
        }
        if let Some(ms) = spec.down_after_ms {
            in_range("topology.sentinel.down_after_ms", ms, 1, MAX_TIME_MS, "ms")?;
        }
        if let Some(ms) = spec.failover_timeout_ms {
            in_range("topology.sentinel.failover_timeout_ms", ms, 1, MAX_TIME_MS, "ms")?;
        }
    }
    if let Some(points) = &topology.save {
        let names = s.redis_groups().concat();
        if !names
            .iter()
            .any(|name| s.persistence_of(name) == PersistenceMode::Rdb)
        {
            return fail(
                "topology.save",
                &"save points are for `rdb` persistence, and no node has it: set `persistence` to `rdb`",
            );
        }
        for (i, &[seconds, changes]) in points.iter().enumerate() {
            in_range(
                &format!("topology.save[{i}][0]"),
                seconds,
                0,
                MAX_TIME_MS / 1000,
                "s",
            )?;
            in_range(
                &format!("topology.save[{i}][1]"),
                changes,
                1,
                u64::from(u32::MAX),
                "changes",
            )?;
        }
    }
    if topology.min_replicas_to_write > replicas {
        return fail(
            "topology.min_replicas_to_write",
            &format!(
                "{} is more than the {replicas} replica(s) a master has: it would refuse every write",
                topology.min_replicas_to_write
            ),
        );
    }
    if let Some(lag_s) = topology.min_replicas_max_lag_s {
        if topology.min_replicas_to_write == 0 {
            return fail(
                "topology.min_replicas_max_lag_s",
                &"counts only with `min_replicas_to_write` of 1 or more",
            );
        }
        in_range(
            "topology.min_replicas_max_lag_s",
            lag_s,
            1,
            MAX_TIME_MS / 1000,
            "s (Redis's 0 turns the rule off: leave out min_replicas_to_write instead)",
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::testing::*;

    #[test]
    fn the_issue_example_loads() {
        let s = parse(GOOD).unwrap();
        validate(&s).unwrap();
        assert_eq!(s.faults.len(), 1);
        assert_eq!(s.clients.think_ms, [10, 100]);
    }

    #[test]
    fn the_run_budget_grows_with_nodes_and_duration_and_a_file_may_set_it() {
        let s = parse(GOOD).unwrap();
        // redis-1 and three clients, 30 simulated seconds.
        assert_eq!(s.event_budget(), 10_000 * 4 * 30);
        assert_eq!(s.wall_budget(), std::time::Duration::from_secs(300));
        let s = parse(&replace(
            r#""expect""#,
            r#""budget": { "events_per_s": 5, "wall_s": 60 }, "expect""#,
        ))
        .unwrap();
        validate(&s).unwrap();
        assert_eq!(s.event_budget(), 150, "an explicit budget has no floor");
        assert_eq!(s.wall_budget(), std::time::Duration::from_secs(60));
        let short = parse(&replace(r#""duration_ms": 30000"#, r#""duration_ms": 10"#)).unwrap();
        assert_eq!(
            short.event_budget(),
            100_000,
            "the default never goes below its floor"
        );
    }

    #[test]
    fn client_overrides_must_name_clients_and_hold_ranges() {
        let clients = r#""count": 3, "work_ms": [100, 500]"#;
        let (field, reason) = error_of(&replace(
            clients,
            r#""count": 3, "work_ms": [100, 500], "per_client": { "client-4": { "work_ms": [1, 2] } }"#,
        ));
        assert_eq!(field, "clients.per_client.client-4");
        assert!(reason.contains("client-3"), "{reason}");
        let (field, _) = error_of(&replace(
            clients,
            r#""count": 3, "work_ms": [100, 500], "per_client": { "client-2": { "work_ms": [9, 2] } }"#,
        ));
        assert_eq!(field, "clients.per_client.client-2.work_ms");
        let s = parse(&replace(
            clients,
            r#""count": 3, "work_ms": [100, 500], "per_client": { "client-2": { "work_ms": [4000, 5000] } }"#,
        ))
        .unwrap();
        validate(&s).unwrap();
        assert_eq!(s.clients.work_ms_of("client-2"), [4000, 5000]);
        assert_eq!(s.clients.work_ms_of("client-1"), [100, 500]);
    }

    #[test]
    fn node_overrides_must_name_redis_nodes() {
        let topology = r#"{ "kind": "single", "nodes": { "client-1": { "persistence": "aof-always" } } }"#;
        let (field, reason) = error_of(&replace(r#"{ "kind": "single" }"#, topology));
        assert_eq!(field, "topology.nodes.client-1");
        assert!(reason.contains("redis-1"), "{reason}");
        let version = r#"{ "kind": "single", "nodes": { "redis-1": { "redis_version": 5 } } }"#;
        let (field, _) = error_of(&replace(r#"{ "kind": "single" }"#, version));
        assert_eq!(field, "topology.nodes.redis-1.redis_version");
    }

    #[test]
    fn semantic_errors_are_named() {
        let (field, _) = error_of(&replace("[100, 500]", "[500, 100]"));
        assert_eq!(field, "clients.work_ms");
        let (field, reason) = error_of(&replace(r#""holder""#, r#""client-9""#));
        assert_eq!(field, "faults[0].target");
        assert!(reason.contains("client-9"), "{reason}");
        let (field, _) = error_of(&replace(r#""at_ms": 5000"#, r#""at_ms": 30000"#));
        assert_eq!(field, "faults[0].at_ms");
        let (field, _) = error_of(&replace(r#""kind": "single""#, r#""kind": "ring""#));
        assert_eq!(field, "topology.kind");
    }

    #[test]
    fn checks_bounds_load_and_bad_ones_are_named() {
        let with_checks = |checks: &str| replace(r#""expect""#, &format!(r#""checks": {checks}, "expect""#));
        let s = parse(&with_checks(r#"{ "liveness_bound_ms": 4000 }"#)).unwrap();
        validate(&s).unwrap();
        assert_eq!(s.checks.liveness_bound_ms, Some(4000));
        assert_eq!(s.checks.starvation_bound_ms, None);
        let (field, reason) = error_of(&with_checks(r#"{ "liveness_bound": 4000 }"#));
        assert_eq!(field, "checks.liveness_bound");
        assert_eq!(
            reason,
            "unknown field `liveness_bound`, did you mean `liveness_bound_ms`?"
        );
        let (field, reason) = error_of(&with_checks(r#"{ "starvation_bound_ms": 0 }"#));
        assert_eq!(field, "checks.starvation_bound_ms");
        assert!(
            reason.contains("out of range: must be 1..=3600000 ms"),
            "{reason}"
        );
        let (field, _) = error_of(&with_checks(r#"{ "liveness_bound_ms": "4 weeks" }"#));
        assert_eq!(field, "checks.liveness_bound_ms");
        let s = parse(&with_checks(r#"{ "liveness_bound_ms": "4s" }"#)).unwrap();
        assert_eq!(s.checks.liveness_bound_ms, Some(4000));
    }
}
