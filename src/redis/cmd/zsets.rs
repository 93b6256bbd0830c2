//! Sorted-set commands: ZADD (NX|XX, GT|LT, CH, INCR), ZINCRBY, ZSCORE, ZREM, ZCARD, ZRANK,
//! ZCOUNT, ZRANGE (by rank or BYSCORE, REV, LIMIT, WITHSCORES), ZREVRANGE, ZRANGEBYSCORE,
//! ZREMRANGEBYSCORE. Scores reply as Redis 7.0 writes doubles (`%.17g`, `inf`), RESP3
//! doubles in RESP3; members of equal score are ordered by their bytes.

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, SortedSet};

/// The sorted-set commands.
pub(super) const fn commands<C>() -> [Spec<C>; 11] {
    [
        Spec {
            name: "zadd",
            arity: -4,
            flags: Flags::WRITE_DENYOOM,
            summary: "add or update members; NX|XX, GT|LT, CH, INCR",
            handler: Handler::Keyspace(zadd),
        },
        Spec {
            name: "zincrby",
            arity: 4,
            flags: Flags::WRITE_DENYOOM,
            summary: "add to a member's score: the new score",
            handler: Handler::Keyspace(zincrby),
        },
        Spec {
            name: "zscore",
            arity: 3,
            flags: Flags::READ,
            summary: "a member's score, or nil",
            handler: Handler::Keyspace(zscore),
        },
        Spec {
            name: "zrem",
            arity: -3,
            flags: Flags::WRITE,
            summary: "remove members: how many were there",
            handler: Handler::Keyspace(zrem),
        },
        Spec {
            name: "zcard",
            arity: 2,
            flags: Flags::READ,
            summary: "how many members",
            handler: Handler::Keyspace(zcard),
        },
        Spec {
            name: "zrank",
            arity: 3,
            flags: Flags::READ,
            summary: "a member's position, lowest score first, or nil",
            handler: Handler::Keyspace(zrank),
        },
        Spec {
            name: "zcount",
            arity: 4,
            flags: Flags::READ,
            summary: "how many members score within min..max",
            handler: Handler::Keyspace(zcount),
        },
        Spec {
            name: "zrange",
            arity: -4,
            flags: Flags::READ,
            summary: "members by rank, or BYSCORE; REV, LIMIT, WITHSCORES",
            handler: Handler::Keyspace(zrange),
        },
        Spec {
            name: "zrevrange",
            arity: -4,
            flags: Flags::READ,
            summary: "members by rank, highest score first; WITHSCORES",
            handler: Handler::Keyspace(zrevrange),
        },
        Spec {
            name: "zrangebyscore",
            arity: -4,
            flags: Flags::READ,
            summary: "members scoring within min..max; WITHSCORES, LIMIT",
            handler: Handler::Keyspace(zrangebyscore),
        },
        Spec {
            name: "zremrangebyscore",
            arity: 4,
            flags: Flags::WRITE,
            summary: "remove members scoring within min..max: how many",
            handler: Handler::Keyspace(zremrangebyscore),
        },
    ]
}

/// A score argument as Redis reads one (`strtod`, the whole word, no NaN).
pub(super) fn parse_score(word: &[u8]) -> Result<f64, ReplyError> {
    parse_double(word).ok_or_else(|| ReplyError("ERR value is not a valid float".into()))
}

/// A double as Redis's `getDoubleFromObject` reads it: decimal or `inf`, no leading space,
/// no NaN, no overflow to infinity.
pub(super) fn parse_double(word: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(word).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    let spelled_infinite = text
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase()
        .starts_with("inf");
    (!value.is_nan() && (value.is_finite() || spelled_infinite)).then_some(value)
}

/// One end of a score range: `(x` excludes x.
#[derive(Debug, Clone, Copy)]
struct Bound {
    score: f64,
    exclusive: bool,
}

/// A score range, `min` and `max` as ZRANGEBYSCORE and its kin take them.
#[derive(Debug, Clone, Copy)]
struct ScoreRange {
    min: Bound,
    max: Bound,
}

impl ScoreRange {
    /// Parses as `zslParseRange`: a leading `(` excludes; anything else not a float.
    fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, ReplyError> {
        let bound = |word: &[u8]| {
            let (exclusive, number) = match word.strip_prefix(b"(") {
                Some(rest) => (true, rest),
                None => (false, word),
            };
            let score = parse_range_double(number)?;
            Some(Bound { score, exclusive })
        };
        match (bound(min), bound(max)) {
            (Some(min), Some(max)) => Ok(ScoreRange { min, max }),
            _ => Err(ReplyError("ERR min or max is not a float".into())),
        }
    }

    fn above_min(&self, score: f64) -> bool {
        if self.min.exclusive {
            score > self.min.score
        } else {
            score >= self.min.score
        }
    }

    fn below_max(&self, score: f64) -> bool {
        if self.max.exclusive {
            score < self.max.score
        } else {
            score <= self.max.score
        }
    }

    fn contains(&self, score: f64) -> bool {
        self.above_min(score) && self.below_max(score)
    }
}

/// A range bound as `strtod` reads it in `zslParseRange`: leading spaces allowed, the rest
/// of the word must be the number, no NaN (an empty word reads as 0).
fn parse_range_double(word: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(word).ok()?.trim_start();
    if text.is_empty() {
        return Some(0.0);
    }
    let value: f64 = text.parse().ok()?;
    (!value.is_nan()).then_some(value)
}

/// ZADD's options.
#[derive(Debug, Clone, Copy, Default)]
struct AddOptions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    incr: bool,
}

/// What adding one member did.
enum Added {
    New(f64),
    Updated(f64),
    Unchanged(f64),
    Skipped,
}

/// Redis's `zsetAdd`: adds or updates one member under the options.
fn add_member(
    set: &mut SortedSet,
    member: &[u8],
    score: f64,
    options: AddOptions,
) -> Result<Added, ReplyError> {
    match set.score(member) {
        Some(current) => {
            if options.nx {
                return Ok(Added::Skipped);
            }
            let score = if options.incr { current + score } else { score };
            if score.is_nan() {
                return Err(ReplyError("ERR resulting score is not a number (NaN)".into()));
            }
            if (options.lt && score >= current) || (options.gt && score <= current) {
                return Ok(Added::Skipped);
            }
            if score == current {
                return Ok(Added::Unchanged(score));
            }
            set.insert(member.to_vec(), score);
            Ok(Added::Updated(score))
        }
        None if options.xx => Ok(Added::Skipped),
        None => {
            set.insert(member.to_vec(), score);
            Ok(Added::New(score))
        }
    }
}

pub(super) fn zadd(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let mut words = args.rest();
    let mut options = AddOptions::default();
    let mut ch = false;
    let mut first_pair = 0;
    for word in &words {
        match word.to_ascii_uppercase().as_slice() {
            b"NX" => options.nx = true,
            b"XX" => options.xx = true,
            b"GT" => options.gt = true,
            b"LT" => options.lt = true,
            b"CH" => ch = true,
            b"INCR" => options.incr = true,
            _ => break,
        }
        first_pair += 1;
    }
    let pairs = words.split_off(first_pair);
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(ReplyError::syntax());
    }
    if options.nx && options.xx {
        return Err(ReplyError(
            "ERR XX and NX options at the same time are not compatible".into(),
        ));
    }
    if (options.nx && (options.gt || options.lt)) || (options.gt && options.lt) {
        return Err(ReplyError(
            "ERR GT, LT, and/or NX options at the same time are not compatible".into(),
        ));
    }
    if options.incr && pairs.len() > 2 {
        return Err(ReplyError(
            "ERR INCR option supports a single increment-element pair".into(),
        ));
    }
    let scores = pairs
        .chunks(2)
        .map(|pair| parse_score(&pair[0]))
        .collect::<Result<Vec<_>, _>>()?;
    let mut changed = 0;
    let mut added = 0;
    let mut last_score = None;
    let mut failed = None;
    if let Some(set) = db.write::<SortedSet>(&key, !options.xx, now_ms)? {
        for (pair, score) in pairs.chunks(2).zip(scores) {
            match add_member(set, &pair[1], score, options) {
                Ok(Added::New(score)) => {
                    added += 1;
                    last_score = Some(score);
                }
                Ok(Added::Updated(score)) => {
                    changed += 1;
                    last_score = Some(score);
                }
                Ok(Added::Unchanged(score)) => last_score = Some(score),
                Ok(Added::Skipped) => {}
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
    }
    db.drop_if_empty(&key);
    if let Some(error) = failed {
        return Err(error);
    }
    Ok(if options.incr {
        last_score.map_or(Frame::Null.into(), Reply::Double)
    } else {
        Frame::Integer(if ch { added + changed } else { added }).into()
    })
}

fn zincrby(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let increment = parse_score(&args.next_bytes()?)?;
    let member = args.next_bytes()?;
    let options = AddOptions {
        incr: true,
        ..AddOptions::default()
    };
    let set = db
        .write::<SortedSet>(&key, true, now_ms)?
        .ok_or_else(ReplyError::syntax)?;
    let outcome = add_member(set, &member, increment, options);
    db.drop_if_empty(&key);
    match outcome? {
        Added::New(score) | Added::Updated(score) | Added::Unchanged(score) => Ok(Reply::Double(score)),
        Added::Skipped => Ok(Frame::Null.into()),
    }
}

fn zscore(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let member = args.next_bytes()?;
    Ok(db
        .read::<SortedSet>(&key, now_ms)?
        .and_then(|set| set.score(&member))
        .map_or(Frame::Null.into(), Reply::Double))
}

fn zrem(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let members = args.rest();
    let removed = match db.write::<SortedSet>(&key, false, now_ms)? {
        Some(set) => members.iter().filter(|m| set.remove(m).is_some()).count(),
        None => 0,
    };
    db.drop_if_empty(&key);
    Ok(Frame::Integer(removed as i64).into())
}

fn zcard(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    Ok(Frame::Integer(db.read::<SortedSet>(&key, now_ms)?.map_or(0, SortedSet::len) as i64).into())
}

fn zrank(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let member = args.next_bytes()?;
    Ok(db
        .read::<SortedSet>(&key, now_ms)?
        .and_then(|set| set.rank(&member))
        .map_or(Frame::Null, |rank| Frame::Integer(rank as i64))
        .into())
}

fn zcount(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let range = ScoreRange::parse(&args.next_bytes()?, &args.next_bytes()?)?;
    let count = db.read::<SortedSet>(&key, now_ms)?.map_or(0, |set| {
        set.iter().filter(|(_, score)| range.contains(*score)).count()
    });
    Ok(Frame::Integer(count as i64).into())
}

fn zremrangebyscore(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let range = ScoreRange::parse(&args.next_bytes()?, &args.next_bytes()?)?;
    let removed = match db.write::<SortedSet>(&key, false, now_ms)? {
        Some(set) => {
            let doomed: Vec<Vec<u8>> = set
                .iter()
                .filter(|(_, score)| range.contains(*score))
                .map(|(member, _)| member.to_vec())
                .collect();
            for member in &doomed {
                set.remove(member);
            }
            doomed.len()
        }
        None => 0,
    };
    db.drop_if_empty(&key);
    Ok(Frame::Integer(removed as i64).into())
}

/// How ZRANGE picks members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeBy {
    Rank,
    Score,
}

/// What the ZRANGE family was asked, as `zrangeGenericCommand` parses it.
struct RangeRequest {
    key: Vec<u8>,
    by: RangeBy,
    reverse: bool,
    with_scores: bool,
    /// `LIMIT offset count`: -1 count is no limit.
    offset: i64,
    limit: i64,
    start: Vec<u8>,
    stop: Vec<u8>,
}

/// Parses the ZRANGE family's words; `by` and `reverse` are fixed by the older commands and
/// left open (`None`) by ZRANGE, whose options choose them.
fn parse_range(
    args: &mut Args,
    by: Option<RangeBy>,
    reverse: Option<bool>,
) -> Result<RangeRequest, ReplyError> {
    let key = args.next_bytes()?;
    let start = args.next_bytes()?;
    let stop = args.next_bytes()?;
    let words = args.rest();
    let (mut by, mut reverse) = (by, reverse);
    let mut with_scores = false;
    let (mut offset, mut limit) = (0, -1);
    let mut i = 0;
    while i < words.len() {
        let left = words.len() - i - 1;
        match words[i].to_ascii_uppercase().as_slice() {
            b"WITHSCORES" => with_scores = true,
            b"LIMIT" if left >= 2 => {
                offset = parse_int(&words[i + 1])?;
                limit = parse_int(&words[i + 2])?;
                i += 2;
            }
            b"REV" if reverse.is_none() => reverse = Some(true),
            b"BYSCORE" if by.is_none() => by = Some(RangeBy::Score),
            b"BYLEX" if by.is_none() => {
                return Err(ReplyError("ERR locksim's fake Redis has no BYLEX ranges".into()));
            }
            _ => return Err(ReplyError::syntax()),
        }
        i += 1;
    }
    let by = by.unwrap_or(RangeBy::Rank);
    if limit != -1 && by == RangeBy::Rank {
        return Err(ReplyError(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX".into(),
        ));
    }
    Ok(RangeRequest {
        key,
        by,
        reverse: reverse.unwrap_or(false),
        with_scores,
        offset,
        limit,
        start,
        stop,
    })
}

/// Runs a parsed ZRANGE-family request.
fn range(request: RangeRequest, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let picked: Vec<(Vec<u8>, f64)> = match request.by {
        RangeBy::Rank => {
            let start = parse_int(&request.start)?;
            let stop = parse_int(&request.stop)?;
            match db.read::<SortedSet>(&request.key, now_ms)? {
                None => Vec::new(),
                Some(set) => by_rank(set, start, stop, request.reverse),
            }
        }
        RangeBy::Score => {
            // Reversed, the range is given as max then min.
            let (min, max) = if request.reverse {
                (&request.stop, &request.start)
            } else {
                (&request.start, &request.stop)
            };
            let range = ScoreRange::parse(min, max)?;
            match db.read::<SortedSet>(&request.key, now_ms)? {
                None => Vec::new(),
                Some(set) => by_score(set, range, &request),
            }
        }
    };
    Ok(if request.with_scores {
        Reply::Scored(picked)
    } else {
        Frame::Array(picked.into_iter().map(|(m, _)| Frame::BulkString(m)).collect()).into()
    })
}

/// Members `start..=stop` by rank (negative counts from the end), as Redis clamps them.
fn by_rank(set: &SortedSet, start: i64, stop: i64, reverse: bool) -> Vec<(Vec<u8>, f64)> {
    let len = set.len() as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return Vec::new();
    }
    let stop = stop.min(len - 1);
    let take = (stop - start + 1) as usize;
    let owned = |(m, s): (&[u8], f64)| (m.to_vec(), s);
    if reverse {
        set.iter()
            .rev()
            .skip(start as usize)
            .take(take)
            .map(owned)
            .collect()
    } else {
        set.iter().skip(start as usize).take(take).map(owned).collect()
    }
}

/// Members within a score range, after `offset` of them, at most `limit` (negative: all).
fn by_score(set: &SortedSet, range: ScoreRange, request: &RangeRequest) -> Vec<(Vec<u8>, f64)> {
    // A negative offset skips everything, as Redis's `while (offset--)` does.
    if request.offset < 0 || (request.offset > 0 && request.offset >= set.len() as i64) {
        return Vec::new();
    }
    let in_range = |(_, score): &(&[u8], f64)| range.contains(*score);
    let owned = |(m, s): (&[u8], f64)| (m.to_vec(), s);
    let limit = usize::try_from(request.limit).unwrap_or(usize::MAX);
    let offset = request.offset as usize;
    if request.reverse {
        set.iter()
            .rev()
            .filter(in_range)
            .skip(offset)
            .take(limit)
            .map(owned)
            .collect()
    } else {
        set.iter()
            .filter(in_range)
            .skip(offset)
            .take(limit)
            .map(owned)
            .collect()
    }
}

fn zrange(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    range(parse_range(args, None, None)?, db, now_ms)
}

fn zrevrange(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    range(parse_range(args, Some(RangeBy::Rank), Some(true))?, db, now_ms)
}

fn zrangebyscore(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    range(parse_range(args, Some(RangeBy::Score), Some(false))?, db, now_ms)
}
