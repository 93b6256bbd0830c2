//! The seam between the simulated world and the real one.
//!
//! `redis/` and `client/` never name madsim or tokio: they take a [`Clock`] (this node's
//! own idea of time) and byte streams from a [`Listener`] or a [`Connect`]or. `world/`
//! hands them simulated clocks and madsim TCP; real-server mode hands them the host clock
//! and tokio TCP. That one seam is what makes the simulated client the real client.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite};

/// A node's clock: the only source of time for the code running on that node.
///
/// Two readings, as on a real host: the wall clock (`gettimeofday`, which Redis uses for
/// key expiry and which jumps when someone sets the time) and the monotonic clock (which
/// never jumps, but runs at the node's rate, drift included).
pub trait Clock: Clone + Send + Sync + 'static {
    /// Wall-clock milliseconds since the Unix epoch, as this node believes.
    fn wall_ms(&self) -> u64;

    /// Monotonic milliseconds since an arbitrary origin; never jumps.
    fn monotonic_ms(&self) -> u64;

    /// Completes once [`Clock::monotonic_ms`] reads at least `deadline_ms`.
    fn sleep_until_monotonic(&self, deadline_ms: u64) -> impl Future<Output = ()> + Send;

    /// Sleeps for `ms` milliseconds of this node's monotonic time.
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        self.sleep_until_monotonic(self.monotonic_ms().saturating_add(ms))
    }

    /// Completes at the first tick of the monotonic grid `first_tick_ms + k·period_ms`
    /// (k ≥ 0) at which the wall clock reads at least `wall_ms`, and returns that tick: a
    /// cron that only has work from `wall_ms` on. This one checks the wall clock at every
    /// tick; a clock that can predict its own readings may sleep straight to the tick, as
    /// long as it returns the same one (and notices when it is stepped meanwhile).
    fn sleep_until_wall_on_grid(
        &self,
        wall_ms: u64,
        first_tick_ms: u64,
        period_ms: u64,
    ) -> impl Future<Output = u64> + Send {
        async move {
            let mut tick = first_tick_ms;
            loop {
                self.sleep_until_monotonic(tick).await;
                if self.wall_ms() >= wall_ms {
                    return tick;
                }
                tick += period_ms;
            }
        }
    }
}

/// Accepts incoming byte streams (a server's listening socket).
pub trait Listener {
    /// The stream type of an accepted connection.
    type Stream: AsyncRead + AsyncWrite + Unpin + 'static;

    /// Waits for the next connection; the stream and the address of its other end.
    fn accept(&self) -> impl Future<Output = io::Result<(Self::Stream, SocketAddr)>>;

    /// The host socket under an accepted stream, which a node's busy pass reads and writes
    /// while a script runs long (`redis/server/busy.rs`); none for a simulated stream.
    fn socket_fd(_stream: &Self::Stream) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// Opens byte streams to one server (a client's way to reconnect after a reset).
pub trait Connect: Send + Sync {
    /// The stream type of an opened connection.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// Opens a new connection to the server.
    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;

    /// Opens a connection for a side conversation beside the one requests go on (a pub/sub
    /// subscription); the same as [`Connect::connect`] unless a connector keeps track of
    /// its request connection.
    fn connect_aside(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send {
        self.connect()
    }
}
