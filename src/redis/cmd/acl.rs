//! ACL users, as far as Redis's own tests of scripts need them: `ACL SETUSER` with on/off,
//! passwords, `+`/`-` commands and `@categories`, key patterns; `AUTH user password`; and
//! the check `redis.acl_check_cmd` makes (acl.c `ACLCheckAllUserCommandPerm`).
//!
//! Not modelled: the checks are not applied to the commands a connection sends (only a
//! script's `redis.acl_check_cmd` asks them), nor to pub/sub channels (`&pattern` is
//! accepted and kept nowhere); no selectors, no `%R~`/`%W~` key patterns, no password
//! hashes (`#`), no ACL LOG, LIST, GETUSER, SAVE or LOAD. The default user is the one
//! `requirepass` describes and ACL SETUSER does not change it. The commands known to the
//! rules and to `redis.acl_check_cmd` are those the node serves (their categories and key
//! positions are redis-server's, from `redis-7.0-commands.resp3`): a Redis command the node
//! does not serve is "unknown" here. Keys are found by COMMAND INFO's first/last/step, so
//! the keys of commands with movable keys (EVAL, SORT's BY/GET) are not checked.

use std::collections::BTreeMap;

use super::command::acl_facts;
use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec};
use crate::redis::Frame;
use crate::redis::glob::glob_match;

/// The ACL command's table.
pub(super) const fn commands<C: From<Acl>>() -> [Spec<C>; 1] {
    [Spec {
        name: "acl",
        arity: -2,
        flags: Flags::NOSCRIPT,
        summary: "users: SETUSER, DELUSER, USERS, WHOAMI (checked only by redis.acl_check_cmd)",
        handler: Handler::Parse(|args| Ok(C::from(Acl::parse(args)?))),
    }]
}

/// The name of the user a connection is without AUTH of another.
const DEFAULT_USER: &[u8] = b"default";

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
    fn apply(&mut self, word: &[u8]) -> Result<(), &'static str> {
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
    fn may_run(&self, words: &[Vec<u8>], categories: &[&[u8]], keys: [i64; 3]) -> bool {
        let name = words[0].to_ascii_lowercase();
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
                        .is_none_or(|sub| words.get(1).is_some_and(|w| w.eq_ignore_ascii_case(sub)))
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
fn key_words(words: &[Vec<u8>], [first, last, step]: [i64; 3]) -> Vec<&[u8]> {
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
        .filter_map(|at| words.get(at as usize).map(Vec::as_slice))
        .collect()
}

/// The users ACL SETUSER made, and the user of the script that is running (set by the node
/// before each script run: `redis.acl_check_cmd` reaches only the keyspace, where this is
/// kept).
#[derive(Debug, Default)]
pub struct Users {
    users: BTreeMap<Vec<u8>, User>,
    /// `None`: the default user.
    pub script_user: Option<Vec<u8>>,
}

impl Users {
    /// Whether `password` logs `user` in (acl.c `ACLCheckUserCredentials`): a user ACL
    /// SETUSER made, enabled, with that password or `nopass`.
    pub fn authenticates(&self, user: &[u8], password: &[u8]) -> bool {
        self.users
            .get(user)
            .is_some_and(|u| u.enabled && (u.nopass || u.passwords.iter().any(|p| p == password)))
    }

    /// `redis.acl_check_cmd(command, args…)`: whether the running script's user may run
    /// `words`; an error for a command Redis does not know.
    pub fn check_for_script(&self, words: &[Vec<u8>]) -> Result<bool, String> {
        let invalid = || "ERR Invalid command passed to redis.acl_check_cmd()".to_string();
        let name = words.first().ok_or_else(invalid)?.to_ascii_lowercase();
        let (categories, keys) = acl_facts(&name).ok_or_else(invalid)?;
        Ok(
            match self.script_user.as_ref().and_then(|user| self.users.get(user)) {
                None => true,
                Some(user) => user.may_run(words, &categories, keys),
            },
        )
    }
}

/// `ACL SETUSER | DELUSER | USERS | WHOAMI`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acl {
    SetUser(Vec<u8>, Vec<Vec<u8>>),
    DelUser(Vec<Vec<u8>>),
    Users,
    WhoAmI,
}

impl Acl {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let subcommand = args.next_bytes()?;
        let mut rest = args.rest();
        let wrong_arity = |name: &str| ReplyError::wrong_arity(&format!("acl|{name}"));
        match subcommand.to_ascii_lowercase().as_slice() {
            b"setuser" if rest.is_empty() => Err(wrong_arity("setuser")),
            b"setuser" => {
                let user = rest.remove(0);
                Ok(Acl::SetUser(user, rest))
            }
            b"deluser" if rest.is_empty() => Err(wrong_arity("deluser")),
            b"deluser" => Ok(Acl::DelUser(rest)),
            b"users" if rest.is_empty() => Ok(Acl::Users),
            b"users" => Err(wrong_arity("users")),
            b"whoami" if rest.is_empty() => Ok(Acl::WhoAmI),
            b"whoami" => Err(wrong_arity("whoami")),
            _ => Err(ReplyError(format!(
                "ERR unknown subcommand '{}'. Try ACL HELP.",
                String::from_utf8_lossy(&subcommand)
            ))),
        }
    }

    /// Runs it on the node's `users`, for a connection logged in as `user` (`None`: the
    /// default user).
    pub(crate) fn apply(self, users: &mut Users, user: Option<&[u8]>) -> Frame {
        match self {
            Acl::SetUser(name, words) => {
                // All or nothing: the words are applied to a copy (acl.c `ACLCreateUnlinkedUser`).
                let mut changed = users.users.get(&name).cloned().unwrap_or_default();
                for word in &words {
                    if let Err(reason) = changed.apply(word) {
                        return Frame::Error(format!(
                            "ERR Error in ACL SETUSER modifier '{}': {reason}",
                            String::from_utf8_lossy(word)
                        ));
                    }
                }
                if name == DEFAULT_USER {
                    return Frame::Error(
                        "ERR ACL SETUSER of the default user is not modelled by locksim".into(),
                    );
                }
                users.users.insert(name, changed);
                super::ok()
            }
            Acl::DelUser(names) => {
                if names.iter().any(|name| name == DEFAULT_USER) {
                    return Frame::Error("ERR The 'default' user cannot be removed".into());
                }
                let removed = names
                    .iter()
                    .filter(|name| users.users.remove(*name).is_some())
                    .count();
                Frame::Integer(removed as i64)
            }
            Acl::Users => {
                let mut names = vec![DEFAULT_USER.to_vec()];
                names.extend(users.users.keys().cloned());
                names.sort();
                Frame::Array(names.into_iter().map(Frame::BulkString).collect())
            }
            Acl::WhoAmI => Frame::BulkString(user.unwrap_or(DEFAULT_USER).to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<u8>> {
        text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn bob() -> Users {
        let mut users = Users::default();
        let reply =
            Acl::SetUser(b"bob".to_vec(), words("on >123 +@scripting +set ~x*")).apply(&mut users, None);
        assert_eq!(reply, super::super::ok());
        users.script_user = Some(b"bob".to_vec());
        users
    }

    #[test]
    fn a_user_may_run_the_commands_and_keys_it_was_given_and_nothing_else() {
        let users = bob();
        assert!(users.authenticates(b"bob", b"123"));
        assert!(!users.authenticates(b"bob", b"124"));
        assert_eq!(users.check_for_script(&words("set xx 1")), Ok(true));
        assert_eq!(
            users.check_for_script(&words("hset xx f 1")),
            Ok(false),
            "no such command rule"
        );
        assert_eq!(
            users.check_for_script(&words("set yy 1")),
            Ok(false),
            "no such key pattern"
        );
        assert_eq!(
            users.check_for_script(&words("eval x 0")),
            Ok(true),
            "in @scripting"
        );
        assert!(users.check_for_script(&words("invalid-cmd arg")).is_err());
    }

    #[test]
    fn a_bad_modifier_changes_nothing_and_is_named() {
        let mut users = bob();
        let reply = Acl::SetUser(b"bob".to_vec(), words("off +nosuchcommand")).apply(&mut users, None);
        assert_eq!(
            reply,
            Frame::Error(
                "ERR Error in ACL SETUSER modifier '+nosuchcommand': Unknown command or category name in ACL"
                    .into()
            )
        );
        assert!(users.authenticates(b"bob", b"123"), "still on");
    }
}
