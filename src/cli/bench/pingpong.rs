//! The design's speed limit, measured beside the workloads (`bench --pingpong`): a bare
//! request/response ping-pong between two madsim nodes over the same patched madsim TCP
//! the simulator uses, with nothing of locksim's own in it.
//!
//! Each message is 40 bytes (a SET request one way, a bulk reply the other), one-way
//! latency is uniform in 1–5 ms as in the reference workloads, and the client races every
//! read against a 500 ms `madsim::time::timeout`, as a lock client races each request
//! against its timeout. What a message costs here is what it costs when locksim's work
//! costs nothing, so a workload's events/s over these messages/s is the share of the
//! limit locksim reaches (issue 33 asks for half).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use madsim::net::{TcpListener, TcpStream};
use madsim::runtime::Runtime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use locksim::world::net::latency_range;

/// 40 bytes: a SET request.
const REQUEST: &[u8; 40] = b"*3\r\n$3\r\nSET\r\n$4\r\nlock\r\n$10\r\n0123456789\r\n";
/// 40 bytes: a bulk string reply.
const REPLY: &[u8; 40] = b"$33\r\ntok-0123456789abcdef0123456789abc\r\n";
/// The one-way latency range of the reference workloads (ms).
const LATENCY_MS: [u64; 2] = [1, 5];
/// How long the client waits for each reply before giving up (it never has to).
const READ_TIMEOUT: Duration = Duration::from_millis(500);

/// One ping-pong run's speed.
pub struct PingPong {
    pub messages: u64,
    pub wall_s: f64,
}

impl PingPong {
    pub fn messages_per_s(&self) -> f64 {
        self.messages as f64 / self.wall_s
    }
}

/// Runs `round_trips` request/reply exchanges (twice as many messages) and times them.
/// The runtime gets a thread of its own, as every seed of a sweep does.
pub fn run(round_trips: u64) -> PingPong {
    std::thread::spawn(move || exchange(round_trips))
        .join()
        .expect("the ping-pong thread panicked")
}

fn exchange(round_trips: u64) -> PingPong {
    let mut config = madsim::Config::default();
    config.net.send_latency = latency_range(LATENCY_MS);
    let runtime = Runtime::with_seed_and_config(1, config);
    let server_addr: SocketAddr = "10.0.0.1:6379".parse().expect("a socket address");
    let server = runtime.create_node().name("server").ip(server_addr.ip()).build();
    let client = runtime
        .create_node()
        .name("client")
        .ip("10.0.0.2".parse().expect("an IP address"))
        .build();
    server.spawn(async move {
        let listener = TcpListener::bind(server_addr).await.expect("bind");
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut request = [0u8; REQUEST.len()];
        while stream.read_exact(&mut request).await.is_ok() {
            std::hint::black_box(&request);
            if stream.write_all(REPLY).await.is_err() || stream.flush().await.is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    runtime.block_on(async move {
        let exchanges = client.spawn(async move {
            // Lets the server bind first.
            madsim::time::sleep(Duration::from_millis(10)).await;
            let mut stream = TcpStream::connect(server_addr).await.expect("connect");
            let mut reply = [0u8; REPLY.len()];
            for _ in 0..round_trips {
                stream.write_all(REQUEST).await.expect("write");
                stream.flush().await.expect("flush");
                madsim::time::timeout(READ_TIMEOUT, stream.read_exact(&mut reply))
                    .await
                    .expect("a reply within the timeout")
                    .expect("read");
                std::hint::black_box(&reply);
            }
        });
        exchanges.await.expect("the client task");
    });
    PingPong {
        messages: 2 * round_trips,
        wall_s: started.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_trip_is_two_messages() {
        let pingpong = run(100);
        assert_eq!(pingpong.messages, 200);
        assert!(pingpong.messages_per_s() > 0.0);
    }
}
