//! The Redis deployment of a run: groups of one master and its replicas, the nodes that
//! serve them, and who is master now.
//!
//! A group's master can change (the failover controller promotes a replica); clients
//! reach the master through the group's [`Address`]. A node that restarts comes back in
//! the role its own configuration gives it: the one it started with, or the last
//! `REPLICAOF` the controller sent it (Sentinel follows each with `CONFIG REWRITE`). An old
//! master that was down when its replica was promoted comes back a master, until the
//! controller converts it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use super::clock::SimClock;
use super::net::{Address, Nic, REDIS_PORT, SimDialer, SimListener};
use crate::redis::node::{KeyWatch, TtlReplication, WriteHook};
use crate::redis::persistence::{Disk, Fsync, Persistence, SavePoint};
use crate::redis::server::{ServeOptions, serve_node};
use crate::scenario::{PersistenceMode, Scenario};

/// A node's persistence, with a fresh disk that the world keeps across its crashes;
/// `save_points` for `rdb`.
pub(crate) fn persistence(mode: PersistenceMode, save_points: &[SavePoint]) -> Persistence {
    let aof = |fsync| Persistence::Aof {
        disk: Disk::new(),
        fsync,
    };
    match mode {
        PersistenceMode::None => Persistence::None,
        PersistenceMode::AofEverysec => aof(Fsync::EverySec),
        PersistenceMode::AofAlways => aof(Fsync::Always),
        PersistenceMode::AofNo => aof(Fsync::No),
        PersistenceMode::Rdb => Persistence::Rdb {
            disk: Disk::new(),
            save_points: save_points.to_vec(),
        },
    }
}

/// One master and its replicas.
#[derive(Debug, Clone)]
pub struct Group {
    /// Node names: the first master first, then its replicas.
    pub names: Vec<String>,
    /// Each node's address, in the same order.
    pub addrs: Vec<SocketAddr>,
    /// Index of the current master.
    master: Arc<Mutex<usize>>,
    /// Each node's configured role (its redis.conf): the node it replicates from, or
    /// `None` for a master.
    replicaof: Arc<Mutex<Vec<Option<usize>>>>,
    /// Where clients find the current master.
    pub address: Address,
    /// Each node's persistence; its disk outlives the node's crashes.
    persistence: Vec<Persistence>,
    /// Each node's network interface (latency, loss and reset faults on a node).
    pub nics: Vec<Nic>,
    /// How each node, as a master, sends expiry times to replicas (its version's rule).
    ttl_replication: Vec<TtlReplication>,
    /// How long a master's writes wait in its output buffer to a replica.
    replication_lag_ms: u64,
    /// Masters' `min-replicas-to-write` and `min-replicas-max-lag` (s), when set.
    min_replicas: Option<(u32, u64)>,
}

impl Group {
    /// Group `i` (0-based) of the deployment, with these node names.
    pub fn new(i: usize, names: Vec<String>, scenario: &Scenario) -> Self {
        let addrs: Vec<SocketAddr> = (0..names.len())
            .map(|j| {
                // Masters are 10.0.0.(i+1); replica j of master i is 10.1.(i+1).j.
                let ip = match j {
                    0 => Ipv4Addr::new(10, 0, 0, i as u8 + 1),
                    j => Ipv4Addr::new(10, 1, i as u8 + 1, j as u8),
                };
                SocketAddr::new(IpAddr::V4(ip), REDIS_PORT)
            })
            .collect();
        let address = Address::new(addrs[0]);
        let save_points = scenario.save_points();
        let persistence = names
            .iter()
            .map(|name| persistence(scenario.persistence_of(name), &save_points))
            .collect();
        let ttl_replication = names
            .iter()
            .map(|name| match scenario.redis_version_of(name) {
                6 => TtlReplication::Relative,
                _ => TtlReplication::Absolute,
            })
            .collect();
        let nics = names.iter().map(|_| Nic::default()).collect();
        let replicaof = (0..names.len()).map(|j| (j > 0).then_some(0)).collect();
        Group {
            names,
            addrs,
            master: Arc::new(Mutex::new(0)),
            replicaof: Arc::new(Mutex::new(replicaof)),
            address,
            persistence,
            nics,
            ttl_replication,
            replication_lag_ms: scenario.topology.replication_lag_ms,
            min_replicas: scenario.min_replicas(),
        }
    }

    /// A lone node at a fixed address (the fencing counter). It fsyncs every write, so a
    /// crash never rolls its counter back: a linearizable token source must not repeat a
    /// token, whatever the nemesis does to it.
    pub fn standalone(name: &str, addr: SocketAddr) -> Self {
        Group {
            names: vec![name.to_string()],
            addrs: vec![addr],
            master: Arc::new(Mutex::new(0)),
            replicaof: Arc::new(Mutex::new(vec![None])),
            address: Address::new(addr),
            persistence: vec![persistence(PersistenceMode::AofAlways, &[])],
            nics: vec![Nic::default()],
            ttl_replication: vec![TtlReplication::default()],
            replication_lag_ms: 0,
            min_replicas: None,
        }
    }

    /// Node `index`'s disk (its AOF or RDB file), if it keeps one.
    pub fn disk(&self, index: usize) -> Option<Disk> {
        match &self.persistence[index] {
            Persistence::Aof { disk, .. } | Persistence::Rdb { disk, .. } => Some(disk.clone()),
            Persistence::None => None,
        }
    }

    /// Index of the current master.
    pub fn master(&self) -> usize {
        *self.master.lock().expect("group lock poisoned")
    }

    /// Name of the current master.
    pub fn master_name(&self) -> &str {
        &self.names[self.master()]
    }

    /// Makes node `index` the master: clients reconnecting find it.
    pub fn promote(&self, index: usize) {
        *self.master.lock().expect("group lock poisoned") = index;
        self.address.set(self.addrs[index]);
    }

    /// Node `index` took `REPLICAOF` of node `master` (`None`: `NO ONE`) and rewrote its
    /// configuration: a restart brings it back in that role.
    pub fn configure(&self, index: usize, master: Option<usize>) {
        self.replicaof.lock().expect("group lock poisoned")[index] = master;
    }

    /// Runs node `index`: a master, or a replica, as its configuration says; `on_write` hears
    /// of each write it applies as a master, `key_watch` of every change to its keys.
    pub async fn serve(
        self,
        index: usize,
        clock: SimClock,
        on_write: Option<WriteHook>,
        key_watch: Option<KeyWatch>,
    ) {
        let addr = self.addrs[index];
        let replicaof = self.replicaof.lock().expect("group lock poisoned")[index];
        let options = ServeOptions {
            replicaof: replicaof.map(|master| self.addrs[master]),
            announce: addr,
            persistence: self.persistence[index].clone(),
            ttl_replication: self.ttl_replication[index],
            on_write,
            key_watch,
            replication_lag_ms: self.replication_lag_ms,
            min_replicas: self.min_replicas,
        };
        let nic = self.nics[index].clone();
        let listener = SimListener::bind(addr, nic.clone())
            .await
            .expect("a fresh node's port is free");
        // The loop ends only when accept fails, which madsim does not do to a live node.
        let _ = serve_node(listener, clock, SimDialer(nic), options).await;
    }
}
