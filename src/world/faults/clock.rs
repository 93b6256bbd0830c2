//! Clock faults: a step of the wall clock (NTP step, `date -s`) and a change of rate
//! (a bad oscillator, a VM losing ticks).

use super::{Reach, sleep_ms};
use crate::history::EventKind;

/// Steps every target's wall clock by `by_ms`.
pub fn jump(targets: &[String], by_ms: i64, reach: &Reach) {
    for name in targets {
        reach.clocks[name].jump_ms(by_ms);
    }
    reach.record(EventKind::FaultStarted {
        fault: format!("clock of {} jumps {by_ms:+} ms", targets.join(",")),
    });
}

/// Makes every target's clock run at `rate_ppm`; restores each one's previous rate after
/// `duration_ms` if given.
pub async fn drift(targets: &[String], rate_ppm: i64, duration_ms: Option<u64>, reach: &Reach) {
    let description = format!("clock of {} drifts {rate_ppm:+} ppm", targets.join(","));
    let previous: Vec<i64> = targets.iter().map(|name| reach.clocks[name].rate_ppm()).collect();
    for name in targets {
        reach.clocks[name].set_rate_ppm(rate_ppm);
    }
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    for (name, rate) in targets.iter().zip(previous) {
        reach.clocks[name].set_rate_ppm(rate);
    }
    reach.record(EventKind::FaultEnded { fault: description });
}
