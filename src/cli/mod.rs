//! The subcommands of the `locksim` binary, and what they share: exit codes and output.

pub mod account;
pub mod bench;
pub mod check;
pub mod clock;
pub mod compare;
pub mod init;
pub mod interrupt;
pub mod kept;
pub mod live;
pub mod lock;
pub mod merge;
pub mod output;
pub mod report;
pub mod schema;
pub mod serve;
pub mod shrink;
pub mod simulate;

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;

use locksim::scenario::{self, Scenario};

/// An expectation was not met, or the scenario expected nothing (unchecked).
pub const EXIT_UNMET: u8 = 1;
/// Invalid input or usage.
pub const EXIT_INVALID: u8 = 2;
/// A run panicked or hung inside the simulator (a harness error): the other seeds ran,
/// and this one says nothing about the lock.
pub const EXIT_HARNESS: u8 = 3;

/// The exit code of a command that judged scenarios: 3 if any run hit a harness error,
/// else 1 if any scenario was not met (or expected nothing), else 0.
pub fn verdict_exit(harness_errors: bool, all_met: bool) -> ExitCode {
    match (harness_errors, all_met) {
        (true, _) => ExitCode::from(EXIT_HARNESS),
        (false, false) => ExitCode::from(EXIT_UNMET),
        (false, true) => ExitCode::SUCCESS,
    }
}

/// Prints a line to stdout; a closed pipe (`locksim replay … | head`) is not an error.
pub fn emit(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// A `HOST:PORT` argument, resolved (`localhost:6379`, `10.0.0.1:6379`).
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    match text.to_socket_addrs().map(|mut addrs| addrs.next()) {
        Ok(Some(addr)) => Ok(addr),
        Ok(None) | Err(_) => Err(format!("cannot resolve `{text}` (expected HOST:PORT)")),
    }
}

/// Writes `value` to `file` as pretty JSON (a scenario file, as a person would write it).
pub fn write_json(file: &std::path::Path, value: &serde_json::Value) -> Result<(), String> {
    locksim::campaign::write_scenario(file, value).map_err(|e| e.to_string())
}

/// `--jobs`, or every core.
pub fn jobs_or_all_cores(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `path` relative to the current directory (with `..` where it lies outside it), so a
/// file a report names, and its replay command, work from where the report ran on any
/// machine; a relative path, or one on another root, is kept as it is.
pub fn relative_to_cwd(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let Ok(cwd) = std::env::current_dir() else {
        return path.to_path_buf();
    };
    if !path.is_absolute() {
        return path.to_path_buf();
    }
    let (ours, theirs): (Vec<Component>, Vec<Component>) =
        (cwd.components().collect(), path.components().collect());
    let common = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return path.to_path_buf();
    }
    let mut relative: PathBuf = ours[common..].iter().map(|_| Component::ParentDir).collect();
    relative.extend(&theirs[common..]);
    if relative.as_os_str().is_empty() {
        relative.push(".");
    }
    relative
}

/// A count that must be at least one (`--jobs 0` would run nothing, for ever; `--cases 0`
/// would check nothing and pass).
pub fn at_least_one<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + From<u8>,
    T::Err: std::fmt::Display,
{
    match text.parse::<T>() {
        Ok(n) if n < T::from(1) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// The scenario files of `paths` that load, once every one that does not has been
/// reported on stderr (`error: FILE: field `F`: reason`, one line each), and how many were
/// refused: a user fixing a directory sees every mistake at once. `Err` is the exit when
/// nothing is left to run (no file found, or every file refused).
pub fn load_reporting(paths: &[PathBuf]) -> Result<(Vec<(PathBuf, Scenario)>, usize), ExitCode> {
    let mut scenarios = Vec::new();
    let mut refused = 0;
    for (file, loaded) in scenario::load_each(paths).map_err(invalid)? {
        match loaded {
            Ok(scenario) => scenarios.push((file, scenario)),
            Err(e) => {
                eprintln!("error: {e}");
                refused += 1;
            }
        }
    }
    match (scenarios.is_empty(), refused) {
        (true, 0) => Err(invalid("no scenario files found")),
        (true, _) => Err(ExitCode::from(EXIT_INVALID)),
        (false, _) => Ok((scenarios, refused)),
    }
}

/// Every scenario file of `paths`, or none: each refused file is reported as
/// [`load_reporting`] does, then `error: N scenario file(s) refused (above); nothing ran`
/// (exit 2). For the commands that run for long or set files against each other
/// (`run --live`, `compare-live`, `bench`), where running part of what was asked helps
/// nobody.
pub fn load_every_or_none(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, ExitCode> {
    match load_reporting(paths)? {
        (_, refused) if refused > 0 => Err(invalid(format!(
            "{refused} scenario file(s) refused (above); nothing ran"
        ))),
        (scenarios, _) => Ok(scenarios),
    }
}

/// Reports invalid input on stderr, in one line; exit code 2.
pub fn invalid(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_INVALID)
}
