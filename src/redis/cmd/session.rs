//! Connection-level commands: AUTH, HELLO, SELECT, CLIENT SETNAME/GETNAME/ID/KILL, QUIT,
//! RESET. They read or change the [`Session`] of the connection that sends them (CLIENT
//! KILL, the node's other connections). With `requirepass` set, a connection must
//! authenticate (AUTH, HELLO AUTH) before any command but these.

use super::acl_users::Users;
use super::clients::Client;
use super::error::ReplyError;
use super::session_state::{Session, set_name};
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::connection::{Protocol, Reply};
use crate::redis::db::{DATABASES, Db};

/// The connection commands.
pub(super) const fn commands<
    C: From<Auth> + From<Hello> + From<Select> + From<Client> + From<Quit> + From<Reset>,
>() -> [Spec<C>; 6] {
    [
        Spec {
            name: "auth",
            arity: -2,
            flags: Flags::NOSCRIPT,
            summary: "[default] password: the `requirepass` (only the default user exists)",
            handler: Handler::Parse(|args| Ok(C::from(Auth::parse(args)?))),
        },
        Spec {
            name: "hello",
            arity: -1,
            flags: Flags::NOSCRIPT,
            summary: "RESP2 or RESP3, AUTH default password, SETNAME",
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
            summary: "SETNAME, GETNAME, ID, INFO, LIST [TYPE t | ID id ...], KILL addr | filters (src/redis/cmd/clients.rs)",
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

/// The commands Redis flags `no_auth`: a connection may send them before authenticating.
const ALLOWED_BEFORE_AUTH: &[&str] = &["auth", "hello", "quit", "reset"];

/// How Redis refuses any other command before authentication.
pub(super) fn refusal_before_auth(name: &str) -> Option<ReplyError> {
    (!ALLOWED_BEFORE_AUTH.contains(&name)).then(|| ReplyError("NOAUTH Authentication required.".into()))
}

/// Authenticates the connection as `user` (the default user when `None`) with `password`,
/// against the node's `requirepass` (none: the default user takes any password, as Redis's
/// `nopass` user does), or as a user ACL SETUSER made. A failure leaves an authenticated
/// connection authenticated.
fn authenticate(
    session: &mut Session,
    requirepass: &str,
    user: Option<&[u8]>,
    password: &[u8],
    users: &Users,
) -> Result<(), ReplyError> {
    if user.is_none() && requirepass.is_empty() {
        return Err(ReplyError(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?"
                .into(),
        ));
    }
    let default_user = user.is_none_or(|user| user == b"default");
    if default_user && (requirepass.is_empty() || password == requirepass.as_bytes()) {
        session.authenticated = true;
        session.user = None;
        return Ok(());
    }
    if let Some(user) = user.filter(|user| !default_user && users.authenticates(user, password)) {
        session.authenticated = true;
        session.user = Some(user.to_vec());
        return Ok(());
    }
    Err(ReplyError(
        "WRONGPASS invalid username-password pair or user is disabled.".into(),
    ))
}

/// `AUTH [username] password`: authenticates the connection (see [`authenticate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    pub user: Option<Vec<u8>>,
    pub password: Vec<u8>,
}

impl Auth {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        match <[Vec<u8>; 2]>::try_from(args.rest()) {
            Ok([user, password]) => Ok(Auth {
                user: Some(user),
                password,
            }),
            Err(mut words) if words.len() == 1 => Ok(Auth {
                user: None,
                password: words.pop().unwrap_or_default(),
            }),
            Err(_) => Err(ReplyError::syntax()),
        }
    }

    pub(crate) fn apply(self, session: &mut Session, requirepass: &str, users: &Users) -> Frame {
        match authenticate(session, requirepass, self.user.as_deref(), &self.password, users) {
            Ok(()) => ok(),
            Err(error) => error.into(),
        }
    }
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

    /// Authenticates (only the `default` user exists, its password the node's
    /// `requirepass`), names the connection, switches protocol, then replies with the server
    /// map in the new protocol. A connection not yet authenticated must authenticate here.
    pub(crate) fn apply(
        self,
        session: &mut Session,
        replica: bool,
        requirepass: &str,
        users: &Users,
    ) -> Reply {
        if let Some((user, password)) = &self.auth {
            if let Err(error) = authenticate(session, requirepass, Some(user), password, users) {
                return Frame::from(error).into();
            }
        } else if !session.authenticated && !requirepass.is_empty() {
            return Frame::Error(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
                 HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
                 the RESP protocol version at the same time"
                    .into(),
            )
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

/// `RESET`: the connection returns to the state of a new one (its id stays); the node drops
/// its subscriptions and watched keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reset;

impl Reset {
    /// Resets the session's own state and replies `+RESET`; the connection is then
    /// authenticated only if the node has no `requirepass`.
    pub(crate) fn apply(session: &mut Session, requirepass: &str) -> Reply {
        session.authenticated = requirepass.is_empty();
        session.user = None;
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
