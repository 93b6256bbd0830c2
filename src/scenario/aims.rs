//! The dangerous state each of a scenario's faults aims at: the states its seeds must
//! reach, in at least one seed, before a checker that found nothing may say *holds*.
//!
//! The mapping is small and explicit, one rule per fault shape; a fault that fits none
//! aims at nothing (its seeds' coverage is still counted and reported):
//!
//! - a crash (or power loss, or restart) triggered `on: write_before_replication` aims at
//!   `failover-unreplicated`;
//! - any other crash or power loss of a master that does not restart, where the master has
//!   replicas to fail over to, aims at `failover-while-held`;
//! - a crash or power loss that restarts, or a restart, of a master aims at
//!   `crash-in-quorum`;
//! - a clock jump of a master that does not strike at 0 ms (a step at the start is an
//!   offset, not a jump while anyone holds) aims at `clock-jump-in-quorum`;
//! - a pause at least as long as the TTL aims at `release-after-expiry` when it strikes on
//!   the release path (step `before_release` or `after_get`), else at
//!   `holder-paused-past-validity` when it strikes the holder (target `holder`, or step
//!   `after_acquire`); a shorter pause is meant to stay within the validity;
//! - latency or loss at step `before_renew` aims at `renewal-racing-expiry` (a slowed
//!   renewal may land or be answered after the key expired);
//! - a partition that cuts clients from Redis nodes, triggered when a client holds the lock
//!   (`on: acquired`, step `after_acquire` or `before_renew`), aims at `holder-cut-off` (a
//!   renewal cut off times out; whether the key expires first depends on the timeouts).
//!
//! The nemesis aims at nothing: it searches at random, and what it reached is reported.

use super::fault::{Crash, Fault, FaultAction, Partition, Pause, PowerLoss, Target, Trigger, TriggerEvent};
use super::schema::Scenario;
use crate::check::coverage::State;
use crate::client::Step;

impl Scenario {
    /// The state one of this scenario's faults aims at, if any (see the module's rules).
    pub fn aim(&self, fault: &Fault) -> Option<State> {
        let step = match fault.trigger {
            Trigger::AtStep { step, .. } => Some(step),
            Trigger::At { .. } | Trigger::On { .. } => None,
        };
        let on = |event| matches!(fault.trigger, Trigger::On { event: e, .. } if e == event);
        let at_a_master = fault
            .target
            .as_ref()
            .is_some_and(|target| self.names_a_master(target));
        match &fault.action {
            FaultAction::Crash(_) | FaultAction::PowerLoss(_) | FaultAction::Restart(_)
                if on(TriggerEvent::WriteBeforeReplication) =>
            {
                Some(State::FailoverUnreplicated)
            }
            FaultAction::Crash(Crash {
                restart_after_ms: None,
            })
            | FaultAction::PowerLoss(PowerLoss {
                restart_after_ms: None,
            }) if at_a_master && self.redis_groups().iter().any(|group| group.len() > 1) => {
                Some(State::FailoverWhileHeld)
            }
            FaultAction::Crash(Crash {
                restart_after_ms: Some(_),
            })
            | FaultAction::PowerLoss(PowerLoss {
                restart_after_ms: Some(_),
            })
            | FaultAction::Restart(_)
                if at_a_master =>
            {
                Some(State::CrashInQuorum)
            }
            FaultAction::ClockJump(_) if at_a_master && fault.trigger != (Trigger::At { at_ms: 0 }) => {
                Some(State::ClockJumpInQuorum)
            }
            FaultAction::Pause(Pause { duration_ms }) if *duration_ms >= self.lock.options().ttl_ms => match step {
                Some(Step::BeforeRelease | Step::AfterGet) => Some(State::ReleaseAfterExpiry),
                Some(Step::AfterAcquire) => Some(State::HolderPausedPastValidity),
                None if fault.target == Some(Target::Holder) => Some(State::HolderPausedPastValidity),
                _ => None,
            },
            FaultAction::Latency(_) | FaultAction::Loss(_) if step == Some(Step::BeforeRenew) => {
                Some(State::RenewalRacingExpiry)
            }
            FaultAction::Partition(Partition { groups, .. })
                if (on(TriggerEvent::Acquired)
                    || matches!(step, Some(Step::AfterAcquire | Step::BeforeRenew)))
                    && cuts_clients_from_redis(groups) =>
            {
                Some(State::HolderCutOff)
            }
            _ => None,
        }
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

/// Whether a partition's groups put some client and some Redis node on different sides.
fn cuts_clients_from_redis(groups: &[Vec<String>]) -> bool {
    let has = |group: &Vec<String>, prefix: &str| group.iter().any(|node| node.starts_with(prefix));
    groups
        .iter()
        .enumerate()
        .any(|(i, a)| has(a, "client-") && groups.iter().enumerate().any(|(j, b)| i != j && has(b, "redis-")))
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
