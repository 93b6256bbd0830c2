//! COMMAND: the commands the node answers, as Redis 7.0 describes them.
//!
//! `COUNT` and `LIST` come from the command tables ([`FAMILIES`]). `INFO` and `DOCS` give,
//! for each command of the tables, redis-server 7.0.15's own description of it (flags, key
//! positions and key specs, ACL categories, tips, subcommands; summary, arguments), which
//! clients read to route keys. Those descriptions are Redis's data, not the node's logic: the
//! test tests/node/redis_command.rs reads them from a real redis-server into
//! [`DESCRIPTIONS_FILE`] (`UPDATE_COMMAND_DESCRIPTIONS=1` rewrites it), and fails when the
//! file differs from what Redis says or when a description's arity or write flag differs
//! from the table's.

use super::descriptions::{DESCRIPTIONS, acl_categories, bulk_text, children, element_end, entry_name};
use super::error::ReplyError;
use super::spec::Args;
use super::{FAMILIES, Spec};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::glob::glob_match;

/// Where the descriptions live, for the test that rewrites them.
pub const DESCRIPTIONS_FILE: &str = "src/redis/cmd/redis-7.0-commands.resp3";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::cmd::descriptions::resp3_to_resp2;

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
