//! Runs a report already simulated, kept so the next report reuses them: a second `make
//! run` whose scenarios and binary did not change simulates nothing again.
//!
//! An entry is the runs of one list of seeds of one scenario, as seed-log lines
//! ([`SeedRun::to_json`]), in a file named by a fingerprint of the scenario and the seeds
//! (or a value such as a shrunk counterexample, named by what it was computed from).
//! Its first line names the locksim binary that ran it (a hash of the executable's bytes):
//! a changed scenario is another file, and a rebuilt binary does not read the old ones, so
//! no entry outlives what made it. A run is deterministic in its scenario, seed and binary;
//! a list with a failed run (a panic, a host-time budget) is not kept, so it runs again.
//! Values are also kept in memory for the report's life, cache or not (`--no-cache`): what
//! the provisional page computed, the final page reuses.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use xxhash_rust::xxh3::xxh3_128;

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
    /// Every value this report computed or read, by its key's hash.
    memory: Mutex<BTreeMap<u128, Value>>,
}

/// How many values of one kind (replays, shrinks) a report computed, and how many it took
/// from the cache's directory (those computed earlier in the same report not counted).
#[derive(Default)]
pub struct Tally {
    computed: AtomicU64,
    from_disk: AtomicU64,
}

impl Tally {
    /// (values computed, values read from the cache's directory) so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.computed.load(Ordering::Relaxed),
            self.from_disk.load(Ordering::Relaxed),
        )
    }
}

impl RunCache {
    /// No cache: every run is simulated, nothing is written.
    pub fn off() -> RunCache {
        RunCache {
            store: None,
            reused: AtomicU64::new(0),
            simulated: AtomicU64::new(0),
            used: Mutex::new(BTreeSet::new()),
            memory: Mutex::new(BTreeMap::new()),
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
        let Some(file) = self.entry(&runs_key(scenario, seeds)) else {
            return self.simulate(scenario, seeds, jobs);
        };
        if let Some(runs) = self.read(&file).and_then(|lines| runs_of(&lines, seeds)) {
            self.reused.fetch_add(seeds.len() as u64, Ordering::Relaxed);
            return runs;
        }
        let runs = self.simulate(scenario, seeds, jobs);
        if runs.iter().all(|run| run.outcome.is_ok()) {
            self.write(&file, runs.iter().map(|run| run.to_json("")));
        }
        runs
    }

    /// What `compute` gives, kept under `key` (text naming everything the value depends
    /// on besides the binary): reused when this report already has it, or when the cache
    /// holds it; computed and kept (when `Some`) otherwise, counted in `tally`.
    pub fn value(&self, key: &str, tally: &Tally, compute: impl FnOnce() -> Option<Value>) -> Option<Value> {
        let hash = xxh3_128(key.as_bytes());
        if let Some(kept) = self.memory.lock().expect("cache lock poisoned").get(&hash) {
            return Some(kept.clone());
        }
        let file = self.entry(key.as_bytes());
        let on_disk = file
            .as_ref()
            .and_then(|file| self.read(file))
            .and_then(|lines| serde_json::from_str::<Value>(lines.first()?).ok());
        let value = match on_disk {
            Some(value) => {
                tally.from_disk.fetch_add(1, Ordering::Relaxed);
                value
            }
            None => {
                tally.computed.fetch_add(1, Ordering::Relaxed);
                let value = compute()?;
                if let Some(file) = &file {
                    self.write(file, std::iter::once(value.clone()));
                }
                value
            }
        };
        self.memory
            .lock()
            .expect("cache lock poisoned")
            .insert(hash, value.clone());
        Some(value)
    }

    /// The file of the entry keyed `key`, noted as used; `None` when the cache is off.
    fn entry(&self, key: &[u8]) -> Option<PathBuf> {
        let (dir, _) = self.store.as_ref()?;
        let file = dir.join(format!("{:032x}.jsonl", xxh3_128(key)));
        self.used
            .lock()
            .expect("cache lock poisoned")
            .insert(file.clone());
        Some(file)
    }

    /// The lines of entry `file` after its header, when this binary wrote it.
    fn read(&self, file: &Path) -> Option<Vec<String>> {
        let (_, build) = self.store.as_ref()?;
        let reader = std::io::BufReader::new(std::fs::File::open(file).ok()?);
        let mut lines = reader.lines();
        let header: Value = serde_json::from_str(&lines.next()?.ok()?).ok()?;
        let written_by = header.get("build").and_then(Value::as_str);
        if header.get(HEADER_KEY).and_then(Value::as_u64) != Some(FORMAT) || written_by != Some(build) {
            return None;
        }
        lines.collect::<std::io::Result<Vec<String>>>().ok()
    }

    /// Writes `lines` as entry `file` of this binary; a cache that cannot be written
    /// costs only time, so a failure is not an error.
    fn write(&self, file: &Path, lines: impl Iterator<Item = Value>) {
        if let Some((_, build)) = &self.store {
            let _ = write_entry(file, build, lines);
        }
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

/// The key of the runs of `seeds` of `scenario`: the scenario (every field, as the
/// report's plan fingerprints it) and the seeds.
fn runs_key(scenario: &Scenario, seeds: &[u64]) -> Vec<u8> {
    let mut key = format!("runs\n{scenario:?}\n").into_bytes();
    seeds.iter().for_each(|seed| key.extend(seed.to_le_bytes()));
    key
}

/// The runs an entry's lines hold, when they are exactly `seeds`'.
fn runs_of(lines: &[String], seeds: &[u64]) -> Option<Vec<SeedRun>> {
    if lines.len() != seeds.len() {
        return None;
    }
    let runs = lines.iter().zip(seeds).map(|(line, &seed)| {
        let (_, run) = SeedRun::from_json(&serde_json::from_str(line).ok()?).ok()?;
        (run.seed == seed).then_some(run)
    });
    runs.collect()
}

/// Writes `lines` as an entry of binary `build`, whole or not at all (a temporary file
/// renamed into place, so a report killed mid-write leaves no half entry).
fn write_entry(file: &Path, build: &str, lines: impl Iterator<Item = Value>) -> std::io::Result<()> {
    let partial = file.with_extension("partial");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&partial)?);
    writeln!(out, "{}", json!({ HEADER_KEY: FORMAT, "build": build }))?;
    for line in lines {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    drop(out);
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
        let _ = std::fs::remove_dir_all(&dir);
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
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "only the entry used is kept"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_value_is_computed_once_per_report_with_or_without_a_directory() {
        let dir = std::env::temp_dir().join(format!("locksim-value-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let computed = AtomicU64::new(0);
        let compute = || {
            computed.fetch_add(1, Ordering::Relaxed);
            Some(json!(42))
        };
        let off = RunCache::off();
        let tally = Tally::default();
        assert_eq!(off.value("k", &tally, compute), Some(json!(42)));
        assert_eq!(off.value("k", &tally, compute), Some(json!(42)));
        assert_eq!(tally.counts(), (1, 0), "kept in memory without a directory");
        let first = RunCache::for_build(&dir, "a".into());
        first.value("k", &Tally::default(), compute);
        let again = RunCache::for_build(&dir, "a".into());
        let tally = Tally::default();
        assert_eq!(again.value("k", &tally, compute), Some(json!(42)));
        assert_eq!(again.value("k", &tally, compute), Some(json!(42)));
        assert_eq!(tally.counts(), (0, 1), "read from the directory once");
        assert_eq!(computed.load(Ordering::Relaxed), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
