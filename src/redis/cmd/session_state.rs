//! What the node keeps per connection ([`Session`], with its open [`Transaction`]), and
//! the rule for a connection's name that CLIENT SETNAME and HELLO SETNAME share. Apart from
//! the commands that change it (`session.rs`, `clients.rs`, `transactions.rs`), so that
//! those files need not import each other for it.

use super::error::ReplyError;
use crate::redis::connection::Protocol;

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
    /// The transaction MULTI opened, until EXEC or DISCARD.
    pub transaction: Option<Transaction>,
    /// Whether the connection may run commands while the node has a `requirepass`: it
    /// authenticated, or it opened (or sent RESET) while the node had none.
    pub authenticated: bool,
    /// The ACL user AUTH logged in as, other than the default user (`None`).
    pub user: Option<Vec<u8>>,
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
pub(super) fn set_name(session: &mut Session, name: Vec<u8>) -> Result<(), ReplyError> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(ReplyError(
            "ERR Client names cannot contain spaces, newlines or special characters.".into(),
        ));
    }
    session.name = (!name.is_empty()).then_some(name);
    Ok(())
}
