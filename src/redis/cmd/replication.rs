//! Replication commands: REPLICAOF (and its old name SLAVEOF), ROLE, INFO, and the ones a
//! replica sends its master, PSYNC (or the old SYNC) and REPLCONF (the server runs those:
//! they turn a connection into a replication link).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::error::ReplyError;
use super::session_state::Session;
use super::spec::{Args, Flags, Handler, Spec, ok, parse_int};
use crate::redis::Frame;
use crate::redis::REDIS_VERSION;
use crate::redis::connection::Reply;
use crate::redis::db::DATABASES;
use crate::redis::memory;
use crate::redis::node::Node;
use crate::redis::request::build as request;

/// The replication commands.
pub(super) const fn commands<C: From<Replicaof> + From<Role> + From<Info> + From<Psync> + From<Replconf>>()
-> [Spec<C>; 7] {
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
            summary: "every section, with Redis 7.0's fields in its order; the node's own clients, memory, persistence, replication, pub/sub, errors (errorstats), each command's calls (commandstats, latencystats: no time spent) and keyspace",
            handler: Handler::Parse(|args| Ok(C::from(Info::parse(args)?))),
        },
        Spec {
            name: "psync",
            arity: -3,
            flags: Flags::NOSCRIPT,
            summary: "a replica asks for the stream (full resync)",
            handler: Handler::Parse(|_| Ok(C::from(Psync { plain_sync: false }))),
        },
        Spec {
            name: "sync",
            arity: 1,
            flags: Flags::NOSCRIPT,
            summary: "the old full resync a plain client may ask for (Redis's Tcl suite reads the stream so)",
            handler: Handler::Parse(|_| Ok(C::from(Psync { plain_sync: true }))),
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

/// One INFO section's text, `\r\n` after each line: every field Redis 7.0 writes, in its
/// order (clients parse them by name); what the node has no counterpart for (a process, an
/// allocator, CPU time, statistics it does not keep) is written as a fixed, plausible value.
fn section(name: &str, node: &Node, now_ms: u64) -> String {
    const MS_PER_S: u64 = 1000;
    /// Redis's LRU clock: seconds, in 24 bits.
    const LRU_CLOCK_MAX: u64 = (1 << 24) - 1;
    let fixed = |header: &str, fields: &[&str]| -> Vec<String> {
        std::iter::once(header)
            .chain(fields.iter().copied())
            .map(str::to_string)
            .collect()
    };
    let lines: Vec<String> = match name {
        "server" => {
            let mut lines = fixed(
                "# Server",
                &[
                    "redis_git_sha1:00000000",
                    "redis_git_dirty:0",
                    "redis_build_id:0",
                    "redis_mode:standalone",
                    "os:locksim",
                    "arch_bits:64",
                    "monotonic_clock:POSIX clock_gettime",
                    "multiplexing_api:epoll",
                    "atomicvar_api:c11-builtin",
                    "gcc_version:0.0.0",
                    "process_id:1",
                    "process_supervised:no",
                ],
            );
            lines.insert(1, format!("redis_version:{REDIS_VERSION}"));
            lines.extend([
                // One id per node, random at its start, as Redis's run id is.
                format!("run_id:{}", node.replication.replid),
                "tcp_port:6379".into(),
                format!("server_time_usec:{}", now_ms * MS_PER_S),
                "uptime_in_seconds:0".into(),
                "uptime_in_days:0".into(),
                format!("hz:{}", node.config.value("hz")),
                format!("configured_hz:{}", node.config.value("hz")),
                format!("lru_clock:{}", (now_ms / MS_PER_S) & LRU_CLOCK_MAX),
                "executable:".into(),
                "config_file:".into(),
                "io_threads_active:0".into(),
            ]);
            lines
        }
        "clients" => vec![
            "# Clients".into(),
            format!("connected_clients:{}", node.clients.connected_clients()),
            "cluster_connections:0".into(),
            format!("maxclients:{}", node.config.value("maxclients")),
            "client_recent_max_input_buffer:0".into(),
            "client_recent_max_output_buffer:0".into(),
            format!("blocked_clients:{}", node.blocked.waiting()),
            "tracking_clients:0".into(),
            "clients_in_timeout_table:0".into(),
        ],
        "memory" => memory(node),
        "persistence" => persistence(node, now_ms),
        "stats" => stats(node),
        "replication" => return node.replication.info(),
        "cpu" => fixed(
            "# CPU",
            &[
                "used_cpu_sys:0.000000",
                "used_cpu_user:0.000000",
                "used_cpu_sys_children:0.000000",
                "used_cpu_user_children:0.000000",
                "used_cpu_sys_main_thread:0.000000",
                "used_cpu_user_main_thread:0.000000",
            ],
        ),
        "modules" => vec!["# Modules".into()],
        "commandstats" => std::iter::once("# Commandstats".to_string())
            .chain(node.stats.commands.info_lines())
            .collect(),
        "errorstats" => std::iter::once("# Errorstats".to_string())
            .chain(node.stats.errors.info_lines())
            .collect(),
        "latencystats" => std::iter::once("# Latencystats".to_string())
            .chain(node.stats.commands.latency_lines())
            .collect(),
        "cluster" => vec!["# Cluster".into(), "cluster_enabled:0".into()],
        _ => keyspace(node, now_ms),
    };
    lines.iter().map(|line| format!("{line}\r\n")).collect()
}

/// `# Memory`: Redis 7.0's fields, the node's estimate of used memory (`redis/memory.rs`)
/// standing in for every measure of memory used.
fn memory(node: &Node) -> Vec<String> {
    let used = memory::used_memory(&node.db);
    let dataset = memory::dataset_bytes(&node.db);
    let human = format!("{:.2}K", used as f64 / 1024.0);
    let mut lines = vec!["# Memory".to_string()];
    for name in ["used_memory", "used_memory_rss", "used_memory_peak"] {
        lines.push(format!("{name}:{used}"));
        lines.push(format!("{name}_human:{human}"));
    }
    lines.extend([
        "used_memory_peak_perc:100.00%".to_string(),
        format!("used_memory_overhead:{}", memory::STARTUP_BYTES),
        format!("used_memory_startup:{}", memory::STARTUP_BYTES),
        format!("used_memory_dataset:{dataset}"),
        // Of the memory used beyond startup, as Redis counts it: all of it here.
        "used_memory_dataset_perc:100.00%".into(),
        format!("allocator_allocated:{used}"),
        format!("allocator_active:{used}"),
        format!("allocator_resident:{used}"),
        "total_system_memory:0".into(),
        "total_system_memory_human:0B".into(),
        "used_memory_lua:0".into(),
        "used_memory_vm_eval:0".into(),
        "used_memory_lua_human:0B".into(),
        "used_memory_scripts_eval:0".into(),
        format!("number_of_cached_scripts:{}", node.scripts.cached()),
        "number_of_functions:0".into(),
        "number_of_libraries:0".into(),
        "used_memory_vm_functions:0".into(),
        "used_memory_vm_total:0".into(),
        "used_memory_vm_total_human:0B".into(),
        "used_memory_functions:0".into(),
        "used_memory_scripts:0".into(),
        "used_memory_scripts_human:0B".into(),
        format!("maxmemory:{}", node.config.value("maxmemory")),
        format!("maxmemory_human:{}B", node.config.value("maxmemory")),
        format!("maxmemory_policy:{}", node.config.value("maxmemory-policy")),
    ]);
    let fixed = [
        "allocator_frag_ratio:1.00",
        "allocator_frag_bytes:0",
        "allocator_rss_ratio:1.00",
        "allocator_rss_bytes:0",
        "rss_overhead_ratio:1.00",
        "rss_overhead_bytes:0",
        "mem_fragmentation_ratio:1.00",
        "mem_fragmentation_bytes:0",
        "mem_not_counted_for_evict:0",
        "mem_replication_backlog:0",
        "mem_total_replication_buffers:0",
        "mem_clients_slaves:0",
        "mem_clients_normal:0",
        "mem_cluster_links:0",
        "mem_aof_buffer:0",
        "mem_allocator:libc",
        "active_defrag_running:0",
        "lazyfree_pending_objects:0",
        "lazyfreed_objects:0",
    ];
    lines.extend(fixed.iter().map(|line| line.to_string()));
    lines
}

/// `# Stats`: Redis 7.0's fields; the node keeps none of these counters but its pub/sub
/// channels and patterns and its error replies.
fn stats(node: &Node) -> Vec<String> {
    const COUNTERS_BEFORE_PUBSUB: &[&str] = &[
        "total_connections_received",
        "total_commands_processed",
        "instantaneous_ops_per_sec",
        "total_net_input_bytes",
        "total_net_output_bytes",
        "total_net_repl_input_bytes",
        "total_net_repl_output_bytes",
    ];
    const RATES: &[&str] = &[
        "instantaneous_input_kbps",
        "instantaneous_output_kbps",
        "instantaneous_input_repl_kbps",
        "instantaneous_output_repl_kbps",
    ];
    const COUNTERS: &[&str] = &[
        "rejected_connections",
        "sync_full",
        "sync_partial_ok",
        "sync_partial_err",
        "expired_keys",
        "expired_stale_perc",
        "expired_time_cap_reached_count",
        "expire_cycle_cpu_milliseconds",
        "evicted_keys",
        "evicted_clients",
        "total_eviction_exceeded_time",
        "current_eviction_exceeded_time",
        "keyspace_hits",
        "keyspace_misses",
    ];
    const COUNTERS_AFTER_PUBSUB: &[&str] = &[
        "pubsubshard_channels",
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "slave_expires_tracked_keys",
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
        "tracking_total_keys",
        "tracking_total_items",
        "tracking_total_prefixes",
        "unexpected_error_replies",
    ];
    const COUNTERS_AFTER_ERRORS: &[&str] = &[
        "dump_payload_sanitizations",
        "total_reads_processed",
        "total_writes_processed",
        "io_threaded_reads_processed",
        "io_threaded_writes_processed",
        "reply_buffer_shrinks",
        "reply_buffer_expands",
    ];
    let pubsub = &node.db.pubsub;
    let zero = |names: &[&str]| names.iter().map(|name| format!("{name}:0")).collect::<Vec<_>>();
    let mut lines = vec!["# Stats".to_string()];
    lines.extend(zero(COUNTERS_BEFORE_PUBSUB));
    lines.extend(RATES.iter().map(|name| format!("{name}:0.00")));
    lines.extend(zero(COUNTERS));
    lines.push(format!("pubsub_channels:{}", pubsub.channels().count()));
    lines.push(format!("pubsub_patterns:{}", pubsub.patterns()));
    lines.extend(zero(COUNTERS_AFTER_PUBSUB));
    lines.push(format!("total_error_replies:{}", node.stats.errors.total()));
    lines.extend(zero(COUNTERS_AFTER_ERRORS));
    lines
}

/// `# Persistence`: Redis 7.0's fields, the snapshot counts from the node's persister (a
/// background save's snapshot is taken at once, and stays in progress a while; no fork, so
/// no copy-on-write).
fn persistence(node: &Node, now_ms: u64) -> Vec<String> {
    let persister = &node.persistence;
    let in_progress = persister.saving_in_background(now_ms);
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
        format!("rdb_bgsave_in_progress:{}", u8::from(in_progress)),
        format!("rdb_last_save_time:{}", persister.last_save_s()),
        "rdb_last_bgsave_status:ok".into(),
        format!("rdb_last_bgsave_time_sec:{last_bgsave_s}"),
        format!("rdb_current_bgsave_time_sec:{}", if in_progress { 0 } else { -1 }),
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

/// `PSYNC replid offset`: a replica asks for the stream (always a full resync here); or
/// `SYNC`, the old form: no `+FULLRESYNC` line, the RDB payload at once, then the stream
/// (as Redis's syncCommand answers it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Psync {
    /// Asked as SYNC: the payload is always an RDB file and no `+FULLRESYNC` line precedes it.
    pub plain_sync: bool,
}

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
