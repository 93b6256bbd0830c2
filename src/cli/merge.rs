//! `merge`: seed logs written by shards (`run --shard K/N --seed-log FILE`, on any number of
//! machines) combined into the verdict table and JSON that one run over all their seeds
//! would give.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use locksim::report::ScenarioReport;
use locksim::scenario;
use locksim::sweep::SeedRun;

use super::{EXIT_UNMET, emit, emit_report, invalid};

/// Reads every log, groups its seeds by scenario file, and judges each scenario on all of
/// them; exit 0 when every expectation is met, 1 when one is not, 2 on a malformed log, a
/// seed logged twice, or a scenario file that no longer loads.
pub fn merge(logs: &[PathBuf], json: Option<&Path>) -> ExitCode {
    let mut by_file: BTreeMap<String, BTreeMap<u64, SeedRun>> = BTreeMap::new();
    for log in logs {
        let file = match std::fs::File::open(log) {
            Ok(file) => file,
            Err(e) => return invalid(format!("{}: {e}", log.display())),
        };
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let at = || format!("{}:{}", log.display(), number + 1);
            let line = match line {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => line,
                Err(e) => return invalid(format!("{}: {e}", at())),
            };
            let parsed = serde_json::from_str(&line)
                .map_err(|e| e.to_string())
                .and_then(|value| SeedRun::from_json(&value));
            let (scenario_file, run) = match parsed {
                Ok(parsed) => parsed,
                Err(e) => return invalid(format!("{}: not a seed-log line: {e}", at())),
            };
            let seed = run.seed;
            if by_file
                .entry(scenario_file.clone())
                .or_default()
                .insert(seed, run)
                .is_some()
            {
                return invalid(format!(
                    "{}: seed {seed} of {scenario_file} is logged twice (were two shards given the same K?)",
                    at()
                ));
            }
        }
    }
    let mut json_out = match json.map(std::fs::File::create).transpose() {
        Ok(file) => file,
        Err(e) => return invalid(format!("{}: {e}", json.unwrap_or(Path::new("")).display())),
    };
    emit(ScenarioReport::table_header());
    let mut all_met = true;
    for (file, runs) in by_file {
        let path = PathBuf::from(&file);
        let scenario = match scenario::load(&path) {
            Ok(scenario) => Arc::new(scenario),
            Err(e) => return invalid(e),
        };
        let seed_start = runs.keys().next().copied().unwrap_or(0);
        let runs: Vec<SeedRun> = runs.into_values().collect();
        let report = ScenarioReport::new(&path, &scenario, seed_start, &runs, 0);
        if !emit_report(&report, json_out.as_mut()) {
            return ExitCode::from(EXIT_UNMET);
        }
        all_met &= report.expect_met();
    }
    emit(ScenarioReport::table_legend());
    if all_met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_UNMET)
    }
}
