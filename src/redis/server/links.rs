//! Replication links: a master's side (the snapshot, then the stream of writes) and a
//! replica's (dialling its master, loading the snapshot, applying the stream), and the
//! applying of effects that an AOF replay shares with them.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::context::Context;
use crate::platform::Clock;
use crate::redis::cmd::{Command, Connected, Link, Psync, Session, Writes};
use crate::redis::db::Db;
use crate::redis::node::Node;
use crate::redis::replication::{Dialer, REPLICA_CRON_MS, Role, next_request, read_more, send, send_request};

/// Keeps a replication link (a replica's, or this replica's to its master) in its node's
/// register while it lives.
struct OpenLink<'a>(&'a RefCell<Node>, u64);

impl<'a> OpenLink<'a> {
    fn new(node: &'a RefCell<Node>, id: u64, connected: Connected) -> Self {
        node.borrow_mut().clients.open(id, connected);
        OpenLink(node, id)
    }
}

impl Drop for OpenLink<'_> {
    fn drop(&mut self) {
        self.0.borrow_mut().clients.close(self.1);
    }
}

/// A master's side of a replication link: the snapshot, then the stream; reads the
/// replica's acknowledgements until either side hangs up. Each write of the stream waits
/// [`ServeOptions::replication_lag_ms`](super::ServeOptions::replication_lag_ms) after it was made, in order, before it goes out:
/// a queue stamped when the write arrives, so a busy stream lags by the same amount and no
/// more.
pub(super) async fn serve_replica<S, C, D>(
    mut stream: S,
    buffered: Vec<u8>,
    peer: SocketAddr,
    (session, psync): (Session, Psync),
    context: &Rc<Context<C, D>>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Clock,
    D: Dialer,
{
    let (node, clock, lag_ms) = (&context.node, &context.clock, context.replication_lag_ms);
    let id = session.id;
    let connected = Connected::new(peer, context.announce, Link::Replica, clock.wall_ms());
    let _open = OpenLink::new(node, id, connected);
    let wake = node.borrow().clients.wake.clone();
    let (handshake, mut outgoing) = {
        let mut node = node.borrow_mut();
        let node = &mut *node;
        let port = session.replica_port.unwrap_or(0);
        let ip = session.replica_ip.clone().unwrap_or_else(|| "?".into());
        let added = node.replication.add_replica(
            id,
            (ip, port),
            session.replica_reads_rdb || psync.plain_sync,
            psync.plain_sync,
            &node.db,
            clock.wall_ms(),
        );
        node.count_good_replicas(clock.wall_ms());
        node.refresh_recording();
        added
    };
    let mut incoming = buffered;
    // Writes waiting out the lag, with the monotonic instant each may go.
    let mut lagging: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    if send(&mut stream, &handshake).await.is_ok() {
        loop {
            let due_ms = lagging.front().map_or(0, |(due, _)| *due);
            tokio::select! {
                biased;
                () = wake.notified() => {
                    if node.borrow().clients.is_killed(id) {
                        break;
                    }
                }
                () = clock.sleep_until_monotonic(due_ms), if !lagging.is_empty() => {
                    let (_, bytes) = lagging.pop_front().expect("a write is due");
                    if send(&mut stream, &bytes).await.is_err() {
                        break;
                    }
                }
                bytes = outgoing.recv() => match bytes {
                    Some(bytes) if lag_ms > 0 => lagging.push_back((clock.monotonic_ms() + lag_ms, bytes)),
                    Some(bytes) if send(&mut stream, &bytes).await.is_ok() => {}
                    _ => break,
                },
                read = read_more(&mut stream, &mut incoming) => {
                    if read.is_err() {
                        break;
                    }
                    while let Ok(Some((words, _))) = next_request(&mut incoming) {
                        if let [replconf, ack, offset] = words.as_slice()
                            && replconf.eq_ignore_ascii_case(b"REPLCONF")
                            && ack.eq_ignore_ascii_case(b"ACK")
                            && let Ok(offset) = String::from_utf8_lossy(offset).parse()
                        {
                            node.borrow_mut().replication.ack(id, offset, clock.wall_ms());
                        }
                    }
                }
            }
        }
    }
    let mut node = node.borrow_mut();
    node.replication.remove_replica(id);
    node.count_good_replicas(clock.wall_ms());
}

/// A replica's side: dials its master, loads the snapshot and applies the stream, redialling
/// every second after a failure, until a later REPLICAOF replaces this `generation`.
pub(super) async fn follow_master<C: Clock, D: Dialer>(context: Rc<Context<C, D>>, generation: u64) {
    let master = |node: &Node| match node.replication.role {
        Role::Replica { master, .. } if node.replication.generation == generation => Some(master),
        _ => None,
    };
    loop {
        let Some(addr) = master(&context.node.borrow()) else {
            return;
        };
        let _ = replicate_from(&context, addr, generation).await;
        if let Role::Replica { link_up, .. } = &mut context.node.borrow_mut().replication.role {
            *link_up = false;
        }
        context.clock.sleep_ms(REPLICA_CRON_MS).await;
    }
}

/// One connection to the master, until it fails or the node stops following it.
async fn replicate_from<C: Clock, D: Dialer>(
    context: &Context<C, D>,
    addr: SocketAddr,
    generation: u64,
) -> std::io::Result<()> {
    let still_following = || context.node.borrow().replication.generation == generation;
    let mut stream = context.dialer.dial(addr).await?;
    let id = context.node.borrow_mut().clients.next_id();
    let connected = Connected::new(addr, context.announce, Link::Master, context.clock.wall_ms());
    let _open = OpenLink::new(&context.node, id, connected);
    let wake = context.node.borrow().clients.wake.clone();
    let port = context.announce.port().to_string().into_bytes();
    let ip = context.announce.ip().to_string().into_bytes();
    send_request(
        &mut stream,
        vec![b"REPLCONF".to_vec(), b"ip-address".to_vec(), ip],
    )
    .await?;
    send_request(
        &mut stream,
        vec![b"REPLCONF".to_vec(), b"listening-port".to_vec(), port],
    )
    .await?;
    send_request(
        &mut stream,
        vec![b"PSYNC".to_vec(), b"?".to_vec(), b"-1".to_vec()],
    )
    .await?;
    let mut buffer = Vec::new();
    // +OK, +OK, +FULLRESYNC <replid> <offset>, $<len>, then the snapshot.
    let mut lines = Vec::new();
    while lines.len() < 4 {
        match buffer.windows(2).position(|w| w == b"\r\n") {
            Some(end) => {
                lines.push(String::from_utf8_lossy(&buffer.drain(..end + 2).as_slice()[..end]).into_owned())
            }
            None => read_more(&mut stream, &mut buffer).await?,
        }
    }
    let invalid = |what: &str| std::io::Error::other(format!("bad {what} from master"));
    let mut fullresync = lines[2].split(' ');
    let (Some("+FULLRESYNC"), Some(replid), Some(offset)) =
        (fullresync.next(), fullresync.next(), fullresync.next())
    else {
        return Err(invalid("PSYNC reply"));
    };
    let offset: u64 = offset.parse().map_err(|_| invalid("offset"))?;
    let snapshot_len: usize = lines[3]
        .trim_start_matches('$')
        .parse()
        .map_err(|_| invalid("snapshot"))?;
    while buffer.len() < snapshot_len {
        read_more(&mut stream, &mut buffer).await?;
    }
    let mut snapshot: Vec<u8> = buffer.drain(..snapshot_len).collect();
    // The database the stream's commands go to (it sends SELECT to change it).
    let mut stream_db = 0;
    if !still_following() {
        return Ok(());
    }
    {
        let mut node = context.node.borrow_mut();
        let node = &mut *node;
        let now_ms = context.clock.wall_ms();
        while let Some((words, _)) = next_request(&mut snapshot)? {
            apply_from_master(node, words, now_ms, &mut stream_db);
        }
        node.replication.replid = replid.to_string();
        node.replication.offset = offset;
        if let Role::Replica { link_up, .. } = &mut node.replication.role {
            *link_up = true;
        }
    }
    let mut next_ack_ms = context.clock.monotonic_ms();
    // A master that died refuses our acknowledgements at once, while what it wrote before
    // it died may still be on its way (its kernel sends it, then closes): an ACK that
    // cannot be sent stops the acknowledgements, not the reading. The link ends when the
    // stream does.
    let mut acking = true;
    loop {
        tokio::select! {
            biased;
            () = wake.notified() => {
                if context.node.borrow().clients.is_killed(id) {
                    return Err(std::io::Error::other("CLIENT KILL TYPE master"));
                }
            }
            read = read_more(&mut stream, &mut buffer) => {
                read?;
                let mut acks_asked = false;
                while let Some((words, size)) = next_request(&mut buffer)? {
                    if !still_following() {
                        return Ok(());
                    }
                    let mut node = context.node.borrow_mut();
                    // REPLCONF GETACK: answered below, once the whole read is applied.
                    if words.first().is_some_and(|w| w.eq_ignore_ascii_case(b"REPLCONF")) {
                        acks_asked = true;
                    } else {
                        apply_from_master(&mut node, words, context.clock.wall_ms(), &mut stream_db);
                    }
                    node.replication.offset += size as u64;
                }
                if acks_asked {
                    next_ack_ms = context.clock.monotonic_ms();
                }
            }
            () = context.clock.sleep_until_monotonic(next_ack_ms), if acking => {
                if !still_following() {
                    return Ok(());
                }
                let offset = context.node.borrow().replication.offset.to_string().into_bytes();
                let ack = vec![b"REPLCONF".to_vec(), b"ACK".to_vec(), offset];
                acking = send_request(&mut stream, ack).await.is_ok();
                next_ack_ms = context.clock.monotonic_ms() + REPLICA_CRON_MS;
            }
        }
    }
}

/// Applies one effect (from a master's stream, or a saved AOF) to a keyspace.
pub(super) fn apply_effect(db: &mut Db, words: Vec<Vec<u8>>, now_ms: u64) {
    if let Ok(command) = Command::from_words(words, Writes::Taken) {
        command.apply_to_db(db, now_ms);
    }
}

/// Applies one command of the master's stream to a replica, in the stream's database
/// `stream_db` (which the stream's SELECT changes).
fn apply_from_master(node: &mut Node, words: Vec<Vec<u8>>, now_ms: u64, stream_db: &mut usize) {
    node.db.select(*stream_db);
    apply_effect(&mut node.db, words, now_ms);
    *stream_db = node.db.selected();
    // Into the replica's own AOF; a replica streams nothing further.
    node.propagate(now_ms);
}
