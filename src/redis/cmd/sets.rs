//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SCARD, SPOP. Members are listed in the
//! order `db/set.rs` describes; SPOP draws from the keyspace's own generator
//! ([`Db::draws`]), so a run's pops repeat.

use rand::RngExt;

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, Set};

/// The set commands.
pub(super) const fn commands<C>() -> [Spec<C>; 6] {
    [
        Spec {
            name: "sadd",
            arity: -3,
            flags: Flags::WRITE_DENYOOM,
            summary: "add members: how many were new",
            handler: Handler::Keyspace(sadd),
        },
        Spec {
            name: "srem",
            arity: -3,
            flags: Flags::WRITE,
            summary: "remove members: how many were there",
            handler: Handler::Keyspace(srem),
        },
        Spec {
            name: "smembers",
            arity: 2,
            flags: Flags::READ,
            summary: "the members (integers by value, others in byte order)",
            handler: Handler::Keyspace(smembers),
        },
        Spec {
            name: "sismember",
            arity: 3,
            flags: Flags::READ,
            summary: "whether a member is in the set: 1 or 0",
            handler: Handler::Keyspace(sismember),
        },
        Spec {
            name: "scard",
            arity: 2,
            flags: Flags::READ,
            summary: "how many members",
            handler: Handler::Keyspace(scard),
        },
        Spec {
            name: "spop",
            arity: -2,
            flags: Flags::WRITE,
            summary: "remove and return a random member, or COUNT of them",
            handler: Handler::Keyspace(spop),
        },
    ]
}

fn sadd(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let set = db
        .write::<Set>(&key, true, now_ms)?
        .ok_or_else(ReplyError::syntax)?;
    let added = args
        .rest()
        .into_iter()
        .filter(|member| set.insert(member.clone()))
        .count();
    Ok(Frame::Integer(added as i64).into())
}

fn srem(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let mut removed = 0;
    if let Some(set) = db.write::<Set>(&key, false, now_ms)? {
        removed = args.rest().iter().filter(|member| set.remove(member)).count();
    }
    db.drop_if_empty(&key);
    Ok(Frame::Integer(removed as i64).into())
}

fn smembers(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let members = db
        .read::<Set>(&key, now_ms)?
        .map(|set| set.members().into_iter().map(<[u8]>::to_vec));
    Ok(Reply::Set(members.map(Iterator::collect).unwrap_or_default()))
}

fn sismember(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let member = args.next_bytes()?;
    let found = db
        .read::<Set>(&key, now_ms)?
        .is_some_and(|set| set.contains(&member));
    Ok(Frame::Integer(i64::from(found)).into())
}

fn scard(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    Ok(Frame::Integer(db.read::<Set>(&key, now_ms)?.map_or(0, Set::len) as i64).into())
}

/// SPOP key: one member or nil; SPOP key count: up to `count` members, an empty array for
/// a missing key (t_set.c `spopCommand`, `spopWithCountCommand`).
fn spop(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let rest = args.rest();
    let count = match rest.as_slice() {
        [] => None,
        // `getPositiveLongFromObjectOrReply`: one message for a word and a negative number.
        [count] => Some(
            parse_int(count)
                .ok()
                .and_then(|count| usize::try_from(count).ok())
                .ok_or_else(|| ReplyError("ERR value is out of range, must be positive".into()))?,
        ),
        _ => return Err(ReplyError::syntax()),
    };
    // The generator is a field of `db` beside the keyspace `write` borrows whole.
    let mut draws = db.draws.clone();
    let mut popped = Vec::new();
    if let Some(set) = db.write::<Set>(&key, false, now_ms)? {
        let mut members: Vec<Vec<u8>> = set.members().into_iter().map(<[u8]>::to_vec).collect();
        if count.is_some_and(|count| count >= members.len()) {
            // The whole set, in its own order (t_set.c replies with the set as it lists).
            popped = std::mem::take(&mut members);
            popped.iter().for_each(|member| _ = set.remove(member));
        }
        for _ in 0..count.unwrap_or(1).min(members.len()) {
            let member = members.swap_remove(draws.random_range(0..members.len()));
            set.remove(&member);
            popped.push(member);
        }
    }
    db.draws = draws;
    db.drop_if_empty(&key);
    Ok(match count {
        Some(_) => Reply::Set(popped),
        None => popped
            .into_iter()
            .next()
            .map_or(Frame::Null, Frame::BulkString)
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(db: &mut Db, handler: super::super::spec::KeyspaceHandler, words: &[&str]) -> Reply {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        let mut args = Args::new(&words);
        handler(&mut args, db, 0).unwrap_or_else(|error| Frame::from(error).into())
    }

    #[test]
    fn spop_draws_from_the_keyspace_generator_so_two_nodes_pop_alike() {
        let popped = |db: &mut Db| -> Vec<Reply> {
            run(db, sadd, &["s", "a", "b", "c", "d", "e"]);
            (0..3).map(|_| run(db, spop, &["s"])).collect()
        };
        let (mut first, mut second) = (Db::default(), Db::default());
        let draws = popped(&mut first);
        assert_eq!(draws, popped(&mut second), "the same draws from the same start");
        assert_eq!(run(&mut first, scard, &["s"]), Frame::Integer(2).into());
    }
}
