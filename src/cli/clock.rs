//! The host's clocks as the commands that time themselves read them: the process's CPU
//! time (every thread together) and the monotonic wall clock, and a [`Phase`] of a
//! command timed on both.

/// The CPU time this process has used, every thread together (a simulated seed runs on a
/// thread of its own while the caller waits).
pub fn cpu_ms() -> f64 {
    clock_ms(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The host's monotonic clock.
pub fn wall_ms() -> f64 {
    clock_ms(libc::CLOCK_MONOTONIC)
}

fn clock_ms(clock: libc::clockid_t) -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(clock, &mut now) };
    now.tv_sec as f64 * 1000.0 + now.tv_nsec as f64 / 1e6
}

/// One phase of a command, timed from its start on the wall clock and on the process's
/// CPU clock: the CPU time says what a phase costs on a machine other work also loads.
pub struct Phase {
    wall_ms: f64,
    cpu_ms: f64,
}

impl Phase {
    pub fn start() -> Phase {
        Phase {
            wall_ms: wall_ms(),
            cpu_ms: cpu_ms(),
        }
    }

    /// Seconds of CPU time since the phase started.
    pub fn cpu_seconds(&self) -> f64 {
        (cpu_ms() - self.cpu_ms) / 1000.0
    }

    /// The time since the phase started, in words: `12.3 s (20.1 s of CPU)`.
    pub fn took(&self) -> String {
        format!(
            "{:.1} s ({:.1} s of CPU)",
            (wall_ms() - self.wall_ms) / 1000.0,
            self.cpu_seconds()
        )
    }
}
