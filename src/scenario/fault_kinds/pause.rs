//! A pause: a process frozen (GC pause, VM stop, SIGSTOP) while time and the network go on.

use super::kind::{Aiming, Checks, Draw, Drawn, Kind, KindFields, LiveCheck, Targets, kind, positive};
use super::strike::Strike;
use crate::check::coverage::State;
use crate::client::Step;
use crate::scenario::limits::FieldError;

kind! {
    /// Freeze a process (GC pause, VM stop, SIGSTOP): its tasks stop, time goes on.
    Pause { duration_ms: u64 }
}

impl Kind for Pause {
    const TARGETS: Targets = Targets::Needed;
    const RUNS_LIVE: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(Pause {
            duration_ms: fields.duration_ms(false)?.unwrap_or_default(),
        })
    }

    fn validate(&self, _checks: &Checks) -> Result<(), FieldError> {
        positive("duration_ms", Some(self.duration_ms))
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        on.pause(targets, self.duration_ms).await;
        Ok(())
    }

    /// A pause at least as long as the TTL aims at `release-after-expiry` on the release
    /// path (step `before_release` or `after_get`), else at `holder-paused-past-validity`
    /// when it strikes the holder (target `holder`, or step `after_acquire`); a shorter
    /// pause is meant to stay within the validity.
    fn aim(&self, aiming: &Aiming) -> Option<State> {
        if self.duration_ms < aiming.ttl_ms {
            return None;
        }
        match aiming.step {
            Some(Step::BeforeRelease | Step::AfterGet) => Some(State::ReleaseAfterExpiry),
            Some(Step::AfterAcquire) => Some(State::HolderPausedPastValidity),
            None if aiming.at_holder => Some(State::HolderPausedPastValidity),
            _ => None,
        }
    }

    fn live_refusal(&self, live: &LiveCheck) -> Option<&'static str> {
        (live.names_redis && !live.redis_server)
            .then_some("pausing a Redis node needs --redis-server (locksim's nodes run inside locksim)")
    }
}

impl Drawn for Pause {
    fn draw(draw: &mut Draw) -> Self {
        Pause {
            duration_ms: draw.duration_ms,
        }
    }
}
