//! Process groups for commands locksim starts and must not outlive: `locksim lock`'s
//! command, and live mode's workers and redis-servers. Each leads a group of its own, so
//! a signal reaches everything it started; each dies with locksim (PR_SET_PDEATHSIG); and
//! a guardian per group kills the whole group when locksim dies, however it dies (SIGKILL
//! included), which reaches the grandchildren that the parent-death signal does not.
//! (Live mode imports these from here; nothing here imports live mode.)

use std::io;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

/// Makes the command lead a process group of its own (so that signals reach everything it
/// starts) and die with locksim: the kernel sends it SIGKILL when locksim dies, however
/// it dies. Processes the command starts are not covered by that signal: they stop with
/// the group's signals, and a [`watchdog`] sends the group one when locksim dies.
pub fn dies_with_us(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid(2) has no preconditions.
    let locksim = unsafe { libc::getpid() };
    command.process_group(0);
    // SAFETY: the hook runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // locksim died before the prctl: nobody would send the signal now.
            if libc::getppid() != locksim {
                return Err(io::Error::other("locksim exited before the command started"));
            }
            Ok(())
        })
    }
}

/// Sends `signal` to every process of a group we created; a group already gone is fine.
pub fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) on a process group we created; ESRCH when it is empty.
    unsafe { libc::kill(-group, signal) };
}

/// Starts the guardian of process group `group`: a shell, in a group of its own (a pause
/// of the group does not stop it), reading its stdin, a pipe whose only writer is this
/// process (std opens pipes close-on-exec). When locksim dies the kernel closes the pipe,
/// the read ends, and the guardian kills the group: grandchildren that PR_SET_PDEATHSIG
/// does not reach (`sh -c`, `npm start`, a worker's own helpers, a script's `sleep &`)
/// die too. Kill the guardian (and reap it) once the group is gone, so that it never
/// signals a group id the system may since have given to someone else.
pub fn watchdog(group: libc::pid_t) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    Command::new("sh")
        .args(["-c", "read line; kill -9 -\"$0\"", &group.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start the watchdog `sh`: {e}")))
}

/// The signals `lock` takes by name (`--lost-signal`), with their names.
pub const SIGNALS: [(&str, libc::c_int); 7] = [
    ("TERM", libc::SIGTERM),
    ("INT", libc::SIGINT),
    ("HUP", libc::SIGHUP),
    ("QUIT", libc::SIGQUIT),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("KILL", libc::SIGKILL),
];

/// A signal's name for messages (`SIGTERM`), or its number.
pub fn signal_name(signal: libc::c_int) -> String {
    match SIGNALS.iter().find(|(_, number)| *number == signal) {
        Some((name, _)) => format!("SIG{name}"),
        None => format!("signal {signal}"),
    }
}

/// The command's process group, for the signal handler.
static COMMAND_GROUP: AtomicI32 = AtomicI32::new(0);

/// Passes SIGINT, SIGTERM and SIGHUP sent to locksim on to process group `group`, so that
/// stopping locksim stops the command first: then locksim sees it end and releases the
/// lock, instead of dying and leaving the lock to expire.
pub fn forward_signals_to(group: libc::pid_t) {
    extern "C" fn forward(signal: libc::c_int) {
        let group = COMMAND_GROUP.load(Ordering::SeqCst);
        // SAFETY: kill(2) is async-signal-safe; the group is our command's.
        unsafe { libc::kill(-group, signal) };
    }
    COMMAND_GROUP.store(group, Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `forward` only reads an atomic and calls kill(2).
        unsafe { libc::signal(signal, forward as *const () as libc::sighandler_t) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_have_names_and_others_their_number() {
        assert_eq!(signal_name(libc::SIGHUP), "SIGHUP");
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(40), "signal 40");
    }
}
