//! Process groups for commands locksim starts and must not outlive: `locksim lock`'s
//! command, and live mode's workers and redis-servers. Each leads a group of its own, so
//! a signal reaches everything it started; each dies with locksim (PR_SET_PDEATHSIG); and
//! a guardian per group, armed before the command runs, kills the whole group when
//! locksim dies, however it dies (SIGKILL included), which reaches the grandchildren that
//! the parent-death signal does not ([`Guarded`]). (Live mode imports these from here;
//! nothing here imports live mode.)

use std::io;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

/// A command started in a process group of its own under a guardian: the command itself
/// (whose pid is its group's id) and the guardian, a process that kills the whole group
/// when locksim dies, however it dies (SIGKILL included).
///
/// Why a guardian, and why it starts first. The command gets SIGKILL from the kernel when
/// locksim dies (PR_SET_PDEATHSIG), but what it starts (`sh -c`, a cron script's
/// `sleep 301 &` and its foreground job, `npm start`, a worker's helpers) does not. The
/// guardian is a `sh` in a group of its own (a pause of the command's group does not stop
/// it) that reads its stdin, a pipe whose only writer is locksim: it first reads the
/// command's group id, then waits for the pipe to close, which the kernel does when
/// locksim dies, and kills the group. The guardian is started *before* the command, and
/// the command, in the forked child before `exec`, writes its own pid into that pipe: so
/// the group is guarded before the command runs a single instruction of its own, and no
/// moment is left in which locksim could die with the command running and nobody holding
/// its group. (A subreaper would need locksim itself to stay alive; a guardian does not.)
/// A process that leaves the group (`setsid`, a daemon) escapes it, as it escapes the
/// group's signals.
#[derive(Debug)]
pub struct Guarded {
    /// The command, leader of its process group.
    pub child: Child,
    /// The guardian; [`Guarded::kill`] or [`stop_guardian`] ends it once the group is gone.
    pub guardian: Child,
}

impl Guarded {
    /// Starts the guardian, then `command` in a group of its own that dies with locksim.
    pub fn spawn(command: &mut Command) -> io::Result<Guarded> {
        let mut guardian = start_guardian()?;
        let pipe = guardian
            .stdin
            .as_ref()
            .expect("the guardian's stdin is piped")
            .as_raw_fd();
        match dies_with_us(command, pipe).spawn() {
            Ok(child) => Ok(Guarded { child, guardian }),
            Err(e) => {
                // Nothing of the command runs (its exec failed): the guardian has no work.
                stop_guardian(&mut guardian);
                Err(e)
            }
        }
    }

    /// The command's process group.
    pub fn group(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Kills the command's whole group, then the guardian, then reaps the command: the
    /// group id stays taken until the leader is reaped, so the guardian can never signal
    /// a group the system has since given to someone else.
    pub fn kill(&mut self) {
        signal_group(self.group(), libc::SIGKILL);
        stop_guardian(&mut self.guardian);
        let _ = self.child.wait();
    }
}

/// Makes the command lead a process group of its own (so that signals reach everything it
/// starts), die with locksim (the kernel sends it SIGKILL when locksim dies, however it
/// dies), and tell the guardian listening on `guardian_pipe` its group id before it runs.
fn dies_with_us(command: &mut Command, guardian_pipe: libc::c_int) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid(2) has no preconditions.
    let locksim = unsafe { libc::getpid() };
    command.process_group(0);
    // SAFETY: the hook runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid, getpid, write) on stack memory.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // locksim died before the prctl: nobody would send the signal now.
            if libc::getppid() != locksim {
                return Err(io::Error::other("locksim exited before the command started"));
            }
            // The pipe is close-on-exec: the command never holds it once it runs.
            let (line, len) = decimal_line(libc::getpid() as u64);
            if libc::write(guardian_pipe, line.as_ptr().cast(), len) != len as isize {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// `number` in decimal and a newline, in a stack buffer (no allocation: it runs between
/// fork and exec; `itoa` formats on the stack too), and how many bytes of it are used.
fn decimal_line(number: u64) -> ([u8; 21], usize) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(number).as_bytes();
    let mut line = [0u8; 21];
    line[..digits.len()].copy_from_slice(digits);
    line[digits.len()] = b'\n';
    (line, digits.len() + 1)
}

/// Sends `signal` to every process of a group we created; a group already gone is fine.
pub fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) on a process group we created; ESRCH when it is empty.
    unsafe { libc::kill(-group, signal) };
}

/// Starts a guardian (see [`Guarded`]): a `sh` in a group of its own that reads a group
/// id from its stdin, then waits for the pipe to close and kills that group. Std opens
/// the pipe close-on-exec, so locksim is its only writer once the guardian runs.
fn start_guardian() -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    Command::new("sh")
        .args(["-c", "read group || exit 0; read rest; kill -9 -\"$group\""])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start the guardian `sh`: {e}")))
}

/// Ends a guardian whose group is gone (or never started), and reaps it.
pub fn stop_guardian(guardian: &mut Child) {
    let _ = guardian.kill();
    let _ = guardian.wait();
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
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};

    #[test]
    fn pids_are_written_in_decimal_with_a_newline() {
        for number in [0u64, 7, 10, 4_194_304, u64::MAX] {
            let (line, len) = decimal_line(number);
            assert_eq!(&line[..len], format!("{number}\n").as_bytes());
        }
    }

    #[test]
    fn the_guardian_kills_the_whole_group_when_the_pipe_from_locksim_closes() {
        let mut command = Command::new("sh");
        command
            .args(["-c", "sleep 300 & echo $!; sleep 301"])
            .stdout(Stdio::piped());
        let mut guarded = Guarded::spawn(&mut command).unwrap();
        let mut line = String::new();
        let stdout = guarded.child.stdout.take().unwrap();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let background: libc::pid_t = line.trim().parse().unwrap();
        // What the kernel does when locksim dies: locksim's end of the pipe closes.
        drop(guarded.guardian.stdin.take());
        let status = guarded.child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        // SAFETY: signal 0 only asks whether the process exists.
        while unsafe { libc::kill(background, 0) } == 0 {
            assert!(
                Instant::now() < deadline,
                "the command's background job outlived the guardian's kill"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        stop_guardian(&mut guarded.guardian);
    }

    #[test]
    fn signals_have_names_and_others_their_number() {
        assert_eq!(signal_name(libc::SIGHUP), "SIGHUP");
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(40), "signal 40");
    }
}
