//! `report`: the catalogue, the safety matrix and the envelopes swept, and the result
//! written as one self-contained page, its numbers as JSON and each figure as a file. The
//! verdict table is printed as `run` prints it; on a terminal a progress bar shows where
//! the sweep is. With `--shard K/N` it runs a share of every sweep and writes only a seed
//! log; `merge --report` ([`super::merge`]) writes the report from the shards' logs with
//! the same [`sweep_plan`] and [`finish`].

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use locksim::campaign::cache::{RunCache, Tally};
use locksim::campaign::counterexamples;
use locksim::campaign::plan::{Plan, ReportOptions, Swept};
use locksim::campaign::sweeps::{self, Sweep, SweepKind};
use locksim::campaign::{envelopes, minimal};
use locksim::report::ScenarioReport;
use locksim::report::figures::timeline::Timeline;
use locksim::report::files;
use locksim::report::matrix_summary::MatrixSummary;
use locksim::report::summary::{Provenance, Summary};
use locksim::report::table::TableStyle;
use locksim::scenario::grid::GRID_FILE;
use locksim::sweep::{SeedRun, Shard};

mod provisional;

use provisional::provisional_page;

use super::clock::Phase;
use super::output::{progress_bar, wants_colour};
use super::{EXIT_HARNESS, EXIT_UNMET, emit, invalid, verdict_exit};

/// What `locksim report` is asked: sweep the scenarios and write the safety report, one
/// self-contained page (DIR/index.html), every number as JSON (DIR/summary.json) and the
/// catalogue as JSON lines (DIR/summary.jsonl); prints the verdict table.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// Scenario files, or directories of them.
    #[arg(default_value = "scenarios")]
    pub paths: Vec<PathBuf>,
    /// Simulate locksim's own lock client even where a scenario names its own clients'
    /// command (`clients.command`, which only `--live` runs): refused otherwise, since its
    /// verdict would say nothing of that command's code.
    #[arg(long)]
    pub simulated_client: bool,
    /// Where to write the report.
    #[arg(long, default_value = "reports", conflicts_with = "shard")]
    pub out: PathBuf,
    /// Seeds per scenario (default: the scenario's own `seeds`).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Seeds run in parallel (default: the number of cores).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    pub jobs: Option<usize>,
    /// Seeds per point of the safety envelopes (0: leave them out).
    #[arg(long, default_value_t = 20)]
    pub envelope_seeds: u64,
    /// The safety matrix's grid (default: scenarios/matrix/grid.json, when it exists).
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// Seeds per matrix cell (default: the grid's own; 0: leave the matrix out).
    #[arg(long)]
    pub matrix_seeds: Option<u64>,
    /// Seeds a cell of a setup the grid compares goes on to when its first seeds show no
    /// safety violation, so a *holds* rests on enough seeds (default: the grid's
    /// `holds_seeds`, 300; 0: no further).
    #[arg(long)]
    pub holds_seeds: Option<u64>,
    /// Simulate every seed, reusing none of the runs an earlier report kept in
    /// DIR/.cache (by default a run of the same scenario, seed and locksim binary is
    /// reused).
    #[arg(long)]
    pub no_cache: bool,
    /// Run only shard K of N of every seed the report runs (every Nth seed of each
    /// catalogue scenario, matrix cell and envelope point) and write only its seed log;
    /// `locksim merge LOGS --report DIR` writes the report from every shard's log.
    #[arg(long, value_name = "K/N", requires = "seed_log")]
    pub shard: Option<Shard>,
    /// With --shard: the seed log, written as seeds finish (a header line with the
    /// report's options, then one JSON line per seed).
    #[arg(long, value_name = "FILE", requires = "shard")]
    pub seed_log: Option<PathBuf>,
}

impl ReportArgs {
    /// The options a report's plan is built from, the grid's default resolved.
    fn options(&self) -> ReportOptions {
        let matrix = match (&self.matrix, self.matrix_seeds) {
            (_, Some(0)) => None,
            (Some(file), _) => Some(file.clone()),
            (None, _) => Some(PathBuf::from(GRID_FILE)).filter(|grid| grid.exists()),
        };
        ReportOptions {
            paths: self.paths.clone(),
            seeds: self.seeds,
            envelope_seeds: self.envelope_seeds,
            matrix,
            matrix_seeds: self.matrix_seeds,
            holds_seeds: self.holds_seeds,
            simulated_client: self.simulated_client,
        }
    }
}

/// Where in the report's directory the runs of its sweeps are kept for the next report.
const CACHE_DIR: &str = ".cache";

/// Sweeps every scenario, writes `out/index.html`, `out/summary.json` and
/// `out/summary.jsonl`, prints the verdict table and where the report is. With `--shard`,
/// runs the shard's share and writes its seed log only.
pub fn report(mut args: ReportArgs) -> ExitCode {
    if args.seeds == Some(0) {
        return invalid("--seeds must be at least 1");
    }
    // Every bad file at once, before anything runs: a report is a long sweep.
    if let Err(code) = super::load_every_or_none(&args.paths) {
        return code;
    }
    // Every file the report names (and every replay command) is relative to where it
    // runs, so the page replays on another machine from the same directory.
    args.out = super::relative_to_cwd(&args.out);
    args.paths = args
        .paths
        .iter()
        .map(|path| super::relative_to_cwd(path))
        .collect();
    let plan = match Plan::new(args.options(), &args.out) {
        Ok(plan) => plan,
        Err(e) => return invalid(e),
    };
    let jobs = super::jobs_or_all_cores(args.jobs);
    if let (Some(shard), Some(log)) = (args.shard, &args.seed_log) {
        return run_shard(&plan, shard, log, jobs);
    }
    if let Err(code) = prepare(&plan, &args.out) {
        return code;
    }
    let cache = match args.no_cache {
        true => RunCache::off(),
        false => RunCache::open(&args.out.join(CACHE_DIR)).unwrap_or_else(|e| {
            eprintln!("warning: no cache of runs ({e}): every seed runs");
            RunCache::off()
        }),
    };
    let started = Phase::start();
    let reuse = Reuse::default();
    let swept = sweep_in_two_passes(&plan, &args.out, jobs, &cache, &reuse);
    let (reused, simulated) = cache.counts();
    eprintln!(
        "sweeps: {}, {simulated} seeds simulated, {reused} reused from {}",
        started.took(),
        args.out.join(CACHE_DIR).display()
    );
    if let Some(matrix) = &swept.matrix {
        emit(format_args!(
            "{} run in {:.1} s",
            matrix_line(matrix),
            swept.matrix_wall_ms as f64 / 1000.0
        ));
    }
    let code = finish_reusing(&plan, &args.out, swept, jobs, &cache, &reuse);
    if let Err(e) = cache.prune() {
        eprintln!("warning: pruning the cache of runs: {e}");
    }
    code
}

/// Every sweep of `plan`, run from `cache` in two passes ([`Plan::sweep_in_two_passes`]):
/// the catalogue (its verdict table printed as it comes) and the matrix's cells at their
/// first seeds; then, when cells go on or envelopes are to be swept and the first pass
/// simulated a seed (a run whose first pass came whole from the cache is not worth a
/// page of its own: the rest is most likely there too), a provisional page in `out`
/// (said on stderr), rewritten once its minimal counterexamples are shrunk and as each of
/// those sweeps finishes. Its replays and shrinks are kept in `cache` for the final page,
/// counted in `reuse`.
fn sweep_in_two_passes(plan: &Plan, out: &Path, jobs: usize, cache: &RunCache, reuse: &Reuse) -> Swept {
    let page = Mutex::new(None);
    let progress = Mutex::new(None);
    let first_pass = Phase::start();
    let swept = plan.sweep_in_two_passes(
        jobs,
        cache,
        &|first_plan, sweep| sweep_plan(first_plan, jobs, sweep),
        &mut |first, remaining| {
            let (_, simulated) = cache.counts();
            if remaining.sweeps > 0 && simulated > 0 {
                eprintln!("first pass: {}, {simulated} seeds simulated", first_pass.took());
                *page.lock().expect("lock poisoned") =
                    provisional_page(plan, out, first, remaining, jobs, cache, reuse);
                *progress.lock().expect("lock poisoned") =
                    progress_bar(remaining.sweeps as u64, "sweeps going on");
            }
        },
        &|done| {
            if let Some(bar) = &*progress.lock().expect("lock poisoned") {
                bar.set_position(done as u64);
            }
            if let Some(page) = &*page.lock().expect("lock poisoned") {
                page.rewrite(out, done);
            }
        },
    );
    if let Some(bar) = progress.into_inner().expect("lock poisoned") {
        bar.finish_and_clear();
    }
    swept
}

/// Runs shard `shard`'s share of every sweep of `plan` on `jobs` threads, writing the
/// header and each seed to `log` as it finishes; prints the verdict table of its share.
/// Exit 0 unless a run failed (a share alone cannot judge an expectation).
fn run_shard(plan: &Plan, shard: Shard, log: &Path, jobs: usize) -> ExitCode {
    let opened = std::fs::File::create(log)
        .and_then(|mut file| writeln!(file, "{}", plan.log_header(shard)).map(|()| file));
    let out = match opened {
        Ok(file) => Mutex::new(file),
        Err(e) => return invalid(format!("--seed-log {}: {e}", log.display())),
    };
    let log_error = Mutex::new(None);
    let failed = AtomicU64::new(0);
    sweep_plan(plan, jobs, &|sweep| {
        let write = |run: &SeedRun| {
            let mut out = out.lock().expect("seed log lock poisoned");
            if let Err(e) = writeln!(out, "{}", Plan::log_line(sweep, run)) {
                *log_error.lock().expect("lock poisoned") = Some(e);
            }
        };
        let report = sweeps::sweep_seeds(
            &sweep.file,
            &sweep.scenario,
            &sweep.seeds_of(Some(shard)),
            jobs,
            &write,
        );
        failed.fetch_add(report.errors.len() as u64, Ordering::Relaxed);
        report
    });
    if let Some(e) = log_error.into_inner().expect("lock poisoned") {
        eprintln!("error: writing the seed log {}: {e}", log.display());
        return ExitCode::from(EXIT_UNMET);
    }
    let seeds: usize = plan.sweeps().map(|sweep| sweep.seeds_of(Some(shard)).len()).sum();
    emit(format_args!(
        "shard {shard}: {seeds} of the report's {} seeds (seeds {}, {}, {}, ... of each of its {} sweeps) logged to {}; \
         the table judges this share only: write the report with locksim merge SHARD-LOGS... --report DIR",
        plan.total_seeds(),
        shard.index,
        shard.index + shard.count,
        shard.index + 2 * shard.count,
        plan.sweeps().count(),
        log.display()
    ));
    match failed.into_inner() {
        0 => ExitCode::SUCCESS,
        n => {
            eprintln!("error: {n} runs hit a harness error (a panic or a hang inside the simulator)");
            ExitCode::from(EXIT_HARNESS)
        }
    }
}

/// Makes the report's directory and writes the matrix's cells into `out/matrix/` and the
/// envelopes' points into `out/envelope/` (so each replays); `Err` is the exit code, after saying why.
pub fn prepare(plan: &Plan, out: &Path) -> Result<(), ExitCode> {
    if let Err(e) = std::fs::create_dir_all(out) {
        return Err(invalid(format!("{}: {e}", out.display())));
    }
    if let Some((grid, _)) = &plan.matrix {
        let dir = out.join("matrix");
        if let Err(e) = grid.write_scenarios(&dir) {
            return Err(invalid(format!(
                "writing the matrix's scenarios to {}: {e}",
                dir.display()
            )));
        }
    }
    if !plan.envelopes.is_empty() {
        let dir = out.join("envelope");
        if let Err(e) = envelopes::write_scenarios(&dir) {
            return Err(invalid(format!(
                "writing the envelopes' points to {}: {e}",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Every sweep of `plan`, its report from `sweep` (run here, a shard's share, or tallied
/// from the shards' logs), `jobs` sweeps at a time, printing the catalogue's verdict table
/// in the catalogue's order as its reports come; on a terminal a progress bar shows where
/// the sweeps are.
pub fn sweep_plan(plan: &Plan, jobs: usize, sweep: &(dyn Fn(&Sweep) -> ScenarioReport + Sync)) -> Swept {
    let progress = progress_bar(plan.sweeps().count() as u64, "sweeps");
    let style = TableStyle {
        wide: false,
        colour: wants_colour(std::io::stdout().is_terminal()),
    };
    let say = |line: &dyn std::fmt::Display| match &progress {
        Some(bar) => bar.println(line.to_string()),
        None => emit(line),
    };
    say(&ScenarioReport::table_header(style));
    // The catalogue's lines wait for the scenarios before them: (next to print, waiting).
    let table = Mutex::new((0, BTreeMap::new()));
    let swept = plan.sweep_all(jobs, sweep, &|index, each, report| {
        if each.kind == SweepKind::Catalogue {
            let mut table = table.lock().expect("table lock poisoned");
            let (next, waiting) = &mut *table;
            waiting.insert(index, report.table_lines(style));
            while let Some(lines) = waiting.remove(next) {
                lines.iter().for_each(|line| say(line));
                *next += 1;
                if *next == plan.catalogue.len() {
                    say(&ScenarioReport::table_legend(style));
                }
            }
        }
        if let Some(bar) = &progress {
            bar.set_message(format!("{}: {}", each.kind.word(), each.scenario.name));
            bar.inc(1);
        }
    });
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    swept
}

/// What the matrix's sweep covered, in a line.
pub fn matrix_line(matrix: &MatrixSummary) -> String {
    let cells = matrix.cells.iter().flatten().flatten().count();
    format!(
        "matrix: {} setups x {} fault classes, {cells} cells",
        matrix.setups.len(),
        matrix.faults.len()
    )
}

/// Each replayed or shrunk counterexample's timeline, by its id.
type Timelines = Vec<(String, Timeline)>;

/// What one report computed of its counterexamples and what it took from the cache's
/// directory: the seeds replayed and the shrinks. What the provisional page computed the
/// final page reuses, counted neither way.
#[derive(Default)]
struct Reuse {
    replays: Tally,
    shrinks: Tally,
}

impl Reuse {
    /// The replays, in words: `12 seeds replayed in this report, 3 taken from the cache`.
    fn replays_words(&self) -> String {
        let (replayed, kept) = self.replays.counts();
        format!("{replayed} seeds replayed in this report, {kept} taken from the cache")
    }

    /// The shrinks, in words: `4 shrinks run in this report, 0 taken from the cache`.
    fn shrinks_words(&self) -> String {
        let (shrunk, kept) = self.shrinks.counts();
        format!("{shrunk} shrinks run in this report, {kept} taken from the cache")
    }
}

/// The counterexamples of `swept` replayed (those `cache` holds reused, counted in
/// `reuse`), put together with it into the report's summary, its minimal counterexamples
/// not yet shrunk ([`shrink_into`]); with their timelines.
fn replayed_summary(
    plan: &Plan,
    swept: Swept,
    jobs: usize,
    cache: &RunCache,
    reuse: &Reuse,
) -> (Summary, Timelines) {
    let replayed = counterexamples::replay_all(plan, &swept, jobs, cache, &reuse.replays);
    let summary = Summary {
        catalogue: swept.catalogue,
        matrix: swept.matrix,
        counterexamples: replayed.catalogue,
        matrix_counterexamples: replayed.matrix,
        envelopes: swept.envelopes,
        minimal: Vec::new(),
        provenance: provenance(plan),
        provisional: None,
    };
    (summary, replayed.timelines)
}

/// Shrinks the minimal counterexamples of `summary`'s matrix into it (those `cache` holds
/// reused, counted in `tally`) and writes their scenarios into `out`; their timelines,
/// and the simulated runs the shrinks took.
fn shrink_into(
    summary: &mut Summary,
    out: &Path,
    jobs: usize,
    cache: &RunCache,
    tally: &Tally,
) -> Result<(Timelines, u64), String> {
    let shrunk = summary
        .matrix
        .as_ref()
        .map(|matrix| minimal::shrink_all(matrix, out, jobs, cache, tally))
        .unwrap_or_default();
    minimal::write_scenarios(out, &shrunk)
        .map_err(|e| format!("writing the minimal counterexamples: {e}"))?;
    let runs = shrunk.iter().map(|(m, _)| m.runs).sum::<u64>();
    let timelines = shrunk
        .into_iter()
        .map(|(example, timeline)| {
            let id = example.example.id.clone();
            summary.minimal.push(example);
            (id, timeline)
        })
        .collect();
    Ok((timelines, runs))
}

/// Replays the first violating seed of every catalogue scenario and matrix cell that
/// broke, shrinks the matrix's minimal counterexamples, draws the figures and writes the
/// report into `out` (made by [`prepare`]); says where it is. Replays and shrinks `cache`
/// kept are reused. Exit 0 when every expectation of the catalogue is met, 1 when one is
/// not.
pub fn finish(plan: &Plan, out: &Path, swept: Swept, jobs: usize, cache: &RunCache) -> ExitCode {
    finish_reusing(plan, out, swept, jobs, cache, &Reuse::default())
}

/// [`finish`], counting in `reuse` (which a provisional page's replays and shrinks may
/// already count); says on stderr how many seeds it replayed and shrinks it ran in all,
/// and how many came from the cache.
fn finish_reusing(
    plan: &Plan,
    out: &Path,
    swept: Swept,
    jobs: usize,
    cache: &RunCache,
    reuse: &Reuse,
) -> ExitCode {
    let started = Phase::start();
    let (mut summary, mut timelines) = replayed_summary(plan, swept, jobs, cache, reuse);
    let shrink_runs = match shrink_into(&mut summary, out, jobs, cache, &reuse.shrinks) {
        Ok((shrunk, runs)) => {
            timelines.extend(shrunk);
            runs
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_UNMET);
        }
    };
    eprintln!(
        "counterexamples replayed and shrunk: {}; {}; {}",
        started.took(),
        reuse.replays_words(),
        reuse.shrinks_words()
    );
    if !summary.minimal.is_empty() {
        emit(format_args!(
            "minimal counterexamples: {} (fault class, deployment) pairs shrunk in {shrink_runs} simulated runs",
            summary.minimal.len(),
        ));
    }
    let started = Phase::start();
    if let Err(e) = files::write(out, &summary, &timelines, jobs) {
        eprintln!("error: writing the report to {}: {e}", out.display());
        return ExitCode::from(EXIT_UNMET);
    }
    eprintln!("page and figures: {}", started.took());
    emit(format_args!(
        "report: {} (numbers: {})",
        out.join("index.html").display(),
        out.join("summary.json").display()
    ));
    verdict_exit(
        summary.catalogue.iter().any(|r| !r.errors.is_empty()),
        summary.catalogue.iter().all(ScenarioReport::expect_met),
    )
}

/// How this report is being made: locksim's version and commit, the command line as
/// typed, today's date (UTC; `SOURCE_DATE_EPOCH`, when set, fixes it, as reproducible
/// builds do), and the seeds the plan runs.
fn provenance(plan: &Plan) -> Provenance {
    let command: Vec<String> = std::env::args()
        .enumerate()
        .map(|(i, arg)| match i {
            0 => "locksim".to_string(),
            _ if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) => {
                format!("'{}'", arg.replace('\'', "'\\''"))
            }
            _ => arg,
        })
        .collect();
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs())
        });
    Provenance {
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: env!("LOCKSIM_COMMIT").to_string(),
        command: command.join(" "),
        date: civil_date(seconds / 86_400),
        seeds: plan.seeds_words(),
    }
}

/// `YYYY-MM-DD` of the day `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::civil_date;

    #[test]
    fn days_since_the_epoch_are_a_calendar_date() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_784), "2026-11-27");
    }
}
