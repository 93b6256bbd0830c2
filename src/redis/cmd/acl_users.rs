//! The ACL users themselves (the model behind `ACL SETUSER` and `AUTH user password`, see
//! `acl.rs` for what is and is not modelled): kept in the keyspace, since a script's
//! `redis.acl_check_cmd` reaches only that, and so a leaf that the keyspace can hold
//! without reading the ACL command.

use std::collections::BTreeMap;

use super::descriptions::acl_facts;
use crate::redis::glob::glob_match;

/// The name of the user a connection is without AUTH of another.
pub(super) const DEFAULT_USER: &[u8] = b"default";

/// The categories Redis 7.0 has (`ACL CAT`).
const CATEGORIES: &[&str] = &[
    "all",
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// What a `+` or `-` rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Category(String),
    /// A command, or one subcommand of it (`config|get`).
    Command(Vec<u8>, Option<Vec<u8>>),
}

/// A user ACL SETUSER made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    enabled: bool,
    nopass: bool,
    passwords: Vec<Vec<u8>>,
    /// `+`/`-` rules in the order given: the last that names a command decides (Redis
    /// applies them one after the other to a bitmap that starts empty).
    rules: Vec<(bool, Target)>,
    keys: Vec<Vec<u8>>,
}

impl User {
    /// Applies one ACL SETUSER word (acl.c `ACLSetUser`); the error's reason in Redis's words.
    pub(super) fn apply(&mut self, word: &[u8]) -> Result<(), &'static str> {
        const SYNTAX: &str = "Syntax error";
        let lower = word.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"allkeys" | b"~*" => self.keys = vec![b"*".to_vec()],
            b"resetkeys" => self.keys.clear(),
            b"allcommands" => self.rules.push((true, Target::Category("all".into()))),
            b"nocommands" => self.rules.push((false, Target::Category("all".into()))),
            b"allchannels" | b"resetchannels" => {}
            b"reset" => *self = User::default(),
            _ => match word.split_first() {
                Some((b'>', password)) => {
                    self.nopass = false;
                    if !self.passwords.iter().any(|p| p == password) {
                        self.passwords.push(password.to_vec());
                    }
                }
                Some((b'<', password)) => {
                    let at = self.passwords.iter().position(|p| p == password);
                    let at =
                        at.ok_or("The password you are trying to remove from the user does not exist")?;
                    self.passwords.remove(at);
                }
                Some((b'~', pattern)) => {
                    if self.keys.iter().any(|p| p == b"*") {
                        return Err(
                            "Adding a pattern after the * pattern (or the 'allkeys' flag) is not \
                                    valid and does not have any effect. Try 'resetkeys' to start with an \
                                    empty list of patterns",
                        );
                    }
                    self.keys.push(pattern.to_vec());
                }
                Some((b'&', _)) => {}
                Some((sign @ (b'+' | b'-'), name)) => {
                    let target = target(&name.to_ascii_lowercase())?;
                    self.rules.push((*sign == b'+', target));
                }
                _ => return Err(SYNTAX),
            },
        }
        Ok(())
    }

    /// Whether the user may run `words` (a command Redis knows, with its `facts`): the
    /// command by its rules, then every key by its patterns.
    fn may_run<W: AsRef<[u8]>>(&self, words: &[W], categories: &[&[u8]], keys: [i64; 3]) -> bool {
        let name = words[0].as_ref().to_ascii_lowercase();
        let names = |target: &Target| match target {
            Target::Category(category) => {
                category == "all"
                    || categories
                        .iter()
                        .any(|c| c.strip_prefix(b"@") == Some(category.as_bytes()))
            }
            Target::Command(command, sub) => {
                *command == name
                    && sub
                        .as_ref()
                        .is_none_or(|sub| words.get(1).is_some_and(|w| w.as_ref().eq_ignore_ascii_case(sub)))
            }
        };
        let allowed = self
            .rules
            .iter()
            .rev()
            .find(|(_, target)| names(target))
            .is_some_and(|(allow, _)| *allow);
        allowed
            && key_words(words, keys)
                .iter()
                .all(|key| self.keys.iter().any(|p| glob_match(p, key)))
    }
}

/// The target of a `+`/`-` rule, if Redis knows the command or category.
fn target(name: &[u8]) -> Result<Target, &'static str> {
    const UNKNOWN: &str = "Unknown command or category name in ACL";
    if let Some(category) = name.strip_prefix(b"@") {
        let category = String::from_utf8_lossy(category).into_owned();
        return match CATEGORIES.contains(&category.as_str()) {
            true => Ok(Target::Category(category)),
            false => Err(UNKNOWN),
        };
    }
    let (command, sub) = match name.iter().position(|&b| b == b'|') {
        Some(at) => (&name[..at], Some(name[at + 1..].to_vec())),
        None => (name, None),
    };
    acl_facts(command).ok_or(UNKNOWN)?;
    Ok(Target::Command(command.to_vec(), sub))
}

/// The keys of `words` at COMMAND INFO's positions (first, last, step).
fn key_words<W: AsRef<[u8]>>(words: &[W], [first, last, step]: [i64; 3]) -> Vec<&[u8]> {
    if first <= 0 || step <= 0 {
        return Vec::new();
    }
    let count = words.len() as i64;
    let last = if last < 0 {
        count + last
    } else {
        last.min(count - 1)
    };
    (first..=last)
        .step_by(step as usize)
        .filter_map(|at| words.get(at as usize).map(AsRef::as_ref))
        .collect()
}

/// The users ACL SETUSER made, and the user of the script that is running (set by the node
/// before each script run: `redis.acl_check_cmd` reaches only the keyspace, where this is
/// kept).
#[derive(Debug, Default)]
pub struct Users {
    pub(super) by_name: BTreeMap<Vec<u8>, User>,
    /// `None`: the default user.
    pub script_user: Option<Vec<u8>>,
}

impl Users {
    /// Whether `password` logs `user` in (acl.c `ACLCheckUserCredentials`): a user ACL
    /// SETUSER made, enabled, with that password or `nopass`.
    pub fn authenticates(&self, user: &[u8], password: &[u8]) -> bool {
        self.by_name
            .get(user)
            .is_some_and(|u| u.enabled && (u.nopass || u.passwords.iter().any(|p| p == password)))
    }

    /// `redis.acl_check_cmd(command, args…)`: whether the running script's user may run
    /// `words`; an error for a command Redis does not know.
    pub fn check_for_script<W: AsRef<[u8]>>(&self, words: &[W]) -> Result<bool, String> {
        let invalid = || "ERR Invalid command passed to redis.acl_check_cmd()".to_string();
        let name = words.first().ok_or_else(invalid)?.as_ref().to_ascii_lowercase();
        let (categories, keys) = acl_facts(&name).ok_or_else(invalid)?;
        Ok(
            match self.script_user.as_ref().and_then(|user| self.by_name.get(user)) {
                None => true,
                Some(user) => user.may_run(words, &categories, keys),
            },
        )
    }
}
