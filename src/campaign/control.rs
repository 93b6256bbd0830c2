//! Running the no-fault control of a sweep (what the control is and how it judges:
//! [`crate::report::control`]).

use std::sync::Arc;

use super::cache::RunCache;
use crate::report::ScenarioReport;
use crate::report::control::Control;
use crate::scenario::Scenario;

/// Runs `seeds` of `scenario` without its faults on `jobs` threads (or reuses them from
/// `cache`).
pub fn run(scenario: &Scenario, seeds: Vec<u64>, jobs: usize, cache: &RunCache) -> Control {
    let bare = Arc::new(scenario.without_faults());
    let runs = cache.runs(&bare, &seeds, jobs);
    Control::from_runs(seeds, runs)
}

/// Runs the no-fault control of `report`'s expected violations and judges its
/// expectations again with it: a violation present without the faults does not meet an
/// expectation of violated. Nothing runs when the scenario has no faults or no expected
/// violation broke.
pub fn judge(report: &mut ScenarioReport, scenario: &Scenario, jobs: usize) {
    judge_from(report, scenario, jobs, &RunCache::off());
}

/// [`judge`] with the control's runs from `cache`.
pub fn judge_from(report: &mut ScenarioReport, scenario: &Scenario, jobs: usize, cache: &RunCache) {
    let seeds = Control::seeds_for(scenario, &report.violations);
    if seeds.is_empty() {
        return;
    }
    report.with_control(run(scenario, seeds, jobs, cache));
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::check;
    use crate::report::control::Attribution;
    use crate::scenario;

    fn load(name: &str) -> Scenario {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name);
        scenario::load(&file).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_control_takes_every_fault_away_and_keeps_the_rest() {
        let scenario = load("single-node-gc-pause.json");
        let bare = scenario.without_faults();
        assert!(bare.faults.is_empty());
        assert_eq!(bare.clients.count, scenario.clients.count);
        assert_eq!(bare.duration_ms, scenario.duration_ms);
    }

    #[test]
    fn a_pause_past_the_ttl_is_what_breaks_the_lock() {
        let scenario = load("single-node-gc-pause.json");
        let control = run(&scenario, vec![0, 1, 2], 1, &RunCache::off());
        assert_eq!(control.rate(check::mutual_exclusion::NAME).seeds, 3);
        assert_eq!(
            control.attribution(check::mutual_exclusion::NAME),
            Some(Attribution::CausedByFaults)
        );
    }

    #[test]
    fn work_longer_than_the_ttl_breaks_the_lock_without_any_fault() {
        let mut scenario = load("single-node-gc-pause.json");
        // Every critical section outlives the 2 s TTL: no fault is needed.
        scenario.clients.work_ms = [3000, 3000];
        let control = run(&scenario, vec![0, 1], 1, &RunCache::off());
        assert_eq!(
            control.attribution(check::mutual_exclusion::NAME),
            Some(Attribution::PresentWithoutFaults),
            "{control:?}"
        );
        assert_eq!(control.first_violating(check::mutual_exclusion::NAME), Some(0));
    }
}
