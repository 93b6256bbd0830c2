//! The fault schedule: each fault of the scenario, injected at its true time.

use std::collections::BTreeMap;
use std::time::Duration;

use madsim::runtime::Handle;
use madsim::task::NodeId;

use super::clock::{SimClock, true_now_ns};
use super::recorder::Recorder;
use crate::history::EventKind;
use crate::scenario::{Fault, FaultAction, Target};

/// The name faults are recorded under in the history.
pub const WORLD: &str = "world";

/// What the injector can reach: every node and every clock, by name.
pub struct Reach {
    pub nodes: BTreeMap<String, NodeId>,
    pub clocks: BTreeMap<String, SimClock>,
    pub recorder: Recorder,
}

impl Reach {
    async fn resolve(&self, target: &Target) -> String {
        match target {
            Target::Holder => self.recorder.holder_or_next().await,
            Target::Node(name) => name.clone(),
        }
    }

    fn record(&self, kind: EventKind) {
        self.recorder.record(WORLD, (true_now_ns() / 1000) as i64, kind);
    }
}

/// Waits for the fault's time, then injects it.
pub async fn inject(fault: Fault, reach: &Reach) {
    sleep_until_true_ms(fault.at_ms).await;
    let name = reach.resolve(&fault.target).await;
    match fault.action {
        FaultAction::Pause { duration_ms } => {
            let description = format!("pause {name} for {duration_ms} ms");
            reach.record(EventKind::FaultStarted {
                fault: description.clone(),
            });
            Handle::current().pause(reach.nodes[&name]);
            madsim::time::sleep(Duration::from_millis(duration_ms)).await;
            Handle::current().resume(reach.nodes[&name]);
            reach.record(EventKind::FaultEnded { fault: description });
        }
        FaultAction::ClockJump { by_ms } => {
            reach.clocks[&name].jump_ms(by_ms);
            reach.record(EventKind::FaultStarted {
                fault: format!("clock of {name} jumps {by_ms:+} ms"),
            });
        }
    }
}

/// Sleeps until true time `at_ms` since the start of the run.
async fn sleep_until_true_ms(at_ms: u64) {
    let at_ns = at_ms * 1_000_000;
    let now_ns = true_now_ns();
    if at_ns > now_ns {
        madsim::time::sleep(Duration::from_nanos(at_ns - now_ns)).await;
    }
}
