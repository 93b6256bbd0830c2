//! The processes of a live run: one worker per client, and real `redis-server` nodes when
//! asked for. Each leads a process group of its own, so a pause (SIGSTOP/SIGCONT) and a
//! kill reach everything it started. Each dies with locksim (PR_SET_PDEATHSIG), and so do
//! the processes it starts itself, which that signal does not reach: a guardian per group
//! (`real::process::Guarded`) kills the whole group when locksim dies, however it dies
//! (SIGKILL included), so no exit, error or Ctrl-C leaves one behind. Dropping the
//! supervisor kills every group and reaps every process.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use crate::real::process::{Guarded, signal_group};

/// One started process: its node name, the process and its group's guardian, and where
/// its output goes.
struct Process {
    name: String,
    program: String,
    guarded: Guarded,
    log: PathBuf,
}

/// Every process of one live run.
pub struct Supervisor {
    processes: Vec<Process>,
    /// Where each process's output is kept (`NAME.log`).
    log_dir: PathBuf,
    /// The directory processes start in (a worker beside its scenario names itself
    /// relatively: `["python3", "worker.py"]`).
    workdir: PathBuf,
}

/// A process that ended on its own before the run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    pub name: String,
    /// The program it ran (the first word of its command).
    pub program: String,
    /// How it ended: `exit status: 3`, `signal: 9 (SIGKILL)`.
    pub status: String,
    /// The last lines it wrote (stdout and stderr).
    pub last_lines: String,
}

impl std::fmt::Display for Exited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}'s process `{}` ended before the run did ({})",
            self.name, self.program, self.status
        )?;
        if !self.last_lines.is_empty() {
            write!(f, "; its last output (stdout and stderr):")?;
            for line in self.last_lines.lines() {
                write!(f, "\n    | {line}")?;
            }
        }
        Ok(())
    }
}

/// Lines of a process's output an error quotes.
const QUOTED_LINES: usize = 10;

impl Supervisor {
    /// A supervisor whose processes start in `workdir` and write their output into
    /// `log_dir` (created).
    pub fn new(log_dir: &Path, workdir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(log_dir)?;
        Ok(Supervisor {
            processes: Vec::new(),
            log_dir: log_dir.to_path_buf(),
            workdir: workdir.to_path_buf(),
        })
    }

    /// Starts `argv` as node `name`, with `env` added to locksim's environment and its
    /// output (stdout and stderr) in `NAME.log`.
    pub fn start(&mut self, name: &str, argv: &[String], env: &[(String, String)]) -> io::Result<()> {
        let log = self.log_dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log)?;
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .current_dir(&self.workdir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let guarded = Guarded::spawn(&mut command)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start `{}` for {name}: {e}", argv[0])))?;
        self.processes.push(Process {
            name: name.to_string(),
            program: argv[0].clone(),
            guarded,
            log,
        });
        Ok(())
    }

    fn group_of(&self, name: &str) -> Option<libc::pid_t> {
        self.processes
            .iter()
            .rev()
            .find(|p| p.name == name)
            .map(|p| p.guarded.group())
    }

    /// Freezes node `name` (SIGSTOP to its group): a GC pause whose clock runs on.
    pub fn pause(&self, name: &str) {
        if let Some(group) = self.group_of(name) {
            signal_group(group, libc::SIGSTOP);
        }
    }

    /// Lets node `name` go on (SIGCONT).
    pub fn resume(&self, name: &str) {
        if let Some(group) = self.group_of(name) {
            signal_group(group, libc::SIGCONT);
        }
    }

    /// Kills node `name` (SIGKILL to its group) and reaps it; its record is dropped, so a
    /// later exit is not reported as one of its own.
    pub fn kill(&mut self, name: &str) {
        if let Some(index) = self.processes.iter().rposition(|p| p.name == name) {
            self.processes.remove(index).guarded.kill();
        }
    }

    /// The first process that has ended on its own, if any.
    pub fn exited(&mut self) -> Option<Exited> {
        self.processes.iter_mut().find_map(|process| {
            let status: ExitStatus = process.guarded.child.try_wait().ok()??;
            let text = std::fs::read_to_string(&process.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let last_lines = lines[lines.len().saturating_sub(QUOTED_LINES)..].join("\n");
            Some(Exited {
                name: process.name.clone(),
                program: process.program.clone(),
                status: status.to_string(),
                last_lines,
            })
        })
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        for process in &mut self.processes {
            process.guarded.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("locksim-supervisor-{name}-{}", std::process::id()))
    }

    fn alive(pid: libc::pid_t) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn dropping_the_supervisor_kills_every_process_of_each_group() {
        let dir = scratch("drop");
        let mut supervisor = Supervisor::new(&dir, &dir).unwrap();
        // The worker starts a grandchild and prints its pid: the group's signal must reach it.
        supervisor
            .start("client-1", &sh("sleep 60 & echo $!; wait"), &[])
            .unwrap();
        let log = dir.join("client-1.log");
        let deadline = Instant::now() + Duration::from_secs(10);
        let grandchild: libc::pid_t = loop {
            if let Ok(pid) = std::fs::read_to_string(&log).unwrap_or_default().trim().parse() {
                break pid;
            }
            assert!(Instant::now() < deadline, "the worker never said its child's pid");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(alive(grandchild));
        drop(supervisor);
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(grandchild) {
            assert!(
                Instant::now() < deadline,
                "the grandchild outlived the supervisor"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_process_that_ends_early_is_reported_with_its_last_output() {
        let dir = scratch("exit");
        let mut supervisor = Supervisor::new(&dir, &dir).unwrap();
        supervisor
            .start("client-2", &sh("echo cannot import redis >&2; exit 3"), &[])
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let exited = loop {
            if let Some(exited) = supervisor.exited() {
                break exited;
            }
            assert!(Instant::now() < deadline, "the exit was never seen");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(exited.name, "client-2");
        assert!(exited.status.contains('3'), "{}", exited.status);
        assert_eq!(exited.last_lines, "cannot import redis");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_command_that_cannot_start_is_an_error_naming_it() {
        let dir = scratch("missing");
        let mut supervisor = Supervisor::new(&dir, &dir).unwrap();
        let error = supervisor
            .start("client-1", &["/no/such/worker".to_string()], &[])
            .unwrap_err();
        assert!(error.to_string().contains("/no/such/worker"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
