//! The shape of a live run's network: every proxied link, each replicated group and which
//! of its nodes is master now, and each worker's route to its groups. Both the faults
//! ([`super::faults`]: they cut, slow and reset links) and the failover controller
//! ([`super::failover`]: it promotes a replica and redirects the routes) act on it, so it
//! lives apart from both and neither imports the other.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;

use super::proxy::Proxy;
use crate::client::Conn;
use crate::real::{HostClock, TcpConnector};
use crate::redis::Frame;
use crate::redis::cmd::Replicaof;
use crate::world::failover::PROBE_TIMEOUT_MS;

/// The name a worker's link to the resource goes by (no scenario node has it).
pub const RESOURCE: &str = "resource";

/// One proxied link: a client (a worker, a replica, the failover controller) to a node.
pub struct Link {
    pub client: String,
    pub node: String,
    pub proxy: Proxy,
}

impl Link {
    /// Whether the network's latency and faults reach the link: every one but a worker's
    /// link to the resource. That link carries the worker's reports and its accesses to
    /// the register, which in the simulator are no network messages at all; slowed, the
    /// history said a worker held the lock for as long as its reports took (a latency of
    /// 2.5 s everywhere stretched one holding to 7.7 s, past its 2 s TTL, and the waiting
    /// workers' reports timed out unrecorded, so a liveness violation went unseen).
    pub fn on_the_network(&self) -> bool {
        self.node != RESOURCE
    }
}

/// Every client–node link of the run.
pub struct Links(pub Vec<Link>);

impl Links {
    /// The link from `client` to `node`, if the run has one.
    pub fn find(&self, client: &str, node: &str) -> Option<&Link> {
        self.0
            .iter()
            .find(|link| link.client == client && link.node == node)
    }

    /// The links on the network ([`Link::on_the_network`]) that touch any of `nodes`.
    pub fn touching<'a>(&'a self, nodes: &'a [String]) -> impl Iterator<Item = &'a Link> {
        self.on_the_network()
            .filter(move |link| nodes.contains(&link.client) || nodes.contains(&link.node))
    }

    /// The links the network's latency and faults reach.
    pub fn on_the_network(&self) -> impl Iterator<Item = &Link> {
        self.0.iter().filter(|link| link.on_the_network())
    }
}

/// One master and its replicas, which of them is master now, and each node's configured
/// role (the node it replicates from, `None` for a master): the one it started with, or
/// the last `REPLICAOF` the controller sent it, as Sentinel follows each with `CONFIG
/// REWRITE`.
pub struct LiveGroup {
    /// Node names: the first master first, then its replicas.
    pub names: Vec<String>,
    master: Cell<usize>,
    replicaof: RefCell<Vec<Option<usize>>>,
}

impl LiveGroup {
    pub fn new(names: Vec<String>) -> Self {
        let replicaof = (0..names.len()).map(|i| (i > 0).then_some(0)).collect();
        LiveGroup {
            names,
            master: Cell::new(0),
            replicaof: RefCell::new(replicaof),
        }
    }

    /// Name of the current master.
    pub fn master_name(&self) -> &str {
        &self.names[self.master.get()]
    }

    /// The index of the current master in [`names`](Self::names).
    pub fn master(&self) -> usize {
        self.master.get()
    }

    /// Makes node `index` the group's master.
    pub fn set_master(&self, index: usize) {
        self.master.set(index);
    }

    /// Notes that node `index` now replicates from `master` (`None`: it is a master) by
    /// its configuration.
    pub fn configure(&self, index: usize, master: Option<usize>) {
        self.replicaof.borrow_mut()[index] = master;
    }

    /// The name of the node that node `name` replicates from by its configuration (`None`:
    /// it is a master, or not of this group): the role it restarts in. An old master that
    /// was down when its replica was promoted restarts a master, until the controller
    /// converts it.
    pub fn configured_master_of(&self, name: &str) -> Option<&str> {
        let index = self.names.iter().position(|n| n == name)?;
        let master = self.replicaof.borrow()[index]?;
        Some(&self.names[master])
    }
}

/// A worker's way to one group: where its `LOCKSIM_REDIS_URLS` entry points.
pub struct Route {
    pub client: String,
    pub group: usize,
    pub proxy: Proxy,
}

/// The run's links, groups and routes.
pub struct LiveTopology {
    pub links: Links,
    pub routes: Vec<Route>,
    pub groups: Vec<LiveGroup>,
    /// Every Redis node's name.
    pub redis: Vec<String>,
}

impl LiveTopology {
    /// Points every worker's route to group `index` at its proxy to the group's master.
    pub fn redirect_routes(&self, index: usize) {
        let master = self.groups[index].master_name();
        for route in self.routes.iter().filter(|r| r.group == index) {
            if let Some(link) = self.links.find(&route.client, master) {
                route.proxy.redirect(link.proxy.addr);
            }
        }
    }

    /// Where replica `from` reaches `to` as its master: its replication proxy.
    pub fn replication_proxy(&self, from: &str, to: &str) -> Option<SocketAddr> {
        let is_redis = |name: &str| self.redis.iter().any(|n| n == name);
        (is_redis(from) && is_redis(to))
            .then(|| self.links.find(from, to).map(|link| link.proxy.addr))
            .flatten()
    }
}

/// Asks the node at `node` (directly, not through a proxy) to replicate from `via`.
pub async fn replicaof(node: SocketAddr, via: SocketAddr) -> Result<(), String> {
    let mut conn = Conn::new(TcpConnector(node), HostClock::new(), PROBE_TIMEOUT_MS);
    match conn.request(&Replicaof::Master(via).into_frame()).await {
        Ok(Frame::Error(e)) => Err(format!("REPLICAOF: {e}")),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("REPLICAOF: {e}")),
    }
}
