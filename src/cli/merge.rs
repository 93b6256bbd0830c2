//! `merge`: seed logs written by shards (on any number of machines) combined into what one
//! run over all their seeds would give: from `run --shard K/N --seed-log FILE`, the
//! verdict table and per-scenario JSON; with `--report DIR`, from `report --shard K/N
//! --seed-log FILE`, the whole report, written as `locksim report` writes it.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use locksim::campaign::cache::RunCache;
use locksim::campaign::control;
use locksim::campaign::plan::{LogHeader, Plan, read_log_line};
use locksim::campaign::sweeps::SweepKind;
use locksim::report::ScenarioReport;
use locksim::scenario;
use locksim::sweep::SeedRun;

use super::output::Output;
use super::report::{finish, matrix_line, prepare, sweep_plan};
use super::{EXIT_UNMET, emit, invalid, jobs_or_all_cores, verdict_exit};

/// What `merge` is asked: seed logs to judge as one run, or a report's shard logs to
/// write as one report.
#[derive(clap::Args)]
pub struct MergeArgs {
    /// Seed logs.
    #[arg(required = true)]
    pub logs: Vec<PathBuf>,
    /// Also write one JSON object per scenario (JSON lines) to this file; `-` writes them
    /// to stdout (the table then goes to stderr).
    #[arg(long, conflicts_with = "report")]
    pub json: Option<PathBuf>,
    /// The logs are every shard's of `locksim report --shard K/N --seed-log FILE`:
    /// write the report (index.html, summary.json, summary.jsonl, figures/, matrix/)
    /// into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Every cell with its rate and 95% interval (~210 columns).
    #[arg(long, conflicts_with = "report")]
    pub wide: bool,
}

/// `merge`: the table of `run --shard` logs, or with `--report DIR` the report of `report
/// --shard` logs.
pub fn merge(args: MergeArgs) -> ExitCode {
    match &args.report {
        Some(dir) => merge_report(&args.logs, dir),
        None => merge_table(&args.logs, args.json.as_deref(), args.wide),
    }
}

/// Reads every log, groups its seeds by scenario file, and judges each scenario on all of
/// them; exit 0 when every expectation is met, 1 when one is not, 2 on a malformed log, a
/// seed logged twice, or a scenario file that no longer loads.
fn merge_table(logs: &[PathBuf], json: Option<&Path>, wide: bool) -> ExitCode {
    let mut by_file: BTreeMap<String, BTreeMap<u64, SeedRun>> = BTreeMap::new();
    for log in logs {
        let read = read_log(log, |_, value| {
            if LogHeader::is_header(&value) {
                return Err("a seed log of `locksim report --shard`: merge those with --report DIR".into());
            }
            let (scenario_file, run) =
                SeedRun::from_json(&value).map_err(|e| format!("not a seed-log line: {e}"))?;
            let seed = run.seed;
            match by_file
                .entry(scenario_file.clone())
                .or_default()
                .insert(seed, run)
            {
                Some(_) => Err(format!(
                    "seed {seed} of {scenario_file} is logged twice (were two shards given the same K?)"
                )),
                None => Ok(()),
            }
        });
        if let Err(e) = read {
            return invalid(e);
        }
    }
    let mut out = match Output::open(json, wide, None) {
        Ok(out) => out,
        Err(exit) => return exit,
    };
    out.header();
    let (mut all_met, mut any_error) = (true, false);
    for (file, runs) in by_file {
        let path = PathBuf::from(&file);
        let scenario = match scenario::load(&path) {
            Ok(scenario) => Arc::new(scenario),
            Err(e) => return invalid(e),
        };
        let seed_start = runs.keys().next().copied().unwrap_or(0);
        let runs: Vec<SeedRun> = runs.into_values().collect();
        let mut report = ScenarioReport::new(&path, &scenario, seed_start, &runs, 0);
        control::judge(&mut report, &scenario, jobs_or_all_cores(None));
        if !out.report(&report) {
            return ExitCode::from(EXIT_UNMET);
        }
        all_met &= report.expect_met();
        any_error |= !report.errors.is_empty();
    }
    out.legend();
    verdict_exit(any_error, all_met)
}

/// Reads the logs of `report --shard`, checks that they are every shard of one report and
/// hold each of its seeds once, and writes that report into `out` as `locksim report`
/// would (counterexamples replayed from their seed). Exit codes as `report`, and 2 when a
/// log is malformed, mixes reports, or lacks or repeats a seed.
fn merge_report(logs: &[PathBuf], out: &Path) -> ExitCode {
    let out = &super::relative_to_cwd(out);
    let shards = match read_headers(logs) {
        Ok(shards) => shards,
        Err(e) => return invalid(e),
    };
    let (first_log, first) = &shards[0];
    let plan = match Plan::new(first.options.clone(), out) {
        Ok(plan) => plan,
        Err(e) => return invalid(format!("the report {} was run for: {e}", first_log.display())),
    };
    if plan.digest() != first.plan {
        return invalid(format!(
            "{}:1: the shards swept other scenarios than the same options give here (a scenario file, the grid \
             or locksim changed since they ran): run the shards again",
            first_log.display()
        ));
    }
    let runs = match read_seeds(&plan, &shards) {
        Ok(runs) => runs,
        Err(e) => return invalid(e),
    };
    if let Err(code) = prepare(&plan, out) {
        return code;
    }
    let swept = sweep_plan(&plan, jobs_or_all_cores(None), &|sweep| {
        sweep.report_from(&runs[&(sweep.kind, sweep.id.clone())], jobs_or_all_cores(None))
    });
    if let Some(run) = &swept.matrix {
        emit(matrix_line(run));
    }
    emit(format_args!(
        "merged: {} shards' logs, {} seeds",
        shards.len(),
        plan.total_seeds()
    ));
    finish(&plan, out, swept, jobs_or_all_cores(None), &RunCache::off())
}

/// Each log's header; `Err` when one is not a report log, or they are not distinct shards
/// of one report.
fn read_headers(logs: &[PathBuf]) -> Result<Vec<(PathBuf, LogHeader)>, String> {
    let mut shards: Vec<(PathBuf, LogHeader)> = Vec::new();
    for log in logs {
        let (number, value) = log_lines(log)?
            .next()
            .ok_or_else(|| format!("{}: empty: not a report shard's log", log.display()))??;
        let at = format!("{}:{number}", log.display());
        let header = LogHeader::from_json(&value).map_err(|e| format!("{at}: {e}"))?;
        if let Some((first_log, first)) = shards.first() {
            let differences = header.options.differences(&first.options);
            if !differences.is_empty() {
                let first_log = first_log.display();
                let said: Vec<String> = differences
                    .into_iter()
                    .map(|(option, here, there)| format!("{option} {here} here, {there} in {first_log}"))
                    .collect();
                return Err(format!(
                    "{at}: a shard of another report than {first_log}'s: {} (merge the shards of one report)",
                    said.join("; ")
                ));
            }
            if header.shard.count != first.shard.count {
                return Err(format!(
                    "{at}: shard {} of a report split {} ways, but {} is shard {} (merge the shards of one split)",
                    header.shard,
                    header.shard.count,
                    first_log.display(),
                    first.shard
                ));
            }
            if header.plan != first.plan {
                return Err(format!(
                    "{at}: the same options as {}, but other scenarios (a scenario file, the grid or locksim \
                     changed between the shards' runs)",
                    first_log.display()
                ));
            }
        }
        if let Some((other, _)) = shards.iter().find(|(_, h)| h.shard == header.shard) {
            return Err(format!(
                "{at}: shard {} again: {} is that shard too (were two shards given the same K?)",
                header.shard,
                other.display()
            ));
        }
        shards.push((log.clone(), header));
    }
    Ok(shards)
}

/// The seeds of every sweep of `plan`, read from the shards' logs, in seed order; `Err`
/// names the file and line of a seed that does not belong, is logged twice, or the log
/// that lacks one.
fn read_seeds(
    plan: &Plan,
    shards: &[(PathBuf, LogHeader)],
) -> Result<HashMap<(SweepKind, String), Vec<SeedRun>>, String> {
    let mut runs: HashMap<(SweepKind, String), BTreeMap<u64, SeedRun>> = plan
        .sweeps()
        .map(|sweep| ((sweep.kind, sweep.id.clone()), BTreeMap::new()))
        .collect();
    let seeds: HashMap<(SweepKind, &str), u64> = plan
        .sweeps()
        .map(|sweep| ((sweep.kind, sweep.id.as_str()), sweep.most_seeds()))
        .collect();
    let mut last_lines = Vec::new();
    for (log, header) in shards {
        let mut last = 0;
        read_log(log, |number, value| {
            if last == 0 {
                last = number;
                return Ok(()); // the header, read already
            }
            last = number;
            if LogHeader::is_header(&value) {
                return Err("a second header: give each shard's log as its own file".into());
            }
            let (kind, id, run) = read_log_line(&value)?;
            let seed = run.seed;
            let count = seeds
                .get(&(kind, id.as_str()))
                .ok_or_else(|| format!("no {} sweep `{id}` in this report", kind.word()))?;
            if seed >= *count {
                return Err(format!(
                    "seed {seed} of {id}: the report runs only {count} seeds of it"
                ));
            }
            if !header.shard.owns(seed) {
                return Err(format!("seed {seed} of {id} is not shard {}'s", header.shard));
            }
            let sweep = runs
                .get_mut(&(kind, id.clone()))
                .expect("every sweep has its runs");
            match sweep.insert(seed, run) {
                Some(_) => Err(format!("seed {seed} of {id} is logged twice")),
                None => Ok(()),
            }
        })?;
        last_lines.push(last);
    }
    for sweep in plan.sweeps() {
        let logged = &runs[&(sweep.kind, sweep.id.clone())];
        let Some(missing) = (0..sweep.most_seeds()).find(|seed| !logged.contains_key(seed)) else {
            continue;
        };
        let owner = shards
            .iter()
            .zip(&last_lines)
            .find(|((_, header), _)| header.shard.owns(missing));
        return Err(match owner {
            Some(((log, header), last)) => format!(
                "{}:{last}: the log ends without seed {missing} of {}: shard {} stopped before it finished? \
                 run it again",
                log.display(),
                sweep.id,
                header.shard
            ),
            None => format!(
                "no log of shard {}/{} among those given (seed {missing} of {} is its): give every shard's log",
                missing % shards[0].1.shard.count + 1,
                shards[0].1.shard.count,
                sweep.id
            ),
        });
    }
    Ok(runs
        .into_iter()
        .map(|(key, runs)| (key, runs.into_values().collect()))
        .collect())
}

/// The lines of `log` that are not blank, each with its number (from 1), as JSON; an error
/// names the file and line.
fn log_lines(log: &Path) -> Result<impl Iterator<Item = Result<(usize, Value), String>>, String> {
    let file = std::fs::File::open(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let name = log.display().to_string();
    Ok(BufReader::new(file)
        .lines()
        .enumerate()
        .filter_map(move |(index, text)| {
            let at = || format!("{name}:{}", index + 1);
            match text {
                Err(e) => Some(Err(format!("{}: {e}", at()))),
                Ok(text) if text.trim().is_empty() => None,
                Ok(text) => Some(
                    serde_json::from_str(&text)
                        .map(|value| (index + 1, value))
                        .map_err(|e| format!("{}: not JSON: {e}", at())),
                ),
            }
        }))
}

/// Hands `line` every line of `log` ([`log_lines`]) until it returns an error, which is
/// then prefixed with `file:line`.
fn read_log(log: &Path, mut line: impl FnMut(usize, Value) -> Result<(), String>) -> Result<(), String> {
    for parsed in log_lines(log)? {
        let (number, value) = parsed?;
        line(number, value).map_err(|e| format!("{}:{number}: {e}", log.display()))?;
    }
    Ok(())
}
