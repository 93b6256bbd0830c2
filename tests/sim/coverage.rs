//! Coverage of dangerous states on real simulated runs: for each state, a catalogue
//! scenario whose faults take some seed there, and the same seeds without the faults,
//! which must not get there.

use std::path::Path;
use std::sync::Arc;

use locksim::check::coverage::{self, State};
use locksim::scenario;
use locksim::sweep::run_seed;

/// Seeds tried per scenario: each state below is reached within them.
const SEEDS: u64 = 4;

/// Each state, and a catalogue scenario whose faults reach it.
const CASES: [(State, &str); 8] = [
    (
        State::FailoverUnreplicated,
        "replicated-crash-before-replication.json",
    ),
    (State::FailoverWhileHeld, "replicated-clean-failover.json"),
    (State::ClockJumpInQuorum, "single-node-clock-jump-forward.json"),
    (State::HolderPausedPastValidity, "single-node-gc-pause.json"),
    (
        State::CrashInQuorum,
        "single-node-restart-without-persistence.json",
    ),
    (
        State::ReleaseAfterExpiry,
        "ladder-5-lua-release-late-release.json",
    ),
    (State::RenewalRacingExpiry, "extend-compare-reports-the-loss.json"),
    (State::HolderCutOff, "profile-redisson-renewal-lost.json"),
];

/// The states each of the first [`SEEDS`] seeds reached.
fn reached(scenario: &scenario::Scenario) -> Vec<Vec<State>> {
    let scenario = Arc::new(scenario.clone());
    (0..SEEDS)
        .map(|seed| coverage::reached(&run_seed(&scenario, seed).unwrap()))
        .collect()
}

#[test]
fn each_state_is_reached_by_its_scenario_and_not_without_the_faults() {
    for (state, file) in CASES {
        let scenario = scenario::load(&Path::new("scenarios").join(file)).unwrap_or_else(|e| panic!("{e}"));
        let with = reached(&scenario);
        assert!(
            with.iter().any(|states| states.contains(&state)),
            "{file}: no seed of {SEEDS} reached {state}: {with:?}"
        );
        let without = reached(&scenario.without_faults());
        assert!(
            without.iter().all(|states| !states.contains(&state)),
            "{file} without its faults reached {state}: {without:?}"
        );
    }
}

#[test]
fn runs_without_faults_reach_no_dangerous_state() {
    for file in [
        "single-node-baseline.json",
        "redlock-baseline.json",
        "replicated-baseline.json",
        "watchdog-long-work.json",
    ] {
        let scenario = scenario::load(&Path::new("scenarios").join(file)).unwrap_or_else(|e| panic!("{e}"));
        for (seed, states) in reached(&scenario.without_faults()).into_iter().enumerate() {
            assert_eq!(states, [], "{file} seed {seed}");
        }
    }
}
