//! How a client finds a group's master through Sentinel: before each connection it asks
//! the Sentinels in turn (`SENTINEL get-master-addr-by-name`) and takes the first answer,
//! as redis-py's `SentinelConnectionPool` and ioredis's `SentinelConnector` do. No client
//! takes a quorum among Sentinels, so a Sentinel cut off
//! with the old master sends its clients there.

use std::io;
use std::net::SocketAddr;

use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::connection::Connection;
use crate::redis::request::build as request;
use crate::world::clock::SimClock;
use crate::world::net::{Address, Nic, SimConnector};

/// How long a client waits for one Sentinel's answer before asking the next (redis-py's
/// documented example sets `socket_timeout=0.1`).
pub const SENTINEL_TIMEOUT_MS: u64 = 100;

/// The Sentinels a client asks for the master of one group.
#[derive(Debug, Clone)]
pub struct SentinelRoute {
    /// The group's name at the Sentinels (its first master's node name).
    pub master_name: String,
    /// The group's first master: where a client believes it is before it first asks.
    pub first_master: SocketAddr,
    /// Every Sentinel, in the order the client asks them.
    pub sentinels: Vec<SocketAddr>,
}

impl SentinelRoute {
    /// The master's address, as the first Sentinel that answers in time says, asked by a
    /// client on `clock` through `nic`.
    pub async fn master(&self, clock: &SimClock, nic: &Nic) -> io::Result<SocketAddr> {
        for sentinel in &self.sentinels {
            let asked = tokio::select! {
                biased;
                answer = self.ask(*sentinel, nic) => answer,
                () = clock.sleep_ms(SENTINEL_TIMEOUT_MS) => continue,
            };
            if let Ok(Some(master)) = asked {
                return Ok(master);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::NotConnected,
            format!("no Sentinel named a master for {}", self.master_name),
        ))
    }

    /// One Sentinel's answer: the master's address, or `None` when it knows none.
    async fn ask(&self, sentinel: SocketAddr, nic: &Nic) -> io::Result<Option<SocketAddr>> {
        let stream = SimConnector(Address::new(sentinel), nic.clone())
            .connect()
            .await?;
        let mut connection = Connection::new(stream);
        let words = [
            b"SENTINEL".to_vec(),
            b"get-master-addr-by-name".to_vec(),
            self.master_name.as_bytes().to_vec(),
        ];
        connection.write_frame(&request(words)).await?;
        let reply = connection.read_frame().await.map_err(io::Error::other)?;
        let Some(Frame::Array(items)) = reply else {
            return Ok(None);
        };
        let text = |frame: &Frame| match frame {
            Frame::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        };
        let [ip, port] = items.as_slice() else {
            return Ok(None);
        };
        let ip = text(ip).and_then(|ip| ip.parse().ok());
        let port = text(port).and_then(|port| port.parse().ok());
        Ok(ip.zip(port).map(|(ip, port)| SocketAddr::new(ip, port)))
    }
}
