//! Clock faults: a step of the wall clock (NTP step, `date -s`) and a change of rate
//! (a bad oscillator, a VM losing ticks).

use super::{Backend, Schedule};
use crate::history::EventKind;

impl<B: Backend + 'static> Schedule<B> {
    /// Steps every target's wall clock by `by_ms`.
    pub(super) fn jump(&self, targets: &[String], by_ms: i64) -> Result<(), String> {
        for name in targets {
            self.backend.jump_clock(name, by_ms)?;
        }
        self.record(EventKind::FaultStarted {
            fault: format!("clock of {} jumps {by_ms:+} ms", targets.join(",")),
        });
        Ok(())
    }

    /// Makes every target's clock run at `rate_ppm`; after `duration_ms` if given, gives
    /// it back the rate of the latest drift still covering it, or with none the rate it had
    /// before its first drift. A step of the clock meanwhile is kept: it moved the reading,
    /// the drift its rate.
    pub(super) async fn drift(
        &self,
        targets: &[String],
        rate_ppm: i64,
        duration_ms: Option<u64>,
    ) -> Result<(), String> {
        let id = self.new_fault();
        let description = format!("clock of {} drifts {rate_ppm:+} ppm", targets.join(","));
        for name in targets {
            {
                let mut covers = self.covers();
                if covers.drifts.cover(name.clone(), id, rate_ppm) {
                    covers
                        .base_rates
                        .insert(name.clone(), self.backend.clock_rate_ppm(name));
                }
            }
            self.backend.set_clock_rate_ppm(name, rate_ppm)?;
        }
        self.record(EventKind::FaultStarted {
            fault: description.clone(),
        });
        let Some(duration_ms) = duration_ms else {
            return Ok(());
        };
        self.sleep_ms(duration_ms).await;
        for name in targets {
            let rate = {
                let mut covers = self.covers();
                covers.drifts.uncover(name, id);
                match covers.drifts.values(name).last() {
                    Some(&latest) => Some(latest),
                    None => covers.base_rates.remove(name),
                }
            };
            // (None: a target named twice, restored already.)
            if let Some(rate) = rate {
                self.backend.set_clock_rate_ppm(name, rate)?;
            }
        }
        self.record(EventKind::FaultEnded { fault: description });
        Ok(())
    }
}
