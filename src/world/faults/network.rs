//! Network faults over madsim's network: partitions and replication stalls (links clogged
//! one way or both), latency and loss (per link, per node, or on every node, through the
//! nodes' [`Nic`]s) and connection resets.
//!
//! madsim's TCP never loses bytes: over a cut link they wait and arrive after the heal,
//! as in a real partition with long TCP timeouts. Clients notice through their own
//! request timeouts. Nor does a cut link let a close through: a peer that closes its
//! connection or dies behind it is seen only after the heal (its data in order, then its
//! FIN; a write to it is reset then), so a master keeps counting a replica it cannot reach
//! until the replica's last acknowledgement is too old (see patches/madsim/PATCH.md).

use std::net::IpAddr;

use madsim::net::NetSim;

use super::cover::FaultId;
use super::{Reach, sleep_ms};
use crate::history::EventKind;
use crate::world::net::Nic;

/// The (from, to) node pairs between the groups: every pair across two groups, or only
/// from the first group to the others when `one_way`.
pub fn links_between(groups: &[Vec<String>], one_way: bool) -> Vec<(String, String)> {
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

/// Cuts the links between the groups (from the first group only, when `one_way`).
pub async fn partition(groups: &[Vec<String>], one_way: bool, duration_ms: Option<u64>, reach: &Reach) {
    let links = links_between(groups, one_way);
    let shown: Vec<String> = groups.iter().map(|g| format!("[{}]", g.join(","))).collect();
    let arrow = if one_way { " -/-> " } else { " | " };
    let description = format!("partition {}", shown.join(arrow));
    cut_for(&links, &description, duration_ms, reach).await;
}

/// Cuts `links` under the fault `description` and, after `duration_ms` if given, mends
/// those no other fault still cuts.
async fn cut_for(links: &[(String, String)], description: &str, duration_ms: Option<u64>, reach: &Reach) {
    let id = reach.new_fault();
    for link in links {
        if reach.covers().cut.cover(link.clone(), id, ()) {
            NetSim::current().clog_link(reach.nodes[&link.0], reach.nodes[&link.1]);
            reach.record_on(&link.0, EventKind::LinkCut { to: link.1.clone() });
        }
    }
    reach.record(EventKind::FaultStarted {
        fault: description.to_string(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    for link in links {
        if reach.covers().cut.uncover(link, id) {
            mend(link, reach);
        }
    }
    reach.record(EventKind::FaultEnded {
        fault: description.to_string(),
    });
}

/// Lets a link carry messages again.
fn mend((from, to): &(String, String), reach: &Reach) {
    NetSim::current().unclog_link(reach.nodes[from], reach.nodes[to]);
    reach.record_on(from, EventKind::LinkHealed { to: to.clone() });
}

/// Restores every link that partitions and stalls cut; their own ends then change nothing.
pub fn heal(reach: &Reach) {
    let links = reach.covers().cut.clear();
    for link in &links {
        mend(link, reach);
    }
    reach.record(EventKind::FaultStarted {
        fault: format!("heal {} links", links.len()),
    });
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

    /// Claims (`on`) or drops fault `id`'s degradation of `nic`'s messages to `peer`
    /// (`None`: to anyone).
    fn set_on(self, nic: &Nic, peer: Option<IpAddr>, id: FaultId, on: bool) {
        match self {
            Degradation::Latency(range) => nic.set_latency(peer, id, on.then_some(range)),
            Degradation::Loss(rate) => nic.set_loss(peer, id, on.then_some(rate)),
        }
    }
}

/// Degrades the given links, every message of the target nodes, or with neither every
/// message of every node; lifts this degradation after `duration_ms`.
pub async fn degrade(
    degradation: Degradation,
    targets: &[String],
    links: Option<Vec<(String, String)>>,
    duration_ms: Option<u64>,
    reach: &Reach,
) {
    let id = reach.new_fault();
    let scope = match (&links, targets) {
        (Some(links), _) => {
            let shown: Vec<String> = links.iter().map(|(a, b)| format!("{a}->{b}")).collect();
            format!("on {}", shown.join(","))
        }
        (None, []) => "on every message".to_string(),
        (None, nodes) => format!("on writes of {}", nodes.join(",")),
    };
    let description = format!("{} {scope}", degradation.describe());
    let set = |on: bool| match (&links, targets) {
        (Some(links), _) => {
            for (from, to) in links {
                degradation.set_on(&reach.nics[from], Some(reach.ips[to]), id, on);
            }
        }
        (None, []) => reach
            .nics
            .values()
            .for_each(|nic| degradation.set_on(nic, None, id, on)),
        (None, nodes) => nodes
            .iter()
            .for_each(|node| degradation.set_on(&reach.nics[node], None, id, on)),
    };
    set(true);
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    set(false);
    reach.record(EventKind::FaultEnded { fault: description });
}

/// Closes every TCP connection of the targets.
///
/// madsim's reset closes a node's listening socket too, which no real reset does; so a
/// Redis node's connections are closed from the other end, by resetting its clients.
pub fn reset(targets: &[String], reach: &Reach) {
    let mut nodes: Vec<&String> = targets
        .iter()
        .filter(|name| reach.clients.contains(name))
        .collect();
    if targets.iter().any(|name| reach.redis.contains(name)) {
        nodes.extend(&reach.clients);
    }
    nodes.sort();
    nodes.dedup();
    for name in nodes {
        // madsim drops what is in flight to the node; our NIC makes its streams refuse
        // further use, as a connection that received a RST does.
        NetSim::current().reset_node(reach.nodes[name]);
        reach.nics[name].reset_connections();
    }
    reach.record(EventKind::FaultStarted {
        fault: format!("reset connections of {}", targets.join(",")),
    });
}

/// Stops each target replica's stream from its master (the master → replica link only:
/// the replica's acknowledgements still flow, so WAIT sees what it already has). It cuts
/// that link as a partition does, and composes with partitions the same way.
pub async fn stall(replicas: &[String], duration_ms: Option<u64>, reach: &Reach) {
    let links: Vec<(String, String)> = replicas
        .iter()
        .filter_map(|replica| {
            let group = reach.groups.iter().find(|g| g.names.contains(replica))?;
            Some((group.master_name().to_string(), replica.clone()))
        })
        .collect();
    let description = format!("replication to {} stalls", replicas.join(","));
    cut_for(&links, &description, duration_ms, reach).await;
}
