//! Long sweeps, bounded in CI and full behind `make soak` (`LOCKSIM_SOAK=1`):
//! - the safe baseline of every topology never violates anything (20,000 seeds each in
//!   the soak, 100 in CI);
//! - catalogue seeds give the same digests run twice and on one or several threads
//!   (10,000+ seeds in the soak: 113 per scenario; 2 per scenario in CI).

use std::path::PathBuf;
use std::sync::Arc;

use locksim::scenario::{Scenario, load_paths};
use locksim::sweep::sweep;

/// Whether the full soak was asked for.
fn soak() -> bool {
    std::env::var_os("LOCKSIM_SOAK").is_some()
}

fn catalogue() -> Vec<(PathBuf, Arc<Scenario>)> {
    load_paths(&[PathBuf::from("scenarios")])
        .expect("every shipped scenario loads")
        .into_iter()
        .map(|(file, scenario)| (file, Arc::new(scenario)))
        .collect()
}

#[test]
fn the_safe_baseline_of_every_topology_never_violates() {
    let seeds = if soak() { 20_000 } else { 100 };
    let baselines: Vec<_> = catalogue()
        .into_iter()
        .filter(|(file, _)| file.to_string_lossy().ends_with("-baseline.json"))
        .collect();
    let topologies: Vec<String> = baselines
        .iter()
        .map(|(_, s)| format!("{:?}", s.topology.kind))
        .collect();
    assert_eq!(topologies.len(), 3, "one baseline per topology: {topologies:?}");
    for (file, scenario) in baselines {
        let mut violations = Vec::new();
        for run in sweep(&scenario, 0..seeds, locksim_jobs()) {
            match run.outcome {
                Ok(summary) => violations.extend(summary.verdicts.iter().filter_map(|v| {
                    Some(format!(
                        "seed {}: {}: {}",
                        run.seed,
                        v.checker,
                        v.violation.as_ref()?
                    ))
                })),
                Err(message) => violations.push(format!("seed {}: the run failed: {message}", run.seed)),
            }
        }
        assert!(
            violations.is_empty(),
            "{}: {} of {seeds} seeds broke the baseline; first: {}",
            file.display(),
            violations.len(),
            violations[0]
        );
        eprintln!("{}: {seeds} seeds, no violation", file.display());
    }
}

#[test]
fn catalogue_seeds_give_the_same_digests_twice_and_on_any_number_of_threads() {
    let per_scenario: u64 = if soak() { 113 } else { 2 };
    // Seed 1 of every scenario is replayed by tests/sim/catalog.rs already.
    let seeds = 2..2 + per_scenario;
    let mut compared = 0;
    for (file, scenario) in catalogue() {
        let digests = |jobs: usize| -> Vec<String> {
            sweep(&scenario, seeds.clone(), jobs)
                .into_iter()
                .map(|run| match run.outcome {
                    Ok(summary) => summary.digest,
                    Err(message) => panic!("{} seed {}: {message}", file.display(), run.seed),
                })
                .collect()
        };
        let serial = digests(1);
        assert_eq!(
            serial,
            digests(locksim_jobs()),
            "{}: serial vs parallel",
            file.display()
        );
        assert_eq!(serial, digests(3), "{}: a second parallel pass", file.display());
        compared += serial.len();
    }
    eprintln!(
        "{compared} catalogue seeds: identical digests on 1, {} and 3 threads",
        locksim_jobs()
    );
}

/// Threads for the parallel passes: every core, at least 2.
fn locksim_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}
