//! One violating run shown in full: what each checker said, the story of the first
//! violation (the events that matter, numbered) and how to replay it.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::ScenarioReport;
use crate::check;
use crate::history::History;
use crate::search::story::{self, GrantShare};

/// One violating run shown in full: its timeline and the events that matter. (Serde: a
/// report keeps it in its cache of runs.)
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Counterexample {
    /// A name usable in file names and page anchors (`single-node-gc-pause-seed-0`).
    pub id: String,
    pub scenario: String,
    pub file: PathBuf,
    pub seed: u64,
    /// What each violated checker said of this run.
    pub violations: Vec<(String, String)>,
    /// The first violation told as numbered steps (the events that matter).
    pub story: Vec<String>,
    /// The trace digest of the run, for checking a replay.
    pub digest: String,
    /// How many nodes granted the earlier of the first two clients that believed they
    /// held the lock at once (none without such an overlap).
    pub overlap_grant: Option<GrantShare>,
}

impl Counterexample {
    /// The first violating seed of `report`, replayed: what broke and the events around it,
    /// told for the first checker it violated.
    pub fn new(report: &ScenarioReport, seed: u64, history: &History, verdicts: &[check::Verdict]) -> Self {
        let first = verdicts
            .iter()
            .find(|v| v.violation.is_some())
            .map_or("", |v| v.checker);
        Counterexample::of_run(
            format!("{}-seed-{seed}", report.name),
            report.name.clone(),
            report.file.clone(),
            seed,
            history,
            verdicts,
            first,
        )
    }

    /// A run of `scenario` (replayed from `file` on `seed`): what broke, and the story of
    /// `checker`'s violation (none when it did not fire).
    pub fn of_run(
        id: String,
        scenario: String,
        file: PathBuf,
        seed: u64,
        history: &History,
        verdicts: &[check::Verdict],
        checker: &str,
    ) -> Self {
        let violations = verdicts
            .iter()
            .filter_map(|v| v.violation.clone().map(|why| (v.checker.to_string(), why)))
            .collect();
        let story = match verdicts
            .iter()
            .find(|v| v.checker == checker)
            .and_then(|v| v.violation.as_ref())
        {
            Some(why) => story::render(&story::story(history, checker, why), checker, why),
            None => Vec::new(),
        };
        Counterexample {
            id,
            scenario,
            file,
            seed,
            violations,
            story,
            digest: history.digest(),
            overlap_grant: story::first_overlap_grant(history),
        }
    }

    /// The JSON form: what broke, the story, and how to replay it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "scenario": self.scenario,
            "file": self.file.display().to_string(),
            "seed": self.seed,
            "replay": self.replay_command(),
            "digest": self.digest,
            "violations": self.violations.iter().map(|(checker, why)| json!({"checker": checker, "why": why})).collect::<Vec<_>>(),
            "story": self.story,
            "overlap_grant": self.overlap_grant.map(|g| json!({"granted": g.granted, "asked": g.asked})),
        })
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        format!("locksim replay {} --seed {}", self.file.display(), self.seed)
    }
}
