//! A TCP proxy on loopback between a client (a replica) and a server (its master), whose
//! links can be cut as a network partition cuts them: nothing crosses in either direction
//! while both connections stay open, so neither end notices anything but silence. Bytes
//! sent meanwhile wait (in the proxy and the kernel's buffers, as unacknowledged segments
//! wait to be resent) and arrive when the cut heals.
//!
//! Freezing a process (SIGSTOP) is no partition: the kernel still receives for it, and it
//! applies what arrived when it thaws.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A proxy to one target, on a loopback port of its own; stopped when dropped.
pub struct Proxy {
    /// Where clients connect instead of the target.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    cut: AtomicBool,
    closed: AtomicBool,
    /// Both sockets of every link, to shut them down when the proxy stops.
    sockets: Mutex<Vec<TcpStream>>,
}

impl Proxy {
    /// Listens on 127.0.0.1, a port the kernel picks, and forwards every connection to
    /// `target` (a connection the target refuses is closed).
    pub fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let acceptor = {
            let shared = shared.clone();
            std::thread::spawn(move || accept(listener, target, shared))
        };
        Proxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// Stops forwarding in both directions; every connection stays open.
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
    }

    /// Forwards again, what waited first.
    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        for socket in self.shared.sockets.lock().unwrap().iter() {
            let _ = socket.shutdown(Shutdown::Both); // wakes the forwarders' reads
        }
        let _ = TcpStream::connect(self.addr); // wakes the acceptor
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept(listener: TcpListener, target: SocketAddr, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(target) else {
            continue; // dropping `client` closes it, as the refused target would
        };
        let (Ok(client_out), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        {
            let mut sockets = shared.sockets.lock().unwrap();
            for socket in [&client, &server] {
                let _ = socket.set_nodelay(true);
                if let Ok(socket) = socket.try_clone() {
                    sockets.push(socket);
                }
            }
        }
        for (from, to) in [(client, server_out), (server, client_out)] {
            let shared = shared.clone();
            std::thread::spawn(move || forward(from, to, &shared));
        }
    }
}

/// Copies `from` to `to` until `from` ends, holding every byte while the link is cut.
fn forward(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let read = from.read(&mut chunk);
        // While cut, this chunk (or the end of the stream) waits here and what follows
        // waits in the kernel's buffers.
        while shared.cut.load(Ordering::SeqCst) && !shared.closed.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        match read {
            Ok(n @ 1..) if !shared.closed.load(Ordering::SeqCst) => {
                if to.write_all(&chunk[..n]).is_err() {
                    let _ = from.shutdown(Shutdown::Both);
                    return;
                }
            }
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write); // pass the end of the stream on
                return;
            }
            _ => {
                let _ = to.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}
