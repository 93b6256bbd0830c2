//! A pause: a process frozen (GC pause, VM stop, SIGSTOP) while time and the network go on.

use super::kind::{Checks, Draw, Drawn, Kind, KindFields, LiveCheck, Targets, kind, positive};
use super::strike::Strike;
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
