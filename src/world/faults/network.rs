//! Network faults over madsim's network: partitions (links clogged one way or both),
//! latency (network-wide through madsim's one setting, or per node and per link through
//! the nodes' [`Nic`](crate::world::net::Nic)), loss (network-wide) and connection resets.
//!
//! madsim's TCP never loses bytes: over a cut link they wait and arrive after the heal,
//! as in a real partition with long TCP timeouts. Clients notice through their own
//! request timeouts.

use madsim::net::NetSim;

use super::{Reach, sleep_ms};
use crate::history::EventKind;
use crate::world::net::latency_range;

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
    for (a, b) in &links {
        NetSim::current().clog_link(reach.nodes[a], reach.nodes[b]);
    }
    reach
        .cut_links
        .lock()
        .expect("links lock poisoned")
        .extend(links.iter().cloned());
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    let mut cut = reach.cut_links.lock().expect("links lock poisoned");
    for link in &links {
        if cut.remove(link) {
            NetSim::current().unclog_link(reach.nodes[&link.0], reach.nodes[&link.1]);
        }
    }
    drop(cut);
    reach.record(EventKind::FaultEnded { fault: description });
}

/// Restores every link that partitions cut.
pub fn heal(reach: &Reach) {
    let links = std::mem::take(&mut *reach.cut_links.lock().expect("links lock poisoned"));
    for (a, b) in &links {
        NetSim::current().unclog_link(reach.nodes[a], reach.nodes[b]);
    }
    reach.record(EventKind::FaultStarted {
        fault: format!("heal {} links", links.len()),
    });
}

/// Adds latency: on the given links, on every write of the target nodes, or with neither
/// to every message of the network; takes it away again after `duration_ms`.
pub async fn latency(
    targets: &[String],
    links: Option<Vec<(String, String)>>,
    latency_ms: [u64; 2],
    duration_ms: Option<u64>,
    reach: &Reach,
) {
    let [min, max] = latency_ms;
    let description = match (&links, targets) {
        (Some(links), _) => {
            let shown: Vec<String> = links.iter().map(|(a, b)| format!("{a}->{b}")).collect();
            format!("latency +{min}..{max} ms on {}", shown.join(","))
        }
        (None, []) => format!("latency {min}..{max} ms on every message"),
        (None, nodes) => format!("latency +{min}..{max} ms on writes of {}", nodes.join(",")),
    };
    let set = |range: Option<[u64; 2]>| match (&links, targets) {
        (Some(links), _) => {
            for (from, to) in links {
                reach.nics[from].set_latency(Some(reach.ips[to]), range);
            }
        }
        (None, []) => NetSim::current().update_config(|c| {
            c.send_latency = latency_range(range.unwrap_or(reach.network.latency_ms));
        }),
        (None, nodes) => nodes
            .iter()
            .for_each(|node| reach.nics[node].set_latency(None, range)),
    };
    set(Some(latency_ms));
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    set(None);
    reach.record(EventKind::FaultEnded { fault: description });
}

/// Drops a fraction of packets; none again after `duration_ms`.
pub async fn loss(rate: f64, duration_ms: Option<u64>, reach: &Reach) {
    let description = format!("packet loss {:.1}%", rate * 100.0);
    NetSim::current().update_config(|c| c.packet_loss_rate = rate);
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    NetSim::current().update_config(|c| c.packet_loss_rate = 0.0);
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
/// the replica's acknowledgements still flow, so WAIT sees what it already has).
pub async fn stall(replicas: &[String], duration_ms: Option<u64>, reach: &Reach) {
    let links: Vec<(String, String)> = replicas
        .iter()
        .filter_map(|replica| {
            let group = reach.groups.iter().find(|g| g.names.contains(replica))?;
            Some((group.master_name().to_string(), replica.clone()))
        })
        .collect();
    let description = format!("replication to {} stalls", replicas.join(","));
    for (master, replica) in &links {
        NetSim::current().clog_link(reach.nodes[master], reach.nodes[replica]);
    }
    reach.record(EventKind::FaultStarted {
        fault: description.clone(),
    });
    let Some(duration_ms) = duration_ms else { return };
    sleep_ms(duration_ms).await;
    for (master, replica) in &links {
        NetSim::current().unclog_link(reach.nodes[master], reach.nodes[replica]);
    }
    reach.record(EventKind::FaultEnded { fault: description });
}
