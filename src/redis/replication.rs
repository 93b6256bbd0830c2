//! Asynchronous master → replica replication, shaped as Redis 7.0's.
//!
//! A replica dials its master, sends `REPLCONF listening-port` and `PSYNC ? -1`, gets
//! `+FULLRESYNC <replid> <offset>` and a snapshot (here: the commands that rebuild the
//! keyspace, sent as one `$len` payload where Redis sends an RDB file), then the stream:
//! every write command as Redis 7 propagates it (`propagation.rs`: `SET key value PXAT t`,
//! `PEXPIREAT`, `SREM` for `SPOP`, `DEL` for a key that expired; a unit of several between
//! `MULTI` and `EXEC`; `SELECT n` whenever the database differs from the last one sent, and
//! first after a sync; `PUBLISH` after a command's writes). Nothing waits
//! for replicas: the lag is the network's, and a cut link leaves the replica behind until
//! it reconnects and resynchronises. Replicas acknowledge their offset every second and
//! when asked (`REPLCONF GETACK *`), which is what WAIT counts. Replicas expire nothing
//! themselves (see `db.rs`) and refuse writes from clients (READONLY).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};

use super::Frame;
use super::db::Db;
use super::effects::{encode, snapshot};
use super::propagation::Op;
use super::request::{Parsed, parse};

/// Opens connections to other nodes (a replica to its master).
pub trait Dialer: Clone + 'static {
    type Stream: AsyncRead + AsyncWrite + Unpin + 'static;

    /// Connects to `addr`.
    fn dial(&self, addr: SocketAddr) -> impl Future<Output = io::Result<Self::Stream>>;
}

/// How often a replica reports its offset (Redis's replication cron runs every second), and
/// how long it waits before redialling a master it lost.
pub const REPLICA_CRON_MS: u64 = 1000;

/// Redis's fixed backlog size, shown by INFO.
const BACKLOG_BYTES: u64 = 1_048_576;

/// A node's place in replication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Master,
    Replica {
        master: SocketAddr,
        /// Whether the link is up and the snapshot loaded.
        link_up: bool,
    },
}

/// A connected replica, as its master sees it.
struct ReplicaLink {
    /// The replica's address and listening port.
    ip: String,
    port: u16,
    /// Bytes of stream still to send it.
    stream: mpsc::UnboundedSender<Vec<u8>>,
    /// The last offset it acknowledged.
    acked: u64,
    /// When (the master's wall clock, ms) it last acknowledged, or came online.
    acked_at_ms: u64,
    /// Stream written to the backlog while the master's stream was held back (see
    /// [`Replication::hold`]), not yet sent to this replica.
    held: Vec<u8>,
}

impl ReplicaLink {
    /// Sends what was held for this replica; false when its link has closed.
    fn flush_held(&mut self) -> bool {
        self.held.is_empty() || self.stream.send(std::mem::take(&mut self.held)).is_ok()
    }
}

/// A node's replication state.
pub struct Replication {
    pub role: Role,
    /// The replication id (40 hex digits), derived deterministically.
    pub replid: String,
    /// Bytes of stream this node produced (master) or applied (replica).
    pub offset: u64,
    /// Whether the node has a backlog: Redis creates it when the first replica attaches
    /// or the node itself follows a master, and until then a write advances no offset
    /// (a lone master's ROLE says offset 0).
    backlog: bool,
    /// Bumped at every REPLICAOF, so a link to a former master stops.
    pub generation: u64,
    replicas: BTreeMap<u64, ReplicaLink>,
    /// Woken when a replica acknowledges, for WAIT.
    acks: Rc<Notify>,
    /// Whether the stream waits at the links instead of going out (see [`Replication::hold`]).
    holding: bool,
    /// The database the stream last selected; `None` until its first `SELECT`, and again
    /// after every new sync (Redis's `server.slaveseldb = -1`).
    stream_database: Option<usize>,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            role: Role::Master,
            replid: super::lua::sha1_hex(b"locksim replication id"),
            offset: 0,
            backlog: false,
            generation: 0,
            replicas: BTreeMap::new(),
            acks: Rc::new(Notify::new()),
            holding: false,
            stream_database: None,
        }
    }
}

impl Replication {
    /// Whether [`Replication::propagate`] does anything with the commands it is given: not
    /// until a backlog exists (a replica attached, or the node followed a master).
    pub fn streams(&self) -> bool {
        self.backlog
    }

    /// Whether this node follows a master (and so refuses writes from clients).
    pub fn is_replica(&self) -> bool {
        matches!(self.role, Role::Replica { .. })
    }

    /// Streams bytes to every replica (a master's job after each command and expiry
    /// cycle). A replica's own changes come from its master and go no further.
    pub fn propagate(&mut self, bytes: &[u8]) {
        if !self.is_replica() && !bytes.is_empty() {
            self.send(bytes.to_vec());
        }
    }

    /// Streams `units` of commands (see `propagation.rs`), then the PUBLISH commands of
    /// `published` (channel, message) in database `publish_database`: each unit of more
    /// than one command between `MULTI` and `EXEC`, each command after a `SELECT` of its
    /// database when the stream last selected another.
    pub fn propagate_units(
        &mut self,
        units: Vec<Vec<Op>>,
        published: Vec<(Vec<u8>, Vec<u8>)>,
        publish_database: usize,
    ) {
        if self.is_replica() || !self.backlog {
            return;
        }
        let mut bytes = Vec::new();
        for unit in units {
            let wrap = match (unit.first(), unit.last()) {
                (Some(first), Some(last)) if unit.len() > 1 => Some((first.database, last.database)),
                _ => None,
            };
            if let Some((first, _)) = wrap {
                self.encode_in(&mut bytes, first, vec![b"MULTI".to_vec()]);
            }
            for op in unit {
                self.encode_in(&mut bytes, op.database, op.words);
            }
            if let Some((_, last)) = wrap {
                self.encode_in(&mut bytes, last, vec![b"EXEC".to_vec()]);
            }
        }
        for (channel, message) in published {
            self.encode_in(
                &mut bytes,
                publish_database,
                vec![b"PUBLISH".to_vec(), channel, message],
            );
        }
        self.propagate(&bytes);
    }

    /// Appends `words` to `bytes`, after a `SELECT` when the stream is in another database.
    fn encode_in(&mut self, bytes: &mut Vec<u8>, database: usize, words: Vec<Vec<u8>>) {
        if self.stream_database != Some(database) {
            bytes.extend(encode(vec![
                b"SELECT".to_vec(),
                database.to_string().into_bytes(),
            ]));
            self.stream_database = Some(database);
        }
        bytes.extend(encode(words));
    }

    /// Writes `bytes` to the backlog, if there is one: the offset advances at once, as
    /// Redis's `master_repl_offset` does when a write is propagated, whether or not any
    /// replica will ever receive it. WAIT compares acknowledgements against this offset,
    /// so a write that never reached a replica is never counted as acknowledged by it.
    fn send(&mut self, bytes: Vec<u8>) {
        if self.backlog {
            self.offset += bytes.len() as u64;
        }
        let holding = self.holding;
        self.replicas.retain(|_, replica| {
            if holding {
                replica.held.extend_from_slice(&bytes);
                true
            } else {
                replica.flush_held() && replica.stream.send(bytes.clone()).is_ok()
            }
        });
    }

    /// Holds the stream back at every link (`true`) or lets what was held go (`false`):
    /// the simulator's way to keep a write on the master alone for a while, as a slow or
    /// cut replication link does. Held bytes already count in the offset.
    pub fn hold(&mut self, holding: bool) {
        self.holding = holding;
        // A master with no replica (every command on a lock workload's nodes) walks nothing.
        if !holding && !self.replicas.is_empty() {
            self.replicas.retain(|_, replica| replica.flush_held());
        }
    }

    /// Asks every replica for its offset (before WAIT waits).
    pub fn request_acks(&mut self) {
        if !self.replicas.is_empty() {
            self.send(encode(vec![
                b"REPLCONF".to_vec(),
                b"GETACK".to_vec(),
                b"*".to_vec(),
            ]));
        }
    }

    /// Replicas whose last acknowledgement is at most `max_lag_s` whole seconds old at wall
    /// time `now_ms`, counted as Redis counts them (`refreshGoodSlavesCount`: the difference
    /// of the two times in whole Unix seconds).
    pub fn good_replicas(&self, now_ms: u64, max_lag_s: u64) -> u32 {
        let lag_s = |r: &ReplicaLink| (now_ms / 1000).saturating_sub(r.acked_at_ms / 1000);
        self.replicas.values().filter(|r| lag_s(r) <= max_lag_s).count() as u32
    }

    /// How many replicas acknowledged at least `offset`.
    pub fn acked(&self, offset: u64) -> i64 {
        self.replicas.values().filter(|r| r.acked >= offset).count() as i64
    }

    /// What WAIT waits on.
    pub fn ack_notify(&self) -> Rc<Notify> {
        self.acks.clone()
    }

    /// Makes this node a replica of `master` (REPLICAOF host port).
    pub fn follow(&mut self, master: SocketAddr, db: &mut Db) {
        self.role = Role::Replica {
            master,
            link_up: false,
        };
        self.backlog = true;
        self.generation += 1;
        self.replicas.clear();
        db.set_replica(true);
    }

    /// Makes this node a master (REPLICAOF NO ONE): a new history, as Redis starts one.
    pub fn promote(&mut self, db: &mut Db) {
        if self.is_replica() {
            self.replid = super::lua::sha1_hex(self.replid.as_bytes());
        }
        self.role = Role::Master;
        self.generation += 1;
        db.set_replica(false);
    }

    /// ROLE's reply.
    pub fn role_frame(&self) -> Frame {
        let text = |s: &str| Frame::BulkString(s.as_bytes().to_vec());
        match &self.role {
            Role::Master => Frame::Array(vec![
                text("master"),
                Frame::Integer(self.offset as i64),
                Frame::Array(
                    self.replicas
                        .values()
                        .map(|r| {
                            Frame::Array(vec![
                                text(&r.ip),
                                text(&r.port.to_string()),
                                text(&r.acked.to_string()),
                            ])
                        })
                        .collect(),
                ),
            ]),
            Role::Replica { master, link_up } => Frame::Array(vec![
                text("slave"),
                text(&master.ip().to_string()),
                Frame::Integer(i64::from(master.port())),
                text(if *link_up { "connected" } else { "connect" }),
                Frame::Integer(self.offset as i64),
            ]),
        }
    }

    /// INFO's replication section, field by field as Redis 7.0 writes it.
    pub fn info(&self) -> String {
        let mut lines = vec!["# Replication".to_string()];
        match &self.role {
            Role::Master => lines.push("role:master".into()),
            Role::Replica { master, link_up } => {
                let status = if *link_up { "up" } else { "down" };
                lines.extend([
                    "role:slave".into(),
                    format!("master_host:{}", master.ip()),
                    format!("master_port:{}", master.port()),
                    format!("master_link_status:{status}"),
                    "master_last_io_seconds_ago:0".into(),
                    "master_sync_in_progress:0".into(),
                    format!("slave_read_repl_offset:{}", self.offset),
                    format!("slave_repl_offset:{}", self.offset),
                ]);
                if !link_up {
                    lines.push("master_link_down_since_seconds:-1".into());
                }
                lines.extend([
                    "slave_priority:100".into(),
                    "slave_read_only:1".into(),
                    "replica_announced:1".into(),
                ]);
            }
        }
        lines.push(format!("connected_slaves:{}", self.replicas.len()));
        for (i, r) in self.replicas.values().enumerate() {
            lines.push(format!(
                "slave{i}:ip={},port={},state=online,offset={},lag=0",
                r.ip, r.port, r.acked
            ));
        }
        lines.extend([
            "master_failover_state:no-failover".into(),
            format!("master_replid:{}", self.replid),
            "master_replid2:0000000000000000000000000000000000000000".into(),
            format!("master_repl_offset:{}", self.offset),
            "second_repl_offset:-1".into(),
            "repl_backlog_active:1".into(),
            format!("repl_backlog_size:{BACKLOG_BYTES}"),
            "repl_backlog_first_byte_offset:1".into(),
            format!("repl_backlog_histlen:{}", self.offset.min(BACKLOG_BYTES)),
        ]);
        lines.join("\r\n") + "\r\n"
    }

    /// Registers a replica that sent PSYNC (or SYNC, `plain_sync`: no FULLRESYNC line) on
    /// connection `id`; returns the FULLRESYNC line, the snapshot payload (an RDB file for a
    /// real redis-server or a SYNC client, `reads_rdb`), and the receiver of its stream.
    pub fn add_replica(
        &mut self,
        id: u64,
        (ip, port): (String, u16),
        reads_rdb: bool,
        plain_sync: bool,
        db: &Db,
        now_ms: u64,
    ) -> (Vec<u8>, mpsc::UnboundedReceiver<Vec<u8>>) {
        let snapshot = if reads_rdb {
            super::rdb::snapshot(db, now_ms)
        } else {
            snapshot(db)
        };
        let fullresync = format!("+FULLRESYNC {} {}\r\n", self.replid, self.offset);
        let mut handshake = if plain_sync { String::new() } else { fullresync };
        handshake.push_str(&format!("${}\r\n", snapshot.len()));
        let mut handshake = handshake.into_bytes();
        handshake.extend(snapshot);
        self.backlog = true;
        self.stream_database = None;
        let (stream, receiver) = mpsc::unbounded_channel();
        self.replicas.insert(
            id,
            ReplicaLink {
                ip,
                port,
                stream,
                acked: self.offset,
                acked_at_ms: now_ms,
                held: Vec::new(),
            },
        );
        (handshake, receiver)
    }

    /// Records a replica's `REPLCONF ACK offset`, received at wall time `now_ms`.
    pub fn ack(&mut self, id: u64, offset: u64, now_ms: u64) {
        if let Some(replica) = self.replicas.get_mut(&id) {
            replica.acked = replica.acked.max(offset);
            replica.acked_at_ms = now_ms;
            self.acks.notify_waiters();
        }
    }

    /// Forgets a replica whose connection closed.
    pub fn remove_replica(&mut self, id: u64) {
        self.replicas.remove(&id);
    }
}

/// Reads from `stream` into `buffer`; an error or end of stream ends the link.
pub async fn read_more<S: AsyncRead + Unpin>(stream: &mut S, buffer: &mut Vec<u8>) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    match stream.read(&mut chunk).await? {
        0 => Err(io::ErrorKind::UnexpectedEof.into()),
        n => {
            buffer.extend_from_slice(&chunk[..n]);
            Ok(())
        }
    }
}

/// The first complete request in `buffer`, removed from it, with its size.
pub fn next_request(buffer: &mut Vec<u8>) -> io::Result<Option<(Vec<Vec<u8>>, usize)>> {
    match parse(buffer) {
        Ok(Parsed::Incomplete) => Ok(None),
        Ok(Parsed::Request { words, consumed }) => {
            buffer.drain(..consumed);
            Ok(Some((words, consumed)))
        }
        Err(reason) => Err(io::Error::other(reason)),
    }
}

/// Sends one request on a replication link.
pub async fn send_request<S: AsyncWrite + Unpin>(stream: &mut S, words: Vec<Vec<u8>>) -> io::Result<()> {
    send(stream, &encode(words)).await
}

/// Writes and flushes: a simulated TCP stream sends on flush, not on write.
pub async fn send<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_write_counts_in_the_offset_but_no_replica_acknowledges_it() {
        let mut replication = Replication::default();
        let (_, mut stream) =
            replication.add_replica(1, ("10.1.1.1".into(), 6379), false, false, &Db::default(), 0);
        let before = replication.offset;
        replication.hold(true);
        replication.propagate(b"*1\r\n$8\r\nFLUSHALL\r\n");
        let after = replication.offset;
        assert!(after > before, "the backlog has the write");
        assert!(stream.try_recv().is_err(), "the replica does not");
        // The replica acknowledges everything it has: WAIT for the write counts nobody.
        replication.ack(1, before, 0);
        assert_eq!(replication.acked(after), 0);
        replication.hold(false);
        assert_eq!(stream.try_recv().unwrap(), b"*1\r\n$8\r\nFLUSHALL\r\n".to_vec());
        replication.ack(1, after, 0);
        assert_eq!(replication.acked(after), 1);
    }

    #[test]
    fn a_master_no_replica_ever_attached_to_keeps_offset_zero_until_one_does() {
        let mut replication = Replication::default();
        replication.propagate(b"*1\r\n$8\r\nFLUSHALL\r\n");
        assert_eq!(
            replication.offset, 0,
            "no backlog yet, as redis-server's ROLE shows"
        );
        let (_, _stream) =
            replication.add_replica(1, ("10.1.1.1".into(), 6379), false, false, &Db::default(), 0);
        replication.propagate(b"*1\r\n$8\r\nFLUSHALL\r\n");
        assert_eq!(replication.offset, 18);
    }

    #[test]
    fn a_replica_is_good_while_its_last_ack_is_at_most_the_lag_old_in_whole_seconds() {
        let mut replication = Replication::default();
        let (_, _stream) =
            replication.add_replica(1, ("10.1.1.1".into(), 6379), false, false, &Db::default(), 10_999);
        // Redis subtracts Unix seconds: 10.999 s counts as 10, 20.999 s as 20.
        assert_eq!(replication.good_replicas(20_999, 10), 1);
        assert_eq!(replication.good_replicas(21_000, 10), 0);
        replication.ack(1, 0, 20_500);
        assert_eq!(replication.good_replicas(21_000, 10), 1);
        assert_eq!(replication.good_replicas(31_000, 10), 0);
    }
}
