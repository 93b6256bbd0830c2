//! One sweep of a report: a scenario over seeds `0..N`, and which part of the report (the
//! catalogue, a matrix cell, an envelope point) it belongs to. The matrix and the envelopes
//! make their sweeps; [`super::plan`] runs, logs and assembles them; [`sweep`] and
//! [`sweep_seeds`] run one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::cache::RunCache;
use super::control;
use crate::report::ScenarioReport;
use crate::report::outcome::SAFETY_CHECKERS;
use crate::report::tally::Tally;
use crate::scenario::Scenario;
use crate::sweep::{SeedRun, Shard};

/// Which part of a report a sweep belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SweepKind {
    /// A scenario of the catalogue (a file the user named).
    Catalogue,
    /// A cell of the safety matrix.
    Matrix,
    /// A point of a safety envelope.
    Envelope,
}

impl SweepKind {
    /// The word a seed log uses.
    pub fn word(self) -> &'static str {
        match self {
            SweepKind::Catalogue => "catalogue",
            SweepKind::Matrix => "matrix",
            SweepKind::Envelope => "envelope",
        }
    }

    /// The kind a seed log's word names.
    pub fn from_word(word: &str) -> Option<SweepKind> {
        [SweepKind::Catalogue, SweepKind::Matrix, SweepKind::Envelope]
            .into_iter()
            .find(|kind| kind.word() == word)
    }
}

/// One scenario a report sweeps over seeds `0..seeds`.
#[derive(Debug, Clone)]
pub struct Sweep {
    pub kind: SweepKind,
    /// What a seed log calls it (with its kind): the scenario file for the catalogue,
    /// `matrix/<setup>--<fault>.json` (its file in the report's directory) for a cell,
    /// `envelope/<envelope>-<series>-<x>-<y>.json` for an envelope point.
    pub id: String,
    /// The file its report names (and replays from).
    pub file: PathBuf,
    pub scenario: Arc<Scenario>,
    pub seeds: u64,
    /// Set where a claim of *holds* rests on this sweep: when its first `seeds` seeds show
    /// no safety violation (two holders, damaged data), it goes on to this many seeds
    /// ([`HOLDS_SEEDS`](crate::report::rate::HOLDS_SEEDS)), so that a *holds* is not luck.
    /// Seeds that broke stop it at `seeds`: a violation needs no more.
    pub holds_at: Option<u64>,
}

impl Sweep {
    /// Runs the sweep's seeds on `jobs` threads (and more where [`Sweep::holds_at`] asks)
    /// and judges the expectations with the no-fault control.
    pub fn run(&self, jobs: usize) -> ScenarioReport {
        self.run_from(jobs, &RunCache::off())
    }

    /// [`Sweep::run`] with its runs (and its control's) from `cache`: reused where an
    /// earlier report ran them, simulated otherwise.
    pub fn run_from(&self, jobs: usize, cache: &RunCache) -> ScenarioReport {
        self.run_rest(self.run_first(jobs, cache), jobs, cache)
    }

    /// The sweep's first `seeds` seeds, and its report from them alone (judged with its
    /// control): all of it when the sweep does not go on ([`FirstPass::goes_on`]).
    pub fn run_first(&self, jobs: usize, cache: &RunCache) -> FirstPass {
        let started = Instant::now();
        let mut tally = Tally::new(&self.scenario);
        let seeds: Vec<u64> = (0..self.seeds).collect();
        cache
            .runs(&self.scenario, &seeds, jobs)
            .iter()
            .for_each(|run| tally.add(run));
        let goes_on = self.goes_on(&tally);
        let kept = goes_on.then(|| tally.clone());
        let mut report = tally.finish(&self.file, &self.scenario, 0, started.elapsed().as_millis());
        control::judge_from(&mut report, &self.scenario, jobs, cache);
        FirstPass {
            report,
            tally: kept,
            started,
        }
    }

    /// The sweep's report: `first`'s, or, where the sweep goes on, with the seeds after
    /// its first ones run (from `cache`) and judged again with its control.
    pub fn run_rest(&self, first: FirstPass, jobs: usize, cache: &RunCache) -> ScenarioReport {
        let Some(mut tally) = first.tally else {
            return first.report;
        };
        let more: Vec<u64> = (self.seeds..self.most_seeds()).collect();
        cache
            .runs(&self.scenario, &more, jobs)
            .iter()
            .for_each(|run| tally.add(run));
        let wall_ms = first.started.elapsed().as_millis();
        let mut report = tally.finish(&self.file, &self.scenario, 0, wall_ms);
        control::judge_from(&mut report, &self.scenario, jobs, cache);
        report
    }

    /// The report [`Sweep::run`] gives, from runs logged by shards (which ran every seed
    /// [`Sweep::seeds_of`] names): the same seeds are kept, so a merged report is the one
    /// a single run writes.
    pub fn report_from(&self, runs: &[SeedRun], jobs: usize) -> ScenarioReport {
        let mut tally = Tally::new(&self.scenario);
        let base = runs.iter().filter(|run| run.seed < self.seeds);
        base.for_each(|run| tally.add(run));
        if self.goes_on(&tally) {
            let more = runs
                .iter()
                .filter(|run| (self.seeds..self.most_seeds()).contains(&run.seed));
            more.for_each(|run| tally.add(run));
        }
        let mut report = tally.finish(&self.file, &self.scenario, 0, 0);
        control::judge(&mut report, &self.scenario, jobs);
        report
    }

    /// The most seeds the sweep may run.
    pub fn most_seeds(&self) -> u64 {
        self.holds_at.map_or(self.seeds, |at| at.max(self.seeds))
    }

    /// The seeds `shard` owns (all of them without a shard): of every seed the sweep may
    /// run, since a shard cannot know whether the others saw a violation.
    pub fn seeds_of(&self, shard: Option<Shard>) -> Vec<u64> {
        (0..self.most_seeds())
            .filter(|&seed| shard.is_none_or(|shard| shard.owns(seed)))
            .collect()
    }

    /// Whether the seeds tallied so far leave a *holds* unsettled: the sweep asks for
    /// more, and none of them broke safety.
    fn goes_on(&self, tally: &Tally) -> bool {
        self.holds_at.is_some_and(|at| at > self.seeds) && !tally.violated_any(&SAFETY_CHECKERS)
    }
}

/// A sweep's first seeds ([`Sweep::run_first`]): their report, and what [`Sweep::run_rest`]
/// needs to go on from them.
pub struct FirstPass {
    /// The report of the first seeds alone.
    pub report: ScenarioReport,
    /// The first seeds' tally, kept only when the sweep goes on from it.
    tally: Option<Tally>,
    /// When the sweep started (its report's `wall_ms` counts from here).
    started: Instant,
}

impl FirstPass {
    /// Whether the sweep goes on past these seeds: its first seeds left a *holds*
    /// unsettled, so [`FirstPass::report`] is not yet its report.
    pub fn goes_on(&self) -> bool {
        self.tally.is_some()
    }
}

/// Runs seeds `seed_start..seed_start + count` of `scenario` on `jobs` threads, summarises
/// them and judges the expectations with the no-fault control ([`control::judge`]).
pub fn sweep(
    file: &Path,
    scenario: &Arc<Scenario>,
    seed_start: u64,
    count: u64,
    jobs: usize,
) -> ScenarioReport {
    let seeds: Vec<u64> = (seed_start..seed_start.saturating_add(count)).collect();
    let mut report = sweep_seeds(file, scenario, &seeds, jobs, &|_| {});
    control::judge(&mut report, scenario, jobs);
    report
}

/// Runs the listed seeds (a shard's share, say) on `jobs` threads, telling `done` of each
/// as it finishes, and summarises them as they come (no run is kept); times the sweep.
pub fn sweep_seeds(
    file: &Path,
    scenario: &Arc<Scenario>,
    seeds: &[u64],
    jobs: usize,
    done: &(dyn Fn(&SeedRun) + Sync),
) -> ScenarioReport {
    let never = AtomicBool::new(false);
    sweep_seeds_resuming(file, scenario, seeds, &[], jobs, done, &never).0
}

/// [`sweep_seeds`] for a sweep that may have been cut short before and may be again: the
/// seeds `logged` by an earlier, killed sweep are tallied, not rerun (`run --resume`), and
/// once `stop` is set (Ctrl-C) no further seed starts. The report covers the seeds that
/// ran; `true` when that is every seed listed.
pub fn sweep_seeds_resuming(
    file: &Path,
    scenario: &Arc<Scenario>,
    seeds: &[u64],
    logged: &[SeedRun],
    jobs: usize,
    done: &(dyn Fn(&SeedRun) + Sync),
    stop: &AtomicBool,
) -> (ScenarioReport, bool) {
    let started = Instant::now();
    let mut tally = Tally::new(scenario);
    let wanted: BTreeSet<u64> = seeds.iter().copied().collect();
    let mut reused = BTreeSet::new();
    for run in logged.iter().filter(|run| wanted.contains(&run.seed)) {
        if reused.insert(run.seed) {
            tally.add(run);
        }
    }
    let left: Vec<u64> = seeds
        .iter()
        .copied()
        .filter(|seed| !reused.contains(seed))
        .collect();
    let tally = Mutex::new(tally);
    let complete = tally_seeds(scenario, &left, jobs, &tally, done, stop);
    let seed_start = seeds.first().copied().unwrap_or(0);
    let tally = tally.into_inner().expect("tally lock poisoned");
    let report = tally.finish(file, scenario, seed_start, started.elapsed().as_millis());
    (report, complete)
}

/// Runs `seeds` of `scenario` on `jobs` threads into `tally`, telling `done` of each run
/// as it finishes; no run is kept. `true` when every seed ran (`stop` was not set first).
fn tally_seeds(
    scenario: &Arc<Scenario>,
    seeds: &[u64],
    jobs: usize,
    tally: &Mutex<Tally>,
    done: &(dyn Fn(&SeedRun) + Sync),
    stop: &AtomicBool,
) -> bool {
    let ran = crate::sweep::sweep_seeds_until(scenario, seeds, jobs, stop, |run| {
        done(&run);
        tally.lock().expect("tally lock poisoned").add(&run);
    });
    ran.iter().all(Option::is_some)
}
