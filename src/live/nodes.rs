//! The Redis nodes of a live run: locksim's own nodes served on loopback ports (by
//! default: their clocks are locksim's, so clock faults need nothing else), or real
//! `redis-server` processes on free ports, each in a scratch directory of its own. A node
//! keeps what its persistence setting keeps across a crash: locksim's node its AOF or RDB
//! snapshot on a disk the run keeps, redis-server its `appendonly.aof` or `dump.rdb` in its
//! directory.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::clock::{LiveClock, ShimClock};
use super::supervisor::Supervisor;
use crate::real::{TcpDialer, TcpListener};
use crate::redis::persistence::{Persistence, save_parameter};
use crate::redis::server::{ServeOptions, serve_node};

/// One Redis node of the run.
pub struct LiveNode {
    pub name: String,
    pub addr: SocketAddr,
    pub kind: NodeKind,
}

/// Who runs the node.
pub enum NodeKind {
    /// locksim's node, a task of the run on `clock` (`None` while crashed), keeping its
    /// AOF (if any) on a disk that outlives its crashes.
    Locksim {
        clock: LiveClock,
        task: Option<JoinHandle<()>>,
        persistence: Persistence,
    },
    /// A `redis-server` process under the supervisor, by the node's name, on a shifted
    /// wall clock when the run has clock faults.
    RedisServer {
        clock: Option<ShimClock>,
        persistence: Persistence,
    },
}

/// How long a node may take to listen.
const START_PATIENCE: Duration = Duration::from_secs(10);

impl LiveNode {
    /// Serves a locksim node on a free loopback port; must run inside a `LocalSet` (the
    /// node's loop is single-task and !Send, as Redis is single-threaded).
    pub async fn locksim(
        name: &str,
        clock: LiveClock,
        persistence: Persistence,
    ) -> std::io::Result<LiveNode> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = Some(serve_locksim(listener, clock.clone(), persistence.clone())?);
        Ok(LiveNode {
            name: name.to_string(),
            addr,
            kind: NodeKind::Locksim {
                clock,
                task,
                persistence,
            },
        })
    }

    /// Starts `redis-server` as node `name` on a free port, in `dir/name/`, with
    /// `persistence`, on `clock` if given, and waits until it answers.
    pub async fn redis_server(
        name: &str,
        dir: &Path,
        supervisor: &mut Supervisor,
        clock: Option<ShimClock>,
        persistence: Persistence,
    ) -> std::io::Result<LiveNode> {
        let addr = free_port()?;
        start_redis_server(name, addr, dir, supervisor, clock.as_ref(), &persistence)?;
        until_listening(addr).await?;
        Ok(LiveNode {
            name: name.to_string(),
            addr,
            kind: NodeKind::RedisServer { clock, persistence },
        })
    }

    /// Steps the node's wall clock by `by_ms`.
    pub fn jump_clock(&self, by_ms: i64) -> std::io::Result<()> {
        match &self.kind {
            NodeKind::Locksim { clock, .. } => {
                clock.jump(by_ms);
                Ok(())
            }
            NodeKind::RedisServer {
                clock: Some(clock), ..
            } => clock.jump(by_ms),
            NodeKind::RedisServer { clock: None, .. } => Err(std::io::Error::other(
                "this redis-server was started without the wall-clock shim",
            )),
        }
    }

    /// Kills the node: its process, its connections and (without persistence) its keys;
    /// with `power_loss`, locksim's node also loses what its AOF had not fsynced (a
    /// redis-server's page cache outlives its process: `supported` refuses that case).
    pub fn crash(&mut self, supervisor: &mut Supervisor, power_loss: bool) {
        match &mut self.kind {
            NodeKind::Locksim {
                task, persistence, ..
            } => {
                if let Some(task) = task.take() {
                    task.abort();
                }
                if let (true, Persistence::Aof { disk, .. }) = (power_loss, persistence) {
                    disk.lose_page_cache();
                }
            }
            NodeKind::RedisServer { .. } => supervisor.kill(&self.name),
        }
    }

    /// Starts the crashed node again on the same port, with what it persisted.
    pub async fn restart(&mut self, dir: &Path, supervisor: &RefCell<Supervisor>) -> std::io::Result<()> {
        match &mut self.kind {
            NodeKind::Locksim {
                clock,
                task,
                persistence,
            } => {
                let listener = rebind(self.addr).await?;
                *task = Some(serve_locksim(listener, clock.clone(), persistence.clone())?);
            }
            NodeKind::RedisServer { clock, persistence } => {
                let started = {
                    let mut processes = supervisor.borrow_mut();
                    let clock = clock.as_ref();
                    start_redis_server(&self.name, self.addr, dir, &mut processes, clock, persistence)
                };
                started?;
                until_listening(self.addr).await?;
            }
        }
        Ok(())
    }
}

impl Drop for LiveNode {
    fn drop(&mut self) {
        if let NodeKind::Locksim { task: Some(task), .. } = &self.kind {
            task.abort();
        }
    }
}

fn serve_locksim(
    listener: tokio::net::TcpListener,
    clock: LiveClock,
    persistence: Persistence,
) -> std::io::Result<JoinHandle<()>> {
    let options = ServeOptions {
        announce: listener.local_addr()?,
        persistence,
        ..ServeOptions::default()
    };
    Ok(tokio::task::spawn_local(async move {
        let _ = serve_node(TcpListener(listener), clock, TcpDialer, options).await;
    }))
}

fn start_redis_server(
    name: &str,
    addr: SocketAddr,
    dir: &Path,
    supervisor: &mut Supervisor,
    clock: Option<&ShimClock>,
    persistence: &Persistence,
) -> std::io::Result<()> {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir)?;
    let mut argv = redis_server_argv(addr.port(), &dir);
    // Later arguments win: these replace redis_server_argv's `--appendonly no` and `--save ""`.
    match persistence {
        Persistence::None => {}
        Persistence::Aof { fsync, .. } => {
            argv.extend(["--appendonly", "yes", "--appendfsync", fsync.parameter()].map(String::from));
        }
        Persistence::Rdb { save_points, .. } => {
            argv.extend(["--save".to_string(), save_parameter(save_points)]);
        }
    }
    supervisor.start(name, &argv, &clock.map(ShimClock::env).unwrap_or_default())
}

/// The command line of a `redis-server` on loopback `port` keeping its files in `dir`:
/// no persistence, and replicas that sync at once (`--repl-diskless-sync-delay 0`: 6 ms
/// to link up instead of 5 s). The tests' redis-servers start from it too.
pub fn redis_server_argv(port: u16, dir: &Path) -> Vec<String> {
    [
        "redis-server",
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        &dir.display().to_string(),
        "--repl-diskless-sync-delay",
        "0",
    ]
    .iter()
    .map(|word| word.to_string())
    .collect()
}

/// Binds `addr` again: the aborted task of the crashed node lets go of it once the
/// runtime has dropped that task.
async fn rebind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let deadline = tokio::time::Instant::now() + START_PATIENCE;
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            bound => return bound,
        }
    }
}

/// A loopback port free now (the kernel's pick; a process started next takes it).
fn free_port() -> std::io::Result<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// Waits until something accepts connections at `addr`.
async fn until_listening(addr: SocketAddr) -> std::io::Result<()> {
    let deadline = tokio::time::Instant::now() + START_PATIENCE;
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(_) => return Ok(()),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!(
                        "nothing listened at {addr} within {} s: {e}",
                        START_PATIENCE.as_secs()
                    ),
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}
