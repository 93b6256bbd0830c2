//! The count hook of a node's Lua interpreter: what stops a script that runs too long.
//!
//! On a node served on real sockets a [`Watcher`] (the server's busy pass) is told of each
//! run and asked, every 100,000 instructions as Redis's `luaMaskCountHook` asks, whether the
//! script must stop (SCRIPT KILL, SHUTDOWN NOSAVE); it answers the other clients meanwhile.
//! A simulated node has no watcher (its clock stands still while a script runs, so no
//! script could ever run long on it): an instruction budget stops a runaway script there.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use mlua::{HookTriggers, Lua, VmState};

/// The chunk name Redis gives user scripts; Lua shows it in messages as `user_script:LINE:`.
/// Here because the hook tells the script's own code by it (`super::lua` names the chunks).
pub(super) const SCRIPT_CHUNK_NAME: &str = "@user_script";

/// A script that runs longer than this many Lua instructions on a node with no [`Watcher`]
/// (a simulated one) is stopped. Redis would let it run (and answer BUSY to everyone else)
/// until SCRIPT KILL; a simulation cannot wait that long (its clock stands still while a
/// script runs), so the node stops it and says so. A node served on real sockets has a
/// watcher instead, and runs the script until it ends or is killed, as Redis does.
const INSTRUCTION_BUDGET: u64 = 200_000_000;
/// How often the count hook runs: every 100,000 instructions, as Redis's `luaMaskCountHook`.
pub(super) const HOOK_EVERY_INSTRUCTIONS: u32 = 100_000;

/// What the count hook raises once a script is told to stop (script_lua.c).
const KILLED: &str = "Script killed by user with SCRIPT KILL...";

/// What the server a node runs on does while a script runs long (Redis's
/// `scriptInterrupt`): answers its other clients, and may tell the script to stop (SCRIPT
/// KILL, SHUTDOWN NOSAVE). The interpreter calls it from its count hook, with the node's
/// keyspace lent to the script, so it cannot reach the node.
pub trait Watcher {
    /// A script starts; other clients are answered BUSY once it has run `busy_after_ms`.
    fn script_started(&self, busy_after_ms: u64);
    /// Called every [`HOOK_EVERY_INSTRUCTIONS`] while the script runs; `wrote`: it has
    /// written (and so cannot be killed). Whether it must stop now.
    fn script_running(&self, wrote: bool) -> bool;
    /// The script ended, however.
    fn script_ended(&self);
}

/// The count hook's state: what it counts, who watches the run, and whether the run was
/// told to stop.
pub(super) struct Watchdog {
    /// Lua instructions the running script has executed, in hook periods.
    periods: Cell<u64>,
    pub(super) watcher: RefCell<Option<Rc<dyn Watcher>>>,
    /// The run was told to stop: the hook now runs at every instruction and raises at each
    /// one of the script's own, so that a `pcall` in the script cannot catch the stop
    /// for long (Redis switches to a line hook for the same reason).
    stopping: Cell<bool>,
    /// `busy-reply-threshold` (ms), as CONFIG SET last left it.
    pub(super) busy_after_ms: Cell<u64>,
    /// The running script has written (see `RunningScript::wrote`).
    pub(super) wrote: Rc<Cell<bool>>,
}

impl Watchdog {
    /// A watchdog with no watcher, for a script whose writes `wrote` tells.
    pub(super) fn new(wrote: Rc<Cell<bool>>) -> Self {
        Watchdog {
            periods: Cell::new(0),
            watcher: RefCell::new(None),
            stopping: Cell::new(false),
            busy_after_ms: Cell::new(0),
            wrote,
        }
    }

    /// Sets the count hook to run every `every` instructions.
    pub(super) fn hook_every(self: &Rc<Self>, lua: &Lua, every: u32) -> mlua::Result<()> {
        let watchdog = self.clone();
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(every),
            move |lua, debug| watchdog.tick(lua, debug),
        )
    }

    fn tick(self: &Rc<Self>, lua: &Lua, debug: &mlua::debug::Debug) -> mlua::Result<VmState> {
        if !self.stopping.get() {
            self.periods.set(self.periods.get() + 1);
            let watcher = self.watcher.borrow().clone();
            let stop = match watcher {
                Some(watcher) => watcher.script_running(self.wrote.get()),
                None if self.periods.get() * u64::from(HOOK_EVERY_INSTRUCTIONS) > INSTRUCTION_BUDGET => {
                    return Err(mlua::Error::RuntimeError(format!(
                        "locksim stopped the script after {INSTRUCTION_BUDGET} Lua instructions \
                         (Redis would block every client until SCRIPT KILL)"
                    )));
                }
                None => false,
            };
            if !stop {
                return Ok(VmState::Continue);
            }
            self.stopping.set(true);
            self.hook_every(lua, 1)?;
        }
        // Only in the script's own code: the prelude that runs it, and its error handler,
        // must finish.
        if debug.source().source.as_deref() == Some(SCRIPT_CHUNK_NAME) {
            return Err(mlua::Error::RuntimeError(KILLED.into()));
        }
        Ok(VmState::Continue)
    }

    /// A run starts: the hook back to its period if the last run was stopped.
    pub(super) fn start(self: &Rc<Self>, lua: &Lua) -> mlua::Result<()> {
        self.periods.set(0);
        if self.stopping.replace(false) {
            self.hook_every(lua, HOOK_EVERY_INSTRUCTIONS)?;
        }
        if let Some(watcher) = self.watcher.borrow().as_ref() {
            watcher.script_started(self.busy_after_ms.get());
        }
        Ok(())
    }

    /// As a new watchdog is, for an interpreter kept for the next node (see
    /// `super::lua_pool`): no watcher, no count, the hook back to its period.
    pub(super) fn reset(self: &Rc<Self>, lua: &Lua) -> mlua::Result<()> {
        self.periods.set(0);
        self.watcher.replace(None);
        self.busy_after_ms.set(0);
        self.wrote.set(false);
        if self.stopping.replace(false) {
            self.hook_every(lua, HOOK_EVERY_INSTRUCTIONS)?;
        }
        Ok(())
    }

    /// A run ended, however.
    pub(super) fn end(&self) {
        if let Some(watcher) = self.watcher.borrow().as_ref() {
            watcher.script_ended();
        }
    }
}
