//! Process faults: pause (a GC or VM stop: tasks freeze, time and the network go on) and
//! crash (tasks, sockets and memory gone; a restart runs the node's start-up again).
//!
//! Both compose by cover (see [`super::cover`]): a node is paused while any pause covers
//! it and down while any crash covers it. A pause freezes the node, not one incarnation of
//! its process: a node restarted while a pause still covers it comes back frozen, and goes
//! on when the last pause ends.

use super::{Backend, Failure, Schedule};
use crate::history::EventKind;

/// When a crash's targets come back, `after_ms` after it: a Redis node no sooner than its
/// restart delay allows (`delay_of` gives it; `None` for a client).
pub fn delayed_restart_ms(after_ms: u64, targets: &[String], delay_of: impl Fn(&str) -> Option<u64>) -> u64 {
    targets
        .iter()
        .filter_map(|name| delay_of(name))
        .fold(after_ms, u64::max)
}

impl<B: Backend + 'static> Schedule<B> {
    /// Freezes every target for `duration_ms`, then lets it go on where it stopped unless
    /// another pause still covers it.
    pub(super) async fn pause(&self, targets: &[String], duration_ms: u64) {
        let id = self.new_fault();
        let description = format!("pause {} for {duration_ms} ms", targets.join(","));
        self.record(EventKind::FaultStarted {
            fault: description.clone(),
        });
        for name in targets {
            if self.covers().paused.cover(name.clone(), id, ()) {
                self.backend.pause(name);
                self.backend.record(name, EventKind::Paused);
            }
        }
        self.sleep_ms(duration_ms).await;
        for name in targets {
            if self.covers().paused.uncover(name, id) {
                self.backend.resume(name);
                self.backend.record(name, EventKind::Resumed);
            }
        }
        self.record(EventKind::FaultEnded { fault: description });
    }

    /// Kills every target that is up; restarts each after `restart_after_ms` if given (0 =
    /// at once), but a Redis node not before the topology's `restart_delay_ms`, and none
    /// while another crash still covers it (it comes back when the last one ends). A
    /// machine failure also drops each target's page cache, even if its process was
    /// already down.
    pub(super) async fn crash(
        &self,
        failure: Failure,
        targets: &[String],
        restart_after_ms: Option<u64>,
    ) -> Result<(), String> {
        let id = self.new_fault();
        let restart_after_ms = restart_after_ms
            .map(|ms| delayed_restart_ms(ms, targets, |name| self.cast.restart_delay_ms.get(name).copied()));
        let what = match failure {
            Failure::Process => "crash",
            Failure::Machine => "power loss of",
        };
        let description = match restart_after_ms {
            None => format!("{what} {}", targets.join(",")),
            Some(ms) => format!("{what} {}, restart after {ms} ms", targets.join(",")),
        };
        self.record(EventKind::FaultStarted {
            fault: description.clone(),
        });
        for name in targets {
            if self.covers().down.cover(name.clone(), id, ()) {
                self.backend.kill(name, failure);
                self.backend.record(name, EventKind::Crashed);
            }
            if failure == Failure::Machine {
                self.backend.lose_page_cache(name);
            }
        }
        let Some(after_ms) = restart_after_ms else {
            return Ok(());
        };
        self.sleep_ms(after_ms).await;
        for name in targets {
            // Restart only what no crash covers any more (madsim cannot bind a live node's
            // port twice); one a pause still covers comes back frozen.
            let restarting = {
                let mut covers = self.covers();
                covers.down.uncover(name, id).then(|| covers.paused.covered(name))
            };
            if let Some(paused) = restarting {
                self.backend.restart(name).await?;
                if paused {
                    self.backend.pause(name);
                }
                self.backend.record(name, EventKind::Restarted);
            }
        }
        self.record(EventKind::FaultEnded { fault: description });
        Ok(())
    }
}
