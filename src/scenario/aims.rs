//! The dangerous state each of a scenario's faults aims at: the states its seeds must
//! reach, in at least one seed, before a checker that found nothing may say *holds*.
//!
//! The mapping is small and explicit, one rule per fault shape, each written in the file of
//! its kind (`fault_kinds/`): a death (crash, power loss, restart) aims at
//! `failover-unreplicated`, `failover-while-held` or `crash-in-quorum`; a clock jump of a
//! master at `clock-jump-in-quorum`; a pause at least as long as the TTL at
//! `release-after-expiry` or `holder-paused-past-validity`; latency or loss at a renewal at
//! `renewal-racing-expiry`; a partition of the holder at `holder-cut-off`. A fault that
//! fits none aims at nothing (its seeds' coverage is still counted and reported), and the
//! nemesis aims at nothing: it searches at random, and what it reached is reported.
//!
//! Here: what the rules see of a fault's trigger and target in its scenario.

use super::fault::{Fault, Target, Trigger, TriggerEvent};
use super::fault_kinds::kind::Aiming;
use super::schema::Scenario;
use crate::check::coverage::State;

impl Scenario {
    /// The state one of this scenario's faults aims at, if any (see the module's rules).
    pub fn aim(&self, fault: &Fault) -> Option<State> {
        let on = |event| matches!(fault.trigger, Trigger::On { event: e, .. } if e == event);
        fault.action.aim(&Aiming {
            step: match fault.trigger {
                Trigger::AtStep { step, .. } => Some(step),
                Trigger::At { .. } | Trigger::On { .. } => None,
            },
            on_acquired: on(TriggerEvent::Acquired),
            on_write_before_replication: on(TriggerEvent::WriteBeforeReplication),
            at_start: fault.trigger == (Trigger::At { at_ms: 0 }),
            at_holder: fault.target == Some(Target::Holder),
            at_a_master: fault
                .target
                .as_ref()
                .is_some_and(|target| self.names_a_master(target)),
            has_replicas: self.redis_groups().iter().any(|group| group.len() > 1),
            ttl_ms: self.lock.options().ttl_ms,
        })
    }

    /// Whether `target` strikes a Redis master (a node that may grant the lock): `master`,
    /// any Redis node, a majority or minority of the masters, or masters by name.
    fn names_a_master(&self, target: &Target) -> bool {
        match target {
            Target::Master | Target::AnyRedis | Target::Majority | Target::Minority => true,
            Target::Nodes(names) => {
                let groups = self.redis_groups();
                names
                    .iter()
                    .any(|name| groups.iter().any(|group| group[0] == *name))
            }
            Target::Holder | Target::AnyClient => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    /// What each of `faults` aims at, in a replicated scenario with a 2000 ms TTL.
    fn aims(faults: &str) -> Vec<State> {
        let text = format!(
            r#"{{"name": "t", "duration_ms": 10000, "topology": {{"kind": "replicated"}},
                "lock": {{"algorithm": "lua-release", "ttl_ms": 2000}}, "clients": {{"count": 2, "work_ms": [100, 200]}},
                "faults": {faults}}}"#
        );
        let scenario = load_str(std::path::Path::new("t.json"), &text).unwrap();
        scenario
            .faults
            .iter()
            .filter_map(|fault| scenario.aim(fault))
            .collect()
    }

    #[test]
    fn each_fault_shape_aims_at_its_state() {
        let cases = [
            (
                r#"{"kind": "crash", "target": "master", "on": "write_before_replication", "at_ms": 0}"#,
                vec![State::FailoverUnreplicated],
            ),
            (
                r#"{"kind": "crash", "target": "master", "at_ms": 100}"#,
                vec![State::FailoverWhileHeld],
            ),
            (
                r#"{"kind": "crash", "target": "redis-1", "at_ms": 100, "restart_after_ms": 50}"#,
                vec![State::CrashInQuorum],
            ),
            (
                r#"{"kind": "clock_jump", "target": "master", "at_ms": 100, "by_ms": 5000}"#,
                vec![State::ClockJumpInQuorum],
            ),
            (
                r#"{"kind": "pause", "target": "holder", "at_ms": 100, "duration_ms": 2000}"#,
                vec![State::HolderPausedPastValidity],
            ),
            (
                r#"{"kind": "pause", "target": "any-client", "on": "crash_point", "step": "before_release", "at_ms": 0, "duration_ms": 3000}"#,
                vec![State::ReleaseAfterExpiry],
            ),
            (
                r#"{"kind": "latency", "latency_ms": [1500, 1500], "on": "crash_point", "step": "before_renew", "target": "client-1", "duration_ms": 1000}"#,
                vec![State::RenewalRacingExpiry],
            ),
            (
                r#"{"kind": "partition", "groups": [["redis-1"], ["client-1"]], "on": "acquired", "at_ms": 0, "duration_ms": 1000}"#,
                vec![State::HolderCutOff],
            ),
            (
                r#"{"kind": "partition", "groups": [["redis-1"], ["client-1"]], "on": "crash_point", "step": "before_renew", "target": "client-1", "duration_ms": 1000}"#,
                vec![State::HolderCutOff],
            ),
        ];
        for (fault, expected) in cases {
            assert_eq!(aims(&format!("[{fault}]")), expected, "{fault}");
        }
    }

    #[test]
    fn faults_meant_to_stay_safe_aim_at_nothing() {
        for fault in [
            // A pause shorter than the TTL, a jump at the start, a replica's restart.
            r#"{"kind": "pause", "target": "holder", "at_ms": 100, "duration_ms": 1000}"#,
            r#"{"kind": "clock_jump", "target": "redis-1-replica-1", "at_ms": 0, "by_ms": 2500}"#,
            r#"{"kind": "restart", "target": "redis-1-replica-1", "at_ms": 100}"#,
            r#"{"kind": "random", "rate_per_s": 1.0, "kinds": ["pause", "crash"], "duration_ms": [100, 3000]}"#,
        ] {
            assert_eq!(aims(&format!("[{fault}]")), [], "{fault}");
        }
    }
}
