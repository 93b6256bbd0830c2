//! Reading scenario files, with errors that name the file, the field and the reason.

use std::fmt;
use std::path::{Path, PathBuf};

use super::fault::{Fault, FaultAction, RandomKind, Target, Trigger};
use super::limits::{
    MAX_CLIENTS, MAX_CLOCK_STEP_MS, MAX_DRIFT_PPM, MAX_EVENTS_PER_S, MAX_FAULTS, MAX_MASTERS, MAX_MIN_GRANTS,
    MAX_NEMESIS_RATE_PER_S, MAX_RETRIES, MAX_SEEDS, MAX_SENTINELS, MAX_TIME_MS, MAX_WALL_S, MIN_TTL_MS,
    did_you_mean, in_range, nearest, pair_in_range,
};
use super::schema::{
    Algorithm, DEFAULT_SENTINELS, ExtendMode, LockSpec, PersistenceMode, Profile, RetryToken, Scenario,
    TopologyKind, WaitSpec, WatchdogSpec,
};

/// Why a scenario file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// Dotted path of the offending field (`faults[0].duration_ms`); empty when the file
    /// itself could not be read.
    pub field: String,
    pub reason: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field.as_str() {
            "" => write!(f, "{}: {}", self.file.display(), self.reason),
            field => write!(f, "{}: field `{field}`: {}", self.file.display(), self.reason),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Reads and validates one scenario file.
pub fn load(file: &Path) -> Result<Scenario, ScenarioError> {
    let error = |field: &str, reason: String| ScenarioError {
        file: file.to_path_buf(),
        field: field.to_string(),
        reason,
    };
    let text = std::fs::read_to_string(file).map_err(|e| error("", format!("cannot read: {e}")))?;
    load_str(file, &text)
}

/// Parses and validates scenario text; `file` names it in errors.
pub fn load_str(file: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let error = |(field, reason): (String, String)| ScenarioError {
        file: file.to_path_buf(),
        field,
        reason,
    };
    let scenario = parse(text).map_err(error)?;
    validate(&scenario).map_err(error)?;
    Ok(scenario)
}

/// Expands files and directories (their `*.json`, sorted) into scenario files.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, ScenarioError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let listing = std::fs::read_dir(path).map_err(|e| ScenarioError {
                file: path.clone(),
                field: String::new(),
                reason: format!("cannot list the directory: {e}"),
            })?;
            let mut found: Vec<PathBuf> = listing
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
                .collect();
            if found.is_empty() {
                return Err(ScenarioError {
                    file: path.clone(),
                    field: String::new(),
                    reason: "no scenario files (*.json) in this directory".into(),
                });
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    files
        .into_iter()
        .map(|file| load(&file).map(|scenario| (file, scenario)))
        .collect()
}

/// Parses JSON into a scenario, returning the failing field's path and the reason.
fn parse(text: &str) -> Result<Scenario, (String, String)> {
    // serde would read a list as the fields of a struct, in order: refuse it plainly.
    match text.trim_start().chars().next() {
        Some('{') => {}
        None => return Err((String::new(), "empty: a scenario file is one JSON object".into())),
        Some(_) => {
            return Err((
                String::new(),
                "not a JSON object: a scenario file is one object, {\"name\": …}".into(),
            ));
        }
    }
    let mut json = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut json).map_err(|e| {
        // serde_path_to_error writes the root as "." and an unparsable spot as "?".
        let path = match e.path().to_string() {
            root if root == "." || root == "?" => String::new(),
            path => path,
        };
        let reason = e.into_inner().to_string();
        let child = |name: &str| {
            if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            }
        };
        // serde reports a missing field at its parent; name the field itself.
        if let Some(rest) = reason.strip_prefix("missing field `") {
            let (name, location) = rest.split_once('`').unwrap_or((rest, ""));
            return (child(name), format!("missing{location}"));
        }
        // Checks inside a fault object (see `Fault`) say "field `name`: reason".
        if let Some((name, why)) = reason
            .strip_prefix("field `")
            .and_then(|rest| rest.split_once("`: "))
        {
            return (child(name), why.to_string());
        }
        (path, plainer(&reason))
    })
}

/// serde's wording made plainer: the nearest valid name for an unknown field or value,
/// and what an untagged field takes instead of the Rust type's name.
fn plainer(reason: &str) -> String {
    for (prefix, what) in [("unknown field `", "field"), ("unknown variant `", "value")] {
        let Some(rest) = reason.strip_prefix(prefix) else {
            continue;
        };
        let Some((name, expected)) = rest.split_once('`') else {
            continue;
        };
        // "expected one of `a`, `b`" or "expected `a` or `b`": the names between backticks.
        let valid: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        return match nearest(name, valid.iter().copied()) {
            Some(near) => format!("unknown {what} `{name}`, did you mean `{near}`?"),
            None if valid.is_empty() => format!("unknown {what} `{name}`{expected}"),
            None => format!("unknown {what} `{name}` (expected one of: {})", valid.join(", ")),
        };
    }
    for (untagged, takes) in [
        ("WaitSpec", "a number of replicas or \"connected\""),
        ("WatchdogSpec", "true, false or {\"interval_ms\": n}"),
    ] {
        if reason.starts_with(&format!(
            "data did not match any variant of untagged enum {untagged}"
        )) {
            return format!("expected {takes}");
        }
    }
    // "invalid value: integer `-1`, expected u32" and the like: say what a count is.
    let reason = reason.replace("expected u8", "expected a whole number from 0 to 255");
    let reason = reason.replace("expected u32", "expected a whole number, at least 0");
    reason.replace("expected u64", "expected a whole number, at least 0")
}

/// The checks serde cannot express: every number in its range (see [`limits`]), every
/// name naming something.
fn validate(s: &Scenario) -> Result<(), (String, String)> {
    let fail = |field: &str, reason: &dyn fmt::Display| Err((field.to_string(), reason.to_string()));
    if s.name.trim().is_empty() {
        return fail("name", &"must not be empty");
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
    let masters = s.master_names().len();
    if masters > 1 && s.lock.algorithm != Algorithm::Redlock {
        return fail(
            "lock.algorithm",
            &format!("a single-node algorithm cannot run on {masters} masters: use `redlock`"),
        );
    }
    validate_lock(&s.lock)?;
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
        validate_fault(s, fault).map_err(|(field, reason)| (format!("faults[{i}].{field}"), reason))?;
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

/// The checks of one fault; the field is relative to the fault.
fn validate_fault(s: &Scenario, fault: &Fault) -> Result<(), (String, String)> {
    let fail = |field: &str, reason: String| Err((field.to_string(), reason));
    let nodes = s.node_names();
    let known = |name: &String| nodes.contains(name);
    let unknown = |name: &String| {
        let words = [
            "holder",
            "master",
            "any-client",
            "any-redis",
            "majority",
            "minority",
        ];
        let near = did_you_mean(name, nodes.iter().map(String::as_str).chain(words));
        format!("no node named `{name}`{near} (nodes: {})", nodes.join(", "))
    };
    match &fault.target {
        Some(Target::Nodes(names)) => {
            if let Some(name) = names.iter().find(|n| !known(n)) {
                return fail("target", unknown(name));
            }
        }
        Some(Target::Master) if s.master_names().len() > 1 => {
            return fail(
                "target",
                "`master` names the master of a single node; a Redlock topology has several: name one".into(),
            );
        }
        // The injector draws (masters - 1) / 2 masters: none of one or two.
        Some(Target::Minority) if s.master_names().len() < 3 => {
            return fail(
                "target",
                format!(
                    "`minority` of {} Redis master(s) is no node: it needs at least 3 masters",
                    s.master_names().len()
                ),
            );
        }
        _ => {}
    }
    if let Trigger::AtStep { .. } = fault.trigger {
        let clients = s.client_names();
        let only_clients = match &fault.target {
            None | Some(Target::Holder | Target::AnyClient) => true,
            Some(Target::Nodes(names)) => names.iter().all(|n| clients.contains(n)),
            Some(_) => false,
        };
        if !only_clients {
            return fail(
                "target",
                "a crash point is a step of a client: name clients, `holder` or `any-client`".into(),
            );
        }
    }
    let earliest = fault.trigger.earliest_ms();
    if earliest >= s.duration_ms {
        return fail(
            "at_ms",
            format!(
                "{earliest} is not before the end of the run ({} ms)",
                s.duration_ms
            ),
        );
    }
    if let Trigger::On { delay_ms, .. } = fault.trigger {
        in_range("delay_ms", delay_ms, 0, MAX_TIME_MS, "ms")?;
    }
    let positive = |field: &str, value: Option<u64>| match value {
        Some(ms) => in_range(field, ms, 1, MAX_TIME_MS, "ms"),
        None => Ok(()),
    };
    // Groups of node names that links run between: two or more, none empty, no node twice.
    let check_groups = |groups: &Vec<Vec<String>>| {
        if groups.len() < 2 || groups.iter().any(Vec::is_empty) {
            return fail(
                "groups",
                "needs at least two non-empty groups of node names".into(),
            );
        }
        let mut seen = Vec::new();
        for name in groups.iter().flatten() {
            if !known(name) {
                return fail("groups", unknown(name));
            }
            if seen.contains(&name) {
                return fail("groups", format!("`{name}` is in more than one group"));
            }
            seen.push(name);
        }
        Ok(())
    };
    // A latency or loss fault hits the links between groups or whole nodes, not both
    // (at a crash point the target only says whose step springs the fault).
    let check_links_or_nodes = |groups: &Option<Vec<Vec<String>>>| {
        let Some(groups) = groups else { return Ok(()) };
        if fault.target.is_some() && !matches!(fault.trigger, Trigger::AtStep { .. }) {
            return fail(
                "groups",
                "acts on the links between groups; a `target` acts on whole nodes: give one".into(),
            );
        }
        check_groups(groups)
    };
    match &fault.action {
        FaultAction::Pause { duration_ms } => positive("duration_ms", Some(*duration_ms))?,
        FaultAction::Crash { restart_after_ms } | FaultAction::PowerLoss { restart_after_ms } => {
            positive("restart_after_ms", *restart_after_ms)?
        }
        FaultAction::ClockJump { by_ms } => {
            in_range("by_ms", *by_ms, -MAX_CLOCK_STEP_MS, MAX_CLOCK_STEP_MS, "ms")?;
        }
        FaultAction::ClockDrift {
            rate_ppm,
            duration_ms,
        } => {
            positive("duration_ms", *duration_ms)?;
            in_range("rate_ppm", *rate_ppm, -MAX_DRIFT_PPM, MAX_DRIFT_PPM, "ppm")?;
        }
        FaultAction::Partition {
            groups, duration_ms, ..
        } => {
            positive("duration_ms", *duration_ms)?;
            check_groups(groups)?;
        }
        FaultAction::Latency {
            latency_ms,
            groups,
            duration_ms,
            ..
        } => {
            positive("duration_ms", *duration_ms)?;
            check_links_or_nodes(groups)?;
            pair_in_range("latency_ms", *latency_ms, 1, MAX_TIME_MS, "ms")?;
        }
        FaultAction::Loss {
            rate,
            groups,
            duration_ms,
            ..
        } => {
            positive("duration_ms", *duration_ms)?;
            check_links_or_nodes(groups)?;
            if !(0.0..1.0).contains(rate) {
                return fail("rate", format!("{rate} is not a fraction in [0, 1)"));
            }
        }
        FaultAction::Random(nemesis) => {
            let rate_per_s = nemesis.rate_per_s;
            if !(rate_per_s > 0.0 && rate_per_s <= MAX_NEMESIS_RATE_PER_S) {
                return fail(
                    "rate_per_s",
                    format!(
                        "{rate_per_s} is out of range: must be above 0 and at most {MAX_NEMESIS_RATE_PER_S} faults per second"
                    ),
                );
            }
            if nemesis.kinds.is_empty() {
                return fail("kinds", "needs at least one kind".into());
            }
            let has_replicas = s.redis_groups().iter().any(|group| group.len() > 1);
            if nemesis.kinds.contains(&RandomKind::ReplicationStall) && !has_replicas {
                return fail(
                    "kinds",
                    "`replication_stall` stalls a replica, and this topology has none".into(),
                );
            }
            pair_in_range("duration_ms", nemesis.duration_ms, 1, MAX_TIME_MS, "ms")?;
            pair_in_range("jump_ms", nemesis.jump_ms, 0, MAX_CLOCK_STEP_MS as u64, "ms")?;
            pair_in_range("latency_ms", nemesis.latency_ms, 1, MAX_TIME_MS, "ms")?;
            pair_in_range(
                "drift_ppm",
                nemesis.drift_ppm,
                -MAX_DRIFT_PPM,
                MAX_DRIFT_PPM,
                "ppm",
            )?;
            let [low, high] = nemesis.loss_rate;
            if !(0.0 <= low && low <= high && high < 1.0) {
                return fail(
                    "loss_rate",
                    format!("[{low}, {high}] is not a range of fractions in [0, 1)"),
                );
            }
        }
        FaultAction::ReplicationStall { duration_ms } => {
            positive("duration_ms", *duration_ms)?;
            let replicas: Vec<String> = s
                .redis_groups()
                .into_iter()
                .flat_map(|g| g.into_iter().skip(1))
                .collect();
            if let Some(Target::Nodes(names)) = &fault.target
                && let Some(name) = names.iter().find(|n| !replicas.contains(n))
            {
                return fail(
                    "target",
                    format!("`{name}` is not a replica (replicas: {})", replicas.join(", ")),
                );
            }
            if !matches!(fault.target, Some(Target::Nodes(_))) {
                return fail("target", "name the replica(s) to stall".into());
            }
        }
        FaultAction::Restart | FaultAction::Heal | FaultAction::Reset => {}
    }
    Ok(())
}

/// The lock settings serde cannot check.
fn validate_lock(lock: &LockSpec) -> Result<(), (String, String)> {
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
    if ttl > 0 && !(MIN_TTL_MS..=MAX_TIME_MS).contains(&ttl) {
        // A TTL of a few ms is almost always one meant in seconds.
        let hint = match ttl < MIN_TTL_MS {
            true => format!(" (for seconds write \"{ttl}s\")"),
            false => String::new(),
        };
        return fail(
            "ttl_ms",
            &format!("{ttl} is out of range: must be 0 (no expiry) or {MIN_TTL_MS}..={MAX_TIME_MS} ms{hint}"),
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
    use super::*;

    const GOOD: &str = r#"{
      "name": "single-node-gc-pause",
      "description": "The holder pauses longer than the TTL.",
      "duration_ms": 30000,
      "seeds": 100,
      "topology": { "kind": "single" },
      "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
      "clients": { "count": 3, "work_ms": [100, 500] },
      "network": { "latency_ms": [1, 5] },
      "faults": [ { "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": 4000 } ],
      "expect": { "mutual_exclusion": "violated" }
    }"#;

    fn error_of(text: &str) -> (String, String) {
        match parse(text) {
            Err(e) => e,
            Ok(s) => validate(&s).expect_err("scenario should be rejected"),
        }
    }

    fn replace(from: &str, to: &str) -> String {
        assert!(GOOD.contains(from), "test fixture lacks {from}");
        GOOD.replace(from, to)
    }

    #[test]
    fn the_issue_example_loads() {
        let s = parse(GOOD).unwrap();
        validate(&s).unwrap();
        assert_eq!(s.faults.len(), 1);
        assert_eq!(s.clients.think_ms, [10, 100]);
    }

    #[test]
    fn missing_field_is_named() {
        let (field, reason) = error_of(&replace(r#""topology": { "kind": "single" },"#, ""));
        assert_eq!(field, "topology");
        assert!(reason.starts_with("missing at line"), "{reason}");
        let (field, _) = error_of(&replace(r#", "ttl_ms": 2000"#, ""));
        assert_eq!(field, "lock.ttl_ms");
    }

    #[test]
    fn unknown_field_is_named() {
        let (field, reason) = error_of(&replace(r#""seeds": 100,"#, r#""seeds": 100, "sedes": 1,"#));
        assert_eq!(field, "sedes");
        assert!(reason.contains("unknown field"), "{reason}");
        let (field, reason) = error_of(&replace(r#""at_ms": 5000"#, r#""at_ms": 5000, "foo": 1"#));
        assert!(field.starts_with("faults[0]"), "{field}");
        assert!(reason.contains("foo"), "{reason}");
    }

    #[test]
    fn wrong_type_is_named() {
        let (field, reason) = error_of(&replace(r#""ttl_ms": 2000"#, r#""ttl_ms": true"#));
        assert_eq!(field, "lock.ttl_ms");
        assert!(reason.contains("invalid type"), "{reason}");
    }

    #[test]
    fn durations_may_carry_a_unit_and_a_ttl_meant_in_seconds_is_refused() {
        let s = parse(&replace(r#""ttl_ms": 2000"#, r#""ttl_ms": "2s""#)).unwrap();
        validate(&s).unwrap();
        assert_eq!(s.lock.ttl_ms, 2000);
        let (field, reason) = error_of(&replace(r#""ttl_ms": 2000"#, r#""ttl_ms": 8"#));
        assert_eq!(field, "lock.ttl_ms");
        assert!(reason.contains(r#"write "8s""#), "{reason}");
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
    fn a_minority_of_two_masters_is_refused() {
        let text = replace(
            r#"{ "kind": "single" }"#,
            r#"{ "kind": "redlock", "masters": 2 }"#,
        )
        .replace(r#""algorithm": "lua-release""#, r#""algorithm": "redlock""#)
        .replace(r#""target": "holder""#, r#""target": "minority""#);
        let (field, reason) = error_of(&text);
        assert_eq!(field, "faults[0].target");
        assert!(reason.contains("at least 3 masters"), "{reason}");
        validate(&parse(&text.replace(r#""masters": 2"#, r#""masters": 3"#)).unwrap()).unwrap();
    }

    #[test]
    fn negative_duration_is_rejected() {
        let (field, reason) = error_of(&replace(r#""duration_ms": 30000"#, r#""duration_ms": -1"#));
        assert_eq!(field, "duration_ms");
        assert!(reason.contains("-1"), "{reason}");
        let (field, _) = error_of(&replace(r#""duration_ms": 4000"#, r#""duration_ms": -4000"#));
        assert_eq!(field, "faults[0].duration_ms");
    }

    #[test]
    fn fault_fields_are_checked_per_kind() {
        let (field, reason) = error_of(&replace(r#", "duration_ms": 4000"#, ""));
        assert_eq!(field, "faults[0].duration_ms");
        assert!(reason.starts_with("required by kind `pause`"), "{reason}");
        let (field, _) = error_of(&replace(
            r#""duration_ms": 4000"#,
            r#""duration_ms": 4000, "by_ms": 5"#,
        ));
        assert_eq!(field, "faults[0].by_ms");
        let (field, _) = error_of(&replace(r#""kind": "pause""#, r#""kind": "nap""#));
        assert_eq!(field, "faults[0].kind");
    }

    #[test]
    fn a_replication_stall_needs_a_replica() {
        let stall = r#"{ "kind": "replication_stall", "target": "redis-1", "at_ms": 5000 }"#;
        let text = replace(r#"{ "kind": "single" }"#, r#"{ "kind": "replicated" }"#);
        let text = text.replace(
            r#"{ "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": 4000 }"#,
            stall,
        );
        let (field, reason) = error_of(&text);
        assert_eq!(field, "faults[0].target");
        assert!(reason.contains("redis-1-replica-1"), "{reason}");
        let fixed = text.replace(r#""target": "redis-1","#, r#""target": "redis-1-replica-1","#);
        validate(&parse(&fixed).unwrap()).unwrap();
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

    #[test]
    fn load_names_the_file() {
        let dir = std::env::temp_dir().join(format!("locksim-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.json");
        std::fs::write(&file, r#"{"name": "x", "duration_ms": -1}"#).unwrap();
        let message = load(&file).unwrap_err().to_string();
        assert!(message.starts_with(&file.display().to_string()), "{message}");
        assert!(message.contains("duration_ms"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
