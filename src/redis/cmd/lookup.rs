//! Finding a request's command in the families' tables, once per request.
//!
//! Every request of a client, of EXEC's queue and of a script's `redis.call` is looked up
//! here, in the simulator and on `locksim serve` alike, so the lookup is a hash of the
//! lower-cased name (written on the stack, no allocation), not a scan of every table. The
//! [`Lookup`] it gives names the request too (INFO commandstats, CLIENT LIST's `cmd=`):
//! the name is lower-cased once, by the lookup, and a known command's name is its table's.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use super::error::ReplyError;
use super::spec::{Flags, Spec};
use super::{
    Command, acl, geo, hashes, keys, lists, pubsub, replication, scripting, server, session, strings,
};
use super::{sets, sort, streams, transactions, zsets};
use crate::redis::name_hash::BuildNameHasher;

/// Every family's table: the order docs/redis-coverage.md lists them in.
pub(crate) const FAMILIES: &[(&str, &[Spec<Command>])] = &[
    ("strings", &strings::commands::<Command>()),
    ("keys", &keys::commands::<Command>()),
    ("hashes", &hashes::commands::<Command>()),
    ("sets", &sets::commands::<Command>()),
    ("sorted sets", &zsets::commands::<Command>()),
    ("sort", &sort::commands::<Command>()),
    ("streams", &streams::commands::<Command>()),
    ("geo", &geo::commands::<Command>()),
    ("lists", &lists::commands::<Command>()),
    ("pub/sub", &pubsub::commands::<Command>()),
    ("transactions", &transactions::commands::<Command>()),
    ("scripting", &scripting::commands::<Command>()),
    ("server", &server::commands::<Command>()),
    ("connection", &session::commands::<Command>()),
    ("acl", &acl::commands::<Command>()),
    ("replication", &replication::commands::<Command>()),
];

/// The longest command name in the tables fits in this many bytes; a longer name is
/// unknown without being looked at further.
const MAX_NAME_BYTES: usize = 24;

/// Every command by its lower-case name, built at the first lookup.
static BY_NAME: LazyLock<HashMap<&'static [u8], &'static Spec<Command>, BuildNameHasher>> =
    LazyLock::new(|| {
        FAMILIES
            .iter()
            .flat_map(|(_, table)| table.iter())
            .map(|spec| (spec.name.as_bytes(), spec))
            .collect()
    });

/// The command named `name`, in any case (Redis's command table compares names with
/// `strcasecmp`; every name here is ASCII).
fn find(name: &[u8]) -> Option<&'static Spec<Command>> {
    let mut lower = [0u8; MAX_NAME_BYTES];
    let lower = lower.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    BY_NAME.get(&*lower).copied()
}

/// Why a command name was refused before its arguments were looked at.
pub(super) enum Rejection {
    Unknown,
    WrongArity(&'static str),
}

/// The commands whose first argument is a subcommand: Redis names their requests
/// `name|sub` (in errors, CLIENT LIST's `cmd=`, INFO commandstats).
const CONTAINERS: &[&str] = &[
    "acl", "client", "command", "config", "function", "pubsub", "script", "xgroup",
];

/// A request's command, looked up once: the server names the request by it, then parses
/// the request with it.
#[derive(Clone, Copy)]
pub struct Lookup {
    spec: Option<&'static Spec<Command>>,
}

impl Lookup {
    /// Looks up the command the request `words` names.
    pub fn of<W: AsRef<[u8]>>(words: &[W]) -> Lookup {
        Lookup {
            spec: words.first().and_then(|name| find(name.as_ref())),
        }
    }

    /// The name Redis gives the request `words`: its command's, lower-case (`get`), with
    /// the subcommand of a container (`client|list`).
    pub fn name<W: AsRef<[u8]>>(self, words: &[W]) -> Cow<'static, str> {
        let lower = |word: &W| String::from_utf8_lossy(word.as_ref()).to_ascii_lowercase();
        match (self.spec, words) {
            (Some(spec), [_, subcommand, ..]) if CONTAINERS.contains(&spec.name) => {
                Cow::Owned(format!("{}|{}", spec.name, lower(subcommand)))
            }
            (Some(spec), _) => Cow::Borrowed(spec.name),
            (None, [command, ..]) => Cow::Owned(lower(command)),
            (None, []) => Cow::Borrowed(""),
        }
    }

    /// Whether a command was found and the request's word count fits its arity: Redis
    /// answers the others with their error even while a script runs long.
    pub fn fits<W: AsRef<[u8]>>(self, words: &[W]) -> bool {
        self.checked(words).is_ok()
    }

    /// The flags of the command found, whatever the word count.
    pub(super) fn flags(self) -> Option<Flags> {
        self.spec.map(|spec| spec.flags)
    }

    /// The command found, once the request's word count fits its arity.
    pub(super) fn checked<W: AsRef<[u8]>>(self, words: &[W]) -> Result<&'static Spec<Command>, Rejection> {
        let spec = self.spec.ok_or(Rejection::Unknown)?;
        if !fits_arity(spec.arity, words.len()) {
            return Err(Rejection::WrongArity(spec.name));
        }
        Ok(spec)
    }
}

/// Whether a request of `words` words has the count `arity` asks (`n` exactly, `-n` at least).
fn fits_arity(arity: i32, words: usize) -> bool {
    let (count, arity) = (words as i64, i64::from(arity));
    if arity >= 0 {
        count == arity
    } else {
        count >= -arity
    }
}

/// Redis 7.0 commands the node does not serve that Redis refuses to scripts (`noscript`):
/// the name, the one subcommand refused when the others are not (CLUSTER RESET), and the
/// arity of the command (a subcommand's here is never stricter).
const UNSERVED_NOSCRIPT: &[(&str, Option<&str>, i32)] = &[
    ("brpoplpush", None, 4),
    ("blmove", None, 6),
    ("bzpopmin", None, -3),
    ("bzpopmax", None, -3),
    ("cluster", Some("reset"), -2),
];

/// How Redis refuses a script's call `words` of a command in [`UNSERVED_NOSCRIPT`], as it
/// looks the command up: its arity first, then its `noscript` flag. With the refusal, the
/// name INFO commandstats credits it to (`cluster|reset`). `None` for any other command.
pub(super) fn refused_to_scripts_unserved<W: AsRef<[u8]>>(
    lookup: Lookup,
    words: &[W],
) -> Option<(ReplyError, String)> {
    if lookup.spec.is_some() {
        return None;
    }
    let first = words.first()?.as_ref();
    let (command, subcommand, arity) = UNSERVED_NOSCRIPT
        .iter()
        .find(|(name, _, _)| first.eq_ignore_ascii_case(name.as_bytes()))?;
    if !fits_arity(*arity, words.len()) {
        return Some((ReplyError::wrong_arity_from_script(), command.to_string()));
    }
    let name = match subcommand {
        Some(subcommand)
            if words
                .get(1)
                .is_some_and(|word| word.as_ref().eq_ignore_ascii_case(subcommand.as_bytes())) =>
        {
            format!("{command}|{subcommand}")
        }
        Some(_) => return None,
        None => command.to_string(),
    };
    Some((ReplyError::not_from_script(), name))
}

/// The name Redis gives the request `words` (see [`Lookup::name`]).
pub fn full_name<W: AsRef<[u8]>>(words: &[W]) -> String {
    Lookup::of(words).name(words).into_owned()
}

/// Redis's reply to an unknown command: the name and the first arguments (about 128
/// bytes of them), each quoted.
pub(super) fn unknown_command(words: &[&[u8]]) -> ReplyError {
    const SHOWN_BYTES: usize = 128;
    let Some((name, args)) = words.split_first() else {
        return ReplyError("ERR unknown command '', with args beginning with: ".into());
    };
    let mut shown = String::new();
    for arg in args {
        if shown.len() >= SHOWN_BYTES {
            break;
        }
        let room = SHOWN_BYTES - shown.len();
        shown.push_str(&format!(
            "'{}' ",
            String::from_utf8_lossy(&arg[..arg.len().min(room)])
        ));
    }
    let name = &name[..name.len().min(SHOWN_BYTES)];
    ReplyError(
        format!(
            "ERR unknown command '{}', with args beginning with: {shown}",
            String::from_utf8_lossy(name)
        )
        .replace(['\r', '\n'], " "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn every_command_is_found_by_its_name_in_any_case() {
        for spec in FAMILIES.iter().flat_map(|(_, table)| table.iter()) {
            assert!(
                spec.name.len() <= MAX_NAME_BYTES,
                "{} is longer than MAX_NAME_BYTES",
                spec.name
            );
            assert_eq!(
                spec.name,
                spec.name.to_ascii_lowercase(),
                "table names are lower-case"
            );
            for name in [spec.name.to_string(), spec.name.to_ascii_uppercase()] {
                let found = find(name.as_bytes()).map(|found| found.name);
                assert_eq!(found, Some(spec.name), "{name}");
            }
        }
        assert_eq!(
            BY_NAME.len(),
            FAMILIES.iter().map(|(_, table)| table.len()).sum::<usize>(),
            "no name is in two tables"
        );
    }

    #[test]
    fn unknown_and_too_long_names_are_not_found() {
        for name in ["", "gett", "ge", "get\0", "x".repeat(MAX_NAME_BYTES + 1).as_str()] {
            assert!(find(name.as_bytes()).is_none(), "{name:?}");
        }
    }

    #[test]
    fn unserved_noscript_commands_are_refused_to_scripts_under_redis_names() {
        // Read from redis-server 7.0.15's INFO commandstats after each call from a script.
        let refused = |w: &[&str]| {
            let words = words(w);
            refused_to_scripts_unserved(Lookup::of(&words), &words).map(|(error, name)| (error.0, name))
        };
        let not_allowed = |name: &str| Some((ReplyError::not_from_script().0, name.to_string()));
        let wrong_count = |name: &str| Some((ReplyError::wrong_arity_from_script().0, name.to_string()));
        assert_eq!(refused(&["BRPOPLPUSH", "a", "b", "0"]), not_allowed("brpoplpush"));
        assert_eq!(refused(&["brpoplpush", "a"]), wrong_count("brpoplpush"));
        assert_eq!(
            refused(&["cluster", "Reset", "hard"]),
            not_allowed("cluster|reset")
        );
        assert_eq!(refused(&["cluster"]), wrong_count("cluster"));
        assert_eq!(refused(&["cluster", "info"]), None);
        assert_eq!(refused(&["get", "k"]), None);
        assert_eq!(refused(&[]), None);
    }

    #[test]
    fn requests_are_named_as_redis_names_them() {
        let name = |w: &[&str]| full_name(&words(w));
        assert_eq!(name(&["GeT", "k"]), "get");
        assert_eq!(name(&["CLIENT", "LIST"]), "client|list");
        assert_eq!(name(&["client"]), "client");
        assert_eq!(name(&["Config", "GET", "x"]), "config|get");
        assert_eq!(name(&["NoSuch", "a"]), "nosuch");
        assert_eq!(name(&[]), "");
    }
}
