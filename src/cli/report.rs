//! `report`: the catalogue (and the safety matrix) swept, and the result written as one
//! self-contained page, its numbers as JSON and each figure as a file. The verdict table
//! is printed as `run` prints it; on a terminal a progress bar shows where the sweep is.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use locksim::check::check_all;
use locksim::report::ScenarioReport;
use locksim::report::envelope::{self, Envelope};
use locksim::report::figures::{
    self, heatmap,
    timeline::{self, Timeline},
};
use locksim::report::matrix::{self, Matrix};
use locksim::report::page::{self, Figures};
use locksim::report::summary::{Counterexample, MatrixSummary, Summary};
use locksim::scenario::{self, Scenario};
use locksim::search::story;
use locksim::sweep::run_seed;

use super::{EXIT_UNMET, emit, invalid};

/// What `locksim report` is asked: sweep the scenarios and write the safety report, one
/// self-contained page (DIR/index.html), every number as JSON (DIR/summary.json) and the
/// catalogue as JSON lines (DIR/summary.jsonl); prints the verdict table.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// Scenario files, or directories of them.
    #[arg(default_value = "scenarios")]
    pub paths: Vec<PathBuf>,
    /// Where to write the report.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Seeds per scenario (default: the scenario's own `seeds`).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Seeds run in parallel (default: the number of cores).
    #[arg(long)]
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
}

/// Sweeps every scenario, writes `out/index.html`, `out/summary.json` and
/// `out/summary.jsonl`, prints the verdict table and where the report is.
pub fn report(args: ReportArgs) -> ExitCode {
    let scenarios = match scenario::load_paths(&args.paths) {
        Ok(s) if s.is_empty() => return invalid("no scenario files found"),
        Ok(s) => s,
        Err(e) => return invalid(e),
    };
    if args.seeds == Some(0) {
        return invalid("--seeds must be at least 1");
    }
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return invalid(format!("--out {}: {e}", args.out.display()));
    }
    let jobs = super::jobs_or_all_cores(args.jobs);
    let progress = progress_bar(scenarios.len() as u64, "scenarios");
    let say = |line: String| match &progress {
        Some(bar) => bar.println(line),
        None => emit(line),
    };
    say(ScenarioReport::table_header());
    let mut catalogue = Vec::new();
    let mut counterexamples = Vec::new();
    let mut timelines = Vec::new();
    for (file, scenario) in scenarios {
        if let Some(bar) = &progress {
            bar.set_message(scenario.name.clone());
        }
        let count = args.seeds.unwrap_or(scenario.seeds);
        let scenario = Arc::new(scenario);
        let report = ScenarioReport::sweep(&file, &scenario, 0, count, jobs);
        for line in report.table_lines() {
            say(line);
        }
        if let Some((example, timeline)) = counterexample(&report, &scenario) {
            timelines.push((example.id.clone(), timeline));
            counterexamples.push(example);
        }
        catalogue.push(report);
        if let Some(bar) = &progress {
            bar.inc(1);
        }
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    emit(ScenarioReport::table_legend());
    let matrix = match sweep_matrix(&args, jobs) {
        Ok(matrix) => matrix,
        Err(e) => return invalid(e),
    };
    let mut matrix_counterexamples = Vec::new();
    for report in matrix.iter().flat_map(|m| m.cells.iter().flatten().flatten()) {
        let Ok(scenario) = scenario::load(&report.file) else {
            continue;
        };
        if let Some((example, timeline)) = counterexample(report, &Arc::new(scenario)) {
            timelines.push((example.id.clone(), timeline));
            matrix_counterexamples.push(example);
        }
    }
    let envelopes = match sweep_envelopes(args.envelope_seeds, jobs) {
        Ok(envelopes) => envelopes,
        Err(e) => return invalid(e),
    };
    let summary = Summary {
        catalogue,
        matrix,
        counterexamples,
        matrix_counterexamples,
        envelopes,
    };
    let figures = match draw_figures(&args.out, &timelines, &summary) {
        Ok(figures) => figures,
        Err(e) => {
            eprintln!("error: drawing the timelines into {}: {e}", args.out.display());
            return ExitCode::from(EXIT_UNMET);
        }
    };
    if let Err(e) = write_report(&args.out, &summary, &figures) {
        eprintln!("error: writing the report to {}: {e}", args.out.display());
        return ExitCode::from(EXIT_UNMET);
    }
    emit(format_args!(
        "report: {} (numbers: {})",
        args.out.join("index.html").display(),
        args.out.join("summary.json").display()
    ));
    if summary.catalogue.iter().all(ScenarioReport::expect_met) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_UNMET)
    }
}

/// A progress bar of `total` `things` on a terminal; nothing when the output goes to a
/// file or a pipe.
fn progress_bar(total: u64, things: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total);
    let template = format!("{{bar:40}} {{pos}}/{{len}} {things}  {{elapsed}}  {{msg}}");
    let style = ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

/// The safety matrix: the grid's cells written to `out/matrix/` (so each replays) and swept.
fn sweep_matrix(args: &ReportArgs, jobs: usize) -> Result<Option<MatrixSummary>, String> {
    if args.matrix_seeds == Some(0) {
        return Ok(None);
    }
    let grid = match &args.matrix {
        Some(file) => file.clone(),
        None if Path::new(matrix::GRID_FILE).exists() => PathBuf::from(matrix::GRID_FILE),
        None => return Ok(None),
    };
    let grid = Matrix::load(&grid).map_err(|e| e.to_string())?;
    let dir = args.out.join("matrix");
    grid.write_scenarios(&dir)
        .map_err(|e| format!("writing the matrix's scenarios to {}: {e}", dir.display()))?;
    let progress = progress_bar(grid.applicable_cells(), "matrix cells");
    let done = || {
        if let Some(bar) = &progress {
            bar.inc(1);
        }
    };
    let run = grid.run(&dir, args.matrix_seeds, jobs, &done);
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    emit(format_args!(
        "matrix: {} setups x {} fault classes, {} cells run in {:.1} s",
        run.setups.len(),
        run.faults.len(),
        grid.applicable_cells(),
        run.wall_ms as f64 / 1000.0
    ));
    Ok(Some(run.summary()))
}

/// The safety envelopes at `seeds` seeds per point (none at 0), with their own progress.
fn sweep_envelopes(seeds: u64, jobs: usize) -> Result<Vec<Envelope>, locksim::scenario::ScenarioError> {
    if seeds == 0 {
        return Ok(Vec::new());
    }
    let progress = progress_bar(envelope::points(), "envelope points");
    let done = || {
        if let Some(bar) = &progress {
            bar.inc(1);
        }
    };
    let envelopes = envelope::run_envelopes(seeds, jobs, &done);
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    envelopes
}

/// The first violating seed of a scenario, replayed in full, and its lease timeline;
/// `None` when nothing broke or the replay itself failed (the sweep already reported it).
fn counterexample(report: &ScenarioReport, scenario: &Arc<Scenario>) -> Option<(Counterexample, Timeline)> {
    let seed = *report.violating_seeds().first()?;
    let history = run_seed(scenario, seed).ok()?;
    let verdicts = check_all(&history, &scenario.check_settings());
    let example = Counterexample::new(report, seed, &history, &verdicts);
    let until = verdicts
        .iter()
        .filter_map(|v| v.violation.as_deref())
        .filter_map(story::last_time_named)
        .max();
    let title = format!("{} — seed {seed}", report.name);
    let timeline = Timeline::from_history(&history, &title, until.map(|us| us as f64 / 1000.0));
    Some((example, timeline))
}

/// Every figure as `out/figures/<id>.svg` and `.png`: each counterexample's timeline (by
/// its id), the matrix (`matrix`) and each envelope (`envelope-<name>`). Returns the SVGs,
/// by id, for the page to inline.
fn draw_figures(out: &Path, timelines: &[(String, Timeline)], summary: &Summary) -> std::io::Result<Figures> {
    let dir = out.join("figures");
    std::fs::create_dir_all(&dir)?;
    let mut figures = Figures::new();
    let mut write = |id: &str, svg: String, draw_png: &dyn Fn(&Path) -> std::io::Result<()>| {
        std::fs::write(dir.join(format!("{id}.svg")), &svg)?;
        draw_png(&dir.join(format!("{id}.png")))?;
        figures.insert(id.to_string(), svg);
        std::io::Result::Ok(())
    };
    for (id, t) in timelines {
        let svg = figures::svg(t.size(), |root| timeline::draw(root, t));
        write(id, svg, &|png| {
            figures::png(png, t.size(), |root| timeline::draw(root, t))
        })?;
    }
    let heatmaps = summary
        .matrix
        .iter()
        .map(|matrix| ("matrix".to_string(), matrix.heatmap()))
        .chain(
            summary
                .envelopes
                .iter()
                .map(|envelope| (format!("envelope-{}", envelope.name), envelope.heatmap())),
        );
    for (id, map) in heatmaps {
        let svg = figures::svg(map.size(), |root| heatmap::draw(root, &map));
        write(&id, svg, &|png| {
            figures::png(png, map.size(), |root| heatmap::draw(root, &map))
        })?;
    }
    Ok(figures)
}

/// Writes the page, the JSON summary, the catalogue as JSON lines, and the figures.
fn write_report(out: &Path, summary: &Summary, figures: &Figures) -> std::io::Result<()> {
    std::fs::write(out.join("index.html"), page::render(summary, figures))?;
    let json = serde_json::to_string_pretty(&summary.to_json()).map_err(std::io::Error::other)?;
    std::fs::write(out.join("summary.json"), json + "\n")?;
    let lines: String = summary
        .catalogue
        .iter()
        .map(|report| report.to_json().to_string() + "\n")
        .collect();
    std::fs::write(out.join("summary.jsonl"), lines)?;
    Ok(())
}
