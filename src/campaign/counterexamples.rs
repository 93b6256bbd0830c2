//! The counterexamples a report shows in full: the first violating seed of every catalogue
//! scenario and every matrix cell that broke, replayed for its story and its lease
//! timeline. (The shrunk ones are [`super::minimal`]'s.)

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::plan::{Plan, Swept};
use super::sweeps::Sweep;
use crate::check::check_all;
use crate::report::ScenarioReport;
use crate::report::counterexample::Counterexample;
use crate::report::figures::timeline::Timeline;
use crate::scenario::Scenario;
use crate::sweep::{in_parallel, run_seed};

/// The replayed counterexamples of one report, and their timelines by counterexample id.
#[derive(Default)]
pub struct Replayed {
    pub catalogue: Vec<Counterexample>,
    pub matrix: Vec<Counterexample>,
    pub timelines: Vec<(String, Timeline)>,
}

/// A replayed counterexample (and its timeline), or `None` when its replay failed.
type Replay = Option<(Counterexample, Timeline)>;

/// The counterexamples one report has replayed, kept by (scenario name, file, seed): a
/// counterexample depends on nothing else, so the provisional page's replays serve the
/// final page too and no seed is replayed twice.
#[derive(Default)]
pub struct Replays {
    kept: Mutex<BTreeMap<(String, PathBuf, u64), Replay>>,
    /// Seeds actually replayed (not taken from `kept`).
    runs: AtomicU64,
}

impl Replays {
    /// Seeds replayed so far (each at most once).
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    /// Replays the first violating seed of every catalogue scenario and matrix cell of
    /// `swept` that broke (`plan` holds their scenarios, in the same order), `jobs` at a
    /// time; those already replayed are reused.
    pub fn replay_all(&self, plan: &Plan, swept: &Swept, jobs: usize) -> Replayed {
        let catalogue = swept.catalogue.iter().zip(&plan.catalogue);
        let cells = swept
            .matrix
            .iter()
            .flat_map(|matrix| matrix.cells.iter().flatten().flatten());
        let cell_sweeps = plan.matrix.iter().flat_map(|(_, sweeps)| sweeps);
        // Each report with its sweep, and whether it is a matrix cell's.
        let each: Vec<(&ScenarioReport, &Sweep, bool)> = catalogue
            .map(|(report, sweep)| (report, sweep, false))
            .chain(
                cells
                    .zip(cell_sweeps)
                    .map(|(report, sweep)| (report, sweep, true)),
            )
            .collect();
        let examples = in_parallel(0..each.len() as u64, jobs, |index| {
            let (report, sweep, _) = each[index as usize];
            self.replay_first(report, &sweep.scenario)
        });
        let mut replayed = Replayed::default();
        for ((_, _, in_matrix), example) in each.iter().zip(examples) {
            if let Some((example, timeline)) = example {
                replayed.timelines.push((example.id.clone(), timeline));
                match in_matrix {
                    true => replayed.matrix.push(example),
                    false => replayed.catalogue.push(example),
                }
            }
        }
        replayed
    }

    /// [`replay_first`] of `report`, from `kept` when this report already replayed it.
    fn replay_first(&self, report: &ScenarioReport, scenario: &Arc<Scenario>) -> Replay {
        let seed = *report.violating_seeds().first()?;
        let key = (report.name.clone(), report.file.clone(), seed);
        if let Some(kept) = self.kept.lock().expect("replays lock poisoned").get(&key) {
            return kept.clone();
        }
        self.runs.fetch_add(1, Ordering::Relaxed);
        let replay = replay_first(report, seed, scenario);
        self.kept
            .lock()
            .expect("replays lock poisoned")
            .insert(key, replay.clone());
        replay
    }
}

/// The first violating seed of a scenario, `seed`, replayed in full, and its lease
/// timeline; `None` when the replay itself failed (the sweep already reported it).
fn replay_first(report: &ScenarioReport, seed: u64, scenario: &Arc<Scenario>) -> Replay {
    let history = run_seed(scenario, seed).ok()?;
    let verdicts = check_all(&history, &scenario.check_settings());
    let example = Counterexample::new(report, seed, &history, &verdicts);
    let title = format!("{} — seed {seed}", report.name);
    let timeline = Timeline::of_violation(&history, &title, &verdicts, None);
    Some((example, timeline))
}
