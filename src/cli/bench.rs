//! `bench`: how fast the simulator runs seeds, and how much memory it takes. Speed and
//! memory are measured here, not asserted in tests: tests must pass on a loaded machine.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use locksim::scenario;
use locksim::sweep::sweep;

use super::{EXIT_UNMET, emit, invalid};

/// Runs each scenario's seeds (or `seeds`) with `jobs` threads and prints the throughput.
pub fn bench(paths: &[PathBuf], seeds: Option<u64>, jobs: usize) -> ExitCode {
    let scenarios = match scenario::load_paths(paths) {
        Ok(s) if s.is_empty() => return invalid("no scenario files found"),
        Ok(s) => s,
        Err(e) => return invalid(e),
    };
    emit(format_args!(
        "{:<44} {:>6} {:>5} {:>9} {:>9} {:>10} {:>14}",
        "scenario", "seeds", "jobs", "wall s", "seeds/s", "ms/seed", "sim-s/wall-s"
    ));
    let mut failed = 0;
    for (_, scenario) in scenarios {
        let count = seeds.unwrap_or(scenario.seeds).max(1);
        let scenario = Arc::new(scenario);
        let started = Instant::now();
        let runs = sweep(&scenario, 0..count, jobs);
        let wall_s = started.elapsed().as_secs_f64();
        failed += runs.iter().filter(|run| run.outcome.is_err()).count();
        let simulated_s = count as f64 * scenario.duration_ms as f64 / 1000.0;
        emit(format_args!(
            "{:<44} {:>6} {:>5} {:>9.2} {:>9.1} {:>10.2} {:>14.0}",
            scenario.name,
            count,
            jobs,
            wall_s,
            count as f64 / wall_s,
            wall_s * 1000.0 * jobs as f64 / count as f64,
            simulated_s / wall_s,
        ));
    }
    if let Some(peak) = peak_memory_kib() {
        emit(format_args!(
            "peak memory (VmHWM): {:.1} MiB",
            peak as f64 / 1024.0
        ));
    }
    if failed > 0 {
        eprintln!("error: {failed} runs failed inside the simulator");
        return ExitCode::from(EXIT_UNMET);
    }
    ExitCode::SUCCESS
}

/// The process's peak resident memory, from /proc (Linux).
fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
