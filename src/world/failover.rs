//! The failover controller of replicated groups, shaped as Redis Sentinel: it probes every
//! node, declares a master down after `down_after_ms` without an answer, promotes the
//! replica with the most replication data, points the others (and a returning old
//! master) at it, and moves the group's address so clients reconnect to the new master.
//!
//! One controller stands in for a Sentinel quorum: it never fails and decides alone.
//! It runs on its own node, `sentinel`, so partitions can cut it off like anything else.

use std::cmp::Reverse;
use std::net::SocketAddr;

use super::clock::SimClock;
use super::net::{Address, Nic, SimConnector};
use super::recorder::Recorder;
use super::topology::Group;
use crate::client::Conn;
use crate::history::EventKind;
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::cmd::{Replicaof, Role};

/// The controller's node name in traces.
pub use crate::scenario::SENTINEL;

/// How often every node is probed.
pub const PROBE_INTERVAL_MS: u64 = 100;

/// How long a probe waits for its answer.
pub const PROBE_TIMEOUT_MS: u64 = 200;

/// What a probe learned of a node (Sentinel's instances probe the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    Master,
    Replica { of: Option<SocketAddr>, offset: i64 },
}

/// Watches one group until the run ends, probing over the controller's `nic`.
pub async fn watch(group: Group, down_after_ms: u64, clock: SimClock, nic: Nic, recorder: Recorder) {
    let mut conns: Vec<Conn<SimConnector, SimClock>> = group
        .addrs
        .iter()
        .map(|addr| {
            let connector = SimConnector(Address::new(*addr), nic.clone());
            Conn::new(connector, clock.clone(), PROBE_TIMEOUT_MS)
        })
        .collect();
    let mut master_seen_ms = clock.monotonic_ms();
    loop {
        clock.sleep_ms(PROBE_INTERVAL_MS).await;
        let mut seen = Vec::with_capacity(conns.len());
        for conn in &mut conns {
            seen.push(probe(conn).await);
        }
        let master = group.master();
        if seen[master].is_some() {
            master_seen_ms = clock.monotonic_ms();
        } else if clock.monotonic_ms() - master_seen_ms >= down_after_ms
            && let Some(best) = most_up_to_date_replica(&seen, master)
            && conns[best].request(&Replicaof::NoOne.into_frame()).await.is_ok()
        {
            group.promote(best);
            seen[best] = Some(Seen::Master);
            master_seen_ms = clock.monotonic_ms();
            let event = EventKind::Failover {
                promoted: group.names[best].clone(),
                replaced: group.names[master].clone(),
            };
            recorder.record(SENTINEL, clock.local_us(), event);
        }
        // Every other node that answers must follow the current master.
        let master = group.master();
        let master_addr = group.addrs[master];
        for (i, node) in seen.into_iter().enumerate() {
            if astray(node, i == master, master_addr) {
                let _ = conns[i]
                    .request(&Replicaof::Master(master_addr).into_frame())
                    .await;
            }
        }
    }
}

/// The replica to promote in place of node `master`: the one with the most replication
/// data that answered, the first of those on a tie.
pub(crate) fn most_up_to_date_replica(seen: &[Option<Seen>], master: usize) -> Option<usize> {
    (0..seen.len())
        .filter(|&i| i != master)
        .filter_map(|i| match seen[i] {
            Some(Seen::Replica { offset, .. }) => Some((offset, Reverse(i))),
            _ => None,
        })
        .max()
        .map(|(_, Reverse(i))| i)
}

/// Whether a node that answered `seen` must be pointed at the current master, reached at
/// `master_addr` from it: a master that is not the current one, or a replica of another.
pub(crate) fn astray(seen: Option<Seen>, is_master: bool, master_addr: SocketAddr) -> bool {
    match seen {
        Some(Seen::Master) => !is_master,
        Some(Seen::Replica { of, .. }) => of != Some(master_addr),
        None => false,
    }
}

/// Asks a node its role; `None` when it does not answer.
pub(crate) async fn probe<C: Connect, K: Clock>(conn: &mut Conn<C, K>) -> Option<Seen> {
    let Ok(Frame::Array(role)) = conn.request(&Role.into_frame()).await else {
        return None;
    };
    let text = |frame: Option<&Frame>| match frame {
        Some(Frame::BulkString(bytes) | Frame::SimpleString(bytes)) => {
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        _ => None,
    };
    match text(role.first()).as_deref() {
        Some("master") => Some(Seen::Master),
        Some("slave") => {
            let ip = text(role.get(1)).and_then(|ip| ip.parse().ok());
            let port = match role.get(2) {
                Some(Frame::Integer(port)) => u16::try_from(*port).ok(),
                _ => None,
            };
            let offset = match role.get(4) {
                Some(Frame::Integer(offset)) => *offset,
                _ => -1,
            };
            Some(Seen::Replica {
                of: ip.zip(port).map(|(ip, port)| SocketAddr::new(ip, port)),
                offset,
            })
        }
        _ => None,
    }
}
