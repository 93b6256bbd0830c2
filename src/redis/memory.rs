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

use super::db::{DATABASES, Db, Value};

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
pub fn used_memory(db: &Db) -> u64 {
    STARTUP_BYTES + dataset_bytes(db)
}

/// What the keys of all databases cost: each key's name and value bytes, plus the fixed
/// overheads above (`used_memory_dataset`'s stand-in).
pub fn dataset_bytes(db: &Db) -> u64 {
    (0..DATABASES)
        .flat_map(|index| db.database(index).entries())
        .map(|(key, entry)| {
            let element = |bytes: usize| bytes as u64 + ELEMENT_OVERHEAD_BYTES;
            let value = match &entry.value {
                Value::String(bytes) => bytes.len() as u64,
                Value::Hash(fields) => fields.iter().map(|(f, v)| element(f.len() + v.len())).sum(),
                Value::List(items) => items.iter().map(|item| element(item.len())).sum(),
                Value::Stream(stream) => stream
                    .entries
                    .values()
                    .map(|fields| {
                        fields
                            .iter()
                            .map(|(f, v)| element(f.len() + v.len()))
                            .sum::<u64>()
                    })
                    .sum(),
                Value::Set(set) => set
                    .members()
                    .into_iter()
                    .map(|member| element(member.len()))
                    .sum(),
                Value::SortedSet(set) => set
                    .iter()
                    .map(|(member, _)| element(member.len()) + SCORE_BYTES)
                    .sum(),
            };
            KEY_OVERHEAD_BYTES + key.len() as u64 + value
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::cmd::{Command, Writes};
    use crate::redis::node::Node;

    fn set(node: &mut Node, key: &str, value: &str) {
        let words = ["SET", key, value].map(|w| w.as_bytes().to_vec()).to_vec();
        let command = Command::from_words(words, Writes::Taken).expect("SET parses");
        command.apply_to_db(&mut node.db, 0);
    }

    #[test]
    fn an_empty_node_uses_what_an_empty_redis_does_and_each_key_adds_its_cost() {
        let mut node = Node::new().expect("the interpreter starts");
        assert_eq!(used_memory(&node.db), STARTUP_BYTES);
        set(&mut node, "key", "value");
        assert_eq!(used_memory(&node.db), STARTUP_BYTES + KEY_OVERHEAD_BYTES + 3 + 5);
    }

    #[test]
    fn only_a_set_maxmemory_below_the_estimate_is_out_of_memory() {
        let mut node = Node::new().expect("the interpreter starts");
        assert!(!node.out_of_memory(), "maxmemory 0 is no limit");
        node.maxmemory_bytes = 1;
        assert!(
            node.out_of_memory(),
            "an empty node already uses more than 1 byte"
        );
        node.maxmemory_bytes = STARTUP_BYTES;
        assert!(!node.out_of_memory(), "not over: equal");
        set(&mut node, "k", "v");
        assert!(node.out_of_memory());
    }
}
