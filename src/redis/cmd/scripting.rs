//! EVAL.
//!
//! Until the node embeds a Lua interpreter, it runs the lock scripts it knows natively,
//! recognised by the SHA1 of their text, and refuses any other script with a
//! NOSCRIPT-style error that says so.

use super::{Args, Frame, ReplyError, request};
use crate::client::scripts;
use crate::redis::db::Db;

/// `EVAL script numkeys [key ...] [arg ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eval {
    pub script: String,
    pub keys: Vec<Vec<u8>>,
    pub args: Vec<Vec<u8>>,
}

impl Eval {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let script = String::from_utf8_lossy(&args.next_bytes()?).into_owned();
        let numkeys = args.next_int()?;
        let mut rest = args.rest();
        if numkeys < 0 {
            return Err(ReplyError("ERR Number of keys can't be negative".into()));
        }
        if numkeys as usize > rest.len() {
            return Err(ReplyError(
                "ERR Number of keys can't be greater than number of args".into(),
            ));
        }
        let args = rest.split_off(numkeys as usize);
        Ok(Eval {
            script,
            keys: rest,
            args,
        })
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Frame {
        let sha = sha1_smol::Sha1::from(&self.script).digest().to_string();
        if sha == *scripts::RELEASE_SHA1 {
            let (Some(key), Some(token)) = (self.keys.first(), self.args.first()) else {
                // KEYS[1] or ARGV[1] is nil, and redis.call refuses nil arguments.
                return ReplyError(format!(
                    "ERR Lua redis lib command arguments must be strings or integers script: {sha}, on @user_script:1."
                ))
                .into();
            };
            return compare_and_delete(db, now_ms, key, token);
        }
        ReplyError(format!(
            "NOSCRIPT locksim runs only the known lock scripts; no script with SHA1 {sha}"
        ))
        .into()
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        let mut words = vec![
            b"EVAL".to_vec(),
            self.script.into_bytes(),
            self.keys.len().to_string().into_bytes(),
        ];
        words.extend(self.keys);
        words.extend(self.args);
        request(words)
    }
}

/// `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
fn compare_and_delete(db: &mut Db, now_ms: u64, key: &[u8], token: &[u8]) -> Frame {
    let ours = db.get(key, now_ms).is_some_and(|e| e.value == token);
    Frame::Integer((ours && db.remove(key, now_ms)) as i64)
}

#[cfg(test)]
mod tests {
    use super::super::Command;
    use super::*;

    fn release(key: &str, token: &str) -> Eval {
        Eval {
            script: scripts::RELEASE.to_string(),
            keys: vec![key.as_bytes().to_vec()],
            args: vec![token.as_bytes().to_vec()],
        }
    }

    #[test]
    fn release_script_deletes_only_our_token() {
        let mut db = Db::default();
        db.set(b"lock".to_vec(), b"mine".to_vec(), Some(1000));
        assert_eq!(release("lock", "theirs").apply(&mut db, 10), Frame::Integer(0));
        assert_eq!(release("lock", "mine").apply(&mut db, 10), Frame::Integer(1));
        assert!(db.is_empty());
        assert_eq!(release("lock", "mine").apply(&mut db, 10), Frame::Integer(0));
    }

    #[test]
    fn unknown_scripts_are_refused_by_name() {
        let eval = Eval {
            script: "return 1".into(),
            keys: vec![],
            args: vec![],
        };
        let Frame::Error(message) = eval.apply(&mut Db::default(), 0) else {
            panic!("expected an error")
        };
        assert!(message.starts_with("NOSCRIPT"), "{message}");
    }

    #[test]
    fn a_client_eval_parses_back_to_itself() {
        let eval = release("lock", "tok");
        assert_eq!(
            Command::from_frame(eval.clone().into_frame()),
            Ok(Command::Eval(eval))
        );
    }
}
