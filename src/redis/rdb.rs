//! An RDB file of the keyspace, for a real redis-server that follows a served node
//! (`redis-server --replicaof` pointed at `locksim serve`). Our own replicas take their
//! snapshot as commands ([`super::replication`]); a real one reads only RDB, and without
//! one it loops on sync errors. Written as Redis 7.0 writes version 10, with the value
//! encodings every later version still loads: plain strings, `RDB_TYPE_LIST`, `RDB_TYPE_SET`,
//! `RDB_TYPE_HASH` and `RDB_TYPE_ZSET_2` (binary doubles), each key's expiry in
//! milliseconds, one `SELECTDB` per non-empty database, and the CRC-64 trailer.

use super::REDIS_VERSION;
use super::db::{DATABASES, Db, Value};

const VERSION: &[u8] = b"REDIS0010";
const OPCODE_AUX: u8 = 0xFA;
const OPCODE_RESIZEDB: u8 = 0xFB;
const OPCODE_EXPIRETIME_MS: u8 = 0xFC;
const OPCODE_SELECTDB: u8 = 0xFE;
const OPCODE_EOF: u8 = 0xFF;
const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;

/// The keyspace of `db` as an RDB file; keys already expired at `now_ms` are left out, as
/// Redis leaves them out of the RDB it sends a replica.
pub fn snapshot(db: &Db, now_ms: u64) -> Vec<u8> {
    let mut out = VERSION.to_vec();
    aux(&mut out, "redis-ver", REDIS_VERSION);
    aux(&mut out, "redis-bits", "64");
    for index in 0..DATABASES {
        let database = db.database(index);
        let live: Vec<_> = database
            .entries()
            .filter(|(_, entry)| entry.is_live(now_ms))
            // Streams are not written: RDB's stream encoding (listpacks in a radix tree)
            // is not modelled.
            .filter(|(_, entry)| !matches!(entry.value, Value::Stream(_)))
            .collect();
        if live.is_empty() {
            continue;
        }
        out.push(OPCODE_SELECTDB);
        length(&mut out, index as u64);
        out.push(OPCODE_RESIZEDB);
        length(&mut out, live.len() as u64);
        let expiring = live.iter().filter(|(_, e)| e.expires_at_ms.is_some()).count();
        length(&mut out, expiring as u64);
        for (key, entry) in live {
            if let Some(at) = entry.expires_at_ms {
                out.push(OPCODE_EXPIRETIME_MS);
                out.extend(at.to_le_bytes());
            }
            match &entry.value {
                Value::String(value) => {
                    out.push(TYPE_STRING);
                    string(&mut out, key);
                    string(&mut out, value);
                }
                Value::List(items) => {
                    out.push(TYPE_LIST);
                    string(&mut out, key);
                    length(&mut out, items.len() as u64);
                    items.iter().for_each(|item| string(&mut out, item));
                }
                Value::Hash(hash) => {
                    out.push(TYPE_HASH);
                    string(&mut out, key);
                    length(&mut out, hash.len() as u64);
                    for (field, value) in hash.iter() {
                        string(&mut out, field);
                        string(&mut out, value);
                    }
                }
                Value::Stream(_) => {}
                Value::Set(set) => {
                    out.push(TYPE_SET);
                    string(&mut out, key);
                    length(&mut out, set.len() as u64);
                    set.members()
                        .into_iter()
                        .for_each(|member| string(&mut out, member));
                }
                Value::SortedSet(set) => {
                    out.push(TYPE_ZSET_2);
                    string(&mut out, key);
                    length(&mut out, set.len() as u64);
                    for (member, score) in set.iter() {
                        string(&mut out, member);
                        out.extend(score.to_le_bytes());
                    }
                }
            }
        }
    }
    out.push(OPCODE_EOF);
    with_checksum(out)
}

/// The RDB version Redis 7.0 writes, as a DUMP payload's footer carries it.
const DUMP_VERSION: u16 = 10;

/// What `FUNCTION DUMP` returns for an empty function library: no library, then the
/// payload footer every DUMP has (the RDB version, two bytes, and the CRC-64 of what comes
/// before it).
pub fn empty_function_dump() -> Vec<u8> {
    with_checksum(DUMP_VERSION.to_le_bytes().to_vec())
}

/// `out` followed by its CRC-64 (Redis's Jones polynomial), little-endian.
fn with_checksum(mut out: Vec<u8>) -> Vec<u8> {
    let checksum = crc::Crc::<u64>::new(&crc::CRC_64_REDIS).checksum(&out);
    out.extend(checksum.to_le_bytes());
    out
}

fn aux(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(OPCODE_AUX);
    string(out, name.as_bytes());
    string(out, value.as_bytes());
}

/// A length in RDB's variable encoding: 6 bits, 14 bits, 32 bits or 64 bits, big-endian.
fn length(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend([0x40 | (n >> 8) as u8, n as u8]);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend((n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend(n.to_be_bytes());
    }
}

fn string(out: &mut Vec<u8>, bytes: &[u8]) {
    length(out, bytes.len() as u64);
    out.extend(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_function_dump_is_the_bytes_redis_7_0_returns() {
        // FUNCTION DUMP on a redis-server 7.0.15 with no library.
        assert_eq!(
            empty_function_dump(),
            b"\x0a\x00\x5d\x9b\x5c\x40\x0f\x7f\xa2\xda".to_vec()
        );
    }

    #[test]
    fn lengths_take_the_shortest_of_rdbs_four_forms() {
        let encoded = |n| {
            let mut out = Vec::new();
            length(&mut out, n);
            out
        };
        assert_eq!(encoded(10), [10]);
        assert_eq!(encoded(700), [0x42, 0xBC]);
        assert_eq!(encoded(70_000), [0x80, 0, 1, 0x11, 0x70]);
        assert_eq!(encoded(1 << 33), [0x81, 0, 0, 0, 2, 0, 0, 0, 0]);
    }

    #[test]
    fn an_empty_keyspace_is_a_header_and_a_checked_trailer() {
        let file = snapshot(&Db::default(), 0);
        assert!(file.starts_with(b"REDIS0010"));
        let (body, trailer) = file.split_at(file.len() - 8);
        assert_eq!(body.last(), Some(&OPCODE_EOF));
        // The check value of CRC-64/Jones, as Redis's crc64.c tests it.
        let crc = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);
        assert_eq!(crc.checksum(b"123456789"), 0xe9c6d914c4b8d9ca);
        assert_eq!(trailer, crc.checksum(body).to_le_bytes());
    }
}
