//! Asynchronous master → replica replication, shaped as Redis 7.0's.
//!
//! A replica dials its master, sends `REPLCONF listening-port` and `PSYNC ? -1`, gets
//! `+FULLRESYNC <replid> <offset>` and a snapshot (here: the commands that rebuild the
//! keyspace, sent as one `$len` payload where Redis sends an RDB file), then the stream:
//! the *effects* of every write, as Redis 7 propagates them (`SET key value PXAT t` with an
//! absolute expiry, `DEL` for keys that expired or were deleted, `FLUSHALL`; a hash, list or
//! sorted set is rebuilt whole: `DEL`, `HSET`/`RPUSH`/`ZADD`, `PEXPIREAT`; keys outside
//! database 0 between `SELECT n` and `SELECT 0`; `PUBLISH` after a command's effects).
//! Nothing waits
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
use super::connection::format_double;
use super::connection::{Protocol, Reply};
use super::db::{DATABASES, Database, Db, KeyspaceChanges, Stream, Value};
use super::request::{Parsed, build as request, parse};

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
        }
    }
}

/// The request bytes of a command, as a stream carries it.
fn encode(words: Vec<Vec<u8>>) -> Vec<u8> {
    Reply::Frame(request(words)).encode(Protocol::Resp2)
}

/// The commands that bring a replica's key to the master's state: its expiry as an
/// absolute time (`PXAT`, `PEXPIREAT`), or with `relative_to` (the master's now) as the time
/// left (`PX`, `PEXPIRE`). A string is one SET; another type is deleted and rebuilt.
fn key_effect(database: &Database, key: &[u8], relative_to: Option<u64>) -> Vec<u8> {
    let Some(entry) = database.raw(key) else {
        return encode(vec![b"DEL".to_vec(), key.to_vec()]);
    };
    let expiry = entry.expires_at_ms.map(|at| match relative_to {
        None => (at.to_string().into_bytes(), true),
        Some(now) => (at.saturating_sub(now).max(1).to_string().into_bytes(), false),
    });
    let mut words = vec![key.to_vec()];
    let rebuild: &[u8] = match &entry.value {
        Value::String(value) => {
            words.insert(0, b"SET".to_vec());
            words.push(value.clone());
            if let Some((time, absolute)) = expiry {
                words.push(if absolute {
                    b"PXAT".to_vec()
                } else {
                    b"PX".to_vec()
                });
                words.push(time);
            }
            return encode(words);
        }
        Value::Hash(hash) => {
            words.extend(hash.iter().flat_map(|(f, v)| [f.clone(), v.clone()]));
            b"HSET"
        }
        Value::List(list) => {
            words.extend(list.iter().cloned());
            b"RPUSH"
        }
        Value::SortedSet(set) => {
            words.extend(
                set.iter()
                    .flat_map(|(member, score)| [format_double(score).into_bytes(), member.to_vec()]),
            );
            b"ZADD"
        }
        Value::Set(set) => {
            words.extend(set.members().into_iter().map(<[u8]>::to_vec));
            b"SADD"
        }
        Value::Stream(stream) => {
            let mut bytes = encode(vec![b"DEL".to_vec(), key.to_vec()]);
            stream_rebuild(key, stream)
                .into_iter()
                .for_each(|command| bytes.extend(encode(command)));
            return with_expiry(bytes, key, expiry);
        }
    };
    words.insert(0, rebuild.to_vec());
    let mut bytes = encode(vec![b"DEL".to_vec(), key.to_vec()]);
    bytes.extend(encode(words));
    with_expiry(bytes, key, expiry)
}

/// The commands that rebuild a stream: its entries (XADD with their IDs), then its groups
/// (XGROUP CREATE at what each delivered; what is pending is not carried).
fn stream_rebuild(key: &[u8], stream: &Stream) -> Vec<Vec<Vec<u8>>> {
    let entries = stream.entries.iter().map(|(id, fields)| {
        let mut words = vec![b"XADD".to_vec(), key.to_vec(), id.text()];
        words.extend(fields.iter().flat_map(|(f, v)| [f.clone(), v.clone()]));
        words
    });
    let groups = stream.groups.iter().map(|(name, group)| {
        let words = [
            &b"XGROUP"[..],
            b"CREATE",
            key,
            name,
            &group.last_delivered.text(),
            b"MKSTREAM",
        ];
        words.map(<[u8]>::to_vec).to_vec()
    });
    entries.chain(groups).collect()
}

/// `bytes` followed by the command that sets the key's `expiry` (see [`key_effect`]).
fn with_expiry(mut bytes: Vec<u8>, key: &[u8], expiry: Option<(Vec<u8>, bool)>) -> Vec<u8> {
    if let Some((time, absolute)) = expiry {
        let command: &[u8] = if absolute { b"PEXPIREAT" } else { b"PEXPIRE" };
        bytes.extend(encode(vec![command.to_vec(), key.to_vec(), time]));
    }
    bytes
}

/// Effects in database `index`, bracketed by `SELECT index` and `SELECT 0` outside
/// database 0, so that a stream or an AOF is always in database 0 between commands.
fn in_database(index: usize, body: Vec<u8>) -> Vec<u8> {
    if index == 0 || body.is_empty() {
        return body;
    }
    let mut bytes = encode(vec![b"SELECT".to_vec(), index.to_string().into_bytes()]);
    bytes.extend(body);
    bytes.extend(encode(vec![b"SELECT".to_vec(), b"0".to_vec()]));
    bytes
}

/// The commands that replay `changes` (what replicas and the AOF receive); see
/// [`key_effect`] for `relative_to`.
pub fn effects(changes: &KeyspaceChanges, db: &Db, relative_to: Option<u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    let flushed_all = changes.len() == DATABASES && changes.values().all(|c| c.cleared);
    if flushed_all {
        bytes.extend(encode(vec![b"FLUSHALL".to_vec()]));
    }
    for (index, change) in changes {
        let database = db.database(*index);
        let mut body = Vec::new();
        if change.cleared && !flushed_all {
            body.extend(encode(vec![b"FLUSHDB".to_vec()]));
        }
        for key in &change.keys {
            body.extend(key_effect(database, key, relative_to));
        }
        bytes.extend(in_database(*index, body));
    }
    bytes
}

/// `body` between `MULTI` and `EXEC` when `wrap` (a transaction's effects), as it is
/// otherwise.
pub fn in_transaction(wrap: bool, body: Vec<u8>) -> Vec<u8> {
    if !wrap || body.is_empty() {
        return body;
    }
    let mut bytes = encode(vec![b"MULTI".to_vec()]);
    bytes.extend(body);
    bytes.extend(encode(vec![b"EXEC".to_vec()]));
    bytes
}

/// The PUBLISH commands that carry `messages` (channel, message) to replicas, which
/// deliver them to their own subscribers. Redis sends them to replicas only, never to the AOF.
pub fn publishes(messages: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<u8> {
    messages
        .into_iter()
        .flat_map(|(channel, message)| encode(vec![b"PUBLISH".to_vec(), channel, message]))
        .collect()
}

/// What a new replica loads first, and what an RDB snapshot holds: every key of every
/// database, expiry times absolute.
pub(super) fn snapshot(db: &Db) -> Vec<u8> {
    let mut bytes = encode(vec![b"FLUSHALL".to_vec()]);
    for index in 0..DATABASES {
        let database = db.database(index);
        let body = database
            .entries()
            .flat_map(|(key, _)| key_effect(database, key, None))
            .collect();
        bytes.extend(in_database(index, body));
    }
    bytes
}

impl Replication {
    /// Whether [`Replication::propagate`] does anything with the effects it is given: not
    /// until a backlog exists (a replica attached, or the node followed a master).
    pub fn streams(&self) -> bool {
        self.backlog
    }

    /// Whether this node follows a master (and so refuses writes from clients).
    pub fn is_replica(&self) -> bool {
        matches!(self.role, Role::Replica { .. })
    }

    /// Streams effects to every replica (a master's job after each command and expiry
    /// cycle). A replica's own changes come from its master and go no further.
    pub fn propagate(&mut self, effects: &[u8]) {
        if !self.is_replica() && !effects.is_empty() {
            self.send(effects.to_vec());
        }
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
        if !holding {
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
