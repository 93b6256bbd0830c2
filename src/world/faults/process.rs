//! Process faults: pause (a GC or VM stop: tasks freeze, time and the network go on) and
//! crash (tasks, sockets and memory gone; a restart runs the node's start-up again).

use madsim::runtime::Handle;

use super::{Reach, sleep_ms};
use crate::history::EventKind;

/// Freezes every target for `duration_ms`, then lets them go on where they stopped.
pub async fn pause(targets: &[String], duration_ms: u64, reach: &Reach) {
    let description = format!("pause {} for {duration_ms} ms", targets.join(","));
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    for name in targets {
        Handle::current().pause(reach.nodes[name]);
    }
    sleep_ms(duration_ms).await;
    for name in targets {
        Handle::current().resume(reach.nodes[name]);
    }
    reach.record(EventKind::FaultEnded { fault: description });
}

/// Kills every target that is up; restarts those after `restart_after_ms` if given
/// (0 = at once), but a Redis node not before the topology's `restart_delay_ms`. A node
/// that is already down is left to the fault that killed it.
pub async fn crash(targets: &[String], restart_after_ms: Option<u64>, reach: &Reach) {
    let killed: Vec<String> = {
        let mut down = reach.down.lock().expect("down-set lock poisoned");
        targets
            .iter()
            .filter(|name| down.insert(name.to_string()))
            .cloned()
            .collect()
    };
    if killed.is_empty() {
        return;
    }
    // A Redis node comes back no sooner than its restart delay allows.
    let restart_after_ms = restart_after_ms.map(|ms| {
        killed
            .iter()
            .filter_map(|name| reach.restart_delay_ms.get(name))
            .fold(ms, |at, &delay| at.max(delay))
    });
    let description = match restart_after_ms {
        None => format!("crash {}", killed.join(",")),
        Some(ms) => format!("crash {}, restart after {ms} ms", killed.join(",")),
    };
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    for name in &killed {
        Handle::current().kill(reach.nodes[name]);
        reach.record_on(name, EventKind::Crashed);
    }
    let Some(after_ms) = restart_after_ms else { return };
    sleep_ms(after_ms).await;
    for name in &killed {
        // Restart only what was killed (madsim cannot bind a live node's port twice).
        Handle::current().restart(reach.nodes[name]);
        reach.down.lock().expect("down-set lock poisoned").remove(name);
        reach.record_on(name, EventKind::Restarted);
    }
    reach.record(EventKind::FaultEnded { fault: description });
}
