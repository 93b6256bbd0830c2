//! The failover controller of a live run's replicated groups (the groups, links and
//! routes it acts on are in [`super::topology`]): the simulator's
//! controller (world/failover.rs: probe every node every 100 ms, declare the master down
//! after `down_after_ms` without an answer, promote the replica with the most replication
//! data, point every other node at it) on real sockets: the same loop, `control`.
//!
//! Every connection goes through a proxy, so the scenario's partitions cut it as they cut
//! the simulator's links:
//! - the controller (node `sentinel`) reaches each node through a proxy of its own;
//! - a replica reaches its master through the proxy of the link replica → master (one per
//!   ordered pair of the group's nodes, so a demoted master follows the new one the same way);
//! - a worker reaches a group through its *route*, a proxy without faults that forwards to
//!   the worker's own proxy to the group's current master.
//!
//! Promoting a replica is `REPLICAOF NO ONE` and `CLIENT KILL TYPE normal` and `pubsub`, as
//! Sentinel sends them; then every worker's route is redirected to its proxy to the new
//! master, as a Sentinel-aware client reconnects to the master Sentinel names (connections
//! open through the route stay where they go, as in the simulator). A node pointed at the
//! master gets `REPLICAOF` with its replication proxy's address and the same `CLIENT KILL`s;
//! an old master that answers as a master is converted as Sentinel does, about ten seconds
//! later (world/failover.rs).

use std::net::SocketAddr;
use std::rc::Rc;

use super::recorder::LiveRecorder;
use super::topology::{LiveGroup, LiveTopology, replicaof};
use crate::client::Conn;
use crate::history::EventKind;
use crate::platform::Clock;
use crate::real::{HostClock, TcpConnector};
use crate::redis::Frame;
use crate::redis::cmd::Role;
use crate::scenario::SENTINEL;
use crate::world::failover::{Controlled, PROBE_TIMEOUT_MS, control};

/// Group `index` of a live run, as its controller acts on it.
struct LiveGroupOf<'a> {
    topology: &'a LiveTopology,
    recorder: &'a LiveRecorder,
    index: usize,
}

impl LiveGroupOf<'_> {
    fn group(&self) -> &LiveGroup {
        &self.topology.groups[self.index]
    }
}

impl Controlled for LiveGroupOf<'_> {
    fn master(&self) -> usize {
        self.group().master()
    }

    fn name(&self, index: usize) -> &str {
        &self.group().names[index]
    }

    /// Every worker's route now leads to its proxy to the new master.
    fn promote(&self, index: usize) {
        self.group().set_master(index);
        self.topology.redirect_routes(self.index);
    }

    /// Kept for the faults' restart, which makes a restarted node a replica of the node
    /// its configuration names.
    fn configured(&self, index: usize, master: Option<usize>) {
        self.group().configure(index, master);
    }

    fn record(&self, event: EventKind) {
        self.recorder.record(SENTINEL, event);
    }

    /// Through the replication proxy of the link `node` → `master`.
    fn master_addr_from(&self, node: usize, master: usize) -> Option<SocketAddr> {
        let names = &self.group().names;
        self.topology.replication_proxy(&names[node], &names[master])
    }
}

/// Watches group `index` until the run ends.
pub async fn watch(topology: Rc<LiveTopology>, recorder: LiveRecorder, index: usize, down_after_ms: u64) {
    let clock = HostClock::new();
    let conns = topology.groups[index]
        .names
        .iter()
        .map(|name| {
            let link = topology
                .links
                .find(SENTINEL, name)
                .expect("a controller link per node");
            Conn::new(TcpConnector(link.proxy.addr), clock.clone(), PROBE_TIMEOUT_MS)
        })
        .collect();
    let group = LiveGroupOf {
        topology: &topology,
        recorder: &recorder,
        index,
    };
    control(&group, conns, &clock, down_after_ms).await;
}

/// Makes the node at `node` a replica through `via` and waits until its link is up (it
/// has synced); `Err` says why not within `patience_ms`.
pub async fn replicate(node: SocketAddr, via: SocketAddr, patience_ms: u64) -> Result<(), String> {
    replicaof(node, via).await?;
    let clock = HostClock::new();
    let mut conn = Conn::new(TcpConnector(node), clock.clone(), PROBE_TIMEOUT_MS);
    let deadline = clock.monotonic_ms() + patience_ms;
    loop {
        if let Ok(Frame::Array(role)) = conn.request(&Role.into_frame()).await
            && matches!(role.get(3), Some(Frame::BulkString(state)) if state == b"connected")
        {
            return Ok(());
        }
        if clock.monotonic_ms() > deadline {
            return Err(format!(
                "its replication link did not come up within {patience_ms} ms"
            ));
        }
        clock.sleep_ms(10).await;
    }
}
