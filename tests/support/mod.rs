//! Real redis-server processes and fake nodes for tests: each on a free loopback port
//! (real ones in their own scratch directory), stopped when dropped. `make test` installs redis-server when it is
//! missing; a test that cannot find it fails and says so.
#![allow(dead_code)] // each test binary uses a different part of this module

pub mod resp;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running redis-server.
pub struct RedisServer {
    pub addr: SocketAddr,
    child: Child,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts a server with no persistence; extra `args` are passed as they are.
    pub fn start(args: &[&str]) -> RedisServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("locksim-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .args(["--repl-diskless-sync-delay", "0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (make test installs it: apt-get install redis-server)");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server on port {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        RedisServer { addr, child, dir }
    }

    /// The process id, for SIGSTOP/SIGCONT tests.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fake node served on real TCP and the host clock by the code `locksim serve` runs, in a
/// thread of its own (the serve loop is !Send); stopped when dropped.
pub struct FakeServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a fake node (a master) on a free loopback port.
    pub fn start() -> FakeServer {
        FakeServer::start_with(None, locksim::redis::persistence::Persistence::None)
    }

    /// Starts a fake node on a free loopback port, as a replica of `replicaof` if given,
    /// persisting as `persistence` says.
    pub fn start_with(
        replicaof: Option<SocketAddr>,
        persistence: locksim::redis::persistence::Persistence,
    ) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener =
                    locksim::real::TcpListener(tokio::net::TcpListener::from_std(listener).unwrap());
                let clock = locksim::real::HostClock::new();
                let options = locksim::redis::server::ServeOptions {
                    replicaof,
                    announce: addr,
                    persistence,
                };
                let node =
                    locksim::redis::server::serve_node(listener, clock, locksim::real::TcpDialer, options);
                tokio::select! {
                    biased;
                    _ = stopped => {}
                    result = node => result.unwrap(),
                }
            });
        });
        FakeServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
