//! Everything one node keeps between commands: its keyspace, the connections blocked on
//! it, its script interpreter, its replication state and its AOF.
//!
//! The server owns one `Node` and lends it to each command in turn, as Redis's single
//! thread does, so a script and the commands it calls see one consistent keyspace.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use super::cmd::clients::Clients;
use super::cmd::error::Writes;
use super::cmd::lists::Blocked;
use super::cmd::transactions::Watches;
use super::config::Config;
use super::db::{Changes, Database, Db};
use super::effects::{effects, in_transaction, snapshot};
use super::lua::Watcher;
use super::lua_pool::PooledScripts;
use super::persistence::{Fsync, Persister, parse_save_parameter};
use super::propagation::relative;
use super::replication::Replication;
use super::stats::Stats;

/// How a master tells its replicas when keys expire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TtlReplication {
    /// Redis 7: absolute times (`SET … PXAT t`, `PEXPIREAT`), so after a failover the
    /// promoted replica's clock decides when the key dies.
    #[default]
    Absolute,
    /// Redis 6: the time left (`SET … PX ms`, `PEXPIRE`), counted from when the replica
    /// applies it, so a lagging replica keeps the key a little longer.
    Relative,
}

/// Told of every write a master applies, before the write is streamed to its replicas:
/// the moment an acknowledged write exists only on the master. The simulator uses it to
/// strike exactly then; a real server has none. It may return a [`Gate`]: the stream to
/// the replicas then waits until the gate opens (or dies with the node).
#[derive(Clone)]
pub struct WriteHook(pub Arc<OnWrite>);

/// The hook's function: the keys of database 0 the write changed (the simulated lock
/// clients use database 0), that database after it.
pub type OnWrite = dyn Fn(&BTreeSet<Vec<u8>>, &Database) -> Option<Gate> + Send + Sync;

/// Holds a master's replication stream back while closed.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<AtomicBool>);

impl Gate {
    /// Lets the held stream go (at the node's next write or expiry cycle).
    pub fn open(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn is_open(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Told of every change to the keyspace a node applies (as a master or from its master's
/// stream), and of every key a restarted node read back from its AOF: the simulator
/// records the lock key's life on each node from it. A real server has none.
#[derive(Clone)]
pub struct KeyWatch(pub Arc<OnChange>);

/// The watch's function: what changed in database 0 (the simulated lock clients' database),
/// that database after it.
pub type OnChange = dyn Fn(&Changes, &Database) + Send + Sync;

impl std::fmt::Debug for KeyWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyWatch")
    }
}

impl std::fmt::Debug for WriteHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteHook")
    }
}

/// The state of one fake Redis node.
pub struct Node {
    /// The 16 databases.
    pub db: Db,
    /// Connections blocked on lists (BLPOP, BRPOP).
    pub blocked: Blocked,
    /// The Lua interpreter and its script cache (kept for the next node when this one is
    /// dropped, if it can be reset).
    pub scripts: PooledScripts,
    /// Master or replica, and the links.
    pub replication: Replication,
    /// Where write effects are persisted (AOF) or counted towards a snapshot (RDB), if
    /// anywhere.
    pub persistence: Persister,
    /// How expiry times travel to replicas (the Redis version's rule).
    pub ttl_replication: TtlReplication,
    /// Told of each write a master applies, before its replicas are.
    pub on_write: Option<WriteHook>,
    /// Told of every change to the keyspace.
    pub key_watch: Option<KeyWatch>,
    /// While a gate from `on_write` is closed, the stream to replicas is held back.
    gate: Option<Gate>,
    /// The wall time the server's expiry cycle sleeps until (see
    /// [`Node::next_cycle_work_ms`]), and how a write with earlier work (or a CONFIG SET of
    /// what the server's loop does) wakes it.
    pub cycle_planned_ms: Option<u64>,
    pub cycle_replan: Rc<Notify>,
    /// The node's connections and replication links (CLIENT LIST, CLIENT KILL).
    pub clients: Clients,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (s), when set: a master refuses
    /// writes while fewer replicas than that acknowledged within the lag.
    pub min_replicas: Option<(u32, u64)>,
    /// `maxmemory` in bytes (0: no limit), what `redis/memory.rs` compares its estimate of
    /// used memory with.
    pub maxmemory_bytes: u64,
    /// Replicas that acknowledged within the lag when last counted (see
    /// [`Node::count_good_replicas`]).
    good_replicas: u32,
    /// The keys each connection WATCHes, told of every change the node applies.
    pub watches: Watches,
    /// The last command was an EXEC: what it changed goes out between MULTI and EXEC.
    pub in_transaction: bool,
    /// The parameters CONFIG GET and SET see.
    pub config: Config,
    /// The error replies sent and the commands called since the start or CONFIG RESETSTAT
    /// (INFO errorstats, commandstats).
    pub stats: Stats,
}

impl Node {
    /// Whether the node is out of memory now, as `performEvictions` finds at each command's
    /// start (server.c `processCommand`): `maxmemory` is set, the node is no replica (a
    /// replica ignores `maxmemory`, `replica-ignore-maxmemory yes`), and the estimate is over
    /// it. With `maxmemory 0` nothing is computed.
    pub fn out_of_memory(&self) -> bool {
        self.maxmemory_bytes > 0
            && !self.replication.is_replica()
            && super::memory::used_memory(&self.db) > self.maxmemory_bytes
    }

    /// An empty node; fails only if the Lua interpreter cannot start (out of memory).
    pub fn new() -> mlua::Result<Node> {
        Ok(Node {
            db: Db::default(),
            blocked: Blocked::default(),
            scripts: PooledScripts::take()?,
            replication: Replication::default(),
            persistence: Persister::default(),
            ttl_replication: TtlReplication::default(),
            on_write: None,
            key_watch: None,
            gate: None,
            cycle_planned_ms: None,
            cycle_replan: Rc::default(),
            clients: Clients::default(),
            min_replicas: None,
            maxmemory_bytes: 0,
            good_replicas: 0,
            watches: Watches::default(),
            in_transaction: false,
            config: Config::default(),
            stats: Stats::default(),
        })
    }
}

impl Node {
    /// Whether this node takes writes now (`processCommand`'s and
    /// `scriptVerifyWriteCommandAllow`'s checks), by its last count of good replicas.
    pub fn writes(&self) -> Writes {
        if self.replication.is_replica() {
            return Writes::ReadOnly;
        }
        match self.min_replicas {
            Some((needed, _)) if self.good_replicas < needed => Writes::NoReplicas,
            _ => Writes::Taken,
        }
    }

    /// Writes what the node models itself (`min-replicas-*`) into its parameters, for
    /// CONFIG GET.
    pub fn remember_modelled_config(&mut self) {
        if let Some((needed, max_lag_s)) = self.min_replicas {
            self.config.remember("min-replicas-to-write", needed.to_string());
            self.config
                .remember("min-replicas-max-lag", max_lag_s.to_string());
        }
    }

    /// Makes the node follow its parameters after CONFIG SET at wall time `now_ms`:
    /// `min-replicas-to-write` above 0 makes a master count its good replicas (now, and on
    /// the replication cron) and refuse writes without enough of them; `maxmemory` above 0
    /// makes it refuse what may grow the dataset once over it (`memory.rs`); `appendfsync`
    /// changes when its AOF is fsynced, `save` when its RDB snapshots are taken.
    pub fn apply_config(&mut self, now_ms: u64) {
        if let Some(fsync) = Fsync::from_parameter(self.config.value("appendfsync")) {
            self.persistence.set_fsync(fsync);
        }
        if let Some(points) = parse_save_parameter(self.config.value("save")) {
            self.persistence.set_save_points(points);
        }
        // The server loop looks again at whether it fsyncs and checks save points.
        self.cycle_replan.notify_one();
        let needed = u32::try_from(self.config_number("min-replicas-to-write")).unwrap_or(u32::MAX);
        self.min_replicas = (needed > 0).then(|| (needed, self.config_number("min-replicas-max-lag")));
        self.maxmemory_bytes = self.config_number("maxmemory");
        let busy_after_ms = self.config_number("busy-reply-threshold");
        self.scripts.set_busy_after_ms(busy_after_ms);
        self.count_good_replicas(now_ms);
    }

    /// A numeric parameter's value (0 if it is not a number).
    fn config_number(&self, name: &str) -> u64 {
        self.config.value(name).parse().unwrap_or_default()
    }

    /// Has `watcher` watch every script this node runs from now on (a node served on real
    /// sockets: see [`super::lua::Watcher`]), with the node's `busy-reply-threshold`.
    pub fn watch_scripts(&mut self, watcher: Rc<dyn Watcher>) {
        let busy_after_ms = self.config_number("busy-reply-threshold");
        self.scripts.set_watcher(watcher);
        self.scripts.set_busy_after_ms(busy_after_ms);
    }

    /// Counts the good replicas at wall time `now_ms`, as Redis's `refreshGoodSlavesCount`
    /// does: once a second (the replication cron) and whenever a replica connects or
    /// disconnects, not at each acknowledgement. (An acknowledgement that arrives late, just
    /// before its replica's link closes, does not make the master writable in between.)
    pub fn count_good_replicas(&mut self, now_ms: u64) {
        if let Some((_, max_lag_s)) = self.min_replicas {
            self.good_replicas = self.replication.good_replicas(now_ms, max_lag_s);
        }
    }

    /// Takes an RDB snapshot if a save point is due at wall time `now_ms` (`serverCron`).
    pub fn snapshot_if_due(&mut self, now_ms: u64) {
        if self.persistence.snapshot_due(now_ms) {
            self.save_snapshot(now_ms, true);
        }
    }

    /// Writes the whole dataset as the node's RDB file (`BGSAVE`, `SAVE`, a due save
    /// point, the first two in the `background`); `false` when the node keeps none. A
    /// background save is in progress until the next `serverCron` period has passed (one
    /// `1000 / hz` ms), when Redis would notice its child finished.
    pub fn save_snapshot(&mut self, now_ms: u64, background: bool) -> bool {
        const MS_PER_S: u64 = 1000;
        let saved = self.persistence.save(snapshot(&self.db), now_ms, background);
        if background {
            let hz: u64 = self.config.value("hz").parse().unwrap_or(10);
            self.persistence
                .in_background_until(now_ms + MS_PER_S / hz.max(1));
        }
        saved
    }

    /// Persists what the last command or expiry cycle changed (its effects) and streams
    /// what it propagates (its commands, `propagation.rs`), with what it published, to the
    /// replicas. The AOF always stores absolute expiry times; replicas get them in the form
    /// of `ttl_replication`, relative ones computed at `now_ms` (the node's wall clock).
    pub fn propagate(&mut self, now_ms: u64) {
        self.db.record_expired(false);
        let units = self.db.log.take();
        let changes = self.db.take_changes();
        self.watches.touch(&changes);
        // Redis wraps a transaction's effects in MULTI … EXEC when there is more than one.
        let changed: usize = changes
            .values()
            .map(|c| c.keys.len() + usize::from(c.cleared))
            .sum();
        let wrap = std::mem::take(&mut self.in_transaction) && changed > 1;
        let changed = changed as u64;
        if let Some(watch) = &self.key_watch
            && let Some(changed) = changes.get(&0)
        {
            (watch.0)(changed, self.db.database(0));
        }
        if let Some(hook) = &self.on_write
            && let Some(changed) = changes.get(&0)
            && !changed.keys.is_empty()
            && !self.replication.is_replica()
            && let Some(gate) = (hook.0)(&changed.keys, self.db.database(0))
        {
            self.gate = Some(gate);
        }
        // Without an AOF the effects are not encoded only to be dropped.
        let saved = if self.persistence.appends() {
            in_transaction(wrap, effects(&changes, &self.db))
        } else {
            Vec::new()
        };
        self.persistence.append(&saved, changed);
        let published = self.db.pubsub.take_published();
        if self.gate.as_ref().is_some_and(Gate::is_open) {
            self.gate = None;
        }
        self.replication.hold(self.gate.is_some());
        let units = match self.ttl_replication {
            TtlReplication::Absolute => units,
            TtlReplication::Relative => units
                .into_iter()
                .map(|unit| {
                    unit.into_iter()
                        .map(|op| op.map_words(|w| relative(w, now_ms)))
                        .collect()
                })
                .collect(),
        };
        self.replication
            .propagate_units(units, published, self.db.selected());
        self.refresh_recording();
        let work = self.next_cycle_work_ms();
        if work.is_some_and(|work| self.cycle_planned_ms.is_none_or(|planned| work < planned)) {
            self.cycle_replan.notify_one();
        }
    }

    /// Makes the keyspace record what calls propagate exactly while the node streams to
    /// replicas: a master with a backlog (`propagation.rs`).
    pub fn refresh_recording(&mut self) {
        self.db.log.recording = self.replication.streams() && !self.replication.is_replica();
    }

    /// The node wall time (ms) from which the expiry cycle has work: the earliest expiry
    /// of a key on a master, or at once (0) while a held replication stream waits for a
    /// cycle to let it go; `None` when no cycle would do anything. A cycle before then
    /// would find nothing due, so the server may sleep through those ticks.
    pub fn next_cycle_work_ms(&self) -> Option<u64> {
        match self.gate {
            Some(_) => Some(0),
            None => self.db.earliest_expiry_ms(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::cmd::{Command, Lookup, Session, Writes, kept_for_propagation};

    /// The bytes a master in `mode` streams to a replica for `command`, run at 1 s.
    fn streamed(mode: TtlReplication, command: &str) -> String {
        const NOW_MS: u64 = 1_000;
        let mut node = Node::new().unwrap();
        node.ttl_replication = mode;
        let (_, mut stream) =
            node.replication
                .add_replica(1, ("10.1.1.1".into(), 6379), false, false, &node.db, NOW_MS);
        node.refresh_recording();
        let words: Vec<Vec<u8>> = command.split(' ').map(|w| w.as_bytes().to_vec()).collect();
        let kept = kept_for_propagation(&node.db, Lookup::of(&words), &words);
        let dirty = node.db.dirty();
        let reply = Command::from_words(words, Writes::Taken).unwrap().apply(
            &mut node,
            &mut Session::default(),
            NOW_MS,
        );
        crate::redis::propagation::record(&mut node.db, kept, dirty, &reply);
        node.propagate(NOW_MS);
        String::from_utf8(stream.try_recv().unwrap())
            .unwrap()
            .replace("\r\n", " ")
    }

    #[test]
    fn a_redis_7_master_streams_absolute_expiry_times_and_a_redis_6_one_the_time_left() {
        let select = "*2 $6 SELECT $1 0 ";
        assert_eq!(
            streamed(TtlReplication::Absolute, "SET k v PX 30000"),
            format!("{select}*5 $3 SET $1 k $1 v $4 PXAT $5 31000 ")
        );
        assert_eq!(
            streamed(TtlReplication::Relative, "SET k v PX 30000"),
            format!("{select}*5 $3 SET $1 k $1 v $2 PX $5 30000 ")
        );
    }
}
