//! A Sentinel's listening side: the few `SENTINEL` subcommands other Sentinels and clients
//! send it, answered from its [`State`] (in one task, connections polled together, as the
//! Redis node's server does).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::monitor::State;
use crate::platform::{Clock, Listener};
use crate::redis::Frame;
use crate::redis::connection::{Connection, Protocol};
use crate::world::clock::SimClock;
use crate::world::net::SimListener;

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Serves every connection to the Sentinel until its node dies.
pub(super) async fn serve(listener: SimListener, state: Arc<Mutex<State>>, clock: SimClock) {
    let mut connections: FuturesUnordered<Task> = FuturesUnordered::new();
    loop {
        tokio::select! {
            biased;
            Some(()) = connections.next(), if !connections.is_empty() => {}
            stream = listener.accept() => {
                let Ok((stream, _)) = stream else { return };
                connections.push(Box::pin(answer(Connection::new(stream), state.clone(), clock.clone())));
            }
        }
    }
}

/// Answers one connection's requests until it closes.
async fn answer<S>(mut connection: Connection<S>, state: Arc<Mutex<State>>, clock: SimClock)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Ok(Some(words)) = connection.read_request().await {
        let reply = {
            let mut state = state.lock().expect("sentinel state poisoned");
            reply_to(&mut state, &words, clock.monotonic_ms())
        };
        if connection
            .write_reply(&reply.into(), Protocol::Resp2)
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The reply to one request: `PING`, `SENTINEL get-master-addr-by-name NAME`,
/// `SENTINEL is-master-down-by-addr IP PORT EPOCH RUNID` and `SENTINEL hello` (this
/// simulation's direct stand-in for a hello published on `__sentinel__:hello`).
fn reply_to(state: &mut State, words: &[Vec<u8>], now_ms: u64) -> Frame {
    let word = |i: usize| {
        words
            .get(i)
            .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
    };
    // An IP address at word `at`, its port at the next.
    let addr = |at: usize| -> Option<SocketAddr> {
        let ip = String::from_utf8_lossy(words.get(at)?).parse().ok()?;
        let port = String::from_utf8_lossy(words.get(at + 1)?).parse().ok()?;
        Some(SocketAddr::new(ip, port))
    };
    let number = |i: usize| {
        words
            .get(i)
            .and_then(|w| String::from_utf8_lossy(w).parse::<u64>().ok())
    };
    match (word(0).as_deref(), word(1).as_deref()) {
        (Some("ping"), _) => Frame::SimpleString(b"PONG".to_vec()),
        (Some("sentinel"), Some("get-master-addr-by-name")) if words.len() == 3 => {
            match state.master_addr(&words[2]) {
                Some(addr) => Frame::Array(vec![
                    Frame::BulkString(addr.ip().to_string().into_bytes()),
                    Frame::BulkString(addr.port().to_string().into_bytes()),
                ]),
                None => Frame::Null,
            }
        }
        (Some("sentinel"), Some("is-master-down-by-addr")) if words.len() == 6 => {
            match (addr(2), number(4)) {
                (Some(addr), Some(epoch)) => {
                    let runid = String::from_utf8_lossy(&words[5]).into_owned();
                    state.is_master_down(addr, epoch, &runid, now_ms)
                }
                _ => Frame::Error("ERR invalid address or epoch".into()),
            }
        }
        (Some("sentinel"), Some("hello")) if words.len() == 8 => match (number(3), addr(5), number(7)) {
            (Some(epoch), Some(master), Some(config_epoch)) => {
                state.hello(epoch, &words[4], master, config_epoch, now_ms);
                Frame::SimpleString(b"OK".to_vec())
            }
            _ => Frame::Error("ERR invalid hello".into()),
        },
        _ => Frame::Error(format!(
            "ERR unknown command '{}' for this Sentinel",
            word(0).unwrap_or_default()
        )),
    }
}
