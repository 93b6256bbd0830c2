//! How much memory the node would use, and whether that is over `maxmemory`: the state
//! behind Redis 7.0's refusals of commands that may grow the dataset (`-OOM command not
//! allowed when used memory > 'maxmemory'.`).
//!
//! Redis measures its allocator (`zmalloc_used_memory`); the fake node has none worth
//! measuring, so it estimates `used_memory` from its data ([`used_memory`]): what an empty
//! redis-server 7.0.15 reports, plus a fixed overhead per key and per element and the bytes
//! of every key, field, member and value. It is no byte-exact copy of Redis's figure; it
//! is exact where the Tcl suite and lock clients look: an empty node already uses more
//! than `maxmemory 1`, and `maxmemory 0` (the default, and every simulated run's) never
//! refuses anything.
//!
//! Eviction is not modelled: the node's only policy is `noeviction` (CONFIG SET of any
//! other `maxmemory-policy` is refused, see `config.rs`), under which Redis's
//! `performEvictions` fails as soon as used memory is over the limit (evict.c).

use super::db::{DATABASES, Value};
use super::node::Node;

/// `used_memory_startup` of redis-server 7.0.15 (jemalloc, x86-64) started with no config
/// file: what the node reports with no data.
pub const STARTUP_BYTES: u64 = 876_160;

/// What a key costs beyond its name and value bytes: its `dictEntry` (24 bytes), `robj`
/// (16) and the sds headers and allocator rounding of name and value (about 24).
const KEY_OVERHEAD_BYTES: u64 = 64;

/// What an element of a hash, list or sorted set costs beyond its bytes (a listpack
/// entry's header, or a skiplist node's share).
const ELEMENT_OVERHEAD_BYTES: u64 = 16;

/// A sorted set member's score (a double).
const SCORE_BYTES: u64 = 8;

/// The node's estimate of Redis's `used_memory` (INFO memory): [`STARTUP_BYTES`] plus
/// [`dataset_bytes`].
pub fn used_memory(node: &Node) -> u64 {
    STARTUP_BYTES + dataset_bytes(node)
}

/// What the keys of all databases cost: each key's name and value bytes, plus the fixed
/// overheads above (`used_memory_dataset`'s stand-in).
pub fn dataset_bytes(node: &Node) -> u64 {
    (0..DATABASES)
        .flat_map(|index| node.db.database(index).entries())
        .map(|(key, entry)| {
            let element = |bytes: usize| bytes as u64 + ELEMENT_OVERHEAD_BYTES;
            let value = match &entry.value {
                Value::String(bytes) => bytes.len() as u64,
                Value::Hash(fields) => fields.iter().map(|(f, v)| element(f.len() + v.len())).sum(),
                Value::List(items) => items.iter().map(|item| element(item.len())).sum(),
                Value::SortedSet(set) => set
                    .iter()
                    .map(|(member, _)| element(member.len()) + SCORE_BYTES)
                    .sum(),
            };
            KEY_OVERHEAD_BYTES + key.len() as u64 + value
        })
        .sum()
}

/// Whether the node is out of memory now, as `performEvictions` finds at each command's
/// start (server.c `processCommand`): `maxmemory` is set, the node is no replica (a
/// replica ignores `maxmemory`, `replica-ignore-maxmemory yes`), and the estimate is over
/// it. With `maxmemory 0` nothing is computed.
pub fn out_of_memory(node: &Node) -> bool {
    node.maxmemory_bytes > 0 && !node.replication.is_replica() && used_memory(node) > node.maxmemory_bytes
}
