//! CLIENT, and the node's register of its connections that CLIENT LIST and CLIENT KILL read:
//! client connections (normal, or pubsub while subscribed), the links of its replicas, and
//! its own link to its master when it is a replica.
//!
//! A connection's task owns its [`Session`]; the register holds what others must see of it
//! ([`Connected`]), written as each request arrives and after it ran. A kill marks the
//! connection and wakes every task: the killed one closes (after the reply, when it killed
//! itself), a replica's link closes on the master and the replica dials again, a master
//! link closes on the replica and it dials again a second later, as with Redis.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::rc::Rc;

use tokio::sync::Notify;

use super::error::ReplyError;
use super::session_state::{Session, set_name};
use super::spec::{Args, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::{Protocol, Reply};
use crate::redis::subscriptions::PubSub;

/// `CLIENT SETNAME name | GETNAME | ID | INFO | LIST [TYPE type | ID id ...] | KILL addr |
/// KILL filter value ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Client {
    SetName(Vec<u8>),
    GetName,
    Id,
    Info,
    List(Selection),
    Kill(Kill),
}

/// Which connections CLIENT LIST shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    All,
    Kind(Kind),
    Ids(Vec<u64>),
}

/// A connection's type, as CLIENT LIST `TYPE` and CLIENT KILL `TYPE` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Normal,
    /// A client connection with a subscription (RESP2 or RESP3).
    Pubsub,
    /// A replica's link to this node.
    Replica,
    /// This replica's link to its master.
    Master,
}

impl Kind {
    /// `normal`, `pubsub`, `replica` (or `slave`), `master`, in any case.
    fn parse(word: &[u8]) -> Result<Kind, ReplyError> {
        match word.to_ascii_lowercase().as_slice() {
            b"normal" => Ok(Kind::Normal),
            b"pubsub" => Ok(Kind::Pubsub),
            b"replica" | b"slave" => Ok(Kind::Replica),
            b"master" => Ok(Kind::Master),
            _ => Err(ReplyError(format!(
                "ERR Unknown client type '{}'",
                String::from_utf8_lossy(word)
            ))),
        }
    }
}

/// What CLIENT KILL closes: the connection at an address (the old form, one argument), or
/// every connection that passes all the filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kill {
    /// The old form's address: exactly one connection, or `ERR No such client`.
    pub only_addr: Option<Vec<u8>>,
    pub id: Option<u64>,
    pub kind: Option<Kind>,
    pub addr: Option<Vec<u8>>,
    pub laddr: Option<Vec<u8>>,
    /// `SKIPME no`: the caller may be killed too (after its reply).
    pub include_me: bool,
}

impl Kill {
    fn parse(rest: &[Vec<u8>]) -> Result<Kill, ReplyError> {
        if let [addr] = rest {
            return Ok(Kill {
                only_addr: Some(addr.clone()),
                ..Kill::default()
            });
        }
        if rest.len() % 2 == 1 {
            return Err(ReplyError::syntax());
        }
        let mut kill = Kill::default();
        for pair in rest.chunks(2) {
            let (filter, value) = (&pair[0], &pair[1]);
            match filter.to_ascii_uppercase().as_slice() {
                b"ID" => {
                    let id = parse_int(value)
                        .ok()
                        .filter(|id| *id > 0)
                        .ok_or_else(|| ReplyError("ERR client-id should be greater than 0".into()))?;
                    kill.id = Some(id as u64);
                }
                b"TYPE" => kill.kind = Some(Kind::parse(value)?),
                b"ADDR" => kill.addr = Some(value.clone()),
                b"LADDR" => kill.laddr = Some(value.clone()),
                // Only the default user exists.
                b"USER" if value.as_slice() == b"default" => {}
                b"USER" => {
                    return Err(ReplyError(format!(
                        "ERR No such user '{}'",
                        String::from_utf8_lossy(value)
                    )));
                }
                b"SKIPME" if value.eq_ignore_ascii_case(b"yes") => kill.include_me = false,
                b"SKIPME" if value.eq_ignore_ascii_case(b"no") => kill.include_me = true,
                _ => return Err(ReplyError::syntax()),
            }
        }
        Ok(kill)
    }

    /// Whether the filters take the connection `id` (of `kind`) that `connected` describes.
    fn takes(&self, id: u64, kind: Kind, connected: &Connected) -> bool {
        let text = |addr: &SocketAddr| addr.to_string().into_bytes();
        self.id.is_none_or(|wanted| wanted == id)
            && self.kind.is_none_or(|wanted| wanted == kind)
            && self
                .addr
                .as_ref()
                .is_none_or(|wanted| *wanted == text(&connected.addr))
            && self
                .laddr
                .as_ref()
                .is_none_or(|wanted| *wanted == text(&connected.laddr))
    }
}

impl Client {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let subcommand = args.next_bytes()?;
        let mut rest = args.rest();
        let wrong_arity = |name: &str| ReplyError::wrong_arity(&format!("client|{name}"));
        match subcommand.to_ascii_uppercase().as_slice() {
            b"SETNAME" if rest.len() == 1 => Ok(Client::SetName(rest.pop().unwrap_or_default())),
            b"SETNAME" => Err(wrong_arity("setname")),
            b"GETNAME" if rest.is_empty() => Ok(Client::GetName),
            b"GETNAME" => Err(wrong_arity("getname")),
            b"ID" if rest.is_empty() => Ok(Client::Id),
            b"ID" => Err(wrong_arity("id")),
            b"INFO" if rest.is_empty() => Ok(Client::Info),
            b"INFO" => Err(wrong_arity("info")),
            b"LIST" => Ok(Client::List(match rest.as_slice() {
                [] => Selection::All,
                [filter, kind] if filter.eq_ignore_ascii_case(b"TYPE") => Selection::Kind(Kind::parse(kind)?),
                [filter, ids @ ..] if filter.eq_ignore_ascii_case(b"ID") && !ids.is_empty() => {
                    // Any integer: one that is no connection's id shows nothing.
                    let id = |word: &Vec<u8>| {
                        parse_int(word)
                            .map(|id| u64::try_from(id).unwrap_or(0))
                            .map_err(|_| ReplyError("ERR Invalid client ID".into()))
                    };
                    Selection::Ids(ids.iter().map(id).collect::<Result<_, _>>()?)
                }
                _ => return Err(ReplyError::syntax()),
            })),
            b"KILL" if rest.is_empty() => Err(wrong_arity("kill")),
            b"KILL" => Ok(Client::Kill(Kill::parse(&rest)?)),
            _ => Err(ReplyError(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&subcommand)
            ))),
        }
    }

    /// Runs for the connection of `session` at wall time `now_ms`, on the node's register of
    /// connections and its subscriptions (which make a connection a pubsub one).
    pub(crate) fn apply(
        self,
        session: &mut Session,
        clients: &mut Clients,
        pubsub: &mut PubSub,
        dirty: &BTreeSet<u64>,
        now_ms: u64,
    ) -> Reply {
        clients.record_session(session);
        match self {
            Client::SetName(name) => match set_name(session, name) {
                Ok(()) => ok().into(),
                Err(error) => Frame::from(error).into(),
            },
            Client::GetName => session.name.clone().map_or(Frame::Null, Frame::BulkString).into(),
            Client::Id => Frame::Integer(session.id as i64).into(),
            Client::Info => Reply::Verbatim(clients.lines((pubsub, dirty), now_ms, |id, _| id == session.id)),
            // One line per id asked for, in their order (twice for an id given twice).
            Client::List(Selection::Ids(ids)) => Reply::Verbatim(
                ids.iter()
                    .flat_map(|wanted| clients.lines((pubsub, dirty), now_ms, |id, _| id == *wanted))
                    .collect(),
            ),
            Client::List(selection) => {
                Reply::Verbatim(
                    clients.lines((pubsub, dirty), now_ms, |_, kind| match &selection {
                        Selection::Kind(wanted) => *wanted == kind,
                        Selection::All | Selection::Ids(_) => true,
                    }),
                )
            }
            Client::Kill(kill) => clients.kill(&kill, session.id, pubsub),
        }
    }
}

/// What the register keeps of a connection.
#[derive(Debug, Clone)]
pub struct Connected {
    /// The other end's address, and this node's.
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    /// A client's connection, a replica's link, or the link to this node's master.
    pub link: Link,
    /// The file descriptor Redis would have given its socket (see [`Clients::open`]).
    pub fd: u32,
    pub opened_ms: u64,
    /// When its last request arrived, and its name (`client|list` for a subcommand).
    pub last_request_ms: u64,
    pub last_command: String,
    /// Its session's name, database, queued transaction and protocol, as of its last request.
    pub name: Option<Vec<u8>>,
    pub db: usize,
    pub queued: Option<usize>,
    pub protocol: Protocol,
}

/// What a registered connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Client,
    Replica,
    Master,
}

impl Connected {
    /// A connection opened at `now_ms` between `addr` and this node's `laddr`.
    pub fn new(addr: SocketAddr, laddr: SocketAddr, link: Link, now_ms: u64) -> Connected {
        Connected {
            addr,
            laddr,
            link,
            fd: FIRST_CONNECTION_FD,
            opened_ms: now_ms,
            last_request_ms: now_ms,
            last_command: "NULL".into(),
            name: None,
            db: 0,
            queued: None,
            protocol: Protocol::Resp2,
        }
    }
}

/// What CLIENT LIST shows of a connection beyond its own record: its subscriptions, and
/// the connections a key they watch changed for ([`super::Watches::dirty`]).
type Seen<'a> = (&'a PubSub, &'a BTreeSet<u64>);

/// The file descriptor of the first connection redis-server 7.0 accepts when it listens on
/// one address (after stdin, stdout, stderr, its epoll instance, its listening socket and
/// its internal pipes), as CLIENT LIST shows it.
const FIRST_CONNECTION_FD: u32 = 7;

/// The node's connections, by id (the order they opened in).
#[derive(Debug, Default)]
pub struct Clients {
    connected: BTreeMap<u64, Connected>,
    /// Connections killed and not yet closed.
    killed: BTreeSet<u64>,
    last_id: u64,
    /// Wakes every connection's task when a kill runs.
    pub wake: Rc<Notify>,
}

impl Clients {
    /// An id for a new connection: ids count up from 1 and are never reused.
    pub fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    /// Registers a connection, on the lowest file descriptor no open connection holds (as
    /// the kernel hands Redis its sockets' descriptors).
    pub fn open(&mut self, id: u64, mut connected: Connected) {
        let taken: BTreeSet<u32> = self.connected.values().map(|c| c.fd).collect();
        connected.fd = (FIRST_CONNECTION_FD..)
            .find(|fd| !taken.contains(fd))
            .unwrap_or(FIRST_CONNECTION_FD);
        self.connected.insert(id, connected);
    }

    pub fn close(&mut self, id: u64) {
        self.connected.remove(&id);
        self.killed.remove(&id);
    }

    /// Whether a kill took the connection `id`: it must close.
    pub fn is_killed(&self, id: u64) -> bool {
        self.killed.contains(&id)
    }

    /// Turns a client's registered connection into a replica's link (after PSYNC).
    pub fn become_replica_link(&mut self, id: u64) {
        if let Some(connected) = self.connected.get_mut(&id) {
            connected.link = Link::Replica;
        }
    }

    /// Notes a request named `name` (see [`Lookup::name`](super::Lookup::name)) of the
    /// connection `id` arriving at `now_ms`.
    pub fn record_request(&mut self, id: u64, name: &str, now_ms: u64) {
        let Some(connected) = self.connected.get_mut(&id) else {
            return;
        };
        connected.last_request_ms = now_ms;
        // Into the string the last request's name used: no allocation per request.
        connected.last_command.clear();
        connected.last_command.push_str(name);
    }

    /// Notes the state of `session` after its last request.
    pub fn record_session(&mut self, session: &Session) {
        if let Some(connected) = self.connected.get_mut(&session.id) {
            connected.name.clone_from(&session.name);
            connected.db = session.db;
            connected.queued = session.transaction.as_ref().map(|t| t.queued.len());
            connected.protocol = session.protocol;
        }
    }

    /// INFO's `connected_clients`: every connection but the replicas' links.
    pub fn connected_clients(&self) -> usize {
        self.connected
            .values()
            .filter(|connected| connected.link != Link::Replica)
            .count()
    }

    fn kind(&self, id: u64, connected: &Connected, pubsub: &PubSub) -> Kind {
        match connected.link {
            Link::Replica => Kind::Replica,
            Link::Master => Kind::Master,
            Link::Client if pubsub.subscriptions(id) > 0 => Kind::Pubsub,
            Link::Client => Kind::Normal,
        }
    }

    /// CLIENT KILL by the connection `caller`: how many it killed, or the old form's `OK`.
    /// A killed connection leaves the register and its subscriptions at once, as Redis
    /// frees it at once; its task closes it when next woken.
    fn kill(&mut self, kill: &Kill, caller: u64, pubsub: &mut PubSub) -> Reply {
        let taken: Vec<u64> = self
            .connected
            .iter()
            .filter(|(id, connected)| match &kill.only_addr {
                Some(addr) => connected.addr.to_string().as_bytes() == addr.as_slice(),
                None => {
                    (kill.include_me || **id != caller)
                        && kill.takes(**id, self.kind(**id, connected, pubsub), connected)
                }
            })
            .map(|(id, _)| *id)
            .collect();
        for id in &taken {
            self.connected.remove(id);
            pubsub.drop_subscriptions(*id);
        }
        self.killed.extend(&taken);
        self.wake.notify_waiters();
        match (&kill.only_addr, taken.len()) {
            (Some(_), 0) => Frame::Error("ERR No such client".into()).into(),
            (Some(_), _) => ok().into(),
            (None, count) => Frame::Integer(count as i64).into(),
        }
    }

    /// CLIENT LIST's text for the connections `shown` takes (by id and kind), at `now_ms`.
    fn lines(&self, seen: Seen, now_ms: u64, shown: impl Fn(u64, Kind) -> bool) -> Vec<u8> {
        let (pubsub, _) = seen;
        let mut text = String::new();
        for (id, connected) in &self.connected {
            let kind = self.kind(*id, connected, pubsub);
            if !shown(*id, kind) {
                continue;
            }
            text.push_str(&line(*id, connected, kind, seen, now_ms));
        }
        text.into_bytes()
    }
}

/// One connection as CLIENT LIST prints it: Redis 7.0's fields in its order, with what the
/// node knows; what it has no counterpart for (buffer and memory sizes) is 0.
fn line(id: u64, connected: &Connected, kind: Kind, (pubsub, dirty): Seen, now_ms: u64) -> String {
    const MS_PER_S: u64 = 1000;
    let (channels, patterns) = pubsub.counts(id);
    let mut flags = String::new();
    match kind {
        Kind::Replica => flags.push('S'),
        Kind::Master => flags.push('M'),
        Kind::Pubsub => flags.push('P'),
        Kind::Normal => {}
    }
    if connected.queued.is_some() {
        flags.push('x');
    }
    if dirty.contains(&id) {
        // A key it watches changed: its EXEC will fail.
        flags.push('d');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let resp = match connected.protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    format!(
        "id={id} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db={} sub={channels} \
         psub={patterns} ssub=0 multi={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 \
         obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={resp}\n",
        connected.addr,
        connected.laddr,
        connected.fd,
        String::from_utf8_lossy(connected.name.as_deref().unwrap_or_default()),
        now_ms.saturating_sub(connected.opened_ms) / MS_PER_S,
        now_ms.saturating_sub(connected.last_request_ms) / MS_PER_S,
        connected.db,
        connected.queued.map_or(-1, |queued| queued as i64),
        connected.last_command,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> Connected {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        Connected::new(addr, addr, Link::Client, 0)
    }

    #[test]
    fn each_connection_gets_the_lowest_file_descriptor_no_open_one_holds() {
        let mut clients = Clients::default();
        for id in 1..=3 {
            clients.open(id, connection());
        }
        let fds = |clients: &Clients| clients.connected.values().map(|c| c.fd).collect::<Vec<_>>();
        assert_eq!(fds(&clients), [7, 8, 9]);
        clients.close(2);
        clients.open(4, connection());
        assert_eq!(
            fds(&clients),
            [7, 9, 8],
            "the closed connection's descriptor is handed out again"
        );
    }
}
