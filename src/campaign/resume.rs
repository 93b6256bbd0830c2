//! `run --seed-log FILE --resume`: a sweep killed part way (Ctrl-C, a CI timeout, a lost
//! runner) goes on from its seed log without running again a seed it logged.
//!
//! A seed log is appended to as each seed finishes, so a kill can leave its last line
//! torn; that line is dropped (and cut from the file, so the lines appended next stay
//! whole). Every other line must be a seed-log line. Before any logged seed is reused, the
//! lowest one of each scenario is run again and its digest compared: a log written from
//! another version of the scenario file, or by another locksim, is refused rather than
//! mixed into the verdicts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::plan::LogHeader;
use crate::scenario::Scenario;
use crate::sweep::{SeedRun, run_and_check};

/// The runs an earlier sweep logged, by the scenario file each names.
#[derive(Debug, Default)]
pub struct Logged {
    by_file: BTreeMap<String, Vec<SeedRun>>,
}

impl Logged {
    /// Reads the seed log at `path` (none yet: nothing logged), dropping a torn last line
    /// from it; `Err` names the file, the line and what is wrong.
    pub fn read(path: &Path) -> Result<Logged, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Logged::default()),
            Err(e) => return Err(format!("--seed-log {}: {e}", path.display())),
        };
        let whole = match text.ends_with('\n') {
            true => text.as_str(),
            false => &text[..text.rfind('\n').map_or(0, |end| end + 1)],
        };
        if whole.len() < text.len() {
            // The last line was torn by the kill: cut it, so the next line starts afresh.
            std::fs::write(path, whole).map_err(|e| format!("--seed-log {}: {e}", path.display()))?;
        }
        let mut logged = Logged::default();
        for (index, line) in whole.lines().enumerate() {
            let at = || format!("{}:{}", path.display(), index + 1);
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line).map_err(|e| format!("{}: not JSON: {e}", at()))?;
            if LogHeader::is_header(&value) {
                return Err(format!(
                    "{}: a seed log of `locksim report --shard`, not of `locksim run`",
                    at()
                ));
            }
            let (file, run) =
                SeedRun::from_json(&value).map_err(|e| format!("{}: not a seed-log line: {e}", at()))?;
            logged.by_file.entry(file).or_default().push(run);
        }
        Ok(logged)
    }

    /// The runs logged for the scenario file `file` (as the log names it), once its lowest
    /// seed has been run again and given the digest it logged.
    pub fn runs_of(&self, file: &str, scenario: &Arc<Scenario>) -> Result<&[SeedRun], String> {
        let Some(runs) = self.by_file.get(file) else {
            return Ok(&[]);
        };
        let witness = runs
            .iter()
            .filter_map(|run| Some((run.seed, &run.outcome.as_ref().ok()?.digest)))
            .min_by_key(|(seed, _)| *seed);
        if let Some((seed, digest)) = witness {
            let again = run_and_check(scenario, seed, &scenario.check_settings());
            if again.as_ref().map(|summary| &summary.digest).ok() != Some(digest) {
                return Err(format!(
                    "{file}: seed {seed} no longer gives the digest the seed log has for it: the scenario file or \
                     locksim changed since the log was written; run again without --resume (or with a new --seed-log)"
                ));
            }
        }
        Ok(runs)
    }
}
