//! Connection-level commands: HELLO, SELECT, CLIENT SETNAME/GETNAME/ID/KILL, QUIT. They read
//! or change the [`Session`] of the connection that sends them (CLIENT KILL, the node's other
//! connections).

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::{Protocol, Reply};
use crate::redis::db::{DATABASES, Db};

/// The connection commands.
pub(super) const fn commands<C: From<Hello> + From<Select> + From<Client> + From<Quit> + From<Reset>>()
-> [Spec<C>; 5] {
    [
        Spec {
            name: "hello",
            arity: -1,
            flags: Flags::NOSCRIPT,
            summary: "RESP2 or RESP3, AUTH default, SETNAME",
            handler: Handler::Parse(|args| Ok(C::from(Hello::parse(args)?))),
        },
        Spec {
            name: "select",
            arity: 2,
            flags: Flags::READ,
            summary: "choose the database, 0 to 15",
            handler: Handler::Parse(|args| Ok(C::from(Select::parse(args)?))),
        },
        Spec {
            name: "client",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "SETNAME, GETNAME, ID",
            handler: Handler::Parse(|args| Ok(C::from(Client::parse(args)?))),
        },
        Spec {
            name: "quit",
            arity: -1,
            flags: Flags::NOSCRIPT,
            summary: "OK, then close the connection",
            handler: Handler::Parse(|_| Ok(C::from(Quit))),
        },
        Spec {
            name: "reset",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "back to a fresh connection's state: RESP2, database 0, no name, no subscriptions",
            handler: Handler::Parse(|_| Ok(C::from(Reset))),
        },
    ]
}

/// What the node keeps per connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    /// The connection's id (CLIENT ID, HELLO), unique on the node.
    pub id: u64,
    /// The RESP version replies are written in.
    pub protocol: Protocol,
    /// The database the connection selected (SELECT).
    pub db: usize,
    /// The name set by CLIENT SETNAME or HELLO SETNAME.
    pub name: Option<Vec<u8>>,
    /// The replication offset after this connection's last command: what WAIT waits for.
    pub write_offset: u64,
    /// The address a replica announced (REPLCONF ip-address, listening-port).
    pub replica_ip: Option<String>,
    pub replica_port: Option<u16>,
    /// The replica announced capabilities (`REPLCONF capa …`), as every real redis-server
    /// does and our own replicas do not: it takes its snapshot as an RDB file.
    pub replica_reads_rdb: bool,
    /// The node's count of `CLIENT KILL TYPE normal`s this connection outlives: it opened
    /// after them, or sent the last one (SKIPME yes). One more closes it.
    pub kills_survived: u64,
    /// The transaction MULTI opened, until EXEC or DISCARD.
    pub transaction: Option<Transaction>,
}

/// A connection's open transaction (MULTI until EXEC or DISCARD).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transaction {
    /// The requests queued, as their words.
    pub queued: Vec<Vec<Vec<u8>>>,
    /// A request was refused while queuing: EXEC discards the transaction.
    pub failed: bool,
}

/// Sets a connection's name as Redis does: empty clears it; spaces, newlines and other
/// bytes outside `!`..`~` are refused.
fn set_name(session: &mut Session, name: Vec<u8>) -> Result<(), ReplyError> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(ReplyError(
            "ERR Client names cannot contain spaces, newlines or special characters.".into(),
        ));
    }
    session.name = (!name.is_empty()).then_some(name);
    Ok(())
}

/// `HELLO [protover [AUTH username password] [SETNAME name]]`: switches the connection to
/// RESP2 or RESP3 and describes the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub protocol: Option<Protocol>,
    /// `(username, password)`.
    pub auth: Option<(Vec<u8>, Vec<u8>)>,
    pub name: Option<Vec<u8>>,
}

impl Hello {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let words = args.rest();
        let mut hello = Hello {
            protocol: None,
            auth: None,
            name: None,
        };
        let Some((version, options)) = words.split_first() else {
            return Ok(hello);
        };
        hello.protocol = match parse_int(version) {
            Err(_) => {
                return Err(ReplyError(
                    "ERR Protocol version is not an integer or out of range".into(),
                ));
            }
            Ok(2) => Some(Protocol::Resp2),
            Ok(3) => Some(Protocol::Resp3),
            Ok(_) => return Err(ReplyError("NOPROTO unsupported protocol version".into())),
        };
        let mut rest = options;
        while let Some((option, more)) = rest.split_first() {
            rest = match (option.to_ascii_uppercase().as_slice(), more) {
                (b"AUTH", [user, password, after @ ..]) => {
                    hello.auth = Some((user.clone(), password.clone()));
                    after
                }
                (b"SETNAME", [name, after @ ..]) => {
                    hello.name = Some(name.clone());
                    after
                }
                _ => {
                    return Err(ReplyError(format!(
                        "ERR Syntax error in HELLO option '{}'",
                        String::from_utf8_lossy(option)
                    )));
                }
            };
        }
        Ok(hello)
    }

    /// Authenticates (only the password-less `default` user exists), names the connection,
    /// switches protocol, then replies with the server map in the new protocol.
    pub(crate) fn apply(self, session: &mut Session, replica: bool) -> Reply {
        if let Some((user, _password)) = &self.auth
            && user.as_slice() != b"default"
        {
            return Frame::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
                .into();
        }
        if let Some(name) = self.name
            && let Err(error) = set_name(session, name)
        {
            return Frame::from(error).into();
        }
        if let Some(protocol) = self.protocol {
            session.protocol = protocol;
        }
        let proto = match session.protocol {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        };
        let text = |s: &str| Frame::BulkString(s.as_bytes().to_vec());
        Reply::Map(vec![
            (text("server"), text("redis")),
            (text("version"), text(crate::redis::REDIS_VERSION)),
            (text("proto"), Frame::Integer(proto)),
            (text("id"), Frame::Integer(session.id as i64)),
            (text("mode"), text("standalone")),
            (text("role"), text(if replica { "replica" } else { "master" })),
            (text("modules"), Frame::Array(vec![])),
        ])
    }
}

/// `SELECT index`: the database the connection's (or a script's) commands work on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    pub index: i64,
}

impl Select {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Select {
            index: args.next_int()?,
        })
    }

    pub(crate) fn apply(self, db: &mut Db) -> Frame {
        match usize::try_from(self.index) {
            Ok(index) if index < DATABASES => {
                db.select(index);
                ok()
            }
            _ => Frame::Error("ERR DB index is out of range".into()),
        }
    }
}

/// `CLIENT SETNAME name | GETNAME | ID | KILL TYPE normal|pubsub`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Client {
    SetName(Vec<u8>),
    GetName,
    Id,
    /// `CLIENT KILL TYPE normal`: closes every other normal connection (what Sentinel sends
    /// with each reconfiguration, so clients reconnect and ask it for the master). `TYPE
    /// pubsub` is accepted and kills nobody: this node has no subscribers.
    KillNormal,
    KillPubsub,
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
            b"KILL" => match rest.as_slice() {
                [filter, kind] | [filter, kind, _, _] if filter.eq_ignore_ascii_case(b"TYPE") => {
                    match kind.to_ascii_lowercase().as_slice() {
                        b"normal" => Ok(Client::KillNormal),
                        b"pubsub" => Ok(Client::KillPubsub),
                        b"master" | b"replica" | b"slave" => Err(ReplyError(
                            "ERR locksim's fake Redis kills only TYPE normal and pubsub clients".into(),
                        )),
                        _ => Err(ReplyError(format!(
                            "ERR Unknown client type '{}'",
                            String::from_utf8_lossy(kind)
                        ))),
                    }
                }
                _ => Err(ReplyError(
                    "ERR locksim's fake Redis kills clients only by TYPE (CLIENT KILL TYPE normal)".into(),
                )),
            },
            _ => Err(ReplyError(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&subcommand)
            ))),
        }
    }

    pub(crate) fn apply(self, session: &mut Session, clients: &mut Clients) -> Frame {
        match self {
            Client::KillNormal => {
                let killed = clients.kill_normal();
                // SKIPME yes, Redis's default: the caller stays.
                session.kills_survived = clients.kills;
                Frame::Integer(killed as i64)
            }
            Client::KillPubsub => Frame::Integer(0),
            Client::SetName(name) => match set_name(session, name) {
                Ok(()) => ok(),
                Err(error) => error.into(),
            },
            Client::GetName => session.name.clone().map_or(Frame::Null, Frame::BulkString),
            Client::Id => Frame::Integer(session.id as i64),
        }
    }
}

/// A node's normal client connections, as CLIENT KILL sees them.
#[derive(Debug, Default)]
pub struct Clients {
    /// Normal connections open now (a replica's link is not one).
    pub open: usize,
    /// How many `CLIENT KILL TYPE normal`s have run: a connection whose
    /// [`Session::kills_survived`] is lower closes.
    pub kills: u64,
    /// Wakes the connections waiting for a request when a kill runs.
    pub killed: std::rc::Rc<tokio::sync::Notify>,
}

impl Clients {
    /// Kills every normal connection but the caller's; how many that is.
    fn kill_normal(&mut self) -> usize {
        self.kills += 1;
        self.killed.notify_waiters();
        self.open.saturating_sub(1)
    }
}

/// `RESET`: the connection returns to the state of a new one (its id stays); the node drops
/// its subscriptions and watched keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reset;

impl Reset {
    /// Resets the session's own state and replies `+RESET`.
    pub(crate) fn apply(session: &mut Session) -> Reply {
        session.protocol = Protocol::Resp2;
        session.db = 0;
        session.name = None;
        session.transaction = None;
        Frame::SimpleString(b"RESET".to_vec()).into()
    }
}

/// `QUIT`: OK, then the server closes the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quit;
