//! Clock faults: a step of a node's wall clock (NTP step, `date -s`) and a change of its
//! rate (a bad oscillator, a VM losing ticks).

use rand::RngExt as _;

use super::kind::{Aiming, Checks, Draw, Drawn, Kind, KindFields, LiveCheck, Targets, kind, positive};
use super::strike::Strike;
use crate::check::coverage::State;
use crate::scenario::limits::{FieldError, MAX_CLOCK_STEP_MS, MAX_DRIFT_PPM, in_range};

kind! {
    /// Step a node's wall clock by `by_ms` (forward if positive); monotonic time is unmoved.
    ClockJump { by_ms: i64 }
}

kind! {
    /// Make a node's clock run `rate_ppm` fast (or slow, if negative), for `duration_ms`
    /// or for the rest of the run.
    ClockDrift { rate_ppm: i64, duration_ms: Option<u64> }
}

impl Kind for ClockJump {
    const TARGETS: Targets = Targets::Needed;
    const MOVES_CLOCKS: bool = true;
    const RUNS_LIVE: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(ClockJump {
            by_ms: fields.need("by_ms", &fields.by_ms)?,
        })
    }

    fn validate(&self, _checks: &Checks) -> Result<(), FieldError> {
        in_range("by_ms", self.by_ms, -MAX_CLOCK_STEP_MS, MAX_CLOCK_STEP_MS, "ms")
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        on.jump(targets, self.by_ms)
    }

    /// A jump of a master aims at `clock-jump-in-quorum`, unless it strikes at 0 ms: a
    /// step at the start is an offset, not a jump while anyone holds.
    fn aim(&self, aiming: &Aiming) -> Option<State> {
        (aiming.at_a_master && !aiming.at_start).then_some(State::ClockJumpInQuorum)
    }

    fn live_refusal(&self, live: &LiveCheck) -> Option<&'static str> {
        live.names_client.then_some(
            "a live clock jump steps the Redis nodes' clocks only (a worker's clock is its host's)",
        )
    }
}

impl Drawn for ClockJump {
    fn draw(draw: &mut Draw) -> Self {
        let [low, high] = draw.nemesis.jump_ms;
        let by = draw.rng.random_range(low..=high) as i64;
        ClockJump {
            by_ms: if draw.rng.random_bool(0.5) { by } else { -by },
        }
    }
}

impl Kind for ClockDrift {
    const TARGETS: Targets = Targets::Needed;
    const MOVES_CLOCKS: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(ClockDrift {
            rate_ppm: fields.need("rate_ppm", &fields.rate_ppm)?,
            duration_ms: fields.duration_ms(true)?,
        })
    }

    fn validate(&self, _checks: &Checks) -> Result<(), FieldError> {
        positive("duration_ms", self.duration_ms)?;
        in_range("rate_ppm", self.rate_ppm, -MAX_DRIFT_PPM, MAX_DRIFT_PPM, "ppm")
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        on.drift(targets, self.rate_ppm, self.duration_ms).await
    }
}

impl Drawn for ClockDrift {
    fn draw(draw: &mut Draw) -> Self {
        let [low, high] = draw.nemesis.drift_ppm;
        ClockDrift {
            rate_ppm: draw.rng.random_range(low..=high),
            duration_ms: Some(draw.duration_ms),
        }
    }
}
