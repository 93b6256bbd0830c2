//! Process deaths: a crash (the process killed), a power loss (its machine failing, the
//! page cache lost too) and a restart (killed and started again at once). They share the
//! strike: a node is down while any of them covers it.

use super::kind::{Aiming, Checks, Draw, Drawn, Kind, KindFields, LiveCheck, Targets, kind, positive};
use super::strike::{Failure, Strike};
use crate::check::coverage::State;
use crate::scenario::limits::FieldError;

kind! {
    /// Kill a process: tasks, sockets and memory are gone; a Redis node without
    /// persistence forgets every key. Restarts after `restart_after_ms` if given.
    Crash { restart_after_ms: Option<u64> }
}

kind! {
    /// The node's machine fails (power cut, OS crash): a crash that also loses what the
    /// OS had not yet written to disk (an `everysec` AOF's last second). A process crash
    /// loses none of it: Redis writes the AOF before it replies.
    PowerLoss { restart_after_ms: Option<u64> }
}

kind! {
    /// Kill and start again at once (a deploy, an OOM kill with a supervisor).
    Restart {}
}

/// What a death aims at: struck `on: write_before_replication`, `failover-unreplicated`;
/// else, on a master, `failover-while-held` when it does not restart and the master has
/// replicas to fail over to, `crash-in-quorum` when it restarts (`restart_after_ms`).
fn aim_death(aiming: &Aiming, restart_after_ms: Option<u64>) -> Option<State> {
    match restart_after_ms {
        _ if aiming.on_write_before_replication => Some(State::FailoverUnreplicated),
        None if aiming.at_a_master && aiming.has_replicas => Some(State::FailoverWhileHeld),
        Some(_) if aiming.at_a_master => Some(State::CrashInQuorum),
        _ => None,
    }
}

impl Kind for Crash {
    const TARGETS: Targets = Targets::Needed;
    const RUNS_LIVE: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(Crash {
            restart_after_ms: fields.restart_after_ms,
        })
    }

    fn validate(&self, _checks: &Checks) -> Result<(), FieldError> {
        positive("restart_after_ms", self.restart_after_ms)
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        on.crash(Failure::Process, targets, self.restart_after_ms).await
    }

    fn aim(&self, aiming: &Aiming) -> Option<State> {
        aim_death(aiming, self.restart_after_ms)
    }
}

impl Drawn for Crash {
    fn draw(draw: &mut Draw) -> Self {
        Crash {
            restart_after_ms: Some(draw.duration_ms),
        }
    }
}

impl Kind for PowerLoss {
    const TARGETS: Targets = Targets::Needed;
    const RUNS_LIVE: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(PowerLoss {
            restart_after_ms: fields.restart_after_ms,
        })
    }

    fn validate(&self, _checks: &Checks) -> Result<(), FieldError> {
        positive("restart_after_ms", self.restart_after_ms)
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        on.crash(Failure::Machine, targets, self.restart_after_ms).await
    }

    fn aim(&self, aiming: &Aiming) -> Option<State> {
        aim_death(aiming, self.restart_after_ms)
    }

    fn live_refusal(&self, live: &LiveCheck) -> Option<&'static str> {
        (live.redis_server && live.cached_aof).then_some(
            "a power loss on redis-server: its AOF's page cache outlives a killed process (locksim's nodes lose it)",
        )
    }
}

impl Kind for Restart {
    const TARGETS: Targets = Targets::Needed;
    const RUNS_LIVE: bool = true;

    fn build(_fields: &KindFields) -> Result<Self, String> {
        Ok(Restart {})
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        on.crash(Failure::Process, targets, Some(0)).await
    }

    fn aim(&self, aiming: &Aiming) -> Option<State> {
        aim_death(aiming, Some(0))
    }
}

impl Drawn for Restart {
    fn draw(_draw: &mut Draw) -> Self {
        Restart {}
    }
}
