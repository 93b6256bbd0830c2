//! What a live scenario that was not met leaves to read. A live seed cannot be replayed
//! bit for bit, so its evidence is kept when it is made: the workers' and nodes' output
//! (the run's scratch directory), the trace, and the verdicts with each violation's story.
//! A met scenario keeps nothing.

use std::path::{Path, PathBuf};

use locksim::history::History;
use locksim::report::ScenarioReport;
use locksim::scenario::Scenario;

use super::account::{history_lines, story_lines, verdict_lines, verdicts, write_lines};

/// What one live seed left behind.
pub struct Leftovers {
    pub seed: u64,
    /// The run's history, when it ran to the end.
    pub history: Option<History>,
    /// Its scratch directory: the processes' output in `logs/`, the nodes' directories.
    pub scratch: PathBuf,
}

/// The file of the trace in a kept run's directory.
const TRACE: &str = "trace.txt";
/// The file of the verdicts and stories in a kept run's directory.
const VERDICTS: &str = "verdicts.txt";

/// Sorts out the seeds' leftovers once `report` has judged them: a met scenario keeps
/// none; one that was not met keeps its violating and failed seeds (its first seed when
/// none violated or failed: an expected violation that never came, a seed that was not
/// exercised), each with its trace and verdicts written beside its output. Returns the
/// lines to print: where each kept run is, and the first kept seed's violations.
pub fn keep_unmet(report: &ScenarioReport, scenario: &Scenario, leftovers: Vec<Leftovers>) -> Vec<String> {
    let mut keep: Vec<u64> = Vec::new();
    if !report.expect_met() {
        keep = report.violating_seeds();
        keep.extend(report.errors.iter().map(|(seed, _)| *seed));
        if keep.is_empty() {
            keep.extend(leftovers.first().map(|left| left.seed));
        }
    }
    let mut lines = Vec::new();
    for left in leftovers {
        if !keep.contains(&left.seed) {
            let _ = std::fs::remove_dir_all(&left.scratch);
            continue;
        }
        let Some(history) = &left.history else {
            // A failed run: its error already names the directory it kept.
            continue;
        };
        match write_account(&left.scratch, history, report, scenario) {
            Ok(violations) => {
                lines.push(format!(
                    "kept: seed {}: {} (workers' and nodes' output in logs/, the trace in {TRACE}, verdicts and stories in {VERDICTS})",
                    left.seed,
                    left.scratch.display()
                ));
                if lines.len() == 1 {
                    lines.extend(violations.into_iter().map(|v| format!("  {v}")));
                }
            }
            Err(e) => lines.push(format!(
                "kept: seed {}: {} (its trace could not be written: {e})",
                left.seed,
                left.scratch.display()
            )),
        }
    }
    lines
}

/// Writes the trace and the verdicts of a kept run into `dir`; returns its violation
/// lines (`checker: VIOLATED: why`).
fn write_account(
    dir: &Path,
    history: &History,
    report: &ScenarioReport,
    scenario: &Scenario,
) -> std::io::Result<Vec<String>> {
    write_lines(&dir.join(TRACE), &history_lines(history, &[]))?;
    let judged = verdicts(history, scenario);
    let lines = verdict_lines(history, scenario, &judged, &report.mode);
    let mut text = story_lines(history, &judged, &report.mode);
    text.extend(lines.iter().cloned());
    write_lines(&dir.join(VERDICTS), &text)?;
    Ok(lines
        .into_iter()
        .filter(|line| line.contains(": VIOLATED: ") || line.starts_with("evidence: NOT EXERCISED"))
        .collect())
}
