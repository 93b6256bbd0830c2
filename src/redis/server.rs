//! The node's server loop: accepts connections, serves them, runs the expiry cron.
//!
//! Everything runs in one task (connections are polled together), as Redis runs on one
//! thread: commands never interleave, and no task spawning is needed, so the same loop
//! serves madsim TCP and real TCP.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::Frame;
use super::cmd::Writes;
use super::cmd::{BlockingPop, Command, Connected, Link, Lookup, Replicaof, Session, Stage, Wait};
use super::connection::{Connection, ConnectionError, Protocol, Reply};
use super::db::Db;
use super::node::{KeyWatch, Node, TtlReplication, WriteHook};
use super::persistence::{FSYNC_EVERY_MS, Persistence, Persister, SAVE_CHECK_MS, save_parameter};
use super::replication::{Dialer, REPLICA_CRON_MS, Role, next_request, read_more, send, send_request};
use crate::platform::{Clock, Listener};

/// How often active expiry runs: Redis's default `hz 10`.
pub const EXPIRY_CYCLE_MS: u64 = 100;

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
    let context = Rc::new(Context {
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
    loop {
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
            Some(generation) = link_requests.recv() => {
                tasks.push(Box::pin(follow_master(context.clone(), generation)));
            }
            stream = listener.accept(), if accept_after_ms <= clock.monotonic_ms() => match stream {
                Ok((stream, peer)) => {
                    let session = Session { id: node.borrow_mut().clients.next_id(), ..Session::default() };
                    tasks.push(Box::pin(serve_connection(stream, peer, session, context.clone())));
                }
                // Out of file descriptors (or another failed accept): the clients already
                // connected are served on, and accepting resumes a moment later, as
                // Redis logs the failure and goes on.
                Err(_) => accept_after_ms = clock.monotonic_ms() + ACCEPT_RETRY_MS,
            },
            () = clock.sleep_until_monotonic(accept_after_ms), if accept_after_ms > clock.monotonic_ms() => {}
            () = replan.notified() => {}
            tick = clock.sleep_until_wall_on_grid(cycle_work_ms.unwrap_or(u64::MAX), next_cycle_ms, EXPIRY_CYCLE_MS),
                if cycle_work_ms.is_some() => {
                let mut node = node.borrow_mut();
                node.db.expire_due(clock.wall_ms());
                node.propagate(clock.wall_ms());
                next_cycle_ms = tick + EXPIRY_CYCLE_MS;
            }
            // CONFIG SET appendfsync and save change these two as the node runs.
            () = clock.sleep_until_monotonic(next_fsync_ms), if node.borrow().persistence.fsyncs_every_second() => {
                node.borrow_mut().persistence.fsync();
                next_fsync_ms = next_fsync_ms.max(clock.monotonic_ms()) + FSYNC_EVERY_MS;
            }
            () = clock.sleep_until_monotonic(next_save_check_ms), if node.borrow().persistence.has_save_points() => {
                node.borrow_mut().snapshot_if_due(clock.wall_ms());
                next_save_check_ms = next_save_check_ms.max(clock.monotonic_ms()) + SAVE_CHECK_MS;
            }
            () = clock.sleep_until_monotonic(next_count_ms), if node.borrow().min_replicas.is_some() => {
                node.borrow_mut().count_good_replicas(clock.wall_ms());
                next_count_ms += REPLICA_CRON_MS;
            }
        }
    }
}

/// What every connection and link of a node shares.
struct Context<C, D> {
    node: Rc<RefCell<Node>>,
    clock: C,
    dialer: D,
    announce: SocketAddr,
    /// Asks the server loop to start following the master of this REPLICAOF generation.
    links: mpsc::UnboundedSender<u64>,
    /// See [`ServeOptions::replication_lag_ms`].
    replication_lag_ms: u64,
}

/// Answers one client's requests in order until it hangs up, quits, speaks nonsense, or
/// turns out to be a replica (PSYNC), which gets the replication stream instead.
async fn serve_connection<S, C, D>(
    stream: S,
    peer: SocketAddr,
    mut session: Session,
    context: Rc<Context<C, D>>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Clock,
    D: Dialer,
{
    let mut connection = Connection::new(stream);
    let node = &context.node;
    // Pub/sub messages for this connection, written out between its replies.
    let (mailbox, mut messages) = mpsc::unbounded_channel();
    let connected = Connected::new(peer, context.announce, Link::Client, context.clock.wall_ms());
    let open = OpenClient::new(node, &mut session, mailbox, connected);
    let wake = node.borrow().clients.wake.clone();
    // The last request left the next of its pipeline read (and its replies unwritten).
    let mut pipelined = false;
    loop {
        if node.borrow().clients.is_killed(session.id) {
            // CLIENT KILL: Redis closes the connection without a word (a connection that
            // killed itself gets its reply first).
            let _ = connection.flush().await;
            return;
        }
        // The next request of a pipeline is already read, and no message waits: the select
        // below would take the request (a wake is ready only once polled), so skip it.
        let read = if std::mem::take(&mut pipelined) && messages.is_empty() {
            connection.read_request().await
        } else {
            tokio::select! {
                biased;
                () = wake.notified() => continue,
                Some(message) = messages.recv() => {
                    if connection.write_reply(&message, session.protocol).await.is_err() {
                        return;
                    }
                    continue;
                }
                read = connection.read_request() => read,
            }
        };
        let words = match read {
            Ok(Some(words)) if words.is_empty() => continue,
            Ok(Some(words)) => words,
            Ok(None) | Err(ConnectionError::Io(_) | ConnectionError::Closed) => return,
            Err(ConnectionError::Protocol(reason)) => {
                let error = Frame::Error(format!("ERR Protocol error: {reason}")).into();
                node.borrow_mut().stats.errors.count_reply(&error);
                let _ = connection.write_reply(&error, session.protocol).await;
                return;
            }
        };
        // The command is looked up once, and names the request for CLIENT LIST and INFO.
        let lookup = Lookup::of(&words);
        let name = lookup.name(&words);
        let (writes, out_of_memory, subscribed, password_required) = {
            node.borrow_mut()
                .clients
                .record_request(session.id, &name, context.clock.wall_ms());
            let node = node.borrow();
            let subscriptions = node.db.pubsub.subscriptions(session.id);
            (
                node.writes(),
                node.out_of_memory(),
                session.protocol == Protocol::Resp2 && subscriptions > 0,
                !node.config.value("requirepass").is_empty(),
            )
        };
        let command = Command::for_session(
            words,
            lookup,
            writes,
            out_of_memory,
            subscribed,
            password_required,
            &mut session,
            &mut node.borrow_mut().watches,
        );
        let quit = matches!(command, Ok(Command::Quit(_)));
        let blocks = matches!(
            command,
            Ok(Command::Wait(_) | Command::BlockingPop(_) | Command::Psync(_))
        );
        // A command that may wait (or hand the stream over) first sends the replies a
        // pipeline queued before it.
        if blocks && connection.flush().await.is_err() {
            return;
        }
        let mut tally = Tally::Call;
        let reply = match command {
            Ok(Command::Wait(wait)) => {
                let (reply, timed_out) = wait_for_replicas(&context, &session, wait).await;
                tally = Tally::call_that(timed_out);
                reply.into()
            }
            Ok(Command::BlockingPop(pop)) => {
                match pop_or_block(&context, &mut connection, &session, pop).await {
                    Some((reply, timed_out)) => {
                        tally = Tally::call_that(timed_out);
                        reply
                    }
                    None => return,
                }
            }
            Ok(Command::Psync(_)) if writes != Writes::ReadOnly => {
                // A replica's link is no client: CLIENT KILL TYPE normal spares it, TYPE
                // replica closes it.
                drop(open);
                let (stream, buffered) = connection.into_parts();
                return serve_replica(stream, buffered, peer, session, &context).await;
            }
            Ok(Command::Replconf(replconf)) => {
                replconf.apply(&mut session);
                Frame::SimpleString(b"OK".to_vec()).into()
            }
            Ok(command) => {
                let following = matches!(command, Command::Replicaof(Replicaof::Master(_)));
                let mut node = node.borrow_mut();
                let now_ms = context.clock.wall_ms();
                tally = match command {
                    Command::Queued(_) => Tally::Queued,
                    _ => Tally::Began,
                };
                node.stats.begin();
                let reply = command.apply(&mut node, &mut session, now_ms);
                let node = &mut *node;
                node.blocked.serve(&mut node.db, now_ms);
                node.propagate(now_ms);
                session.write_offset = node.replication.offset;
                if following {
                    let _ = context.links.send(node.replication.generation);
                }
                reply
            }
            Err(refused) => {
                if let Stage::Rejected { credited } = refused.stage {
                    tally = Tally::Rejected { credited };
                }
                Frame::from(refused.error).into()
            }
        };
        {
            let mut node = node.borrow_mut();
            node.clients.record_session(&session);
            let stats = &mut node.stats;
            match tally {
                Tally::Call => stats.call(&name, &reply),
                Tally::TimedOutCall => stats.call_timed_out(&name, &reply),
                Tally::Began => stats.end(&name, &reply),
                Tally::Rejected { credited } => stats.refusal(credited.then_some(&*name), &reply),
                Tally::Queued => stats.errors.count_reply(&reply),
            }
        }
        // Messages the command published to this very connection go first, as in Redis.
        while let Ok(message) = messages.try_recv() {
            connection.queue_reply(&message, session.protocol);
        }
        connection.queue_reply(&reply, session.protocol);
        // The rest of a pipeline is answered before its replies go out together.
        let flushes = quit || !connection.has_request();
        if flushes && connection.flush().await.is_err() || quit {
            return;
        }
        pipelined = !flushes;
    }
}

/// How INFO's statistics count a request (see `stats.rs`).
enum Tally {
    /// A whole call, counted once its reply is known.
    Call,
    /// A whole call that blocked and timed out: Redis records no latency for it.
    TimedOutCall,
    /// A call whose start was marked before it ran (calls nested in it count in between).
    Began,
    /// Refused before it ran (see [`Stage::Rejected`]).
    Rejected { credited: bool },
    /// Queued in MULTI: no call yet.
    Queued,
}

impl Tally {
    fn call_that(timed_out: bool) -> Tally {
        if timed_out {
            Tally::TimedOutCall
        } else {
            Tally::Call
        }
    }
}

/// Keeps a client connection in its node's register (CLIENT LIST, CLIENT KILL) while it
/// lives, and its pub/sub mailbox open and its watched keys as long.
struct OpenClient<'a>(&'a RefCell<Node>, u64);

impl<'a> OpenClient<'a> {
    /// Registers the connection of `session` as `connected`; its pub/sub messages go to
    /// `mailbox`.
    fn new(
        node: &'a RefCell<Node>,
        session: &mut Session,
        mailbox: mpsc::UnboundedSender<Reply>,
        connected: Connected,
    ) -> Self {
        let mut state = node.borrow_mut();
        state.clients.open(session.id, connected);
        // Redis authenticates a new connection at once while the default user has no password.
        session.authenticated = state.config.value("requirepass").is_empty();
        state.db.pubsub.open(session.id, mailbox);
        OpenClient(node, session.id)
    }
}

impl Drop for OpenClient<'_> {
    fn drop(&mut self) {
        let mut node = self.0.borrow_mut();
        node.clients.close(self.1);
        node.db.pubsub.close(self.1);
        node.watches.unwatch(self.1);
    }
}

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

/// BLPOP, BRPOP: pops at once if a list has an element; otherwise blocks until a push
/// serves it ([`Blocked`](super::cmd::Blocked), in the order connections blocked), or its
/// timeout passes on the node's wall clock (checked at the server cron's rate, as Redis
/// checks it), or the client hangs up (`None`). With the reply, whether it timed out.
async fn pop_or_block<S, C, D>(
    context: &Context<C, D>,
    connection: &mut Connection<S>,
    session: &Session,
    pop: BlockingPop,
) -> Option<(Reply, bool)>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Clock,
    D: Dialer,
{
    let clock = &context.clock;
    let timeout_ms = pop.timeout_ms;
    let (ticket, mut served) = {
        let mut node = context.node.borrow_mut();
        let now_ms = clock.wall_ms();
        node.db.select(session.db);
        match pop.try_pop(&mut node.db, now_ms) {
            Err(error) => return Some((Frame::from(error).into(), false)),
            Ok(Some(popped)) => {
                node.propagate(now_ms);
                return Some((popped.into(), false));
            }
            Ok(None) => node.blocked.block(session.db, pop),
        }
    };
    let deadline_ms = clock.wall_ms().saturating_add(timeout_ms);
    loop {
        tokio::select! {
            biased;
            popped = &mut served => return Some((popped.map_or(Reply::NullArray, Reply::from), false)),
            _ = clock.sleep_until_wall_on_grid(deadline_ms, clock.monotonic_ms(), EXPIRY_CYCLE_MS), if timeout_ms > 0 => {
                context.node.borrow_mut().blocked.cancel(ticket);
                return Some((Reply::NullArray, true));
            }
            read = connection.read_more() => {
                if !matches!(read, Ok(n) if n > 0) {
                    context.node.borrow_mut().blocked.cancel(ticket);
                    return None;
                }
            }
        }
    }
}

/// WAIT: blocks until `wait.replicas` replicas acknowledged this connection's last write,
/// or the timeout (ms, 0 = forever) passes; replies with how many did, and says whether it
/// timed out.
async fn wait_for_replicas<C: Clock, D: Dialer>(
    context: &Context<C, D>,
    session: &Session,
    wait: Wait,
) -> (Frame, bool) {
    let acks = {
        let mut node = context.node.borrow_mut();
        if node.replication.is_replica() {
            let refusal = Frame::Error(
                "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a \
                 replica is configured to be writable (which is not the default) writes to replicas are just \
                 local and are not propagated."
                    .into(),
            );
            return (refusal, false);
        }
        node.replication.request_acks();
        node.replication.ack_notify()
    };
    let deadline_ms = context
        .clock
        .monotonic_ms()
        .saturating_add(wait.timeout_ms as u64);
    loop {
        let acked = context.node.borrow().replication.acked(session.write_offset);
        if acked >= wait.replicas {
            return (Frame::Integer(acked), false);
        }
        let acknowledged = acks.notified();
        tokio::select! {
            biased;
            () = acknowledged => {}
            () = context.clock.sleep_until_monotonic(deadline_ms), if wait.timeout_ms > 0 => {
                return (Frame::Integer(context.node.borrow().replication.acked(session.write_offset)), true);
            }
        }
    }
}

/// A master's side of a replication link: the snapshot, then the stream; reads the
/// replica's acknowledgements until either side hangs up. Each write of the stream waits
/// [`ServeOptions::replication_lag_ms`] after it was made, in order, before it goes out:
/// a queue stamped when the write arrives, so a busy stream lags by the same amount and no
/// more.
async fn serve_replica<S, C, D>(
    mut stream: S,
    buffered: Vec<u8>,
    peer: SocketAddr,
    session: Session,
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
            session.replica_reads_rdb,
            &node.db,
            clock.wall_ms(),
        );
        node.count_good_replicas(clock.wall_ms());
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
async fn follow_master<C: Clock, D: Dialer>(context: Rc<Context<C, D>>, generation: u64) {
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
fn apply_effect(db: &mut Db, words: Vec<Vec<u8>>, now_ms: u64) {
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
