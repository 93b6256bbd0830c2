//! Ctrl-C during a sweep: the first stops it cleanly — no new seed starts, the running ones
//! finish, the table judges what ran and says how to resume — and exits 130, as a shell
//! expects of a command interrupted by SIGINT. A second Ctrl-C kills at once (the
//! handler is reset after the first), for a user who will not wait for the running seeds.

use std::sync::atomic::{AtomicBool, Ordering};

/// The exit code of a command stopped by SIGINT (128 + 2).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Set by the SIGINT handler.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Only an atomic store: anything else is unsafe in a signal handler.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Catches the next SIGINT (the one after goes to the default action: death) and returns
/// the flag it sets, for the sweep to poll.
pub fn catch_ctrl_c() -> &'static AtomicBool {
    // SAFETY: `on_sigint` only stores to an atomic, which is async-signal-safe; the
    // sigaction struct is zeroed and filled before use.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
    &INTERRUPTED
}

/// Whether Ctrl-C was pressed since [`catch_ctrl_c`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
