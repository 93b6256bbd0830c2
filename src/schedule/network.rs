//! Network faults: partitions and replication stalls (links cut one way or both), latency
//! and loss (on links, on nodes' writes, or on every message) and connection resets.
//!
//! A cut link carries nothing until it is mended; what waited then arrives, as TCP with
//! long timeouts delivers it (how each mode holds the bytes is its backend's business).
//! A stall cuts a master → replica link as a partition does, and composes with partitions
//! the same way; `heal` mends every cut, and the faults it lifted then end without effect.

use super::cover::FaultId;
use super::{Backend, Link, Schedule};
use crate::history::EventKind;

/// The (from, to) node pairs between the groups: every pair across two groups, or only
/// from the first group to the others when `one_way`.
pub fn links_between(groups: &[Vec<String>], one_way: bool) -> Vec<Link> {
    let mut links = Vec::new();
    for (i, from) in groups.iter().enumerate() {
        for (j, to) in groups.iter().enumerate() {
            if i != j && (!one_way || i == 0) {
                links.extend(
                    from.iter()
                        .flat_map(|a| to.iter().map(move |b| (a.clone(), b.clone()))),
                );
            }
        }
    }
    links
}

/// What a latency or loss fault does to the messages it reaches.
#[derive(Debug, Clone, Copy)]
pub enum Degradation {
    /// Extra one-way latency, uniform in `[min, max]` ms.
    Latency([u64; 2]),
    /// This fraction of packets lost (and resent).
    Loss(f64),
}

impl Degradation {
    fn describe(self) -> String {
        match self {
            Degradation::Latency([min, max]) => format!("latency +{min}..{max} ms"),
            Degradation::Loss(rate) => format!("packet loss {:.1}%", rate * 100.0),
        }
    }
}

/// The messages a latency or loss fault reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Those sent over these links.
    Links(Vec<Link>),
    /// Every message these nodes write.
    Nodes(Vec<String>),
    /// Every message of the network.
    Everywhere,
}

impl Scope {
    /// The scope of a fault with these targets and groups: the links between the groups,
    /// else the targets' writes, else everything.
    pub fn of(targets: Vec<String>, groups: Option<Vec<Vec<String>>>, one_way: bool) -> Scope {
        match (groups, targets.is_empty()) {
            (Some(groups), _) => Scope::Links(links_between(&groups, one_way)),
            (None, true) => Scope::Everywhere,
            (None, false) => Scope::Nodes(targets),
        }
    }

    fn describe(&self) -> String {
        match self {
            Scope::Links(links) => {
                let shown: Vec<String> = links.iter().map(|(a, b)| format!("{a}->{b}")).collect();
                format!("on {}", shown.join(","))
            }
            Scope::Everywhere => "on every message".to_string(),
            Scope::Nodes(nodes) => format!("on writes of {}", nodes.join(",")),
        }
    }
}

impl<B: Backend + 'static> Schedule<B> {
    /// Cuts the links between the groups (from the first group only, when `one_way`).
    pub(super) async fn partition(&self, groups: &[Vec<String>], one_way: bool, duration_ms: Option<u64>) {
        let links = links_between(groups, one_way);
        let shown: Vec<String> = groups.iter().map(|g| format!("[{}]", g.join(","))).collect();
        let arrow = if one_way { " -/-> " } else { " | " };
        let description = format!("partition {}", shown.join(arrow));
        self.cut_for(&links, &description, duration_ms).await;
    }

    /// Stops each target replica's stream from its master now (the master → replica link
    /// only: the replica's acknowledgements still flow, so WAIT sees what it already has).
    pub(super) async fn stall(&self, replicas: &[String], duration_ms: Option<u64>) {
        let links: Vec<Link> = replicas
            .iter()
            .filter_map(|replica| Some((self.backend.master_of(Some(replica))?, replica.clone())))
            .collect();
        let description = format!("replication to {} stalls", replicas.join(","));
        self.cut_for(&links, &description, duration_ms).await;
    }

    /// Cuts `links` under the fault `description` and, after `duration_ms` if given, mends
    /// those no other fault still cuts.
    async fn cut_for(&self, links: &[Link], description: &str, duration_ms: Option<u64>) {
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
