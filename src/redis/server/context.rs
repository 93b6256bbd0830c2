//! What every connection and replication link of a node shares, kept apart so the
//! connection loop and the links can both read it without importing the accept loop.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use tokio::sync::mpsc;

use super::busy::BusyPass;
use crate::redis::node::Node;

/// How often active expiry runs: Redis's default `hz 10`.
pub const EXPIRY_CYCLE_MS: u64 = 100;

/// What every connection and link of a node shares.
pub(super) struct Context<C, D> {
    pub(super) node: Rc<RefCell<Node>>,
    pub(super) clock: C,
    pub(super) dialer: D,
    pub(super) announce: SocketAddr,
    /// Asks the server loop to start following the master of this REPLICAOF generation.
    pub(super) links: mpsc::UnboundedSender<u64>,
    /// See [`ServeOptions::replication_lag_ms`](super::ServeOptions::replication_lag_ms).
    pub(super) replication_lag_ms: u64,
    /// The client sockets a script that runs long serves (real sockets only).
    pub(super) busy: Rc<BusyPass>,
}
