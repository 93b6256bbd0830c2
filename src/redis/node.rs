//! Everything one node keeps between commands: its keyspace, its script interpreter, its
//! replication state and its AOF.
//!
//! The server owns one `Node` and lends it to each command in turn, as Redis's single
//! thread does, so a script and the commands it calls see one consistent keyspace.

use super::db::Db;
use super::lua::Scripts;
use super::persistence::Aof;
use super::replication::{Replication, effects};

/// How a master tells its replicas when keys expire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TtlReplication {
    /// Redis 7: absolute times (`SET … PXAT t`), so after a failover the promoted
    /// replica's clock decides when the key dies.
    #[default]
    Absolute,
    /// Redis 6: the time left (`SET … PX ms`), counted from when the replica applies it,
    /// so a lagging replica keeps the key a little longer.
    Relative,
}

/// The state of one fake Redis node.
pub struct Node {
    /// Database 0, the only one.
    pub db: Db,
    /// The Lua interpreter and its script cache.
    pub scripts: Scripts,
    /// Master or replica, and the links.
    pub replication: Replication,
    /// Where write effects are persisted, if anywhere.
    pub aof: Aof,
    /// How expiry times travel to replicas (the Redis version's rule).
    pub ttl_replication: TtlReplication,
}

impl Node {
    /// An empty node; fails only if the Lua interpreter cannot start (out of memory).
    pub fn new() -> mlua::Result<Node> {
        Ok(Node {
            db: Db::default(),
            scripts: Scripts::new()?,
            replication: Replication::default(),
            aof: Aof::default(),
            ttl_replication: TtlReplication::default(),
        })
    }
}

impl Node {
    /// Persists what the last command or expiry cycle changed and streams it to the
    /// replicas.
    /// The AOF always stores absolute expiry times; replicas get them in the form of
    /// `ttl_replication`, relative ones computed at `now_ms` (the node's wall clock).
    pub fn propagate(&mut self, now_ms: u64) {
        let changes = self.db.take_changes();
        let saved = effects(&changes, &self.db, None);
        self.aof.append(&saved);
        match self.ttl_replication {
            TtlReplication::Absolute => self.replication.propagate(&saved),
            TtlReplication::Relative => {
                self.replication
                    .propagate(&effects(&changes, &self.db, Some(now_ms)))
            }
        }
    }
}
