//! Network faults' primitives: links cut (partitions and replication stalls, one way or
//! both) and mended, latency and loss (on links, on nodes' writes, or on every message)
//! and connection resets. Which links a kind cuts is the kind's (`scenario/fault_kinds/`).
//!
//! A cut link carries nothing until it is mended; what waited then arrives, as TCP with
//! long timeouts delivers it (how each mode holds the bytes is its backend's business).
//! A stall cuts a master → replica link as a partition does, and composes with partitions
//! the same way; `heal` mends every cut, and the faults it lifted then end without effect.

use super::cover::FaultId;
use super::{Backend, Degradation, Link, Schedule, Scope};
use crate::history::EventKind;

impl<B: Backend + 'static> Schedule<B> {
    /// Cuts `links` under the fault `description` and, after `duration_ms` if given, mends
    /// those no other fault still cuts.
    pub(super) async fn cut_for(&self, links: &[Link], description: &str, duration_ms: Option<u64>) {
        let id = self.new_fault();
        for link in links {
            if self.covers().cut.cover(link.clone(), id, ()) {
                self.backend.cut(link);
                self.backend
                    .record(&link.0, EventKind::LinkCut { to: link.1.clone() });
            }
        }
        self.record(EventKind::FaultStarted {
            fault: description.to_string(),
        });
        let Some(duration_ms) = duration_ms else { return };
        self.sleep_ms(duration_ms).await;
        for link in links {
            if self.covers().cut.uncover(link, id) {
                self.mend(link);
            }
        }
        self.record(EventKind::FaultEnded {
            fault: description.to_string(),
        });
    }

    /// Lets a link carry messages again.
    fn mend(&self, link: &Link) {
        self.backend.mend(link);
        self.backend
            .record(&link.0, EventKind::LinkHealed { to: link.1.clone() });
    }

    /// Restores every link that partitions and stalls cut; their own ends then change
    /// nothing.
    pub(super) fn heal(&self) {
        let links = self.covers().cut.clear();
        for link in &links {
            self.mend(link);
        }
        self.record(EventKind::FaultStarted {
            fault: format!("heal {} links", links.len()),
        });
    }

    /// Degrades the messages in `scope`; lifts this degradation after `duration_ms`.
    pub(super) async fn degrade(
        &self,
        degradation: Degradation,
        scope: Scope,
        duration_ms: Option<u64>,
    ) -> Result<(), String> {
        let id: FaultId = self.new_fault();
        let description = format!("{} {}", degradation.describe(), scope.describe());
        self.backend.degrade(degradation, &scope, id, true)?;
        self.record(EventKind::FaultStarted {
            fault: description.clone(),
        });
        let Some(duration_ms) = duration_ms else {
            return Ok(());
        };
        self.sleep_ms(duration_ms).await;
        self.backend.degrade(degradation, &scope, id, false)?;
        self.record(EventKind::FaultEnded { fault: description });
        Ok(())
    }

    /// Closes every TCP connection of the targets.
    pub(super) fn reset(&self, targets: &[String]) {
        self.backend.reset(targets);
        self.record(EventKind::FaultStarted {
            fault: format!("reset connections of {}", targets.join(",")),
        });
    }
}
