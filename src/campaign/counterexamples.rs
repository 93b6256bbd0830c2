//! The counterexamples a report shows in full: the first violating seed of every catalogue
//! scenario and every matrix cell that broke, replayed for its story and its lease
//! timeline, kept in the report's cache of runs. (The shrunk ones are
//! [`super::minimal`]'s.)

use std::sync::Arc;

use super::cache::{RunCache, Tally};
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

/// Replays the first violating seed of every catalogue scenario and matrix cell of `swept`
/// that broke (`plan` holds their scenarios, in the same order), `jobs` at a time; those
/// `cache` holds (replayed earlier in this report, or kept by an earlier one) are reused,
/// and `tally` counts what was replayed and what came from the cache's directory.
pub fn replay_all(plan: &Plan, swept: &Swept, jobs: usize, cache: &RunCache, tally: &Tally) -> Replayed {
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
        replay_kept(report, &sweep.scenario, cache, tally)
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

/// [`replay_first`] of `report`'s first violating seed, from `cache` when it holds it: the
/// key names all a replay depends on besides the binary (the scenario, every field; the
/// seed; the name and file the report shows).
fn replay_kept(report: &ScenarioReport, scenario: &Arc<Scenario>, cache: &RunCache, tally: &Tally) -> Replay {
    let seed = *report.violating_seeds().first()?;
    let key = format!(
        "replay\n{scenario:?}\n{seed}\n{}\n{}",
        report.name,
        report.file.display()
    );
    let replay = || replay_first(report, seed, scenario);
    let kept = cache.value(&key, tally, || serde_json::to_value(replay()?).ok())?;
    // An entry this binary cannot read back is replayed again.
    serde_json::from_value(kept).ok().or_else(replay)
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
