//! Interpreters kept for the next node made on the same thread (issue 33): a node that
//! restarts, or the next seed's node, gets the interpreter a stopped node left, reset,
//! instead of a new one (making one costs ~700,000 instructions, closing it ~290,000).
//!
//! A reset interpreter must be one no script can tell from a new one, so an interpreter is
//! kept only while every script it compiled is one that cannot change it: a script that
//! names no global but the `redis` library, KEYS, ARGV and a few functions without state
//! ([`super::lua_scan::leaves_no_trace`]). Such a script cannot reach a library's table, the global table,
//! a metatable, `math.random`'s state, cjson's settings or the collector, so what it leaves
//! behind is KEYS and ARGV (cleared) and the script cache (emptied); everything else is as
//! the prelude made it. An interpreter that compiled any other script is closed with its
//! node, as before. Every lock client's script is of the first kind.
//!
//! Kept per thread: an interpreter is not `Send`. Seeds run one after another on
//! long-lived threads (`crate::seed_thread`), so the next seed's nodes get the interpreters
//! the last seed's nodes left.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

use super::lua::Scripts;

/// Interpreters kept at most per thread (a seed has at most a few nodes stopped at once).
const MOST_KEPT: usize = 16;

thread_local! {
    static KEPT: RefCell<Vec<Scripts>> = const { RefCell::new(Vec::new()) };
}

/// A node's interpreter, given back for the next node when the node is dropped (if it can
/// be reset: see the module's comment).
pub struct PooledScripts(Option<Scripts>);

impl PooledScripts {
    /// A kept interpreter, reset, or a new one.
    pub fn take() -> mlua::Result<Self> {
        let kept = KEPT.with(|kept| kept.borrow_mut().pop());
        Ok(PooledScripts(Some(match kept {
            Some(scripts) => scripts,
            None => Scripts::new()?,
        })))
    }
}

impl Deref for PooledScripts {
    type Target = Scripts;

    fn deref(&self) -> &Scripts {
        self.0.as_ref().expect("an interpreter until dropped")
    }
}

impl DerefMut for PooledScripts {
    fn deref_mut(&mut self) -> &mut Scripts {
        self.0.as_mut().expect("an interpreter until dropped")
    }
}

impl Drop for PooledScripts {
    fn drop(&mut self) {
        let Some(mut scripts) = self.0.take() else {
            return;
        };
        // A run that panicked may have stopped anywhere: its interpreters are closed.
        if std::thread::panicking() || !scripts.reset_for_reuse() {
            return;
        }
        // While the thread ends, the kept list may be gone already: then close it.
        let _ = KEPT.try_with(move |kept| {
            let mut kept = kept.borrow_mut();
            if kept.len() < MOST_KEPT {
                kept.push(scripts);
            }
        });
    }
}

/// How many interpreters this thread keeps (for tests).
#[cfg(test)]
pub fn kept() -> usize {
    KEPT.with(|kept| kept.borrow().len())
}
