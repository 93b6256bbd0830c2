//! Runs a report already simulated, kept so the next report reuses them: a second `make
//! run` whose scenarios and binary did not change simulates nothing again.
//!
//! An entry is the runs of one list of seeds of one scenario, as seed-log lines
//! ([`SeedRun::to_json`]), in a file named by a fingerprint of the scenario and the seeds.
//! Its first line names the locksim binary that ran it (a hash of the executable's bytes):
//! a changed scenario is another file, and a rebuilt binary does not read the old ones, so
//! no entry outlives what made it. A run is deterministic in its scenario, seed and binary;
//! a list with a failed run (a panic, a host-time budget) is not kept, so it runs again.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

use crate::scenario::Scenario;
use crate::sweep::{SeedRun, sweep_seeds};

/// The key of an entry's first line (and its format's version).
const HEADER_KEY: &str = "locksim_run_cache";
const FORMAT: u64 = 1;

/// Where runs come from: simulated here, and kept in (and reused from) a directory when
/// the cache is on.
pub struct RunCache {
    /// The entries' directory and the running binary's fingerprint; `None`: no cache.
    store: Option<(PathBuf, String)>,
    /// Seeds reused from entries, and seeds simulated.
    reused: AtomicU64,
    simulated: AtomicU64,
    /// The entries this report read or wrote, kept by [`RunCache::prune`].
    used: Mutex<BTreeSet<PathBuf>>,
}

impl RunCache {
    /// No cache: every run is simulated, nothing is written.
    pub fn off() -> RunCache {
        RunCache {
            store: None,
            reused: AtomicU64::new(0),
            simulated: AtomicU64::new(0),
            used: Mutex::new(BTreeSet::new()),
        }
    }

    /// A cache in `dir` (made when missing) for the binary running now; `Err` says why it
    /// cannot be used (the report then runs without it).
    pub fn open(dir: &Path) -> Result<RunCache, String> {
        let build = binary_fingerprint()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(RunCache::for_build(dir, build))
    }

    /// A cache in `dir` (which exists) for the binary fingerprinted `build`.
    fn for_build(dir: &Path, build: String) -> RunCache {
        RunCache {
            store: Some((dir.to_path_buf(), build)),
            ..RunCache::off()
        }
    }

    /// The runs of `seeds` of `scenario`, in the list's order: reused from the cache's
    /// entry when it holds them all, simulated on `jobs` threads (and kept) otherwise.
    pub fn runs(&self, scenario: &Arc<Scenario>, seeds: &[u64], jobs: usize) -> Vec<SeedRun> {
        let Some((dir, build)) = &self.store else {
            return self.simulate(scenario, seeds, jobs);
        };
        let file = dir.join(format!("{}.jsonl", entry_name(scenario, seeds)));
        self.used.lock().expect("cache lock poisoned").insert(file.clone());
        if let Some(runs) = read_entry(&file, build, seeds) {
            self.reused.fetch_add(seeds.len() as u64, Ordering::Relaxed);
            return runs;
        }
        let runs = self.simulate(scenario, seeds, jobs);
        if runs.iter().all(|run| run.outcome.is_ok()) {
            // A cache that cannot be written costs only time: the report goes on.
            let _ = write_entry(&file, build, &runs);
        }
        runs
    }

    fn simulate(&self, scenario: &Arc<Scenario>, seeds: &[u64], jobs: usize) -> Vec<SeedRun> {
        self.simulated.fetch_add(seeds.len() as u64, Ordering::Relaxed);
        sweep_seeds(scenario, seeds, jobs, |run| run)
    }

    /// Seeds reused from the cache and seeds simulated so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.reused.load(Ordering::Relaxed),
            self.simulated.load(Ordering::Relaxed),
        )
    }

    /// Removes every entry this report did not use (a changed scenario's, another
    /// binary's), so the directory holds one report's runs, not every report's.
    pub fn prune(&self) -> std::io::Result<()> {
        let Some((dir, _)) = &self.store else {
            return Ok(());
        };
        let used = self.used.lock().expect("cache lock poisoned");
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "jsonl") && !used.contains(&path) {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }
}

/// A fingerprint of the running executable's bytes: a rebuilt locksim is another binary,
/// whatever its version says.
fn binary_fingerprint() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the running locksim: {e}"))?;
    let bytes = std::fs::read(&exe).map_err(|e| format!("{}: {e}", exe.display()))?;
    Ok(format!("{:032x}", xxh3_128(&bytes)))
}

/// An entry's file name: a fingerprint of the scenario (every field, as the report's plan
/// fingerprints it) and the seeds.
fn entry_name(scenario: &Scenario, seeds: &[u64]) -> String {
    let mut hasher = Xxh3::new();
    hasher.update(format!("{scenario:?}\n").as_bytes());
    for seed in seeds {
        hasher.update(&seed.to_le_bytes());
    }
    format!("{:032x}", hasher.digest128())
}

/// The runs `file` holds, when it was written by binary `build` for exactly `seeds`.
fn read_entry(file: &Path, build: &str, seeds: &[u64]) -> Option<Vec<SeedRun>> {
    let reader = std::io::BufReader::new(std::fs::File::open(file).ok()?);
    let mut lines = reader.lines();
    let header: Value = serde_json::from_str(&lines.next()?.ok()?).ok()?;
    let written_by = header.get("build").and_then(Value::as_str);
    if header.get(HEADER_KEY).and_then(Value::as_u64) != Some(FORMAT) || written_by != Some(build) {
        return None;
    }
    let mut runs = Vec::with_capacity(seeds.len());
    for (line, &seed) in lines.zip(seeds) {
        let (_, run) = SeedRun::from_json(&serde_json::from_str(&line.ok()?).ok()?).ok()?;
        if run.seed != seed {
            return None;
        }
        runs.push(run);
    }
    (runs.len() == seeds.len()).then_some(runs)
}

/// Writes `runs` as an entry of binary `build`, whole or not at all (a temporary file
/// renamed into place, so a report killed mid-write leaves no half entry).
fn write_entry(file: &Path, build: &str, runs: &[SeedRun]) -> std::io::Result<()> {
    let partial = file.with_extension("partial");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&partial)?);
    writeln!(out, "{}", json!({ HEADER_KEY: FORMAT, "build": build, "seeds": runs.len() }))?;
    for run in runs {
        writeln!(out, "{}", run.to_json(""))?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&partial, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Arc<Scenario> {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/single-node-gc-pause.json");
        Arc::new(crate::scenario::load(&file).unwrap_or_else(|e| panic!("{e}")))
    }

    fn digests(runs: &[SeedRun]) -> Vec<String> {
        runs.iter()
            .map(|run| run.outcome.as_ref().expect("the run finished").digest.clone())
            .collect()
    }

    #[test]
    fn runs_are_reused_by_the_same_binary_and_rerun_by_another() {
        let dir = std::env::temp_dir().join(format!("locksim-run-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let scenario = scenario();
        let first = RunCache::for_build(&dir, "a".into());
        let ran = first.runs(&scenario, &[0, 1], 2);
        assert_eq!(first.counts(), (0, 2));
        let again = RunCache::for_build(&dir, "a".into());
        assert_eq!(digests(&again.runs(&scenario, &[0, 1], 2)), digests(&ran));
        assert_eq!(again.counts(), (2, 0), "the same binary reuses the entry");
        let rebuilt = RunCache::for_build(&dir, "b".into());
        assert_eq!(digests(&rebuilt.runs(&scenario, &[0, 1], 2)), digests(&ran));
        assert_eq!(rebuilt.counts(), (0, 2), "another binary runs them again");
        let other_seeds = RunCache::for_build(&dir, "b".into());
        other_seeds.runs(&scenario, &[0], 1);
        assert_eq!(other_seeds.counts(), (0, 1), "other seeds are another entry");
        other_seeds.prune().unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only the entry used is kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
