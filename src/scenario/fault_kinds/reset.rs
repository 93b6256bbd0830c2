//! A reset: every TCP connection of a node closed (a load balancer or NAT dropping them).

use super::kind::{Draw, Drawn, Kind, KindFields, Targets, kind};
use super::strike::Strike;

kind! {
    /// Close every TCP connection of a node (a load balancer or NAT dropping them).
    Reset {}
}

impl Kind for Reset {
    const TARGETS: Targets = Targets::Needed;
    const RUNS_LIVE: bool = true;

    fn build(_fields: &KindFields) -> Result<Self, String> {
        Ok(Reset {})
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        on.reset(targets);
        Ok(())
    }
}

impl Drawn for Reset {
    fn draw(_draw: &mut Draw) -> Self {
        Reset {}
    }
}
