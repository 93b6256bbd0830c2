//! Replication commands: REPLICAOF (and its old name SLAVEOF), ROLE, INFO, and the two a
//! replica sends its master, PSYNC and REPLCONF (the server runs those: they turn a
//! connection into a replication link).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::error::ReplyError;
use super::session::Session;
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::node::Node;
use crate::redis::request::build as request;

/// The replication commands.
pub(super) const fn commands<C: From<Replicaof> + From<Role> + From<Info> + From<Psync> + From<Replconf>>()
-> [Spec<C>; 6] {
    [
        Spec {
            name: "replicaof",
            arity: 3,
            flags: Flags::NOSCRIPT,
            summary: "follow a master, or NO ONE",
            handler: Handler::Parse(|args| Ok(C::from(Replicaof::parse(args)?))),
        },
        Spec {
            name: "slaveof",
            arity: 3,
            flags: Flags::NOSCRIPT,
            summary: "the old name of REPLICAOF",
            handler: Handler::Parse(|args| Ok(C::from(Replicaof::parse(args)?))),
        },
        Spec {
            name: "role",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "master or replica, offsets, links",
            handler: Handler::Parse(|_| Ok(C::from(Role))),
        },
        Spec {
            name: "info",
            arity: -1,
            flags: Flags::READ,
            summary: "the replication section",
            handler: Handler::Parse(|args| Ok(C::from(Info::parse(args)?))),
        },
        Spec {
            name: "psync",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "a replica asks for the stream (full resync)",
            handler: Handler::Parse(|_| Ok(C::from(Psync))),
        },
        Spec {
            name: "replconf",
            arity: -1,
            flags: Flags::NOSCRIPT,
            summary: "a replica's settings and acknowledgements",
            handler: Handler::Parse(|args| Ok(C::from(Replconf::parse(args)?))),
        },
    ]
}

/// `REPLICAOF host port | NO ONE`: follow a master, or become one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replicaof {
    Master(SocketAddr),
    NoOne,
}

impl Replicaof {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let host = args.next_bytes()?;
        let port = args.next_bytes()?;
        if host.eq_ignore_ascii_case(b"NO") && port.eq_ignore_ascii_case(b"ONE") {
            return Ok(Replicaof::NoOne);
        }
        let port = parse_int(&port)?;
        let port = u16::try_from(port).map_err(|_| ReplyError("ERR Invalid master port".into()))?;
        let ip = match host.as_slice() {
            b"localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
            other => String::from_utf8_lossy(other).parse().map_err(|_| {
                ReplyError("ERR locksim's fake Redis needs an IP address for the master".into())
            })?,
        };
        Ok(Replicaof::Master(SocketAddr::new(ip, port)))
    }

    /// Changes the node's role; the server starts the link to a new master.
    pub(crate) fn apply(self, node: &mut Node) -> Frame {
        let replication = &mut node.replication;
        match self {
            Replicaof::NoOne => replication.promote(&mut node.db),
            Replicaof::Master(master) => {
                if replication.role
                    == (crate::redis::replication::Role::Replica {
                        master,
                        link_up: true,
                    })
                {
                    return Frame::SimpleString(b"OK Already connected to specified master".to_vec());
                }
                replication.follow(master, &mut node.db);
            }
        }
        ok()
    }
}

impl Replicaof {
    /// The request frame a client (the failover controller) sends.
    pub fn into_frame(self) -> Frame {
        match self {
            Replicaof::NoOne => request([b"REPLICAOF".to_vec(), b"NO".to_vec(), b"ONE".to_vec()]),
            Replicaof::Master(addr) => request([
                b"REPLICAOF".to_vec(),
                addr.ip().to_string().into_bytes(),
                addr.port().to_string().into_bytes(),
            ]),
        }
    }
}

/// `ROLE`: master with its offset and replicas, or replica with its master and link state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role;

impl Role {
    /// The request frame a client (the failover controller) sends.
    pub fn into_frame(self) -> Frame {
        request([b"ROLE".to_vec()])
    }
}

/// `INFO [section ...]`: the replication section (the only one this node has).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    pub sections: Vec<Vec<u8>>,
}

impl Info {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Info {
            sections: args.rest(),
        })
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request(std::iter::once(b"INFO".to_vec()).chain(self.sections))
    }

    pub(crate) fn apply(self, node: &Node) -> Reply {
        let wanted = |name: &[u8]| {
            self.sections.is_empty()
                || self.sections.iter().any(|s| {
                    s.eq_ignore_ascii_case(name)
                        || s.eq_ignore_ascii_case(b"all")
                        || s.eq_ignore_ascii_case(b"everything")
                        || s.eq_ignore_ascii_case(b"default")
                })
        };
        let text = if wanted(b"replication") {
            node.replication.info()
        } else {
            String::new()
        };
        Reply::Verbatim(text.into_bytes())
    }
}

/// `PSYNC replid offset`: a replica asks for the stream (always a full resync here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Psync;

/// `REPLCONF option value ...`: a replica's settings and acknowledgements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replconf {
    pub words: Vec<Vec<u8>>,
}

impl Replconf {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Replconf { words: args.rest() })
    }

    /// Records what a replica announces: `ip-address IP`, `listening-port N`, and whether
    /// it is a real redis-server (`capa …`).
    pub fn apply(self, session: &mut Session) {
        if self
            .words
            .first()
            .is_some_and(|w| w.eq_ignore_ascii_case(b"capa"))
        {
            session.replica_reads_rdb = true;
        }
        if let [option, value] = self.words.as_slice() {
            let value = String::from_utf8_lossy(value).into_owned();
            if option.eq_ignore_ascii_case(b"ip-address") {
                session.replica_ip = Some(value);
            } else if option.eq_ignore_ascii_case(b"listening-port") {
                session.replica_port = value.parse().ok();
            }
        }
    }
}
