//! The busy pass: what a node served on real sockets does for its other clients while a
//! script runs past `busy-reply-threshold` (Redis's `processEventsWhileBlocked`, called
//! from the script's count hook). Each request another client sent is answered BUSY, but
//! SCRIPT KILL (which stops a script that has not written), FUNCTION KILL and SHUTDOWN
//! NOSAVE (which ends the node, script and all).
//!
//! Why this shape. The script runs inside one connection's future, with the node borrowed,
//! on the one thread that also polls every other connection: nothing else can run until
//! the hook returns, and the hook cannot await. So the pass reaches the other connections
//! below their futures: each accepted socket is registered here by its file descriptor, and
//! the pass reads and writes it with non-blocking system calls of its own, never through
//! tokio (whose readiness the pass cannot refresh without returning to the runtime). Only
//! a connection parked between requests is served (it waits for its next request, has
//! nothing half read or unwritten, may run commands: see [`Socket::waiting`]); the
//! script's own connection is busy running it, so its pipelined requests wait for the
//! script's reply. What the pass read but did not answer (a half request, or the allowed
//! commands that need the node or the connection's session: AUTH, HELLO, MULTI, WATCH…;
//! an unknown command or a wrong word count, whose error Redis gives at once; and whatever
//! follows them) is handed back: the connection's stream ([`Watched`]) gives
//! those bytes before the socket's, once the script is over. BUSY replies the socket did
//! not take are sent by the stream before anything else it writes.
//!
//! A simulated node has no pass: its sockets have no descriptor, and its clock stands
//! still while a script runs, so no script could ever run long there.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::redis::Frame;
use crate::redis::cmd::Lookup;
use crate::redis::connection::{Protocol, Reply};
use crate::redis::lua::Watcher;
use crate::redis::request::{self, Parsed};

/// The refusal of every other command while an EVAL script runs long (`shared.slowevalerr`).
pub(super) const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// SCRIPT KILL of a script that wrote.
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the \
    dataset. You can either wait the script termination or kill the server in a hard way using the \
    SHUTDOWN NOSAVE command.";

/// What the pass did with a request, for the node's statistics once the script is over
/// (the pass cannot reach the node).
pub(super) enum Answered {
    /// Refused BUSY before it ran: a rejected call of `name`.
    Refused { name: String },
    /// Ran (SCRIPT KILL, FUNCTION KILL) and replied `reply`.
    Ran { name: String, reply: Frame },
}

/// The commands Redis 7.0 flags `ALLOW_BUSY` (src/commands/*.json) that the pass does not
/// answer itself: each needs the node or the connection's session, so it waits, with what
/// follows it, for the connection's own loop after the script.
const LEFT_TO_THE_CONNECTION: &[&str] = &[
    "auth",
    "discard",
    "function|stats",
    "hello",
    "multi",
    "quit",
    "replconf",
    "reset",
    "unwatch",
    "watch",
];

/// How many bytes the pass reads from one connection at a time (Redis's
/// `PROTO_IOBUF_LEN`).
const READ_CHUNK: usize = 16 * 1024;

/// The node's client sockets, and the state of the script that runs long.
pub(super) struct BusyPass {
    /// By connection id: the pass serves them in that order. Weak: a connection that ended
    /// (its socket closed) is gone from here with its stream.
    sockets: RefCell<BTreeMap<u64, Weak<Socket>>>,
    /// The node's monotonic clock (ms).
    monotonic_ms: Box<dyn Fn() -> u64>,
    started_ms: Cell<u64>,
    busy_after_ms: Cell<u64>,
    /// SCRIPT KILL was accepted: the running script is to stop.
    killed: Cell<bool>,
    /// SHUTDOWN NOSAVE came in: the script stops, and the node with it.
    shutdown: Cell<bool>,
    /// What the pass answered since the node last counted it.
    answered: RefCell<Vec<Answered>>,
}

/// One client connection's socket, as the pass and the connection's stream share it.
pub(super) struct Socket {
    fd: RawFd,
    /// Set by the connection's loop while it waits for its next request with nothing half
    /// read, nothing unwritten, and no state the pass cannot see (authenticated, not in
    /// MULTI, not subscribed): only then may the pass answer for it. Cleared by the pass
    /// when it hands a request back.
    waiting: Cell<bool>,
    /// Bytes the pass read and did not answer: the stream gives them first.
    unread: RefCell<Vec<u8>>,
    /// Replies the pass wrote that the socket did not take: the stream sends them first.
    unsent: RefCell<Vec<u8>>,
    /// The connection's task, as its last read left it waiting.
    waker: RefCell<Option<Waker>>,
}

impl Socket {
    /// Marks the connection as waiting between requests (see [`Socket::waiting`]) until
    /// the guard drops.
    pub(super) fn waiting(self: &Rc<Self>) -> WaitingGuard {
        self.waiting.set(true);
        WaitingGuard(self.clone())
    }

    fn wake(&self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// Clears [`Socket::waiting`] when the connection stops waiting.
pub(super) struct WaitingGuard(Rc<Socket>);

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        self.0.waiting.set(false);
    }
}

impl BusyPass {
    pub(super) fn new(monotonic_ms: Box<dyn Fn() -> u64>) -> Self {
        BusyPass {
            sockets: RefCell::default(),
            monotonic_ms,
            started_ms: Cell::new(0),
            busy_after_ms: Cell::new(0),
            killed: Cell::new(false),
            shutdown: Cell::new(false),
            answered: RefCell::default(),
        }
    }

    /// What the pass answered since the last call, for the node's statistics.
    pub(super) fn take_answered(&self) -> Vec<Answered> {
        self.answered.take()
    }

    /// Registers connection `id`'s socket `fd`; the connection's stream shares it.
    pub(super) fn register(&self, id: u64, fd: RawFd) -> Rc<Socket> {
        let socket = Rc::new(Socket {
            fd,
            waiting: Cell::new(false),
            unread: RefCell::default(),
            unsent: RefCell::default(),
            waker: RefCell::default(),
        });
        let mut sockets = self.sockets.borrow_mut();
        sockets.retain(|_, socket| socket.strong_count() > 0);
        sockets.insert(id, Rc::downgrade(&socket));
        socket
    }

    /// SHUTDOWN NOSAVE came in while a script ran: the node is to stop.
    pub(super) fn shutting_down(&self) -> bool {
        self.shutdown.get()
    }

    /// Reads what each waiting connection sent and answers it.
    fn serve(&self, wrote: bool) {
        let sockets: Vec<Rc<Socket>> = self.sockets.borrow().values().filter_map(Weak::upgrade).collect();
        for socket in sockets {
            if !socket.waiting.get() || self.shutdown.get() {
                continue;
            }
            let mut out = socket.unsent.take();
            // A connection that has not taken its last replies is sent no more.
            let mut ended = false;
            if out.is_empty() {
                let mut unread = socket.unread.borrow_mut();
                ended = receive(socket.fd, &mut unread);
                let (answered, handed_back) = self.answer_requests(&unread, &mut out, wrote);
                unread.drain(..answered);
                if handed_back {
                    socket.waiting.set(false);
                }
            }
            if !send(socket.fd, &mut out) || ended {
                socket.waiting.set(false);
            }
            *socket.unsent.borrow_mut() = out;
            // Its task looks at what changed once the script is over.
            socket.wake();
        }
    }

    /// Answers the whole requests at the front of `unread` into `out`, up to one the
    /// connection must answer itself (or bytes that are not RESP): how many bytes were
    /// answered, and whether one was left to the connection.
    fn answer_requests(&self, unread: &[u8], out: &mut Vec<u8>, wrote: bool) -> (usize, bool) {
        let mut answered = 0;
        loop {
            match request::parse(&unread[answered..]) {
                Ok(Parsed::Request { words, consumed }) => match self.answer(&words, wrote) {
                    Some(reply) => {
                        out.extend(&reply);
                        answered += consumed;
                    }
                    None => return (answered, true),
                },
                Ok(Parsed::Incomplete) => return (answered, false),
                // Not RESP: the connection's loop answers it after the script.
                Err(_) => return (answered, true),
            }
        }
    }

    /// The pass's reply to one request (no bytes for one with no words, or SHUTDOWN
    /// NOSAVE), or `None` if the connection must answer it.
    fn answer(&self, words: &[Vec<u8>], wrote: bool) -> Option<Vec<u8>> {
        let Some(command) = words.first() else {
            return Some(Vec::new());
        };
        // Not served by the node (a SHUTDOWN at another time is an unknown command).
        if command.eq_ignore_ascii_case(b"SHUTDOWN")
            && words[1..].iter().any(|w| w.eq_ignore_ascii_case(b"NOSAVE"))
        {
            self.shutdown.set(true);
            return Some(Vec::new());
        }
        let lookup = Lookup::of(words);
        // An unknown command, or a wrong word count: its error, after the script.
        if !lookup.fits(words) {
            return None;
        }
        let name = lookup.name(words).into_owned();
        let reply = match name.as_str() {
            "script|kill" | "function|kill" if wrote => Frame::Error(UNKILLABLE.into()),
            "script|kill" => {
                self.killed.set(true);
                Frame::SimpleString(b"OK".to_vec())
            }
            // FUNCTION KILL cannot stop an EVAL script.
            "function|kill" => Frame::Error(BUSY.into()),
            name if LEFT_TO_THE_CONNECTION.contains(&name) => return None,
            _ => {
                self.answered.borrow_mut().push(Answered::Refused { name });
                return Some(encode(Frame::Error(BUSY.into())));
            }
        };
        let bytes = encode(reply.clone());
        self.answered.borrow_mut().push(Answered::Ran { name, reply });
        Some(bytes)
    }
}

/// A reply's bytes (the pass's replies read the same in RESP2 and RESP3).
fn encode(reply: Frame) -> Vec<u8> {
    Reply::from(reply).encode(Protocol::Resp2)
}

impl Watcher for BusyPass {
    fn script_started(&self, busy_after_ms: u64) {
        self.started_ms.set((self.monotonic_ms)());
        self.busy_after_ms.set(busy_after_ms);
        self.killed.set(false);
    }

    fn script_running(&self, wrote: bool) -> bool {
        if (self.monotonic_ms)().saturating_sub(self.started_ms.get()) >= self.busy_after_ms.get() {
            self.serve(wrote);
        }
        self.killed.get() || self.shutdown.get()
    }

    fn script_ended(&self) {
        self.killed.set(false);
    }
}

/// Reads what arrived on `fd` (one chunk at most) onto `into`, without blocking; whether
/// the socket ended (the peer closed it, or it failed: the connection finds out which).
fn receive(fd: RawFd, into: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; READ_CHUNK];
    loop {
        // SAFETY: `fd` is an open socket (its stream is alive while registered, and no
        // stream drops while a script runs); `chunk` is writable for its length.
        let read = unsafe { libc::recv(fd, chunk.as_mut_ptr().cast(), chunk.len(), libc::MSG_DONTWAIT) };
        match read {
            0 => return true,
            n if n > 0 => {
                into.extend_from_slice(&chunk[..n as usize]);
                return false;
            }
            _ => match io::Error::last_os_error().kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return false,
                _ => return true,
            },
        }
    }
}

/// Writes what `out` holds to `fd` without blocking; what the socket did not take stays
/// in `out`. False if the socket failed.
fn send(fd: RawFd, out: &mut Vec<u8>) -> bool {
    while !out.is_empty() {
        // SAFETY: as in `receive`; `out` is readable for its length.
        let written = unsafe {
            libc::send(
                fd,
                out.as_ptr().cast(),
                out.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        match written {
            n if n > 0 => {
                out.drain(..n as usize);
            }
            _ => match io::Error::last_os_error().kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return true,
                _ => return false,
            },
        }
    }
    true
}

/// A real client connection's stream: the accepted one, with the bytes the busy pass read
/// from its socket and did not answer given first, and the replies it could not send sent
/// first. A simulated connection has no socket and no pass, so it is served on its stream
/// as is, without this wrapper in every read and write (issue 33).
pub(super) struct Watched<S> {
    stream: S,
    socket: Rc<Socket>,
}

impl<S: AsyncWrite + Unpin> Watched<S> {
    pub(super) fn new(stream: S, socket: Rc<Socket>) -> Self {
        Watched { stream, socket }
    }

    /// Sends the replies the pass could not.
    fn poll_unsent(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut unsent = self.socket.unsent.borrow_mut();
        while !unsent.is_empty() {
            let written = ready!(Pin::new(&mut self.stream).poll_write(cx, &unsent))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            unsent.drain(..written);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_unsent(cx))?;
        let this = &mut *self;
        {
            let mut unread = this.socket.unread.borrow_mut();
            if !unread.is_empty() {
                let n = unread.len().min(buf.remaining());
                buf.put_slice(&unread[..n]);
                unread.drain(..n);
                return Poll::Ready(Ok(()));
            }
        }
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if polled.is_pending() {
            let mut waker = this.socket.waker.borrow_mut();
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.poll_unsent(cx))?;
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_unsent(cx))?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
