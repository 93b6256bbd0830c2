//! COMMAND: the commands the node answers, as Redis 7.0 describes them.
//!
//! `COUNT` and `LIST` come from the command tables ([`FAMILIES`]). `INFO` and `DOCS` give,
//! for each command of the tables, redis-server 7.0.15's own description of it (flags, key
//! positions and key specs, ACL categories, tips, subcommands; summary, arguments), which
//! clients read to route keys. Those descriptions are Redis's data, not the node's logic: the
//! test tests/redis_command.rs reads them from a real redis-server into
//! [`DESCRIPTIONS_FILE`] (`UPDATE_COMMAND_DESCRIPTIONS=1` rewrites it), and fails when the
//! file differs from what Redis says or when a description's arity or write flag differs
//! from the table's.

use super::error::ReplyError;
use super::spec::Args;
use super::{FAMILIES, Spec};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::glob::glob_match;

/// Where the descriptions live, for the test that rewrites them.
pub const DESCRIPTIONS_FILE: &str = "src/redis/cmd/redis-7.0-commands.resp3";

/// redis-server 7.0.15's RESP3 replies to `COMMAND INFO` and then `COMMAND DOCS`, each
/// asked for every command of the tables.
const DESCRIPTIONS: &[u8] = include_bytes!("redis-7.0-commands.resp3");

/// The COMMAND command: `COMMAND [COUNT | LIST [FILTERBY MODULE name | ACLCAT category |
/// PATTERN glob] | INFO [name ...] | DOCS [name ...]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Describe {
    Count,
    List(Option<Filter>),
    /// The names asked for; none: every command.
    Info(Vec<Vec<u8>>),
    Docs(Vec<Vec<u8>>),
}

/// COMMAND LIST's filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// No module is loaded: nothing matches.
    Module,
    AclCategory(Vec<u8>),
    Pattern(Vec<u8>),
}

impl Describe {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let words = args.rest();
        let Some((subcommand, rest)) = words.split_first() else {
            return Ok(Describe::Info(vec![]));
        };
        match subcommand.to_ascii_uppercase().as_slice() {
            b"COUNT" if rest.is_empty() => Ok(Describe::Count),
            b"COUNT" => Err(ReplyError::wrong_arity("command|count")),
            b"INFO" => Ok(Describe::Info(rest.to_vec())),
            b"DOCS" => Ok(Describe::Docs(rest.to_vec())),
            b"LIST" => match rest {
                [] => Ok(Describe::List(None)),
                [filterby, kind, value] if filterby.eq_ignore_ascii_case(b"FILTERBY") => {
                    let filter = match kind.to_ascii_uppercase().as_slice() {
                        b"MODULE" => Filter::Module,
                        b"ACLCAT" => Filter::AclCategory(value.to_ascii_lowercase()),
                        b"PATTERN" => Filter::Pattern(value.clone()),
                        _ => return Err(ReplyError::syntax()),
                    };
                    Ok(Describe::List(Some(filter)))
                }
                _ => Err(ReplyError::syntax()),
            },
            _ => Err(ReplyError(format!(
                "ERR unknown subcommand '{}'. Try COMMAND HELP.",
                String::from_utf8_lossy(subcommand)
            ))),
        }
    }

    pub(crate) fn apply(self) -> Reply {
        let specs = || FAMILIES.iter().flat_map(|(_, table)| table.iter());
        match self {
            Describe::Count => Frame::Integer(specs().count() as i64).into(),
            Describe::List(filter) => Frame::Array(
                specs()
                    .filter(|spec| filter.as_ref().is_none_or(|filter| filter.admits(spec)))
                    .map(|spec| Frame::BulkString(spec.name.as_bytes().to_vec()))
                    .collect(),
            )
            .into(),
            Describe::Info(names) => {
                let entries: Vec<Option<&[u8]>> = if names.is_empty() {
                    specs().map(|spec| described(spec.name).map(|d| d.info)).collect()
                } else {
                    names
                        .iter()
                        .map(|name| find(name).and_then(|spec| described(spec.name)).map(|d| d.info))
                        .collect()
                };
                let mut out = format!("*{}\r\n", entries.len()).into_bytes();
                for entry in entries {
                    out.extend(entry.unwrap_or(b"_\r\n"));
                }
                Reply::Resp3(out)
            }
            Describe::Docs(names) => {
                let found: Vec<Description> = if names.is_empty() {
                    specs().filter_map(|spec| described(spec.name)).collect()
                } else {
                    names
                        .iter()
                        .filter_map(|name| find(name).and_then(|spec| described(spec.name)))
                        .collect()
                };
                let mut out = format!("%{}\r\n", found.len()).into_bytes();
                for description in found {
                    out.extend(format!("${}\r\n{}\r\n", description.name.len(), description.name).as_bytes());
                    out.extend(description.docs);
                }
                Reply::Resp3(out)
            }
        }
    }
}

impl Filter {
    fn admits(&self, spec: &Spec<super::Command>) -> bool {
        match self {
            Filter::Module => false,
            Filter::Pattern(glob) => glob_match(glob, spec.name.as_bytes()),
            Filter::AclCategory(category) => described(spec.name).is_some_and(|d| {
                let wanted = [b"@".as_slice(), category].concat();
                acl_categories(d.info)
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&wanted))
            }),
        }
    }
}

/// The table's command named `name` (any case).
fn find(name: &[u8]) -> Option<&'static Spec<super::Command>> {
    FAMILIES
        .iter()
        .flat_map(|(_, table)| table.iter())
        .find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Redis's description of one command: its COMMAND INFO entry and its COMMAND DOCS value,
/// as RESP3 bytes.
struct Description {
    name: &'static str,
    info: &'static [u8],
    docs: &'static [u8],
}

/// Redis's description of the command `name`, if the file holds one.
fn described(name: &'static str) -> Option<Description> {
    let info_end = element_end(DESCRIPTIONS, 0)?;
    let info = children(DESCRIPTIONS, 0)?
        .into_iter()
        .map(|(start, end)| &DESCRIPTIONS[start..end])
        .find(|entry| entry_name(entry) == Some(name.as_bytes()))?;
    let docs_map = children(DESCRIPTIONS, info_end)?;
    let docs = docs_map
        .chunks(2)
        .find(|pair| bulk_text(&DESCRIPTIONS[pair[0].0..pair[0].1]) == Some(name.as_bytes()))
        .and_then(|pair| pair.get(1))
        .map(|(start, end)| &DESCRIPTIONS[*start..*end])?;
    Some(Description { name, info, docs })
}

/// The name a COMMAND INFO entry describes (its first element).
fn entry_name(entry: &[u8]) -> Option<&[u8]> {
    let (start, end) = *children(entry, 0)?.first()?;
    bulk_text(&entry[start..end])
}

/// What ACL checks read of the Redis 7.0 command `name` (lower-case), if Redis has one: its
/// categories (`@write`…) and its keys' positions (COMMAND INFO's first key, last key and
/// step: 0 for none, a negative last counted from the end).
pub(crate) fn acl_facts(name: &[u8]) -> Option<(Vec<&'static [u8]>, [i64; 3])> {
    const FIRST_KEY: usize = 3;
    let entry = children(DESCRIPTIONS, 0)?
        .into_iter()
        .map(|(start, end)| &DESCRIPTIONS[start..end])
        .find(|entry| entry_name(entry) == Some(name))?;
    let fields = children(entry, 0)?;
    let number = |at: usize| {
        fields
            .get(at)
            .and_then(|(start, _)| header(entry, *start))
            .map(|h| h.1)
    };
    let keys = [number(FIRST_KEY)?, number(FIRST_KEY + 1)?, number(FIRST_KEY + 2)?];
    Some((acl_categories(entry), keys))
}

/// The ACL categories of a COMMAND INFO entry (its seventh element), as `@name` words.
fn acl_categories(entry: &[u8]) -> Vec<&[u8]> {
    const CATEGORIES: usize = 6;
    let Some((start, _)) = children(entry, 0).and_then(|c| c.get(CATEGORIES).copied()) else {
        return vec![];
    };
    children(entry, start)
        .unwrap_or_default()
        .into_iter()
        .map(|(s, e)| &entry[s..e])
        .map(|simple| simple.strip_suffix(b"\r\n").unwrap_or(simple))
        .map(|simple| simple.strip_prefix(b"+").unwrap_or(simple))
        .collect()
}

/// The text of a bulk string element (`$n\r\ntext\r\n`).
fn bulk_text(element: &[u8]) -> Option<&[u8]> {
    let (kind, _, body) = header(element, 0)?;
    (kind == b'$').then(|| &element[body..element.len().saturating_sub(2)])
}

/// An element's header line at `start`: its type byte, its number (a length, a count or an
/// integer; 0 when it has none), and where the line ends.
fn header(bytes: &[u8], start: usize) -> Option<(u8, i64, usize)> {
    let kind = *bytes.get(start)?;
    let line_end = start + bytes[start..].windows(2).position(|w| w == b"\r\n")?;
    let number = std::str::from_utf8(&bytes[start + 1..line_end])
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0);
    Some((kind, number, line_end + 2))
}

/// Where the RESP3 element that starts at `start` ends.
pub fn element_end(bytes: &[u8], start: usize) -> Option<usize> {
    let (kind, number, body) = header(bytes, start)?;
    match kind {
        b'$' | b'=' | b'!' if number >= 0 => {
            let end = body + usize::try_from(number).ok()? + 2;
            (end <= bytes.len()).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let mut end = body;
            for _ in 0..aggregate_len(kind, number) {
                end = element_end(bytes, end)?;
            }
            Some(end)
        }
        _ => Some(body),
    }
}

/// How many elements an aggregate header counts: a map's pairs count twice.
fn aggregate_len(kind: u8, number: i64) -> usize {
    let count = usize::try_from(number).unwrap_or(0);
    if matches!(kind, b'%' | b'|') {
        count * 2
    } else {
        count
    }
}

/// The spans of the elements of the aggregate that starts at `start` (a map's keys and
/// values in turn).
fn children(bytes: &[u8], start: usize) -> Option<Vec<(usize, usize)>> {
    let (kind, number, mut at) = header(bytes, start)?;
    if !matches!(kind, b'*' | b'~' | b'>' | b'%' | b'|') {
        return None;
    }
    let mut spans = Vec::new();
    for _ in 0..aggregate_len(kind, number) {
        let end = element_end(bytes, at)?;
        spans.push((at, end));
        at = end;
    }
    Some(spans)
}

/// RESP3 bytes rewritten as Redis writes the same reply in RESP2: maps and sets become
/// arrays (a map's keys and values in turn), `_` becomes `$-1`, doubles bulk strings and
/// booleans integers.
pub fn resp3_to_resp2(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some((kind, number, body)) = header(bytes, at) {
        let line = &bytes[at + 1..body - 2];
        match kind {
            b'%' => out.extend(format!("*{}\r\n", number * 2).as_bytes()),
            b'~' => out.extend(format!("*{number}\r\n").as_bytes()),
            b'_' => out.extend(b"$-1\r\n"),
            b',' => {
                out.extend(format!("${}\r\n{}\r\n", line.len(), String::from_utf8_lossy(line)).as_bytes())
            }
            b'#' => out.extend(if line == b"t" { b":1\r\n" } else { b":0\r\n" }),
            b'$' if number >= 0 => {
                let end = body + number as usize + 2;
                out.extend(&bytes[at..end.min(bytes.len())]);
                at = end;
                continue;
            }
            _ => out.extend(&bytes[at..body]),
        }
        at = body;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_of_the_tables_is_described_with_its_arity() {
        for spec in FAMILIES.iter().flat_map(|(_, table)| table.iter()) {
            let description = described(spec.name)
                .unwrap_or_else(|| panic!("{} has no description in {DESCRIPTIONS_FILE}", spec.name));
            let fields = children(description.info, 0).expect("an entry is an array");
            let (start, end) = fields[1];
            assert_eq!(
                &description.info[start..end],
                format!(":{}\r\n", spec.arity).as_bytes(),
                "{}'s arity",
                spec.name
            );
            let (start, end) = fields[2];
            let flags = &description.info[start..end];
            let redis_writes = flags.windows(8).any(|w| w == b"+write\r\n");
            assert_eq!(redis_writes, spec.flags.write, "{}'s write flag", spec.name);
            let redis_denyoom = flags.windows(10).any(|w| w == b"+denyoom\r\n");
            assert_eq!(redis_denyoom, spec.flags.denyoom, "{}'s denyoom flag", spec.name);
        }
    }

    #[test]
    fn resp3_maps_sets_and_nulls_become_resp2_arrays_and_null_bulks() {
        let resp3 = b"%2\r\n$1\r\na\r\n~2\r\n+x\r\n:1\r\n$1\r\nb\r\n_\r\n";
        assert_eq!(element_end(resp3, 0), Some(resp3.len()));
        assert_eq!(
            resp3_to_resp2(resp3),
            b"*4\r\n$1\r\na\r\n*2\r\n+x\r\n:1\r\n$1\r\nb\r\n$-1\r\n".to_vec()
        );
    }
}
