//! The fake Redis node: answers as redis-server 7.0 does, over any byte stream, with keys
//! expiring by the node's own clock.
//!
//! Split as mini-redis is: [`request`] parses requests as Redis does and [`connection`]
//! frames bytes, [`cmd`] holds one type per command (shared with the lock client, which
//! builds the same types to send), [`db`] owns the keyspace and expiry, [`lua`] runs
//! scripts, [`propagation`] and [`replication`] carry write commands to replicas as Redis 7
//! propagates them, [`effects`] and [`persistence`] write effects to an AOF or RDB snapshot, [`node`] holds one node's state
//! (its [`stats`] among it), [`server`] accepts connections and runs the
//! expiry cycle, the fsync clock and replication links.

pub mod cmd;
pub mod config;
pub mod connection;
pub mod db;
pub mod effects;
pub mod glob;
pub mod lua;
mod lua_args;
mod lua_bit;
mod lua_cjson;
mod lua_cmsgpack;
mod lua_errors;
pub mod lua_pool;
mod lua_random;
mod lua_reply;
mod lua_scan;
mod lua_stack;
mod lua_watchdog;
pub mod memory;
mod name_hash;
pub mod node;
mod number;
pub mod persistence;
pub mod propagation;
mod propagation_log;
pub mod rdb;
pub mod replication;
pub mod request;
pub mod server;
pub mod shebang;
pub mod stats;
pub mod subscriptions;
pub mod text;

/// The Redis version the node answers as (HELLO, INFO, `redis.REDIS_VERSION`): the one its
/// replies were checked against.
pub const REDIS_VERSION: &str = "7.0.15";

/// A RESP2 frame, as redis-protocol models it.
pub type Frame = redis_protocol::resp2::types::OwnedFrame;
