//! The one list of fault kinds, for every macro that needs all of them: each kind's variant
//! and the name files use, and the kinds the nemesis draws.
//!
//! [`with_fault_kinds!`] hands the list to the macro it is given, so that the enums made
//! from it in different files (`FaultAction` and `FaultKind` in `mod.rs`, `RandomKind` in
//! `nemesis.rs`) cannot disagree, and neither file imports the other to share it.

/// Calls `$callback! { kinds: { Variant = "name", … } drawn: { Variant, … } }` with the
/// list of fault kinds. The drawn kinds' names are their variants in snake_case.
macro_rules! with_fault_kinds {
    ($callback:ident) => {
        $callback! {
            kinds: {
                Pause = "pause",
                Crash = "crash",
                PowerLoss = "power_loss",
                Restart = "restart",
                ClockJump = "clock_jump",
                ClockDrift = "clock_drift",
                Partition = "partition",
                Heal = "heal",
                Latency = "latency",
                Loss = "loss",
                Reset = "reset",
                ReplicationStall = "replication_stall",
            }
            drawn: {
                Pause, Crash, Restart, ClockJump, ClockDrift, Partition, Heal, Latency, Loss, Reset,
                ReplicationStall,
            }
        }
    };
}

pub(super) use with_fault_kinds;
