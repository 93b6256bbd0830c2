//! The clocks of a live run's Redis nodes: a locksim node's is the host's clocks with a
//! wall-clock offset locksim can step ([`LiveClock`]); a real `redis-server`'s is shifted
//! by [`WallClockShim`], a small LD_PRELOAD library built with `cc` that adds the offset
//! in a file locksim rewrites ([`ShimClock`]). Neither needs libfaketime (which deadlocks
//! Debian's redis-server and fakes the monotonic clock too); monotonic time and sleeps
//! stay the host's, as a stepped wall clock leaves them on a real machine.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::platform::Clock;
use crate::real::HostClock;

/// The host's clocks, the wall clock shifted by an offset that [`LiveClock::jump`] steps.
#[derive(Debug, Clone, Default)]
pub struct LiveClock {
    host: HostClock,
    offset_ms: Arc<AtomicI64>,
}

impl LiveClock {
    /// The host's clocks, the wall clock off by `offset_ms`.
    pub fn with_offset(offset_ms: i64) -> Self {
        LiveClock {
            host: HostClock::new(),
            offset_ms: Arc::new(AtomicI64::new(offset_ms)),
        }
    }

    /// Steps the wall clock by `by_ms` (forward if positive).
    pub fn jump(&self, by_ms: i64) {
        self.offset_ms.fetch_add(by_ms, Ordering::SeqCst);
    }
}

impl Clock for LiveClock {
    fn wall_ms(&self) -> u64 {
        let offset = self.offset_ms.load(Ordering::SeqCst);
        (self.host.wall_ms() as i64).saturating_add(offset).max(0) as u64
    }

    fn monotonic_ms(&self) -> u64 {
        self.host.monotonic_ms()
    }

    fn sleep_until_monotonic(&self, deadline_ms: u64) -> impl Future<Output = ()> + Send {
        self.host.sleep_until_monotonic(deadline_ms)
    }
}

/// The shim's C source (gettimeofday, time and clock_gettime of CLOCK_REALTIME, shifted).
const SHIM_SOURCE: &str = include_str!("wall_clock_shim.c");

/// The wall-clock shim, compiled into a run's scratch directory.
#[derive(Debug, Clone)]
pub struct WallClockShim {
    library: PathBuf,
}

impl WallClockShim {
    /// Compiles the shim into `dir` with `cc`; `Err` says why it could not.
    pub fn build(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let source = dir.join("wall_clock_shim.c");
        let library = dir.join("wall_clock_shim.so");
        std::fs::write(&source, SHIM_SOURCE).map_err(|e| format!("{}: {e}", source.display()))?;
        let output = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&library)
            .arg(&source)
            .output()
            .map_err(|e| {
                format!("clock faults on redis-server build a shim with `cc`, which cannot run: {e}")
            })?;
        if !output.status.success() {
            return Err(format!(
                "cc could not build the wall-clock shim: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(WallClockShim { library })
    }

    /// A clock file for one redis-server, at `file`, starting `offset_ms` off.
    pub fn clock(&self, file: &Path, offset_ms: i64) -> std::io::Result<ShimClock> {
        let clock = ShimClock {
            file: file.to_path_buf(),
            offset_ms: Arc::new(AtomicI64::new(offset_ms)),
            library: self.library.clone(),
        };
        clock.write()?;
        Ok(clock)
    }
}

/// One redis-server's shifted wall clock: the offset file its shim reads.
#[derive(Debug, Clone)]
pub struct ShimClock {
    file: PathBuf,
    offset_ms: Arc<AtomicI64>,
    library: PathBuf,
}

impl ShimClock {
    /// The environment that puts redis-server on this clock.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            ("LOCKSIM_CLOCK_FILE".into(), self.file.display().to_string()),
        ]
    }

    /// Steps the wall clock by `by_ms` (forward if positive).
    pub fn jump(&self, by_ms: i64) -> std::io::Result<()> {
        self.offset_ms.fetch_add(by_ms, Ordering::SeqCst);
        self.write()
    }

    /// Writes the offset in place, fixed-width: a reader never sees the file empty.
    fn write(&self) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let text = format!("{:+020}\n", self.offset_ms.load(Ordering::SeqCst));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.file)?;
        file.write_all_at(text.as_bytes(), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jump_steps_the_wall_clock_and_leaves_monotonic_time_alone() {
        let clock = LiveClock::with_offset(0);
        let (wall, mono) = (clock.wall_ms(), clock.monotonic_ms());
        clock.jump(10_000);
        assert!(clock.wall_ms() >= wall + 10_000);
        assert!(clock.monotonic_ms() < mono + 1_000);
        clock.jump(-20_000);
        assert!(clock.wall_ms() < wall);
    }
}
