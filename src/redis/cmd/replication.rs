//! Replication commands: REPLICAOF (and its old name SLAVEOF), ROLE, INFO, and the two a
//! replica sends its master, PSYNC and REPLCONF (the server runs those: they turn a
//! connection into a replication link).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::error::ReplyError;
use super::session::Session;
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::REDIS_VERSION;
use crate::redis::connection::Reply;
use crate::redis::db::{DATABASES, Value};
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

/// `INFO [section ...]`: Redis 7.0's sections, with the fields clients parse (`info.rs`
/// of each client library: version, role, clients, memory, keyspace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    pub sections: Vec<Vec<u8>>,
}

/// Redis 7.0's sections, in its order, and whether `INFO` without a section (`default`)
/// lists each; `all` and `everything` list every one.
const INFO_SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

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

    /// The sections asked for, at wall time `now_ms`, each `# Name` and its `field:value`
    /// lines, separated by blank lines; an unknown section adds nothing.
    pub(crate) fn apply(self, node: &Node, now_ms: u64) -> Reply {
        let asked = |word: &[u8]| self.sections.iter().any(|s| s.eq_ignore_ascii_case(word));
        let every = asked(b"all") || asked(b"everything");
        let default = self.sections.is_empty() || asked(b"default");
        let text: Vec<String> = INFO_SECTIONS
            .iter()
            .filter(|(name, in_default)| every || (default && *in_default) || asked(name.as_bytes()))
            .map(|(name, _)| section(name, node, now_ms))
            .collect();
        Reply::Verbatim(text.join("\r\n").into_bytes())
    }
}

/// One INFO section's text, `\r\n` after each line.
fn section(name: &str, node: &Node, now_ms: u64) -> String {
    let lines: Vec<String> = match name {
        "server" => vec![
            "# Server".into(),
            format!("redis_version:{REDIS_VERSION}"),
            "redis_mode:standalone".into(),
            "arch_bits:64".into(),
            format!("hz:{}", node.config.value("hz")),
            format!("configured_hz:{}", node.config.value("hz")),
            "config_file:".into(),
        ],
        "clients" => vec![
            "# Clients".into(),
            format!("connected_clients:{}", node.clients.connected_clients()),
            format!("maxclients:{}", node.config.value("maxclients")),
            format!("blocked_clients:{}", node.blocked.waiting()),
        ],
        "memory" => {
            let used = stored_bytes(node);
            vec![
                "# Memory".into(),
                format!("used_memory:{used}"),
                format!("used_memory_human:{:.2}K", used as f64 / 1024.0),
                format!("maxmemory:{}", node.config.value("maxmemory")),
                format!("maxmemory_policy:{}", node.config.value("maxmemory-policy")),
            ]
        }
        "persistence" => persistence(node),
        "stats" => vec!["# Stats".into(), "expired_keys:0".into(), "evicted_keys:0".into()],
        "replication" => return node.replication.info(),
        "cpu" => vec!["# CPU".into()],
        "modules" => vec!["# Modules".into()],
        "commandstats" => vec!["# Commandstats".into()],
        "errorstats" => vec!["# Errorstats".into()],
        "latencystats" => vec!["# Latencystats".into()],
        "cluster" => vec!["# Cluster".into(), "cluster_enabled:0".into()],
        _ => keyspace(node, now_ms),
    };
    lines.iter().map(|line| format!("{line}\r\n")).collect()
}

/// `# Persistence`: Redis 7.0's fields, the snapshot counts from the node's persister (a
/// snapshot is taken at once, so none is ever in progress; no fork, so no copy-on-write).
fn persistence(node: &Node) -> Vec<String> {
    let persister = &node.persistence;
    let last_bgsave_s: i64 = if persister.saved_in_background() { 0 } else { -1 };
    let aof_enabled = u8::from(node.config.value("appendonly") == "yes");
    [
        "# Persistence".to_string(),
        "loading:0".into(),
        "async_loading:0".into(),
        "current_cow_peak:0".into(),
        "current_cow_size:0".into(),
        "current_cow_size_age:0".into(),
        "current_fork_perc:0.00".into(),
        "current_save_keys_processed:0".into(),
        "current_save_keys_total:0".into(),
        format!(
            "rdb_changes_since_last_save:{}",
            persister.changes_since_last_save()
        ),
        "rdb_bgsave_in_progress:0".into(),
        format!("rdb_last_save_time:{}", persister.last_save_s()),
        "rdb_last_bgsave_status:ok".into(),
        format!("rdb_last_bgsave_time_sec:{last_bgsave_s}"),
        "rdb_current_bgsave_time_sec:-1".into(),
        format!("rdb_saves:{}", persister.saves()),
        "rdb_last_cow_size:0".into(),
        "rdb_last_load_keys_expired:0".into(),
        "rdb_last_load_keys_loaded:0".into(),
        format!("aof_enabled:{aof_enabled}"),
        "aof_rewrite_in_progress:0".into(),
        "aof_rewrite_scheduled:0".into(),
        "aof_last_rewrite_time_sec:-1".into(),
        "aof_current_rewrite_time_sec:-1".into(),
        "aof_last_bgrewrite_status:ok".into(),
        "aof_rewrites:0".into(),
        "aof_rewrites_consecutive_failures:0".into(),
        "aof_last_write_status:ok".into(),
        "aof_last_cow_size:0".into(),
        "module_fork_in_progress:0".into(),
        "module_fork_last_cow_size:0".into(),
    ]
    .into()
}

/// `# Keyspace`: `dbN:keys=..,expires=..,avg_ttl=..` for each database with keys, avg_ttl
/// the mean time left (ms) of its keys with an expiry.
fn keyspace(node: &Node, now_ms: u64) -> Vec<String> {
    let mut lines = vec!["# Keyspace".to_string()];
    for index in 0..DATABASES {
        let database = node.db.database(index);
        if database.is_empty() {
            continue;
        }
        let ttls: Vec<u64> = database
            .entries()
            .filter_map(|(_, entry)| entry.expires_at_ms)
            .map(|at| at.saturating_sub(now_ms))
            .collect();
        let avg_ttl = ttls
            .iter()
            .sum::<u64>()
            .checked_div(ttls.len() as u64)
            .unwrap_or(0);
        lines.push(format!(
            "db{index}:keys={},expires={},avg_ttl={avg_ttl}",
            database.len(),
            ttls.len()
        ));
    }
    lines
}

/// The bytes of every key and value stored: the node's stand-in for `used_memory`.
fn stored_bytes(node: &Node) -> usize {
    (0..DATABASES)
        .flat_map(|index| node.db.database(index).entries())
        .map(|(key, entry)| {
            key.len()
                + match &entry.value {
                    Value::String(bytes) => bytes.len(),
                    Value::Hash(fields) => fields.iter().map(|(f, v)| f.len() + v.len()).sum(),
                    Value::List(items) => items.iter().map(Vec::len).sum(),
                    Value::SortedSet(set) => set.iter().map(|(member, _)| member.len() + 8).sum(),
                }
        })
        .sum()
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
