//! The failover controller of replicated groups, shaped as Redis Sentinel: it probes every
//! node, declares a master down after `down_after_ms` without an answer, promotes the
//! replica with the most replication data, points the others (and a returning old
//! master) at it, and moves the group's address so clients reconnect to the new master.
//!
//! One controller stands in for a Sentinel quorum: it never fails and decides alone.
//! It runs on its own node, `sentinel`, so partitions can cut it off like anything else.
//! [`control`] is its whole decision loop, over any connections and clock: the simulator
//! runs it here on simulated links, live mode (live/failover.rs) on real sockets through
//! proxies, each group saying through [`Controlled`] how it promotes and where its nodes
//! reach the master.

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
use crate::redis::request::build;

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

/// A replicated group as its controller acts on it. What differs between the simulator
/// and live mode is only how a promotion takes effect and where a node reaches the master.
pub(crate) trait Controlled {
    /// Whether the controller closes the client connections of a node it reconfigures
    /// (`CLIENT KILL TYPE normal`, as Sentinel does): live mode, whose workers' real
    /// clients must notice; the simulator's clients follow the group's address instead.
    const KILLS_CLIENTS: bool;
    /// Index of the current master.
    fn master(&self) -> usize;
    /// Node `index`'s name.
    fn name(&self, index: usize) -> &str;
    /// Makes node `index`, which took `REPLICAOF NO ONE`, the master: clients go there now.
    fn promote(&self, index: usize);
    /// Records `event` as the controller's.
    fn record(&self, event: EventKind);
    /// Where node `node` reaches node `master` to replicate from it; `None` if it cannot.
    fn master_addr_from(&self, node: usize, master: usize) -> Option<SocketAddr>;
}

/// `CLIENT KILL TYPE normal`: closes every other client connection of the node.
fn client_kill() -> Frame {
    build(["CLIENT", "KILL", "TYPE", "normal"].map(|w| w.as_bytes().to_vec()))
}

/// The controller's loop over `group`, one connection per node in `conns` (in the group's
/// order), until the run ends: probe every node every [`PROBE_INTERVAL_MS`]; when the
/// master has not answered for `down_after_ms`, promote the most up-to-date replica that
/// answers; point every other node that answers at the current master.
pub(crate) async fn control<C: Connect, K: Clock, G: Controlled>(
    group: &G,
    mut conns: Vec<Conn<C, K>>,
    clock: &K,
    down_after_ms: u64,
) {
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
            if G::KILLS_CLIENTS {
                let _ = conns[best].request(&client_kill()).await;
            }
            group.promote(best);
            seen[best] = Some(Seen::Master);
            master_seen_ms = clock.monotonic_ms();
            group.record(EventKind::Failover {
                promoted: group.name(best).to_string(),
                replaced: group.name(master).to_string(),
            });
        }
        // Every other node that answers must follow the current master.
        let master = group.master();
        for (i, node) in seen.into_iter().enumerate() {
            let Some(via) = group.master_addr_from(i, master) else {
                continue;
            };
            if astray(node, i == master, via) {
                let _ = conns[i].request(&Replicaof::Master(via).into_frame()).await;
                if G::KILLS_CLIENTS {
                    let _ = conns[i].request(&client_kill()).await;
                }
            }
        }
    }
}

/// A simulated group, its clock and the run's recorder.
struct SimGroup {
    group: Group,
    clock: SimClock,
    recorder: Recorder,
}

impl Controlled for SimGroup {
    const KILLS_CLIENTS: bool = false;

    fn master(&self) -> usize {
        self.group.master()
    }

    fn name(&self, index: usize) -> &str {
        &self.group.names[index]
    }

    fn promote(&self, index: usize) {
        self.group.promote(index);
    }

    fn record(&self, event: EventKind) {
        self.recorder.record(SENTINEL, self.clock.local_us(), event);
    }

    /// Every node reaches the master at its own address.
    fn master_addr_from(&self, _node: usize, master: usize) -> Option<SocketAddr> {
        Some(self.group.addrs[master])
    }
}

/// Watches one group until the run ends, probing over the controller's `nic`.
pub async fn watch(group: Group, down_after_ms: u64, clock: SimClock, nic: Nic, recorder: Recorder) {
    let conns = group
        .addrs
        .iter()
        .map(|addr| {
            let connector = SimConnector(Address::new(*addr), nic.clone());
            Conn::new(connector, clock.clone(), PROBE_TIMEOUT_MS)
        })
        .collect();
    let group = SimGroup {
        group,
        clock: clock.clone(),
        recorder,
    };
    control(&group, conns, &clock, down_after_ms).await;
}

/// The replica to promote in place of node `master`: the one with the most replication
/// data that answered, the first of those on a tie.
fn most_up_to_date_replica(seen: &[Option<Seen>], master: usize) -> Option<usize> {
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
fn astray(seen: Option<Seen>, is_master: bool, master_addr: SocketAddr) -> bool {
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
