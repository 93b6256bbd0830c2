//! Everything one node keeps between commands: its keyspace, its script interpreter, its
//! replication state and its AOF.
//!
//! The server owns one `Node` and lends it to each command in turn, as Redis's single
//! thread does, so a script and the commands it calls see one consistent keyspace.

use super::db::Db;
use super::lua::Scripts;
use super::persistence::Aof;
use super::replication::{Replication, effects};

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
}

impl Node {
    /// An empty node; fails only if the Lua interpreter cannot start (out of memory).
    pub fn new() -> mlua::Result<Node> {
        Ok(Node {
            db: Db::default(),
            scripts: Scripts::new()?,
            replication: Replication::default(),
            aof: Aof::default(),
        })
    }
}

impl Node {
    /// Persists what the last command or expiry cycle changed and streams it to the
    /// replicas.
    pub fn propagate(&mut self) {
        let effects = effects(&self.db.take_changes(), &self.db);
        self.aof.append(&effects);
        self.replication.propagate(&effects);
    }
}
