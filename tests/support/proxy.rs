//! A TCP proxy between a replica and its master that can hold every byte: a partition
//! that heals (held bytes are delivered afterwards, as TCP retransmits them). The sockets
//! stay open meanwhile; SIGSTOP on a process would not do this, the kernel buffering for
//! it. It binds its own port (0), so no other process can take it first.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Forwards every connection made to [`Proxy::addr`] to the target, one thread per
/// direction.
pub struct Proxy {
    pub addr: SocketAddr,
    held: Arc<AtomicBool>,
}

impl Proxy {
    /// Listens on a free loopback port, forwarding to `target`.
    pub fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(AtomicBool::new(false));
        let hold = held.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(target) else {
                    return;
                };
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let hold = hold.clone();
                    std::thread::spawn(move || forward(from, to, &hold));
                }
            }
        });
        Proxy { addr, held }
    }

    /// Holds every byte from now on (`true`), or lets them go (`false`).
    pub fn partition(&self, cut: bool) {
        self.held.store(cut, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either side closes, waiting while held.
fn forward(mut from: TcpStream, mut to: TcpStream, hold: &AtomicBool) {
    let mut chunk = [0u8; 4096];
    while let Ok(n @ 1..) = from.read(&mut chunk) {
        while hold.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if to.write_all(&chunk[..n]).is_err() {
            return;
        }
    }
}
