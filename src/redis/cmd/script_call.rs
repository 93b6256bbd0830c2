//! A script's `redis.call`: its words looked up, checked against what the script may do,
//! and run on the keyspace as a command of the node's own, propagated as Redis propagates
//! a script's calls (each by itself).

use super::lookup;
use super::{CallRules, Command, Lookup, Stage, kept_for_propagation};
use crate::redis::db::Db;
use crate::redis::lua::Called;

/// Runs the words of a script's `redis.call` on the keyspace (a [`ScriptCommand`]), as
/// `rules` allow.
///
/// [`ScriptCommand`]: crate::redis::lua::ScriptCommand
pub(crate) fn run_for_script(words: &[&[u8]], rules: CallRules, db: &mut Db, now_ms: u64) -> Called {
    let lookup = Lookup::of(words);
    if let Some((error, name)) = lookup::refused_to_scripts_unserved(lookup, words) {
        return Called::Rejected {
            name: Some(name.into()),
            error: error.0,
        };
    }
    let name = lookup.name(words);
    let kept = kept_for_propagation(db, lookup, words);
    let refused = match Command::from_script_words(words, lookup, rules) {
        Ok((mut command, flags)) => {
            match &mut command {
                Command::Sort(sort) => sort.from_script = true,
                Command::Xread(read) => read.from_script = true,
                _ => {}
            }
            let dirty = db.dirty();
            let reply = command.apply_to_db(db, now_ms);
            crate::redis::propagation::record(db, kept, dirty, &reply);
            let reply = reply.into_resp2();
            return Called::Ran {
                name,
                reply,
                wrote: flags.write,
            };
        }
        Err(refused) => refused,
    };
    match refused.stage {
        // Refused by its arguments as it ran: past the checks, so a write call counts as
        // one (script.c sets SCRIPT_WRITE_DIRTY before the call).
        Stage::Ran => Called::Ran {
            name,
            reply: refused.error.into(),
            wrote: lookup.flags().is_some_and(|flags| flags.write),
        },
        Stage::Rejected { credited } => Called::Rejected {
            name: credited.then_some(name),
            error: refused.error.0,
        },
    }
}
