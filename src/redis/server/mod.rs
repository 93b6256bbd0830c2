//! The node's server loop: accepts connections, serves them, runs the expiry cron.
//!
//! Everything runs in one task (connections are polled together), as Redis runs on one
//! thread: commands never interleave, and no task spawning is needed, so the same loop
//! serves madsim TCP and real TCP.
//!
//! Split by what each room serves: this one accepts connections and runs the node's
//! timers; `client` answers one client connection; `links` carries replication, a
//! master's side and a replica's; `busy` answers the other clients while a script runs
//! long; `context` is what they all share.

mod busy;
mod client;
mod context;
mod links;

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;

use super::cmd::Session;
use super::node::{KeyWatch, Node, TtlReplication, WriteHook};
use super::persistence::{FSYNC_EVERY_MS, Persistence, Persister, SAVE_CHECK_MS, save_parameter};
use super::replication::{Dialer, REPLICA_CRON_MS, next_request};
use crate::platform::{Clock, Listener};
use crate::woken::Woken;
use busy::{BusyPass, Watched};
use client::serve_connection;
use context::Context;
pub use context::EXPIRY_CYCLE_MS;
use links::{apply_effect, follow_master};

/// How long a node waits to accept again after an accept failed.
const ACCEPT_RETRY_MS: u64 = 10;

/// How a node serves, beyond its listener and clock.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Start as a replica of this master (`--replicaof`).
    pub replicaof: Option<SocketAddr>,
    /// The address this node tells its master it listens on (REPLCONF).
    pub announce: SocketAddr,
    /// None, or an AOF on a disk that outlives the node.
    pub persistence: Persistence,
    /// How expiry times travel to replicas: Redis 7's absolute or Redis 6's relative.
    pub ttl_replication: TtlReplication,
    /// Told of each write this node applies as a master, before its replicas are.
    pub on_write: Option<WriteHook>,
    /// Told of every change to the keyspace, and of what a restart read back.
    pub key_watch: Option<KeyWatch>,
    /// How long, as a master, each write waits in its output buffer to a replica before
    /// it is written to the link (replication lag that dies with this process).
    pub replication_lag_ms: u64,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (s), when set.
    pub min_replicas: Option<(u32, u64)>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            replicaof: None,
            announce: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            persistence: Persistence::None,
            ttl_replication: TtlReplication::Absolute,
            on_write: None,
            key_watch: None,
            replication_lag_ms: 0,
            min_replicas: None,
        }
    }
}

/// A dialer for nodes that cannot open connections: REPLICAOF makes them replicas whose
/// link never comes up, as if their master were unreachable.
#[derive(Debug, Clone, Copy)]
pub struct NoDialer;

impl Dialer for NoDialer {
    type Stream = tokio::io::DuplexStream;

    async fn dial(&self, addr: SocketAddr) -> std::io::Result<Self::Stream> {
        Err(std::io::Error::other(format!("this node cannot dial {addr}")))
    }
}

/// Serves the listener forever (until its node is killed), as a master
/// that cannot follow another node.
pub async fn serve<L: Listener, C: Clock>(listener: L, clock: C) -> std::io::Result<()> {
    serve_node(listener, clock, NoDialer, ServeOptions::default()).await
}

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Serves the listener forever; `dialer` reaches masters this node follows.
pub async fn serve_node<L: Listener, C: Clock, D: Dialer>(
    listener: L,
    clock: C,
    dialer: D,
    options: ServeOptions,
) -> std::io::Result<()> {
    let mut node = Node::new().map_err(|e| std::io::Error::other(e.to_string()))?;
    match &options.persistence {
        Persistence::Aof { fsync, .. } => {
            node.config.remember("appendonly", "yes".into());
            node.config.remember("appendfsync", fsync.parameter().into());
        }
        Persistence::Rdb { save_points, .. } => {
            node.config.remember("save", save_parameter(save_points));
        }
        Persistence::None => {}
    }
    if let Persistence::Aof { disk, .. } | Persistence::Rdb { disk, .. } = &options.persistence {
        let machine = clock.clone();
        disk.on_machine_clock(move || machine.monotonic_ms());
    }
    node.persistence = Persister::new(options.persistence, clock.wall_ms());
    node.ttl_replication = options.ttl_replication;
    node.on_write = options.on_write;
    node.min_replicas = options.min_replicas;
    // A restarted node starts from what it persisted.
    let mut saved = node.persistence.saved();
    while let Ok(Some((words, _))) = next_request(&mut saved) {
        apply_effect(&mut node.db, words, clock.wall_ms());
    }
    node.db.select(0);
    let restored = node.db.take_changes();
    node.key_watch = options.key_watch;
    if let Some(watch) = &node.key_watch
        && let Some(changed) = restored.get(&0)
        && !changed.keys.is_empty()
    {
        (watch.0)(changed, node.db.database(0));
    }
    let node = Rc::new(RefCell::new(node));
    let (links, mut link_requests) = mpsc::unbounded_channel();
    if let Some(master) = options.replicaof {
        let mut node = node.borrow_mut();
        let node = &mut *node;
        node.replication.follow(master, &mut node.db);
        let _ = links.send(node.replication.generation);
    }
    let monotonic = clock.clone();
    let context = Rc::new(Context {
        busy: Rc::new(BusyPass::new(Box::new(move || monotonic.monotonic_ms()))),
        node: node.clone(),
        clock: clock.clone(),
        dialer,
        announce: options.announce,
        links,
        replication_lag_ms: options.replication_lag_ms,
    });
    let mut tasks: FuturesUnordered<Task> = FuturesUnordered::new();
    let mut next_cycle_ms = clock.monotonic_ms() + EXPIRY_CYCLE_MS;
    let mut next_fsync_ms = clock.monotonic_ms() + FSYNC_EVERY_MS;
    let mut next_count_ms = clock.monotonic_ms() + REPLICA_CRON_MS;
    let mut next_save_check_ms = clock.monotonic_ms() + SAVE_CHECK_MS;
    let mut accept_after_ms = 0;
    let replan = node.borrow().cycle_replan.clone();
    // Whether the busy pass watches the node's scripts: from the first real socket on.
    let mut watching_scripts = false;
    // Every request wakes the node's task (through its connection's): the other branches
    // are polled only after their own wakes.
    let mut gates = Gates::default();
    loop {
        if context.busy.shutting_down() {
            // SHUTDOWN NOSAVE during a script: every connection closes as the tasks drop.
            return Ok(());
        }
        // The expiry cycle ticks every EXPIRY_CYCLE_MS, but only a tick that finds work
        // does anything: sleep through the others, and plan again when a write brings the
        // work closer (Node::propagate then notifies `replan`).
        let cycle_work_ms = node.borrow().next_cycle_work_ms();
        node.borrow_mut().cycle_planned_ms = cycle_work_ms;
        while next_cycle_ms <= clock.monotonic_ms() {
            next_cycle_ms += EXPIRY_CYCLE_MS;
        }
        tokio::select! {
            biased;
            Some(()) = tasks.next(), if !tasks.is_empty() => {}
            Some(generation) = gates.links.gate(link_requests.recv()) => {
                tasks.push(Box::pin(follow_master(context.clone(), generation)));
            }
            stream = gates.accept.gate(listener.accept()), if accept_after_ms <= clock.monotonic_ms() => match stream {
                Ok((stream, peer)) => {
                    let session = Session { id: node.borrow_mut().clients.next_id(), ..Session::default() };
                    let task: Task = match L::socket_fd(&stream) {
                        Some(fd) => {
                            if !std::mem::replace(&mut watching_scripts, true) {
                                node.borrow_mut().watch_scripts(context.busy.clone());
                            }
                            let socket = context.busy.register(session.id, fd);
                            let stream = Watched::new(stream, socket.clone());
                            Box::pin(serve_connection(stream, Some(socket), peer, session, context.clone()))
                        }
                        None => Box::pin(serve_connection(stream, None, peer, session, context.clone())),
                    };
                    tasks.push(task);
                }
                // Out of file descriptors (or another failed accept): the clients already
                // connected are served on, and accepting resumes a moment later, as
                // Redis logs the failure and goes on.
                Err(_) => accept_after_ms = clock.monotonic_ms() + ACCEPT_RETRY_MS,
            },
            () = gates.accept_retry.gate(clock.sleep_until_monotonic(accept_after_ms)), if accept_after_ms > clock.monotonic_ms() => {}
            () = gates.replan.gate(replan.notified()) => {}
            tick = gates.cycle.gate(clock.sleep_until_wall_on_grid(cycle_work_ms.unwrap_or(u64::MAX), next_cycle_ms, EXPIRY_CYCLE_MS)),
                if cycle_work_ms.is_some() => {
                let mut node = node.borrow_mut();
                node.db.expire_due(clock.wall_ms());
                node.propagate(clock.wall_ms());
                next_cycle_ms = tick + EXPIRY_CYCLE_MS;
            }
            // CONFIG SET appendfsync and save change these two as the node runs.
            () = gates.fsync.gate(clock.sleep_until_monotonic(next_fsync_ms)), if node.borrow().persistence.fsyncs_every_second() => {
                node.borrow_mut().persistence.fsync();
                next_fsync_ms = next_fsync_ms.max(clock.monotonic_ms()) + FSYNC_EVERY_MS;
            }
            () = gates.save_check.gate(clock.sleep_until_monotonic(next_save_check_ms)), if node.borrow().persistence.has_save_points() => {
                node.borrow_mut().snapshot_if_due(clock.wall_ms());
                next_save_check_ms = next_save_check_ms.max(clock.monotonic_ms()) + SAVE_CHECK_MS;
            }
            () = gates.count.gate(clock.sleep_until_monotonic(next_count_ms)), if node.borrow().min_replicas.is_some() => {
                node.borrow_mut().count_good_replicas(clock.wall_ms());
                next_count_ms += REPLICA_CRON_MS;
            }
        }
    }
}

/// A [`Woken`] for each branch of the node's loop but its connections (whose wakes
/// `FuturesUnordered` tells apart already).
#[derive(Default)]
struct Gates {
    links: Woken,
    accept: Woken,
    accept_retry: Woken,
    replan: Woken,
    cycle: Woken,
    fsync: Woken,
    save_check: Woken,
    count: Woken,
}
