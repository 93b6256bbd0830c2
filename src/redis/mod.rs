//! The fake Redis node: RESP over any byte stream, keys expiring by the node's own clock.
//!
//! Split as mini-redis is: [`connection`] frames bytes, [`cmd`] holds one type per command
//! (shared with the lock client, which builds the same types to send), [`db`] owns the
//! keyspace and expiry, [`server`] accepts connections and runs the expiry cycle.

pub mod cmd;
pub mod connection;
pub mod db;
pub mod lua;
pub mod node;
pub mod persistence;
pub mod replication;
pub mod request;
pub mod server;

/// A RESP2 frame, as redis-protocol models it.
pub type Frame = redis_protocol::resp2::types::OwnedFrame;
