//! What a sweep has found, folded in seed by seed as runs finish (in any order): a few
//! numbers per seed and no run kept, finished into a [`ScenarioReport`].

use std::collections::BTreeMap;
use std::path::Path;

use super::{Activity, FaultSummary, ScenarioReport};
use crate::check::evidence::NotExercised;
use crate::scenario::Scenario;
use crate::sweep::SeedRun;

impl ScenarioReport {
    /// Summarises the runs of one scenario against its expectations.
    pub fn new(file: &Path, scenario: &Scenario, seed_start: u64, runs: &[SeedRun], wall_ms: u128) -> Self {
        let mut tally = Tally::new(scenario);
        for run in runs {
            tally.add(run);
        }
        tally.finish(file, scenario, seed_start, wall_ms)
    }
}

/// What a sweep has found so far, folded in seed by seed as runs finish (in any order), so
/// a sweep keeps a few numbers per seed and no run. A clone finishes a report of the
/// seeds so far while the sweep goes on (a report's first pass).
#[derive(Clone)]
pub struct Tally {
    min_grants: u64,
    seeds: u64,
    violations: BTreeMap<&'static str, SeedSet>,
    errors: Vec<(u64, String)>,
    not_exercised: Vec<(u64, NotExercised)>,
    /// Per fault: how many struck seeds saw each number of grants after it.
    grants_after: Vec<BTreeMap<u64, u64>>,
    activity: Activity,
}

/// A set of seeds as 64-seed blocks of bits: about 1 bit a seed in a sweep of consecutive
/// (or every Nth) seeds, where a list would keep 8 bytes a violating seed.
#[derive(Debug, Default, Clone)]
struct SeedSet(BTreeMap<u64, u64>);

impl SeedSet {
    fn insert(&mut self, seed: u64) {
        *self.0.entry(seed / 64).or_default() |= 1 << (seed % 64);
    }

    /// The seeds, in order.
    fn to_vec(&self) -> Vec<u64> {
        let mut seeds = Vec::with_capacity(self.0.values().map(|bits| bits.count_ones() as usize).sum());
        for (block, bits) in &self.0 {
            seeds.extend(
                (0..64)
                    .filter(|bit| bits & (1 << bit) != 0)
                    .map(|bit| block * 64 + bit),
            );
        }
        seeds
    }
}

/// The fewest, median and most of a histogram of counts (`None` when empty): the median
/// is the element at index len / 2 of the sorted values, as for a sorted list.
fn fewest_median_most(histogram: &BTreeMap<u64, u64>) -> Option<[u64; 3]> {
    let total: u64 = histogram.values().sum();
    let (fewest, most) = (*histogram.keys().next()?, *histogram.keys().next_back()?);
    let mut below = 0;
    let median = histogram.iter().find_map(|(&value, &count)| {
        below += count;
        (below > total / 2).then_some(value)
    })?;
    Some([fewest, median, most])
}

impl Tally {
    pub fn new(scenario: &Scenario) -> Self {
        Tally {
            min_grants: scenario.check_settings().min_grants_after_fault,
            seeds: 0,
            violations: BTreeMap::new(),
            errors: Vec::new(),
            not_exercised: Vec::new(),
            grants_after: vec![BTreeMap::new(); scenario.faults.len()],
            activity: Activity::default(),
        }
    }

    pub fn add(&mut self, run: &SeedRun) {
        self.seeds += 1;
        let summary = match &run.outcome {
            Ok(summary) => summary,
            Err(message) => return self.errors.push((run.seed, message.clone())),
        };
        self.activity.add(run.seed, &summary.evidence);
        self.activity.coverage.add(run.seed, &summary.coverage);
        for verdict in &summary.verdicts {
            let seeds = self.violations.entry(verdict.checker).or_default();
            if verdict.violation.is_some() {
                seeds.insert(run.seed);
            }
        }
        if let Err(why) = summary.evidence.exercised(self.min_grants) {
            self.not_exercised.push((run.seed, why));
        }
        for (grants, fault) in self.grants_after.iter_mut().zip(&summary.evidence.faults) {
            if fault.struck_us.is_some() {
                *grants.entry(fault.grants_after).or_default() += 1;
            }
        }
    }

    /// Whether any seed tallied so far violated one of `checkers`.
    pub fn violated_any(&self, checkers: &[&str]) -> bool {
        checkers.iter().any(|checker| {
            self.violations
                .get(checker)
                .is_some_and(|seeds| !seeds.0.is_empty())
        })
    }

    /// The report, with every list in seed order whatever order the runs came in.
    pub fn finish(self, file: &Path, scenario: &Scenario, seed_start: u64, wall_ms: u128) -> ScenarioReport {
        let Tally {
            seeds,
            violations,
            mut errors,
            mut not_exercised,
            grants_after,
            activity,
            ..
        } = self;
        let violations = violations
            .into_iter()
            .map(|(checker, seeds)| (checker, seeds.to_vec()))
            .collect();
        errors.sort_by_key(|(seed, _)| *seed);
        not_exercised.sort_by_key(|(seed, _)| *seed);
        let faults = scenario
            .faults
            .iter()
            .zip(grants_after)
            .map(|(fault, grants)| FaultSummary {
                kind: fault.action.kind().to_string(),
                struck: grants.values().sum(),
                grants_after: fewest_median_most(&grants),
                aims: scenario.aim(fault),
            })
            .collect();
        let mut report = ScenarioReport {
            file: file.to_path_buf(),
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            seed_start,
            seeds,
            violations,
            errors,
            not_exercised,
            faults,
            expectations: scenario
                .expect
                .entries()
                .into_iter()
                .map(|(checker, expected)| (checker, expected, false))
                .collect(),
            activity,
            control: None,
            wall_ms,
            mode: Default::default(),
        };
        report.judge();
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_set_gives_its_seeds_back_in_order() {
        let mut set = SeedSet::default();
        for seed in [130, 3, 64, 63, 0, 1_000_000_007, 3] {
            set.insert(seed);
        }
        assert_eq!(set.to_vec(), [0, 3, 63, 64, 130, 1_000_000_007]);
    }

    #[test]
    fn a_histogram_has_the_sorted_list_s_fewest_median_and_most() {
        for values in [vec![5], vec![2, 9], vec![4, 1, 4, 7, 0, 4, 9], vec![3, 3, 8, 8]] {
            let mut histogram = BTreeMap::new();
            for &value in &values {
                *histogram.entry(value).or_insert(0) += 1;
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let expected = [sorted[0], sorted[sorted.len() / 2], sorted[sorted.len() - 1]];
            assert_eq!(fewest_median_most(&histogram), Some(expected), "{values:?}");
        }
        assert_eq!(fewest_median_most(&BTreeMap::new()), None);
    }
}
