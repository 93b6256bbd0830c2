//! The sweeps a report is made of, whichever way they run: every catalogue scenario, every
//! applicable cell of the safety matrix and every point of the envelopes, each a scenario
//! swept over seeds 0..N.
//!
//! `locksim report` runs them here; `locksim report --shard K/N` runs shard K's share of
//! every one and logs each seed ([`Plan::log_header`], [`Plan::log_line`]);
//! `locksim merge --report` reads the shards' logs back and rebuilds the same report. Both
//! ways build the [`Plan`] from the same [`ReportOptions`] and assemble it with
//! [`Plan::sweep_all`] from one report per sweep, so a merged report cannot differ from one
//! run in one place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use xxhash_rust::xxh3::Xxh3;

use super::cache::RunCache;
use super::envelopes;
use super::matrix;
use super::sweeps::{Sweep, SweepKind};
use crate::report::ScenarioReport;
use crate::report::envelope::Envelope;
use crate::report::matrix_summary::MatrixSummary;
use crate::report::mode::simulation_refused;
use crate::scenario;
use crate::scenario::grid::Grid;
use crate::sweep::{SeedRun, Shard, in_parallel};

/// Runs one sweep and gives its report: what [`Plan::sweep_in_two_passes`] hands its first
/// pass to run each of that pass's sweeps with.
pub type SweepRunner<'a> = dyn Fn(&Sweep) -> ScenarioReport + Sync + 'a;

/// What a report is asked, with the defaults resolved: all a shard's log needs to say for
/// `merge` to rebuild the same plan (besides the files it names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportOptions {
    /// Scenario files, or directories of them.
    pub paths: Vec<PathBuf>,
    /// Seeds per scenario (`None`: each scenario's own).
    pub seeds: Option<u64>,
    /// Seeds per envelope point (0: no envelopes).
    pub envelope_seeds: u64,
    /// The matrix's grid file (`None`: no matrix).
    pub matrix: Option<PathBuf>,
    /// Seeds per matrix cell (`None`: the grid's own).
    pub matrix_seeds: Option<u64>,
    /// Seeds a compared setup's cell goes on to when it shows no safety violation
    /// (`None`: the grid's `holds_seeds`; 0: no further).
    pub holds_seeds: Option<u64>,
    /// Simulate locksim's client even for scenarios that name their own
    /// (`--simulated-client`).
    #[serde(default)]
    pub simulated_client: bool,
}

impl ReportOptions {
    /// Where these options and `other` differ: each option as the command line names it,
    /// its value here and in `other`.
    pub fn differences(&self, other: &ReportOptions) -> Vec<(&'static str, String, String)> {
        let seeds = |seeds: Option<u64>| seeds.map_or("unset".to_string(), |n| n.to_string());
        let grid = |grid: &Option<PathBuf>| {
            grid.as_ref()
                .map_or("none".to_string(), |file| file.display().to_string())
        };
        let paths = |paths: &[PathBuf]| {
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            names.join(" ")
        };
        let fields = [
            ("scenario paths", paths(&self.paths), paths(&other.paths)),
            ("--seeds", seeds(self.seeds), seeds(other.seeds)),
            (
                "--envelope-seeds",
                self.envelope_seeds.to_string(),
                other.envelope_seeds.to_string(),
            ),
            ("--matrix", grid(&self.matrix), grid(&other.matrix)),
            (
                "--matrix-seeds",
                seeds(self.matrix_seeds),
                seeds(other.matrix_seeds),
            ),
            ("--holds-seeds", seeds(self.holds_seeds), seeds(other.holds_seeds)),
        ];
        fields
            .into_iter()
            .filter(|(_, here, there)| here != there)
            .collect()
    }
}

/// Every sweep of one report, in the order the report shows them.
#[derive(Debug, Clone)]
pub struct Plan {
    pub options: ReportOptions,
    pub catalogue: Vec<Sweep>,
    /// The grid and its cells' sweeps, when the report has a matrix.
    pub matrix: Option<(Grid, Vec<Sweep>)>,
    /// Every envelope point's sweep (none at `envelope_seeds` 0).
    pub envelopes: Vec<Sweep>,
}

/// What a plan's sweeps found, before counterexamples are replayed.
#[derive(Debug, Clone)]
pub struct Swept {
    pub catalogue: Vec<ScenarioReport>,
    pub matrix: Option<MatrixSummary>,
    /// Host time from the first matrix cell's start to the last one's end.
    pub matrix_wall_ms: u128,
    pub envelopes: Vec<Envelope>,
}

/// What [`Plan::sweep_in_two_passes`]' first pass leaves to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remaining {
    /// The matrix's cells (setup, fault class) whose first seeds showed no safety
    /// violation, which go on to `holds_seeds`.
    pub extending: Vec<(usize, usize)>,
    pub holds_seeds: u64,
    /// The sweeps still to run: those cells and every envelope point.
    pub sweeps: usize,
    /// Whether the envelopes are among them.
    pub envelopes: bool,
}

/// The first line of a report shard's seed log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogHeader {
    pub shard: Shard,
    pub options: ReportOptions,
    /// The plan's fingerprint ([`Plan::digest`]).
    pub plan: String,
}

/// The key of a report log's header line (and its format's version).
const HEADER_KEY: &str = "locksim_report_log";
const LOG_VERSION: u64 = 1;

impl Plan {
    /// Loads the scenarios and the grid `options` name; matrix cells name their files in
    /// `out/matrix` (where [`Grid::write_scenarios`] puts them) and envelope points theirs
    /// in `out/envelope` ([`envelopes::write_scenarios`]).
    pub fn new(options: ReportOptions, out: &Path) -> Result<Plan, String> {
        let matrix_dir = &out.join("matrix");
        let scenarios = scenario::load_paths(&options.paths).map_err(|e| e.to_string())?;
        if scenarios.is_empty() {
            return Err("no scenario files found".into());
        }
        for (file, scenario) in &scenarios {
            simulation_refused(
                file,
                scenario.clients.command.as_deref(),
                options.simulated_client,
            )?;
        }
        let catalogue = scenarios
            .into_iter()
            .map(|(file, scenario)| Sweep {
                kind: SweepKind::Catalogue,
                id: file.display().to_string(),
                seeds: options.seeds.unwrap_or(scenario.seeds),
                holds_at: None,
                scenario: Arc::new(scenario),
                file,
            })
            .collect();
        let matrix = match &options.matrix {
            None => None,
            Some(grid) => {
                let grid = Grid::load(grid).map_err(|e| e.to_string())?;
                let holds_seeds = match options.holds_seeds {
                    None => grid.holds_seeds,
                    Some(0) => None,
                    Some(seeds) => Some(seeds),
                };
                let sweeps = matrix::sweeps(&grid, matrix_dir, options.matrix_seeds, holds_seeds);
                Some((grid, sweeps))
            }
        };
        let envelopes = match options.envelope_seeds {
            0 => Vec::new(),
            seeds => envelopes::sweeps(seeds, &out.join("envelope")).map_err(|e| e.to_string())?,
        };
        Ok(Plan {
            options,
            catalogue,
            matrix,
            envelopes,
        })
    }

    /// The sweeps a provisional page rests on: the catalogue and the matrix's cells (run
    /// to their first seeds by [`Sweep::run_first`]), without the envelopes, which the
    /// page's decision does not read. Its sweeps come first in [`Plan::sweeps`], in the
    /// same order.
    pub fn first_pass(&self) -> Plan {
        Plan {
            options: ReportOptions {
                envelope_seeds: 0,
                ..self.options.clone()
            },
            envelopes: Vec::new(),
            ..self.clone()
        }
    }

    /// Every sweep, run from `cache` `jobs` at a time, in two passes so a reader can be
    /// shown the decision early. First `first_pass` runs [`Plan::first_pass`]'s sweeps
    /// with the report it is handed (each sweep's first seeds, [`Sweep::run_first`]); then
    /// `between` is handed what they found and what is still to run, before anything else
    /// runs; then the cells that go on do and the envelopes are swept, `rest_done` told how
    /// many of those have finished as each does. The result is the one a single pass
    /// ([`Sweep::run_from`] for every sweep) gives: each sweep goes on from its own first
    /// seeds ([`Sweep::run_rest`]).
    pub fn sweep_in_two_passes(
        &self,
        jobs: usize,
        cache: &RunCache,
        first_pass: &dyn Fn(&Plan, &SweepRunner<'_>) -> Swept,
        between: &mut dyn FnMut(Swept, &Remaining),
        rest_done: &(dyn Fn(usize) + Sync),
    ) -> Swept {
        let key = |sweep: &Sweep| (sweep.kind.word(), sweep.id.clone());
        let firsts = Mutex::new(BTreeMap::new());
        let first = first_pass(&self.first_pass(), &|sweep| {
            let first = sweep.run_first(jobs, cache);
            let report = first.report.clone();
            firsts.lock().expect("lock poisoned").insert(key(sweep), first);
            report
        });
        let firsts = firsts.into_inner().expect("lock poisoned");
        let finished: BTreeSet<_> = firsts
            .iter()
            .filter(|(_, first)| !first.goes_on())
            .map(|(key, _)| key.clone())
            .collect();
        let goes_on = |sweep: &Sweep| !finished.contains(&key(sweep));
        let remaining = Remaining {
            extending: self
                .matrix
                .iter()
                .flat_map(|(grid, cells)| matrix::places(grid).into_iter().zip(cells))
                .filter(|(_, sweep)| goes_on(sweep))
                .map(|(place, _)| place)
                .collect(),
            holds_seeds: self
                .sweeps()
                .filter_map(|sweep| sweep.holds_at)
                .max()
                .unwrap_or(0),
            sweeps: self.sweeps().filter(|sweep| goes_on(sweep)).count(),
            envelopes: !self.envelopes.is_empty(),
        };
        let first_matrix_ms = first.matrix_wall_ms;
        between(first, &remaining);
        let firsts = Mutex::new(firsts);
        let done = AtomicUsize::new(0);
        let mut swept = self.sweep_all(
            jobs,
            &|sweep| {
                let first = firsts.lock().expect("lock poisoned").remove(&key(sweep));
                match first {
                    Some(first) => sweep.run_rest(first, jobs, cache),
                    None => sweep.run_from(jobs, cache),
                }
            },
            &|_, sweep, _| {
                if goes_on(sweep) {
                    rest_done(done.fetch_add(1, Ordering::Relaxed) + 1);
                }
            },
        );
        swept.matrix_wall_ms += first_matrix_ms;
        swept
    }

    /// Every sweep: the catalogue's, then the matrix's cells, then the envelopes' points.
    pub fn sweeps(&self) -> impl Iterator<Item = &Sweep> {
        let cells = self.matrix.iter().flat_map(|(_, cells)| cells);
        self.catalogue.iter().chain(cells).chain(&self.envelopes)
    }

    /// The report of every sweep from `report` (run here, or tallied from shards' logs),
    /// `jobs` sweeps at a time, put together. Small sweeps and their controls leave a core
    /// idle at their ends; sweeps side by side fill it. `done` is told of each sweep (its
    /// place in [`Plan::sweeps`]) as it finishes, in any order; the result is the same
    /// whatever the order.
    pub fn sweep_all(
        &self,
        jobs: usize,
        report: &(dyn Fn(&Sweep) -> ScenarioReport + Sync),
        done: &(dyn Fn(usize, &Sweep, &ScenarioReport) + Sync),
    ) -> Swept {
        let sweeps: Vec<&Sweep> = self.sweeps().collect();
        let timed = in_parallel(0..sweeps.len() as u64, jobs, |index| {
            let sweep = sweeps[index as usize];
            let started = Instant::now();
            let result = report(sweep);
            done(index as usize, sweep, &result);
            (result, started, Instant::now())
        });
        let matrix_spans = timed
            .iter()
            .zip(&sweeps)
            .filter(|(_, sweep)| sweep.kind == SweepKind::Matrix)
            .map(|((_, started, ended), _)| (*started, *ended));
        let matrix_wall_ms = matrix_spans
            .clone()
            .map(|(started, _)| started)
            .min()
            .zip(matrix_spans.map(|(_, ended)| ended).max())
            .map_or(0, |(first, last)| last.duration_since(first).as_millis());
        let mut reports = timed.into_iter().map(|(report, _, _)| report);
        let catalogue = reports.by_ref().take(self.catalogue.len()).collect();
        let matrix = self.matrix.as_ref().map(|(grid, cells)| {
            let cells: Vec<ScenarioReport> = reports.by_ref().take(cells.len()).collect();
            matrix::results(grid, cells)
        });
        let points: Vec<ScenarioReport> = reports.collect();
        let envelopes = match self.options.envelope_seeds {
            0 => Vec::new(),
            seeds => envelopes::envelopes(seeds, &points),
        };
        Swept {
            catalogue,
            matrix,
            matrix_wall_ms,
            envelopes,
        }
    }

    /// A fingerprint of every sweep (its kind, id, seed count and scenario) and the
    /// matrix's rows and columns: shards and their merge must agree on it, or the scenario
    /// files, the grid or locksim itself changed between them.
    pub fn digest(&self) -> String {
        let mut hasher = Xxh3::new();
        for sweep in self.sweeps() {
            let text = format!(
                "{}\n{}\n{}\n{:?}\n{:?}\n",
                sweep.kind.word(),
                sweep.id,
                sweep.seeds,
                sweep.holds_at,
                sweep.scenario
            );
            hasher.update(text.as_bytes());
        }
        if let Some((grid, _)) = &self.matrix {
            hasher.update(format!("{:?}\n{:?}\n", grid.setups, grid.faults).as_bytes());
        }
        format!("{:032x}", hasher.digest128())
    }

    /// How many seeds the whole report may run (every sweep's [`Sweep::most_seeds`]).
    pub fn total_seeds(&self) -> u64 {
        self.sweeps().map(Sweep::most_seeds).sum()
    }

    /// The seeds the plan runs, in words, for the report's provenance.
    pub fn seeds_words(&self) -> String {
        let catalogue = match self.options.seeds {
            Some(n) => format!("{n} per catalogue scenario"),
            None => "each catalogue scenario's own `seeds`".to_string(),
        };
        let mut parts = vec![catalogue];
        if let Some((grid, cells)) = &self.matrix {
            let base = cells.first().map_or(0, |sweep| sweep.seeds);
            let more = match cells.iter().find_map(|sweep| sweep.holds_at) {
                Some(at) => format!(
                    ", the compared setups' cells going on to {at} where those show no safety violation"
                ),
                None => String::new(),
            };
            parts.push(format!(
                "{base} per matrix cell ({} setups × {} fault classes){more}",
                grid.setups.len(),
                grid.faults.len()
            ));
        }
        if let Some(point) = self.envelopes.first() {
            parts.push(format!("{} per envelope point", point.seeds));
        }
        format!("{}; seeds numbered from 0 in every sweep", parts.join("; "))
    }

    /// The first line of shard `shard`'s log: the options, the shard and the plan's
    /// fingerprint, so `merge` rebuilds this plan and checks its logs belong together.
    pub fn log_header(&self, shard: Shard) -> Value {
        json!({
            HEADER_KEY: LOG_VERSION,
            "locksim": env!("CARGO_PKG_VERSION"),
            "shard": shard.to_string(),
            "options": self.options,
            "plan": self.digest(),
            "sweeps": self.sweeps().count(),
            "seeds": self.total_seeds(),
        })
    }

    /// One seed of `sweep` as a log line: [`SeedRun::to_json`] with the sweep's id as its
    /// `file`, and `sweep`: its kind.
    pub fn log_line(sweep: &Sweep, run: &SeedRun) -> Value {
        let mut line = run.to_json(&sweep.id);
        line["sweep"] = json!(sweep.kind.word());
        line
    }
}

impl LogHeader {
    /// Whether `line` is a report log's header (and not a seed).
    pub fn is_header(line: &Value) -> bool {
        line.get(HEADER_KEY).is_some()
    }

    /// Reads a header line back; `Err` says what is wrong with it.
    pub fn from_json(line: &Value) -> Result<LogHeader, String> {
        match line.get(HEADER_KEY).and_then(Value::as_u64) {
            Some(LOG_VERSION) => {}
            Some(other) => {
                return Err(format!(
                    "a report log of format {other}; this locksim reads {LOG_VERSION}"
                ));
            }
            None => {
                return Err(
                    "not a report log's first line (report logs are written by `locksim report --shard K/N \
                     --seed-log FILE`; logs of `locksim run` merge without --report)"
                        .into(),
                );
            }
        }
        let shard = line
            .get("shard")
            .and_then(Value::as_str)
            .ok_or("`shard` is missing or not a string")?
            .parse::<Shard>()
            .map_err(|e| format!("`shard`: {e}"))?;
        let options = line.get("options").ok_or("no `options`")?;
        let options = serde_json::from_value(options.clone()).map_err(|e| format!("`options`: {e}"))?;
        let plan = line
            .get("plan")
            .and_then(Value::as_str)
            .ok_or("`plan` is missing or not a string")?
            .to_string();
        Ok(LogHeader { shard, options, plan })
    }
}

/// Reads a seed line of a report log back: its sweep's kind and id, and the run.
pub fn read_log_line(line: &Value) -> Result<(SweepKind, String, SeedRun), String> {
    let kind = line
        .get("sweep")
        .and_then(Value::as_str)
        .ok_or("`sweep` is missing or not a string")?;
    let kind = SweepKind::from_word(kind)
        .ok_or_else(|| format!("`sweep` is `{kind}`: expected catalogue, matrix or envelope"))?;
    let (id, run) = SeedRun::from_json(line)?;
    Ok((kind, id, run))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::sweep::RunSummary;

    fn options(seeds: u64) -> ReportOptions {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        ReportOptions {
            paths: vec![root.join("scenarios/single-node-gc-pause.json")],
            seeds: Some(seeds),
            envelope_seeds: 2,
            matrix: Some(root.join(crate::scenario::grid::GRID_FILE)),
            matrix_seeds: Some(3),
            holds_seeds: Some(0),
            simulated_client: false,
        }
    }

    fn plan(seeds: u64) -> Plan {
        Plan::new(options(seeds), Path::new("reports")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_sweep_of_a_report_has_its_own_id() {
        let plan = plan(5);
        let (grid, cells) = plan.matrix.as_ref().unwrap();
        assert_eq!(cells.len() as u64, grid.applicable_cells());
        let ids: HashSet<(SweepKind, &str)> = plan.sweeps().map(|s| (s.kind, s.id.as_str())).collect();
        assert_eq!(ids.len(), plan.sweeps().count());
        assert_eq!(
            plan.total_seeds(),
            5 + 3 * cells.len() as u64 + 2 * plan.envelopes.len() as u64
        );
        assert!(cells[0].file.starts_with("reports/matrix"), "{:?}", cells[0].file);
        assert!(cells[0].id.starts_with("matrix/"), "{}", cells[0].id);
    }

    #[test]
    fn a_header_and_a_seed_read_back() {
        let plan = plan(5);
        let shard: Shard = "2/3".parse().unwrap();
        let header = LogHeader::from_json(&plan.log_header(shard)).unwrap();
        assert_eq!(header.shard, shard);
        assert_eq!(header.options, plan.options);
        assert_eq!(header.plan, plan.digest());
        assert_ne!(plan.digest(), self::plan(6).digest(), "another seed count");
        let sweep = &plan.envelopes[3];
        let run = SeedRun {
            seed: 1,
            outcome: Err::<RunSummary, _>("boom".into()),
        };
        let line = Plan::log_line(sweep, &run);
        assert!(!LogHeader::is_header(&line));
        let (kind, id, back) = read_log_line(&line).unwrap();
        assert_eq!(
            (kind, id.as_str(), back.seed),
            (SweepKind::Envelope, sweep.id.as_str(), 1)
        );
        let error = LogHeader::from_json(&line).unwrap_err();
        assert!(error.contains("report --shard"), "{error}");
    }

    #[test]
    fn differing_options_are_named_as_on_the_command_line() {
        let mut other = options(5);
        other.matrix_seeds = None;
        let differences = options(5).differences(&other);
        assert_eq!(
            differences,
            [("--matrix-seeds", "3".to_string(), "unset".to_string())]
        );
        assert!(options(5).differences(&options(5)).is_empty());
    }
}
