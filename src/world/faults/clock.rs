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

/// Makes every target's clock run at `rate_ppm`; after `duration_ms` if given, gives it
/// back the rate of the latest drift still covering it, or with none the rate it had
/// before its first drift. A step of the clock meanwhile is kept: it moved the reading,
/// the drift its rate.
pub async fn drift(targets: &[String], rate_ppm: i64, duration_ms: Option<u64>, reach: &Reach) {
    let id = reach.new_fault();
    let description = format!("clock of {} drifts {rate_ppm:+} ppm", targets.join(","));
    for name in targets {
        let clock = &reach.clocks[name];
        let mut covers = reach.covers();
        if covers.drifts.cover(name.clone(), id, rate_ppm) {
            covers.base_rates.insert(name.clone(), clock.rate_ppm());
        }
        clock.set_rate_ppm(rate_ppm);
    }
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    for name in targets {
        let mut covers = reach.covers();
        covers.drifts.uncover(name, id);
        let rate = match covers.drifts.values(name).last() {
            Some(&latest) => Some(latest),
            None => covers.base_rates.remove(name),
        };
        // (None: a target named twice, restored already.)
        if let Some(rate) = rate {
            reach.clocks[name].set_rate_ppm(rate);
        }
    }
    reach.record(EventKind::FaultEnded { fault: description });
}
