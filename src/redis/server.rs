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
use super::cmd::{Command, Session};
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
    let mut next_client_id = 1;
    loop {
        tokio::select! {
            biased;
            Some(()) = connections.next(), if !connections.is_empty() => {}
            stream = listener.accept() => {
                let session = Session { id: next_client_id, ..Session::default() };
                next_client_id += 1;
                connections.push(Box::pin(serve_connection(stream?, session, node.clone(), clock.clone())));
            }
            () = clock.sleep_until_monotonic(next_cycle_ms) => {
                node.borrow_mut().db.expire_due(clock.wall_ms());
                next_cycle_ms += EXPIRY_CYCLE_MS;
            }
        }
    }
}

/// Answers one client's requests in order until it hangs up, quits or speaks nonsense.
async fn serve_connection<S, C>(stream: S, mut session: Session, node: Rc<RefCell<Node>>, clock: C)
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Clock,
{
    let mut connection = Connection::new(stream);
    loop {
        let words = match connection.read_request().await {
            Ok(Some(words)) if words.is_empty() => continue,
            Ok(Some(words)) => words,
            Ok(None) | Err(ConnectionError::Io(_) | ConnectionError::Closed) => return,
            Err(ConnectionError::Protocol(reason)) => {
                let error = Frame::Error(format!("ERR Protocol error: {reason}"));
                let _ = connection.write_reply(&error.into(), session.protocol).await;
                return;
            }
        };
        let command = Command::from_words(words);
        let quit = matches!(command, Ok(Command::Quit(_)));
        let reply = match command {
            Ok(Command::Wait(wait)) => {
                // No replicas yet: asking for none answers at once, asking for more blocks
                // for the timeout (0 = forever) and then reports none, as Redis does.
                if wait.replicas > 0 {
                    match wait.timeout_ms {
                        0 => std::future::pending::<()>().await,
                        ms => clock.sleep_ms(ms as u64).await,
                    }
                }
                Frame::Integer(0).into()
            }
            Ok(command) => command.apply(&mut node.borrow_mut(), &mut session, clock.wall_ms()),
            Err(error) => Frame::from(error).into(),
        };
        if connection.write_reply(&reply, session.protocol).await.is_err() || quit {
            return;
        }
    }
}
