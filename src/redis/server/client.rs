//! One client connection's loop: reads its requests, runs them on the node, writes the
//! replies and pub/sub messages back, and blocks for WAIT, BLPOP and BRPOP.

use std::cell::RefCell;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::busy::{Answered, BUSY, Socket};
use super::context::{Context, EXPIRY_CYCLE_MS};
use super::links::serve_replica;
use crate::platform::Clock;
use crate::redis::Frame;
use crate::redis::cmd::Writes;
use crate::redis::cmd::{
    BlockingPop, Command, Connected, Link, Lookup, Replicaof, Session, Stage, Wait, kept_for_propagation,
};
use crate::redis::connection::{Connection, ConnectionError, Protocol, Reply};
use crate::redis::node::Node;
use crate::redis::replication::Dialer;

/// Answers one client's requests in order until it hangs up, quits, speaks nonsense, or
/// turns out to be a replica (PSYNC), which gets the replication stream instead.
/// `socket` is a real connection's, registered with the busy pass (its `stream` is then
/// [`Watched`](super::busy::Watched)); a simulated connection has none.
pub(super) async fn serve_connection<S, C, D>(
    stream: S,
    socket: Option<Rc<Socket>>,
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
    // The connection listens on a channel or a pattern, as of its last command: only then
    // can PUBLISH put a message into its mailbox (see `PubSub::publish`), and only then is
    // the mailbox polled while the connection waits for its next request.
    let mut listening = false;
    // The mailbox's last poll found it empty, so it holds this task's waker, and nothing
    // was published to the connection since. Polled every time before, the mailbox always
    // held that waker: when the connection's register entry closes the mailbox, the wake
    // it gets is one the simulator's schedule counts (so every digest depends on it); a
    // mailbox armed once keeps the same wake for as long as nothing is sent to it.
    let mut armed = false;
    loop {
        if node.borrow().clients.is_killed(session.id) {
            // CLIENT KILL: Redis closes the connection without a word (a connection that
            // killed itself gets its reply first).
            let _ = connection.flush().await;
            return;
        }
        // A script that runs long may answer this connection's next requests meanwhile, if
        // nothing it cannot see stands in the way (see `busy.rs`).
        let waiting = socket
            .as_ref()
            .filter(|_| {
                connection.is_drained()
                    && !listening
                    && session.transaction.is_none()
                    && (session.authenticated || node.borrow().config.value("requirepass").is_empty())
            })
            .map(Socket::waiting);
        // The next request of a pipeline is already read, and no message waits: the select
        // below would take the request (a wake is ready only once polled), so skip it.
        let read = if std::mem::take(&mut pipelined) && messages.is_empty() {
            connection.next_request().await
        } else {
            tokio::select! {
                biased;
                () = wake.notified() => continue,
                Some(message) = poll_fn(|cx| {
                    let polled = messages.poll_recv(cx);
                    armed = polled.is_pending();
                    polled
                }), if !armed || listening || !messages.is_empty() => {
                    if connection.write_reply(&message, session.protocol).await.is_err() {
                        return;
                    }
                    continue;
                }
                read = connection.next_request() => read,
            }
        };
        drop(waiting);
        match read {
            Ok(true) => {}
            Ok(false) | Err(ConnectionError::Io(_) | ConnectionError::Closed) => return,
            Err(ConnectionError::Protocol(reason)) => {
                let error = Frame::Error(format!("ERR Protocol error: {reason}")).into();
                node.borrow_mut().stats.errors.count_reply(&error);
                let _ = connection.write_reply(&error, session.protocol).await;
                return;
            }
        }
        // The request's words are borrowed from the connection's buffer until its command
        // is parsed.
        let words = connection.request_words();
        if words.is_empty() {
            continue;
        }
        // The command is looked up once, and names the request for CLIENT LIST and INFO.
        let lookup = Lookup::of(&words);
        let name = lookup.name(&words);
        // One reading of the clock for the request, as Redis takes one per command (the
        // clock cannot move before the command runs: nothing is awaited in between).
        let now_ms = context.clock.wall_ms();
        let (writes, out_of_memory, subscribed, unauthenticated) = {
            node.borrow_mut()
                .clients
                .record_request(session.id, &name, now_ms);
            let node = node.borrow();
            let subscriptions = node.db.pubsub.subscriptions(session.id);
            (
                node.writes(),
                node.out_of_memory(),
                session.protocol == Protocol::Resp2 && subscriptions > 0,
                // The password is looked up only for a connection that may need it.
                !session.authenticated && !node.config.value("requirepass").is_empty(),
            )
        };
        let kept = kept_for_propagation(&node.borrow().db, lookup, &words);
        let command = Command::for_session(
            &words,
            lookup,
            writes,
            out_of_memory,
            subscribed,
            unauthenticated,
            &mut session,
            &mut node.borrow_mut().watches,
        );
        drop(words);
        connection.end_request();
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
            Ok(Command::Psync(psync)) if writes != Writes::ReadOnly => {
                // A replica's link is no client: CLIENT KILL TYPE normal spares it, TYPE
                // replica closes it.
                drop(open);
                let (stream, buffered) = connection.into_parts();
                return serve_replica(stream, buffered, peer, (session, psync), &context).await;
            }
            Ok(Command::Replconf(replconf)) => {
                replconf.apply(&mut session);
                Frame::SimpleString(b"OK".to_vec()).into()
            }
            Ok(command) => {
                let following = matches!(command, Command::Replicaof(Replicaof::Master(_)));
                let mut node = node.borrow_mut();
                tally = match command {
                    Command::Queued(_) => Tally::Queued,
                    _ => Tally::Began,
                };
                node.stats.begin();
                let dirty = node.db.dirty();
                let reply = command.apply(&mut node, &mut session, now_ms);
                let node = &mut *node;
                crate::redis::propagation::record(&mut node.db, kept, dirty, &reply);
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
        if context.busy.shutting_down() {
            // SHUTDOWN NOSAVE while this connection's script ran: the node ends, unanswered.
            return;
        }
        {
            let mut node = node.borrow_mut();
            node.clients.record_session(&session);
            listening = node.db.pubsub.subscriptions(session.id) > 0;
            let stats = &mut node.stats;
            match tally {
                Tally::Call => stats.call(&name, &reply),
                Tally::TimedOutCall => stats.call_timed_out(&name, &reply),
                Tally::Began => stats.end(&name, &reply),
                Tally::Rejected { credited } => stats.refusal(credited.then_some(&*name), &reply),
                Tally::Queued => stats.errors.count_reply(&reply),
            }
            // What the busy pass answered while this connection's script ran.
            for answered in context.busy.take_answered() {
                match answered {
                    Answered::Refused { name } => {
                        stats.refusal(Some(&name), &Frame::Error(BUSY.into()).into())
                    }
                    Answered::Ran { name, reply } => stats.call(&name, &reply.into()),
                }
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

/// BLPOP, BRPOP: pops at once if a list has an element; otherwise blocks until a push
/// serves it ([`Blocked`](crate::redis::cmd::Blocked), in the order connections blocked), or its
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
        match pop.try_pop_recorded(&mut node.db, now_ms) {
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
