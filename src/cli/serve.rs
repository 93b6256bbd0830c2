//! `serve`: one fake Redis node on a real port, so redis-cli and any client can talk to
//! the node the simulator runs.

use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

use locksim::real::{HostClock, TcpDialer, TcpListener};
use locksim::redis::REDIS_VERSION;
use locksim::redis::server::{self, ServeOptions};

use super::{EXIT_UNMET, emit, invalid};

/// What `serve` is asked: the port, and the master to follow, if any.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The TCP port to listen on.
    #[arg(long)]
    pub port: u16,
    /// Start as a replica of this master.
    #[arg(long, value_name = "HOST:PORT", value_parser = super::parse_address)]
    pub replicaof: Option<std::net::SocketAddr>,
}

/// Runs the simulator's node code on real TCP: the serve loop is single-task and !Send by
/// design, so it runs on a current-thread runtime. Port 0 asks the kernel for a free port;
/// the first line printed names the address bound, and comes once it listens there.
///
/// SIGTERM or SIGINT stops it and it exits 0, as redis-server shuts down on either: the
/// process ends as a process does (its exit handlers run: the profile an instrumented build
/// writes for `make pgo-profile` is one), not killed mid-request.
pub fn serve(args: ServeArgs) -> ExitCode {
    let ServeArgs { port, replicaof } = args;
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_UNMET);
        }
    };
    if let Err(e) = locksim::real::raise_open_files_limit() {
        eprintln!("warning: cannot raise the open-files limit, so fewer clients can connect: {e}");
    }
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let result = runtime.block_on(async {
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        emit(format_args!(
            "fake Redis {REDIS_VERSION} node listening on {}",
            listener.local_addr()?
        ));
        let options = ServeOptions {
            replicaof,
            announce: listener.local_addr()?,
            ..ServeOptions::default()
        };
        let node = server::serve_node(TcpListener(listener), HostClock::new(), TcpDialer, options);
        let signal = tokio::select! {
            served = node => return served,
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        };
        emit(format_args!("{signal}: shutting down"));
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => invalid(format!("serving on {addr}: {e}")),
    }
}
