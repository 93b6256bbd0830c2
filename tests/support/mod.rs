//! Real redis-server processes and fake nodes for tests: each on a free loopback port
//! (real ones in their own scratch directory), stopped when dropped ([`sim`] has the
//! simulated counterpart; [`proxy`] a link that can be cut). `make test` installs
//! redis-server when it is missing; a test that cannot find it fails and says so.
#![allow(dead_code)] // each test binary uses a different part of this module

pub mod chromium;
pub mod cli;
pub mod differential;
pub mod grid;
pub mod libraries;
pub mod live;
pub mod lock_cli;
pub mod proxy;
pub mod resp;
pub mod sim;
pub mod svg_text;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A lock client on real TCP and the host clock, of the servers at `addrs`, its tokens and
/// jitter seeded by `seed`.
pub fn real_lock(
    addrs: &[SocketAddr],
    seed: u64,
    options: locksim::client::LockOptions,
) -> locksim::client::Lock<locksim::real::TcpConnector, locksim::real::HostClock, rand_chacha::ChaCha8Rng> {
    use rand::SeedableRng;
    let connectors = addrs.iter().copied().map(locksim::real::TcpConnector).collect();
    locksim::client::Lock::new(
        connectors,
        locksim::real::HostClock::new(),
        rand_chacha::ChaCha8Rng::seed_from_u64(seed),
        options,
    )
}

/// Waits, polling for up to 10 s, until `key` exists on the server at `addr`: until a lock
/// holder there (another process, or a task of this test) has had its grant.
pub async fn until_key_exists(addr: SocketAddr, key: &[u8]) {
    use locksim::client::Conn;
    use locksim::redis::Frame;
    use locksim::redis::cmd::Get;
    let mut conn = Conn::new(
        locksim::real::TcpConnector(addr),
        locksim::real::HostClock::new(),
        1000,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let get = Get { key: key.to_vec() }.into_frame();
        if let Ok(reply) = conn.request(&get).await
            && reply != Frame::Null
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared on {addr}",
            String::from_utf8_lossy(key)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits, polling for up to 15 s, until the replica at `replica` reports its link to its
/// master up.
pub fn wait_for_link(replica: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut client = resp::RespClient::connect(replica);
    loop {
        let info = client.request(&[b"INFO".to_vec(), b"replication".to_vec()]);
        if let resp::Value::Bulk(text) | resp::Value::Verbatim(_, text) = &info
            && text.lines().any(|line| line == "master_link_status:up")
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the replica at {replica} never linked up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits, polling for up to 15 s, until writes on `master` reach `replica`: a key written on
/// the master shows on the replica. A replica whose link is up may not be getting the
/// stream yet: after a diskless sync redis-server starts it on the replica's first
/// acknowledgement that finds the replica online at the master, and when the first one
/// comes before the master has noticed the snapshot's end (on a loaded host), on the
/// next one, a second later.
pub fn wait_for_stream(master: SocketAddr, replica: SocketAddr) {
    let words = |text: &str| text.split(' ').map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
    let deadline = Instant::now() + Duration::from_secs(15);
    let set = resp::RespClient::connect(master).request(&words("SET stream-check 1"));
    assert_eq!(set, resp::Value::Simple("OK".into()));
    let mut client = resp::RespClient::connect(replica);
    while client.request(&words("GET stream-check")) != resp::Value::Bulk("1".into()) {
        assert!(
            Instant::now() < deadline,
            "writes on {master} never reached the replica at {replica}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A single-threaded tokio runtime for tests that talk to real servers.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A running redis-server.
pub struct RedisServer {
    pub addr: SocketAddr,
    child: Child,
    dir: PathBuf,
    args: Vec<String>,
}

impl RedisServer {
    /// Starts a server with no persistence; extra `args` are passed as they are.
    ///
    /// redis-server cannot listen on port 0 and say which port it got, so we pick a port
    /// nobody listens on and hand it over. Another process (a parallel test, another
    /// checkout's tests) may take it between our probe and the server's bind; the server
    /// then exits, or another process answers in its place, and we retry on a new port.
    pub fn start(args: &[&str]) -> RedisServer {
        Self::start_fresh(|| args.iter().map(|a| a.to_string()).collect())
    }

    /// Starts a server as [`RedisServer::start`] does, with `args()` drawn anew for each
    /// attempt: a second port among them (`--tls-port`) is then also fresh when the last
    /// one was taken. [`RedisServer::arg_after`] reads back what was used.
    pub fn start_fresh(args: impl Fn() -> Vec<String>) -> RedisServer {
        const ATTEMPTS: usize = 5;
        for _ in 0..ATTEMPTS {
            let args = args();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if let Some(server) = Self::try_start_on(candidate_port(), &args) {
                return server;
            }
        }
        panic!("redis-server did not start after {ATTEMPTS} attempts on free ports");
    }

    /// The argument that followed `flag` when this server started.
    pub fn arg_after(&self, flag: &str) -> Option<&str> {
        let at = self.args.iter().position(|a| a == flag)?;
        self.args.get(at + 1).map(String::as_str)
    }

    /// Kills the server and starts a fresh, empty one on the same port (a restart
    /// without persistence); connections to the old one are reset.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let args: Vec<String> = self.args.clone();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(mut fresh) = Self::try_start_on(self.addr.port(), &args) {
                std::mem::swap(self, &mut fresh);
                return; // `fresh` now holds the dead child; dropping it is harmless
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not restart on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn try_start_on(port: u16, args: &[&str]) -> Option<RedisServer> {
        // One directory per server process, even for a restart on the same port.
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("locksim-redis-{}-{port}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let argv = locksim::live::nodes::redis_server_argv(port, &dir);
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (make test installs it: apt-get install redis-server)");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let args = args.iter().map(|a| a.to_string()).collect();
        let mut server = RedisServer {
            addr,
            child,
            dir,
            args,
        };
        // Ours is ready when what answers on the port says it is our process, and that it
        // has loaded its data: a restart with an AOF accepts connections while it reads the
        // file back, and answers every command but a few (INFO among them) with LOADING.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if server.child.try_wait().unwrap().is_some() {
                return None; // it could not bind: someone took the port
            }
            match serving(addr) {
                Some((pid, true)) if pid == server.pid() => return Some(server),
                Some((pid, false)) if pid == server.pid() => {} // still loading its AOF
                Some(_) => return None, // another redis-server has the port; ours is killed
                None => {}              // not listening yet, or not a redis-server (then ours exits)
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing is answered.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Resumes a frozen server (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {}", self.pid());
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

/// The `process_id` that `INFO server` reports on `addr`, and whether the server has
/// finished loading its data (`INFO persistence`'s `loading:0`): none when nothing listens,
/// nothing answers within a second, or what answers is not a redis-server.
fn serving(addr: SocketAddr) -> Option<(u32, bool)> {
    let mut client = resp::RespClient::try_connect(addr, Duration::from_secs(1)).ok()?;
    let words = [b"INFO".to_vec(), b"server".to_vec(), b"persistence".to_vec()];
    let (resp::Value::Bulk(info) | resp::Value::Verbatim(_, info)) = client.request(&words) else {
        return None;
    };
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.trim().to_string())
    };
    let pid = field("process_id:")?.parse().ok()?;
    Some((pid, field("loading:").as_deref() == Some("0")))
}

/// A loopback port nobody listens on right now: only a candidate for redis-server, which
/// cannot bind port 0 and report it; anyone may take the port before it binds. Servers
/// of our own ([`FakeServer`], [`proxy::Proxy`], `locksim serve --port 0`) bind port 0
/// themselves instead.
fn candidate_port() -> u16 {
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
                    ..Default::default()
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
