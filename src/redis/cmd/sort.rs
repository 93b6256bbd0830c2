//! SORT: a list's, set's or sorted set's elements sorted by value or by other keys
//! (`BY`), with other keys' values fetched (`GET`), a range (`LIMIT`), `ALPHA`, `DESC`,
//! and the result kept as a list (`STORE`), as sort.c does it.
//!
//! `BY` a pattern without `*` sorts nothing; a set's elements then come in its own
//! unspecified order, so Redis 7 sorts them byte-wise anyway when the result is stored or a
//! script asked (the result must be the same on replicas and in the AOF): [`Sort::from_script`].

use std::cmp::Ordering;

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, parse_int};
use super::zsets::parse_double;
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, Value};

/// SORT's table (a family of one: it reads every collection type).
pub(super) const fn commands<C: From<Sort>>() -> [Spec<C>; 1] {
    [Spec {
        name: "sort",
        arity: -2,
        flags: Flags::WRITE_DENYOOM,
        summary: "a list's, set's or sorted set's elements sorted (BY, GET, LIMIT, ALPHA, DESC, STORE)",
        handler: Handler::Parse(|args| Ok(C::from(Sort::parse(args)?))),
    }]
}

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern …] [ASC|DESC] [ALPHA]
/// [STORE destination]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sort {
    key: Vec<u8>,
    /// The words after the key, read as the command runs (Redis reports their errors then).
    options: Vec<Vec<u8>>,
    /// Called by a script (`CLIENT_SCRIPT`): a set's unsorted output is sorted.
    pub(crate) from_script: bool,
}

/// SORT's options, read.
#[derive(Default)]
struct Options {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    by: Option<Vec<u8>>,
    gets: Vec<Vec<u8>>,
    store: Option<Vec<u8>>,
}

impl Options {
    fn parse(words: &[Vec<u8>]) -> Result<Options, ReplyError> {
        let mut options = Options::default();
        let mut at = 0;
        while let Some(word) = words.get(at) {
            let left = words.len() - at - 1;
            let word = word.to_ascii_lowercase();
            match word.as_slice() {
                b"asc" => options.desc = false,
                b"desc" => options.desc = true,
                b"alpha" => options.alpha = true,
                b"limit" if left >= 2 => {
                    options.limit = Some((parse_int(&words[at + 1])?, parse_int(&words[at + 2])?));
                    at += 2;
                }
                b"store" if left >= 1 => {
                    options.store = Some(words[at + 1].clone());
                    at += 1;
                }
                b"by" if left >= 1 => {
                    options.by = Some(words[at + 1].clone());
                    at += 1;
                }
                b"get" if left >= 1 => {
                    options.gets.push(words[at + 1].clone());
                    at += 1;
                }
                _ => return Err(ReplyError::syntax()),
            }
            at += 1;
        }
        Ok(options)
    }
}

/// One element to sort and what it is sorted by.
struct Element {
    value: Vec<u8>,
    score: f64,
    /// ALPHA BY: the other key's value, if it exists.
    by_value: Option<Vec<u8>>,
}

impl Sort {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        Ok(Sort {
            key: args.next_bytes()?,
            options: args.rest(),
            from_script: false,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Reply {
        self.run(db, now_ms)
            .unwrap_or_else(|error| Frame::from(error).into())
    }

    fn run(self, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
        let Options {
            desc,
            mut alpha,
            limit,
            mut by,
            gets,
            store,
        } = Options::parse(&self.options)?;
        let mut dont_sort = by.as_ref().is_some_and(|pattern| !pattern.contains(&b'*'));
        let (values, is_set) = match db.get(&self.key, now_ms).map(|entry| &entry.value) {
            None => (Vec::new(), false),
            Some(Value::List(items)) => (items.iter().cloned().collect(), false),
            Some(Value::Set(set)) => (set.members().into_iter().map(<[u8]>::to_vec).collect(), true),
            Some(Value::SortedSet(set)) => (set.iter().map(|(member, _)| member.to_vec()).collect(), false),
            Some(_) => return Err(crate::redis::db::wrong_type()),
        };
        if dont_sort && is_set && (store.is_some() || self.from_script) {
            dont_sort = false;
            alpha = true;
            by = None;
        }
        let (start, end) = range(limit, values.len() as i64);
        let mut elements: Vec<Element> = values
            .into_iter()
            .map(|value| Element {
                value,
                score: 0.0,
                by_value: None,
            })
            .collect();
        if dont_sort {
            // A list's or sorted set's own order, reversed by DESC; a set's as it lists.
            if desc && !is_set {
                elements.reverse();
            }
        } else {
            weigh(&mut elements, by.as_deref(), alpha, db, now_ms)?;
            elements.sort_by(|a, b| {
                let order = compare(a, b, alpha, by.is_some());
                if desc { order.reverse() } else { order }
            });
        }
        let chosen = elements
            .get(start.max(0) as usize..(end + 1).max(start.max(0)) as usize)
            .unwrap_or_default();
        let mut output = Vec::new();
        for element in chosen {
            if gets.is_empty() {
                output.push(Some(element.value.clone()));
            }
            for pattern in &gets {
                output.push(by_pattern(db, pattern, &element.value, now_ms));
            }
        }
        let Some(destination) = store else {
            let frames = output
                .into_iter()
                .map(|value| value.map_or(Frame::Null, Frame::BulkString));
            return Ok(Frame::Array(frames.collect()).into());
        };
        let stored = output.len() as i64;
        if output.is_empty() {
            db.remove(&destination, now_ms);
        } else {
            let list = output.into_iter().map(Option::unwrap_or_default).collect();
            db.store(destination, Value::List(list), None);
        }
        Ok(Frame::Integer(stored).into())
    }
}

/// LIMIT's offset and count as sort.c clamps them to `len` elements: the first and last
/// index to return (`end < start` for none).
fn range(limit: Option<(i64, i64)>, len: i64) -> (i64, i64) {
    let (offset, count) = limit.unwrap_or((0, -1));
    let start = offset.max(0).min(len);
    let count = count.max(-1).min(len);
    let end = if count < 0 { len - 1 } else { start + count - 1 };
    if start >= len {
        return (len - 1, len - 2);
    }
    (start, end.min(len - 1))
}

/// Reads each element's weight: its own value, or the value `by` names; numbers unless
/// `alpha`. A missing weight key weighs 0 (or sorts first with ALPHA).
fn weigh(
    elements: &mut [Element],
    by: Option<&[u8]>,
    alpha: bool,
    db: &mut Db,
    now_ms: u64,
) -> Result<(), ReplyError> {
    let mut unreadable = false;
    for element in elements.iter_mut() {
        let weight = match by {
            Some(pattern) => match by_pattern(db, pattern, &element.value, now_ms) {
                Some(weight) => weight,
                None => continue,
            },
            None => element.value.clone(),
        };
        if alpha {
            if by.is_some() {
                element.by_value = Some(weight);
            }
            continue;
        }
        match strtod(&weight) {
            Some(score) => element.score = score,
            None => unreadable = true,
        }
    }
    if unreadable {
        return Err(ReplyError(
            "ERR One or more scores can't be converted into double".into(),
        ));
    }
    Ok(())
}

/// A weight as sort.c reads it with `strtod`: leading spaces allowed, the whole word a
/// number (an empty one is 0), no NaN, no overflow.
fn strtod(word: &[u8]) -> Option<f64> {
    let trimmed = word.trim_ascii_start();
    if trimmed.is_empty() {
        return word.is_empty().then_some(0.0);
    }
    parse_double(trimmed)
}

/// sort.c `sortCompare`: by score then bytes, or with ALPHA by the BY value (a missing one
/// first) or the element's bytes.
fn compare(a: &Element, b: &Element, alpha: bool, by_pattern: bool) -> Ordering {
    match (alpha, by_pattern) {
        (false, _) => a
            .score
            .partial_cmp(&b.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.value.cmp(&b.value)),
        (true, true) => a.by_value.cmp(&b.by_value),
        (true, false) => a.value.cmp(&b.value),
    }
}

/// sort.c `lookupKeyByPattern`: `#` is the element itself; otherwise the first `*` is
/// replaced by the element and the string under that key read, or with `->field` after
/// the `*` that hash field.
fn by_pattern(db: &mut Db, pattern: &[u8], element: &[u8], now_ms: u64) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let arrow = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < after.len());
    let (suffix, field) = match arrow {
        Some(at) => (&after[..at], Some(&after[at + 2..])),
        None => (after, None),
    };
    let key = [&pattern[..star], element, suffix].concat();
    match (&db.get(&key, now_ms)?.value, field) {
        (Value::String(value), None) => Some(value.clone()),
        (Value::Hash(hash), Some(field)) => hash.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_clamped_as_sort_c_clamps_it() {
        assert_eq!(range(None, 5), (0, 4));
        assert_eq!(range(Some((1, 2)), 5), (1, 2));
        assert_eq!(range(Some((-3, 100)), 5), (0, 4));
        assert_eq!(range(Some((7, 1)), 5), (4, 3), "past the end: nothing");
        assert_eq!(range(None, 0), (-1, -2));
    }

    #[test]
    fn weights_are_read_as_strtod_reads_them() {
        assert_eq!(strtod(b""), Some(0.0));
        assert_eq!(strtod(b" 1.5"), Some(1.5));
        assert_eq!(strtod(b"1.5 "), None);
        assert_eq!(strtod(b"abc"), None);
        assert_eq!(strtod(b"nan"), None);
    }
}
