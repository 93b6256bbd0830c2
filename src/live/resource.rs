//! The resource a live run's workers protect with their lock: one integer register behind
//! a small RESP service, so that a worker in any language reaches it with any Redis client.
//!
//! Commands (the key names the register; every key names the same one):
//! - `GET key [FENCE token]`: the value (`"0"` before any write);
//! - `SET key value [FENCE token]`: stores an integer;
//! - with `FENCE`, the access is refused (`-STALE …`) when `token` is below the highest
//!   token seen, reads included, as the simulator's fenced register refuses it;
//! - `LOCKSIM.ACQUIRING client`: the worker starts trying to take the lock (it wants it
//!   from now until it reports holding it, through any failed acquires);
//! - `LOCKSIM.HELD client token [fence]`: the worker believes it now holds the lock;
//! - `LOCKSIM.REFUSED client [reason]`: its acquire gave up because Redis said another
//!   client holds the lock (a worker whose acquire retries may report each refused
//!   attempt; one that blocks without ever saying so can be judged for liveness only);
//! - `LOCKSIM.FAILED client [reason]`: its acquire gave up for another reason (a timeout, a
//!   connection error): no answer, which says nothing about who holds the lock;
//! - `LOCKSIM.RELEASED client`: it no longer holds the lock (it is about to release);
//! - `HELLO`, `PING`, `CLIENT …`, `SELECT`, `QUIT`, which clients send on their own.
//!
//! Each client has a listener of its own, so the service knows who reads and writes
//! without the worker saying so; the held and released reports name their client, and a
//! report naming another client than the connection's is refused. Every access and report
//! goes into the run's history, stamped with true time as the service sees it.

use std::io;

use tokio::net::{TcpListener, TcpStream};

use super::recorder::LiveRecorder;
use crate::history::EventKind;
use crate::redis::Frame;
use crate::redis::connection::{Connection, ConnectionError, Protocol, Reply};
use crate::redis::request::string_to_i64;
use crate::world::workload::{Register, Stale};

/// The register and where its accesses are recorded; clones share both.
#[derive(Clone)]
pub struct Resource {
    register: Register,
    recorder: LiveRecorder,
    /// The validity a held report is recorded with: the lock's TTL (a worker's own
    /// estimate is its library's business).
    ttl_ms: u64,
}

impl Resource {
    pub fn new(recorder: LiveRecorder, ttl_ms: u64) -> Self {
        Resource {
            register: Register::default(),
            recorder,
            ttl_ms,
        }
    }

    /// Serves `client`'s listener until the task is dropped, one task per connection.
    pub async fn serve(self, listener: TcpListener, client: String) -> io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let (resource, client) = (self.clone(), client.clone());
            tokio::spawn(async move { resource.serve_connection(stream, &client).await });
        }
    }

    async fn serve_connection(&self, stream: TcpStream, client: &str) {
        let mut connection = Connection::new(stream);
        loop {
            let words = match connection.read_request().await {
                Ok(Some(words)) if words.is_empty() => continue,
                Ok(Some(words)) => words,
                Ok(None) | Err(ConnectionError::Closed | ConnectionError::Io(_)) => return,
                Err(ConnectionError::Protocol(reason)) => {
                    let error = Frame::Error(format!("ERR Protocol error: {reason}"));
                    let _ = connection.write_reply(&error.into(), Protocol::Resp2).await;
                    return;
                }
            };
            let quit = words[0].eq_ignore_ascii_case(b"QUIT");
            let (reply, protocol) = match words[0].eq_ignore_ascii_case(b"HELLO") {
                true => hello(&words[1..]),
                false => (self.execute(client, &words).into(), Protocol::Resp2),
            };
            if connection.write_reply(&reply, protocol).await.is_err() || quit {
                return;
            }
        }
    }

    /// Runs one request of `client`'s and returns the reply.
    pub fn execute(&self, client: &str, words: &[Vec<u8>]) -> Frame {
        let name = String::from_utf8_lossy(&words[0]).to_ascii_uppercase();
        let args = &words[1..];
        let result = match (name.as_str(), args.len()) {
            ("PING", 0) => Ok(Frame::SimpleString("PONG".into())),
            ("PING", 1) => Ok(Frame::BulkString(args[0].clone())),
            ("CLIENT" | "SELECT", _) | ("QUIT", 0) => Ok(ok()),
            ("GET", 1 | 3) => self.get(client, &args[1..]),
            ("SET", 2 | 4) => self.set(client, &args[1], &args[2..]),
            ("LOCKSIM.ACQUIRING", 1) => self.report(client, &args[0], EventKind::AcquireStarted),
            ("LOCKSIM.HELD", 2 | 3) => self.held(client, args),
            ("LOCKSIM.REFUSED" | "LOCKSIM.FAILED", 1 | 2) => {
                let contended = name == "LOCKSIM.REFUSED";
                let reason = match (args.get(1), contended) {
                    (Some(reason), _) => String::from_utf8_lossy(reason).into_owned(),
                    (None, true) => "Redis said another client holds the lock".into(),
                    (None, false) => "no answer from Redis".into(),
                };
                self.report(client, &args[0], EventKind::AcquireFailed { reason, contended })
            }
            ("LOCKSIM.RELEASED", 1) => self.released(client, &args[0]),
            (
                "PING" | "GET" | "SET" | "LOCKSIM.ACQUIRING" | "LOCKSIM.HELD" | "LOCKSIM.REFUSED"
                | "LOCKSIM.FAILED" | "LOCKSIM.RELEASED" | "QUIT",
                _,
            ) => Err(format!(
                "ERR wrong number of arguments for '{}' command",
                name.to_ascii_lowercase()
            )),
            _ => Err(format!(
                "ERR unknown command '{}': the locksim resource knows GET, SET, \
                 LOCKSIM.ACQUIRING, LOCKSIM.HELD, LOCKSIM.REFUSED, LOCKSIM.FAILED and \
                 LOCKSIM.RELEASED",
                String::from_utf8_lossy(&words[0])
            )),
        };
        result.unwrap_or_else(Frame::Error)
    }

    fn get(&self, client: &str, fence: &[Vec<u8>]) -> Result<Frame, String> {
        let fence = fence_option(fence)?;
        match self.register.read(fence) {
            Ok(value) => {
                self.recorder
                    .record(client, EventKind::ResourceRead { value, fence });
                Ok(Frame::BulkString(value.to_string().into_bytes()))
            }
            Err(stale) => Err(self.rejected(client, stale)),
        }
    }

    fn set(&self, client: &str, value: &[u8], fence: &[Vec<u8>]) -> Result<Frame, String> {
        let value = string_to_i64(value).ok_or("ERR the resource holds an integer: value is not one")?;
        let fence = fence_option(fence)?;
        match self.register.write(value, fence) {
            Ok(()) => {
                self.recorder
                    .record(client, EventKind::ResourceWrite { value, fence });
                Ok(ok())
            }
            Err(stale) => Err(self.rejected(client, stale)),
        }
    }

    fn rejected(&self, client: &str, Stale { fence, highest }: Stale) -> String {
        self.recorder
            .record(client, EventKind::ResourceRejected { fence, highest });
        format!("STALE fencing token {fence} is below the highest seen, {highest}")
    }

    fn held(&self, client: &str, args: &[Vec<u8>]) -> Result<Frame, String> {
        same_client(client, &args[0])?;
        let fence = args.get(2).map(|token| token_number(token)).transpose()?;
        let token = String::from_utf8_lossy(&args[1]).into_owned();
        self.recorder.record(
            client,
            EventKind::Acquired {
                token,
                fence,
                validity_ms: self.ttl_ms,
            },
        );
        Ok(ok())
    }

    /// Records `kind` for `client`, whose report names it.
    fn report(&self, client: &str, named: &[u8], kind: EventKind) -> Result<Frame, String> {
        same_client(client, named)?;
        self.recorder.record(client, kind);
        Ok(ok())
    }

    fn released(&self, client: &str, named: &[u8]) -> Result<Frame, String> {
        same_client(client, named)?;
        // A release report without a held one (a worker that released after a failed
        // acquire, say) is no end of a holding: nothing to record.
        if let Some(token) = self.recorder.held_token(client) {
            self.recorder.record(client, EventKind::ReleaseSent { token });
        }
        Ok(ok())
    }
}

/// `HELLO [protover …]`, which clients such as redis-py 8 send first: the handshake map,
/// in the protocol asked for. The service's replies are alike in RESP2 and RESP3 (it never
/// sends a null or a map), so nothing else changes.
fn hello(args: &[Vec<u8>]) -> (Reply, Protocol) {
    let (protocol, version) = match args.first().map(Vec::as_slice) {
        None | Some(b"2") => (Protocol::Resp2, 2),
        Some(b"3") => (Protocol::Resp3, 3),
        Some(_) => {
            let error = Frame::Error("NOPROTO unsupported protocol version".into());
            return (error.into(), Protocol::Resp2);
        }
    };
    let text = |s: &str| Frame::BulkString(s.as_bytes().to_vec());
    let map = vec![
        (text("server"), text("locksim-resource")),
        (text("version"), text(crate::redis::REDIS_VERSION)),
        (text("proto"), Frame::Integer(version)),
        (text("mode"), text("standalone")),
        (text("role"), text("master")),
        (text("modules"), Frame::Array(Vec::new())),
    ];
    (Reply::Map(map), protocol)
}

fn ok() -> Frame {
    Frame::SimpleString("OK".into())
}

/// The token of a trailing `FENCE token`, if any.
fn fence_option(words: &[Vec<u8>]) -> Result<Option<u64>, String> {
    match words {
        [] => Ok(None),
        [word, token] if word.eq_ignore_ascii_case(b"FENCE") => token_number(token).map(Some),
        _ => Err("ERR syntax error: the only option is FENCE <token>".into()),
    }
}

fn token_number(token: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(token)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| "ERR a fencing token is a non-negative integer".into())
}

/// Refuses a report that names another client than the connection's.
fn same_client(client: &str, named: &[u8]) -> Result<(), String> {
    if named == client.as_bytes() {
        return Ok(());
    }
    Err(format!(
        "ERR this connection is {client}'s (LOCKSIM_RESOURCE), but the report names {}",
        String::from_utf8_lossy(named)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::request::build;

    /// A resource on one loopback listener for `client-1`, and a RESP connection to it.
    async fn connected() -> (LiveRecorder, Connection<TcpStream>) {
        let recorder = LiveRecorder::start();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let resource = Resource::new(recorder.clone(), 2000);
        tokio::spawn(resource.serve(listener, "client-1".into()));
        let stream = TcpStream::connect(addr).await.unwrap();
        (recorder, Connection::new(stream))
    }

    async fn ask(connection: &mut Connection<TcpStream>, words: &[&str]) -> Frame {
        let request = build(words.iter().map(|w| w.as_bytes().to_vec()));
        connection.write_frame(&request).await.unwrap();
        connection.read_frame().await.unwrap().unwrap()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_worker_session_over_tcp_becomes_the_history_the_checkers_read() {
        runtime().block_on(async {
            let (recorder, mut conn) = connected().await;
            assert_eq!(
                ask(&mut conn, &["PING"]).await,
                Frame::SimpleString("PONG".into())
            );
            // redis-py 8 opens with HELLO 3 and checks the `proto` it gets back.
            let (greeting, protocol) = hello(&[b"3".to_vec()]);
            assert_eq!(protocol, Protocol::Resp3);
            assert!(greeting.encode(protocol).starts_with(b"%6\r\n"));
            // A first attempt refused, a second that timed out, a third granted.
            for report in [
                &["LOCKSIM.ACQUIRING", "client-1"][..],
                &["LOCKSIM.REFUSED", "client-1"],
                &["LOCKSIM.ACQUIRING", "client-1"],
                &["LOCKSIM.FAILED", "client-1", "timed out"],
                &["LOCKSIM.ACQUIRING", "client-1"],
                &["LOCKSIM.HELD", "client-1", "tok"],
            ] {
                assert_eq!(ask(&mut conn, report).await, ok(), "{report:?}");
            }
            assert_eq!(
                ask(&mut conn, &["GET", "counter"]).await,
                Frame::BulkString(b"0".to_vec())
            );
            assert_eq!(ask(&mut conn, &["SET", "counter", "1"]).await, ok());
            assert_eq!(ask(&mut conn, &["LOCKSIM.RELEASED", "client-1"]).await, ok());
            let kinds: Vec<EventKind> = recorder.finish().events.into_iter().map(|e| e.kind).collect();
            assert_eq!(
                kinds,
                vec![
                    EventKind::AcquireStarted,
                    EventKind::AcquireFailed {
                        reason: "Redis said another client holds the lock".into(),
                        contended: true
                    },
                    EventKind::AcquireStarted,
                    EventKind::AcquireFailed {
                        reason: "timed out".into(),
                        contended: false
                    },
                    EventKind::AcquireStarted,
                    EventKind::Acquired {
                        token: "tok".into(),
                        fence: None,
                        validity_ms: 2000
                    },
                    EventKind::ResourceRead {
                        value: 0,
                        fence: None
                    },
                    EventKind::ResourceWrite {
                        value: 1,
                        fence: None
                    },
                    EventKind::ReleaseSent { token: "tok".into() },
                ]
            );
        });
    }

    #[test]
    fn a_fenced_access_below_the_highest_token_is_refused_and_recorded() {
        runtime().block_on(async {
            let (recorder, mut conn) = connected().await;
            assert_eq!(ask(&mut conn, &["SET", "counter", "5", "FENCE", "7"]).await, ok());
            let refused = ask(&mut conn, &["SET", "counter", "6", "FENCE", "6"]).await;
            assert!(
                matches!(&refused, Frame::Error(e) if e.starts_with("STALE")),
                "{refused:?}"
            );
            let read = ask(&mut conn, &["GET", "counter", "FENCE", "3"]).await;
            assert!(matches!(read, Frame::Error(_)));
            assert_eq!(
                ask(&mut conn, &["GET", "counter", "FENCE", "7"]).await,
                Frame::BulkString(b"5".to_vec())
            );
            let kinds: Vec<EventKind> = recorder.finish().events.into_iter().map(|e| e.kind).collect();
            assert_eq!(kinds[1], EventKind::ResourceRejected { fence: 6, highest: 7 });
            assert_eq!(kinds.len(), 4);
        });
    }

    #[test]
    fn bad_requests_get_error_replies_and_leave_no_event() {
        runtime().block_on(async {
            let (recorder, mut conn) = connected().await;
            for words in [
                &["SET", "counter", "x"][..],
                &["SET", "counter", "1", "NX", "1"],
                &["GET", "counter", "FENCE", "-1"],
                &["LOCKSIM.HELD", "client-2", "tok"],
                &["LOCKSIM.ACQUIRING", "client-2"],
                &["LOCKSIM.REFUSED"],
                &["LOCKSIM.FAILED", "client-1", "timed out", "twice"],
                &["HSET", "h", "f", "v"],
                &["GET"],
            ] {
                let reply = ask(&mut conn, words).await;
                assert!(matches!(reply, Frame::Error(_)), "{words:?} got {reply:?}");
            }
            assert!(recorder.finish().events.is_empty());
        });
    }
}
