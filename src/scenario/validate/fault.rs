//! The checks of one fault that serde cannot express: its target names nodes, its times
//! fall inside the run, its groups are groups.

use super::super::fault::{Fault, FaultAction, Nemesis, RandomKind, Target, Trigger};
use super::super::fault_kinds::kind::Checks;
use super::super::limits::{
    FieldError, MAX_CLOCK_STEP_MS, MAX_DRIFT_PPM, MAX_NEMESIS_RATE_PER_S, MAX_TIME_MS, did_you_mean,
    in_range, pair_in_range,
};
use super::super::schema::Scenario;

/// The checks of one fault; the field is relative to the fault.
pub(super) fn validate_fault(s: &Scenario, fault: &Fault) -> Result<(), (String, String)> {
    let fail = |field: &str, reason: String| Err((field.to_string(), reason));
    let nodes = s.node_names();
    let masters = s.master_names().len();
    // A word's own rules, the same whether it is the whole target or a name in a list or
    // a group (where it is resolved when the fault strikes).
    let check_word = |word: &Target| match word {
        Target::Master if masters > 1 => Err(
            "`master` names the master of a single node; a Redlock topology has several: name one"
                .to_string(),
        ),
        // The injector draws (masters - 1) / 2 masters: none of one or two.
        Target::Minority if masters < 3 => Err(format!(
            "`minority` of {masters} Redis master(s) is no node: it needs at least 3 masters"
        )),
        _ => Ok(()),
    };
    let check_name = |name: &String| match Target::word(name) {
        Some(word) => check_word(&word),
        None if nodes.contains(name) => Ok(()),
        None => {
            let near = did_you_mean(name, nodes.iter().map(String::as_str).chain(Target::WORDS));
            Err(format!(
                "no node named `{name}`{near} (nodes: {})",
                nodes.join(", ")
            ))
        }
    };
    match &fault.target {
        Some(Target::Nodes(names)) => {
            for name in names {
                check_name(name).map_err(|why| ("target".to_string(), why))?;
            }
        }
        Some(word) => check_word(word).map_err(|why| ("target".to_string(), why))?,
        None => {}
    }
    if let Trigger::AtStep { .. } = fault.trigger {
        let clients = s.client_names();
        let only_clients = match &fault.target {
            None | Some(Target::Holder | Target::AnyClient) => true,
            Some(Target::Nodes(names)) => names.iter().all(|n| {
                clients.contains(n) || matches!(Target::word(n), Some(Target::Holder | Target::AnyClient))
            }),
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
    // Groups of node names that links run between: two or more, none empty, no node twice.
    let check_groups = |groups: &[Vec<String>]| {
        if groups.len() < 2 || groups.iter().any(Vec::is_empty) {
            return fail(
                "groups",
                "needs at least two non-empty groups of node names".into(),
            );
        }
        let mut seen = Vec::new();
        for name in groups.iter().flatten() {
            check_name(name).map_err(|why| ("groups".to_string(), why))?;
            // A word may stand in two groups (`holder` and `any-client` may be one node):
            // `resolve_groups` places each node once when the fault strikes.
            if Target::word(name).is_none() && seen.contains(&name) {
                return fail("groups", format!("`{name}` is in more than one group"));
            }
            seen.push(name);
        }
        Ok(())
    };
    let replicas: Vec<String> = s
        .redis_groups()
        .into_iter()
        .flat_map(|g| g.into_iter().skip(1))
        .collect();
    match &fault.action {
        FaultAction::Random(nemesis) => validate_nemesis(nemesis, !replicas.is_empty()),
        action => action.validate(&Checks {
            target: fault.target.as_ref(),
            at_step: matches!(fault.trigger, Trigger::AtStep { .. }),
            replicas: &replicas,
            groups: &check_groups,
        }),
    }
}

/// The checks of the nemesis' ranges (`has_replicas`: the topology has a replica to stall).
fn validate_nemesis(nemesis: &Nemesis, has_replicas: bool) -> Result<(), FieldError> {
    let fail = |field: &str, reason: String| Err((field.to_string(), reason));
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::testing::*;

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
}
