//! The nodes of a scenario, as a run names and sets them up: the Redis nodes by group,
//! each one's persistence and version, the Sentinels, the clients and every name a fault
//! may aim at. Read from the file's `topology`, `clients` and `lock` together, so neither
//! `schema` nor `topology` owns them.

use super::schema::Scenario;
use super::topology::{
    DEFAULT_DOWN_AFTER_MS, DEFAULT_FAILOVER_TIMEOUT_MS, DEFAULT_MIN_REPLICAS_MAX_LAG_S,
    DEFAULT_REDLOCK_MASTERS, DEFAULT_SENTINELS, FENCE_COUNTER, NodeOverrides, PersistenceMode, SENTINEL,
    SentinelSettings, TopologyKind, sentinel_name,
};
use crate::client::Fencing;
use crate::redis::persistence::{DEFAULT_SAVE_POINTS, SavePoint};

impl Scenario {
    /// The Redis nodes by group: each group is a master followed by its replicas.
    pub fn redis_groups(&self) -> Vec<Vec<String>> {
        let (masters, replicas) = match self.topology.kind {
            TopologyKind::Single => (1, 0),
            TopologyKind::Replicated => (1, self.topology.replicas.unwrap_or(1)),
            TopologyKind::Redlock => (
                self.topology.masters.unwrap_or(DEFAULT_REDLOCK_MASTERS),
                self.topology.replicas.unwrap_or(0),
            ),
        };
        (1..=masters)
            .map(|i| {
                std::iter::once(format!("redis-{i}"))
                    .chain((1..=replicas).map(|j| format!("redis-{i}-replica-{j}")))
                    .collect()
            })
            .collect()
    }

    /// Names of every Redis node (masters and replicas), in order.
    pub fn redis_names(&self) -> Vec<String> {
        self.redis_groups().into_iter().flatten().collect()
    }

    /// Names of the masters at the start, in order: where the lock lives.
    pub fn master_names(&self) -> Vec<String> {
        self.redis_groups()
            .into_iter()
            .map(|group| group[0].clone())
            .collect()
    }

    /// A Redis node's persistence (its override, or the topology's).
    pub fn persistence_of(&self, node: &str) -> PersistenceMode {
        self.override_of(node, |o| o.persistence)
            .unwrap_or(self.topology.persistence)
    }

    /// A Redis node's version (its override, or the topology's; 7 when neither says).
    pub fn redis_version_of(&self, node: &str) -> u8 {
        self.override_of(node, |o| o.redis_version)
            .or(self.topology.redis_version)
            .unwrap_or(7)
    }

    /// How long a crashed Redis node stays down (its override, or the topology's).
    pub fn restart_delay_ms_of(&self, node: &str) -> u64 {
        self.override_of(node, |o| o.restart_delay_ms)
            .unwrap_or(self.topology.restart_delay_ms)
    }

    fn override_of<T>(&self, node: &str, field: impl Fn(&NodeOverrides) -> Option<T>) -> Option<T> {
        self.topology.nodes.get(node).and_then(field)
    }

    /// How long the failover controller waits before promoting a replica.
    pub fn down_after_ms(&self) -> u64 {
        self.topology.down_after_ms.unwrap_or(DEFAULT_DOWN_AFTER_MS)
    }

    /// The Sentinel quorum's settings, when the scenario has one (`topology.sentinel`).
    pub fn sentinel(&self) -> Option<SentinelSettings> {
        let spec = self.topology.sentinel.as_ref()?;
        let count = spec.count.unwrap_or(DEFAULT_SENTINELS);
        Some(SentinelSettings {
            count,
            quorum: spec.quorum.unwrap_or(count / 2 + 1),
            down_after_ms: spec.down_after_ms.unwrap_or(self.down_after_ms()),
            failover_timeout_ms: spec.failover_timeout_ms.unwrap_or(DEFAULT_FAILOVER_TIMEOUT_MS),
        })
    }

    /// Names of the Sentinels (none without `topology.sentinel`).
    pub fn sentinel_names(&self) -> Vec<String> {
        let count = self.sentinel().map_or(0, |s| s.count);
        (1..=count).map(sentinel_name).collect()
    }

    /// The RDB save points of `rdb` nodes (`topology.save`, or Redis's defaults).
    pub fn save_points(&self) -> Vec<SavePoint> {
        match &self.topology.save {
            Some(points) => points
                .iter()
                .map(|&[seconds, changes]| SavePoint { seconds, changes })
                .collect(),
            None => DEFAULT_SAVE_POINTS.to_vec(),
        }
    }

    /// Masters' `min-replicas-to-write` and `min-replicas-max-lag` (s): `None` when off.
    pub fn min_replicas(&self) -> Option<(u32, u64)> {
        let topology = &self.topology;
        let lag_s = topology
            .min_replicas_max_lag_s
            .unwrap_or(DEFAULT_MIN_REPLICAS_MAX_LAG_S);
        (topology.min_replicas_to_write > 0).then_some((topology.min_replicas_to_write, lag_s))
    }

    /// Names of the clients, in order.
    pub fn client_names(&self) -> Vec<String> {
        (1..=self.clients.count).map(|i| format!("client-{i}")).collect()
    }

    /// Every node a fault may name: the Redis nodes, the clients, the failover controller
    /// where a group has replicas, and the fencing counter where there is one.
    pub fn node_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .redis_names()
            .into_iter()
            .chain(self.client_names())
            .collect();
        if self.sentinel().is_some() {
            names.extend(self.sentinel_names());
        } else if self.redis_groups().iter().any(|group| group.len() > 1) {
            names.push(SENTINEL.to_string());
        }
        if self.lock.options().fencing == Fencing::Counter {
            names.push(FENCE_COUNTER.to_string());
        }
        names
    }
}
