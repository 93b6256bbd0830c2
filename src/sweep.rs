//! Runs many seeds of a scenario in parallel, each seed on a fresh thread.
//!
//! A seed whose run panics is reported with its seed and message; the other seeds go on,
//! and nothing already computed is lost.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use crate::check::evidence::{Evidence, evidence};
use crate::check::{CheckSettings, Verdict, check_all};
use crate::history::History;
use crate::scenario::Scenario;
use crate::world;
use crate::world::events::EventCounts;

/// What one seed produced.
#[derive(Debug, Clone)]
pub struct SeedRun {
    pub seed: u64,
    /// The run's digest and verdicts, or the message of the panic that ended it.
    pub outcome: Result<RunSummary, String>,
}

/// The part of a run that a sweep keeps (histories are large; seeds replay them).
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub digest: String,
    pub verdicts: Vec<Verdict>,
    /// The grants after each fault: whether the run is evidence for "holds".
    pub evidence: Evidence,
    /// How many messages and timer firings the run processed (for `locksim bench`).
    pub events: EventCounts,
}

/// Runs one seed on a fresh thread, catching a panic as an error message.
pub fn run_seed(scenario: &Arc<Scenario>, seed: u64) -> Result<History, String> {
    let scenario = scenario.clone();
    on_fresh_thread(seed, SEED_WALL_LIMIT, move || world::run(&scenario, seed))
}

/// Runs one seed and its checkers on a fresh thread: a panic in either is that seed's
/// failure, reported with its message, and the sweep goes on.
fn run_and_check(
    scenario: &Arc<Scenario>,
    seed: u64,
    settings: &CheckSettings,
) -> Result<RunSummary, String> {
    let (scenario, settings) = (scenario.clone(), settings.clone());
    on_fresh_thread(seed, SEED_WALL_LIMIT, move || {
        let history = world::run(&scenario, seed);
        let events = world::events::take();
        RunSummary {
            digest: history.digest(),
            verdicts: check_all(&history, &settings),
            evidence: evidence(&history, settings.faults),
            events,
        }
    })
}

/// How long one seed may take in host time before it is reported as hung. A 60 s
/// simulated run takes milliseconds; only a run that stopped advancing virtual time (a
/// busy loop) gets anywhere near this.
pub const SEED_WALL_LIMIT: Duration = Duration::from_secs(120);

fn on_fresh_thread<T: Send + 'static>(
    seed: u64,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (done, result) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(format!("seed {seed}"))
        .spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let _ = done.send(outcome);
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    match result.recv_timeout(limit) {
        Ok(outcome) => {
            let _ = thread.join();
            outcome.map_err(|panic| {
                panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "the run panicked".to_string())
            })
        }
        // The thread cannot be stopped; it is left behind, and the sweep goes on.
        Err(_) => Err(format!(
            "the run did not finish within {} ms of host time",
            limit.as_millis()
        )),
    }
}

/// Runs every seed of `seeds` with up to `jobs` at a time; results are in seed order.
pub fn sweep(scenario: &Arc<Scenario>, seeds: Range<u64>, jobs: usize) -> Vec<SeedRun> {
    let settings = scenario.check_settings();
    let next = AtomicU64::new(seeds.start);
    let runs = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= seeds.end {
                        return;
                    }
                    let outcome = run_and_check(scenario, seed, &settings);
                    runs.lock()
                        .expect("results lock poisoned")
                        .push(SeedRun { seed, outcome });
                }
            });
        }
    });
    let mut runs = runs.into_inner().expect("results lock poisoned");
    runs.sort_by_key(|run| run.seed);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_run_is_an_error_with_its_message() {
        let outcome: Result<(), String> = on_fresh_thread(7, SEED_WALL_LIMIT, || panic!("boom at seed 7"));
        assert_eq!(outcome, Err("boom at seed 7".to_string()));
    }

    #[test]
    fn a_hung_run_is_reported_and_left_behind() {
        let outcome = on_fresh_thread(8, Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_millis(500));
        });
        let message = outcome.unwrap_err();
        assert!(message.contains("did not finish within 20 ms"), "{message}");
    }
}
