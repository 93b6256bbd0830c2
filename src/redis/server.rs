//! The node's server loop: accepts connections, serves them, runs the expiry cron.
//!
//! Everything runs in one task (connections are polled together), as Redis runs on one
//! thread: commands never interleave, and no task spawning is needed, so the same loop
//! serves madsim TCP and real TCP.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Frame;
use super::cmd::{Command, ParseError};
use super::connection::{Connection, ConnectionError};
use super::node::Node;
use crate::platform::{Clock, Listener};

/// How often active expiry runs: Redis's default `hz 10`.
pub const EXPIRY_CYCLE_MS: u64 = 100;

/// Serves the listener forever (until its node is killed, or accept fails).
pub async fn serve<L: Listener, C: Clock>(listener: L, clock: C) -> std::io::Result<()> {
    let node = Rc::new(RefCell::new(
        Node::new().map_err(|e| std::io::Error::other(e.to_string()))?,
    ));
    let mut connections: FuturesUnordered<Pin<Box<dyn Future<Output = ()>>>> = FuturesUnordered::new();
    let mut next_cycle_ms = clock.monotonic_ms() + EXPIRY_CYCLE_MS;
    loop {
        tokio::select! {
            biased;
            Some(()) = connections.next(), if !connections.is_empty() => {}
            stream = listener.accept() => {
                connections.push(Box::pin(serve_connection(stream?, node.clone(), clock.clone())));
            }
            () = clock.sleep_until_monotonic(next_cycle_ms) => {
                node.borrow_mut().db.expire_due(clock.wall_ms());
                next_cycle_ms += EXPIRY_CYCLE_MS;
            }
        }
    }
}

/// Answers one client's requests in order until it hangs up or speaks nonsense.
async fn serve_connection<S, C>(stream: S, node: Rc<RefCell<Node>>, clock: C)
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Clock,
{
    let mut connection = Connection::new(stream);
    loop {
        let request = match connection.read_frame().await {
            Ok(Some(frame)) => frame,
            Ok(None) | Err(ConnectionError::Io(_) | ConnectionError::Closed) => return,
            Err(ConnectionError::Protocol(reason)) => {
                let _ = connection
                    .write_frame(&Frame::Error(format!("ERR Protocol error: {reason}")))
                    .await;
                return;
            }
        };
        let reply = match Command::from_frame(request) {
            Ok(Command::Wait(wait)) => {
                // No replicas yet: asking for none answers at once, asking for more blocks
                // for the timeout (0 = forever) and then reports none, as Redis does.
                if wait.replicas > 0 {
                    match wait.timeout_ms {
                        0 => std::future::pending::<()>().await,
                        ms => clock.sleep_ms(ms as u64).await,
                    }
                }
                Frame::Integer(0)
            }
            Ok(command) => command.apply(&mut node.borrow_mut(), clock.wall_ms()),
            Err(ParseError::Reply(error)) => error.into(),
            Err(ParseError::Protocol(reason)) => {
                let _ = connection
                    .write_frame(&Frame::Error(format!("ERR Protocol error: {reason}")))
                    .await;
                return;
            }
        };
        if connection.write_frame(&reply).await.is_err() {
            return;
        }
    }
}
