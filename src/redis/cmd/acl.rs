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

use super::acl_users::{DEFAULT_USER, Users};
use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec};
use crate::redis::Frame;

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
                let mut changed = users.by_name.get(&name).cloned().unwrap_or_default();
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
                users.by_name.insert(name, changed);
                super::ok()
            }
            Acl::DelUser(names) => {
                if names.iter().any(|name| name == DEFAULT_USER) {
                    return Frame::Error("ERR The 'default' user cannot be removed".into());
                }
                let removed = names
                    .iter()
                    .filter(|name| users.by_name.remove(*name).is_some())
                    .count();
                Frame::Integer(removed as i64)
            }
            Acl::Users => {
                let mut names = vec![DEFAULT_USER.to_vec()];
                names.extend(users.by_name.keys().cloned());
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
