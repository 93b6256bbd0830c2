//! One row of `compare-live`'s table: a scenario's runs in every mode (a [`Side`] each),
//! what they found and when, where they disagree, and the row as a table line, notes, a
//! JUnit suite and JSON.

use std::path::Path;

use serde_json::{Value, json};

use locksim::check::validity;
use locksim::history::Strike;
use locksim::report::junit::{self, Suite};
use locksim::report::struck;
use locksim::report::{CHECKERS, Finding, ScenarioReport};
use locksim::scenario::Scenario;

/// The first violation one mode found: in which seed, when in that run, and how much host
/// time the mode had spent when it was found.
#[derive(Debug, Clone, Copy)]
pub(super) struct FirstViolation {
    pub(super) seed: u64,
    /// Into its run: simulated ms, or real ms since the live run's time 0 (every worker
    /// connected).
    pub(super) at_ms: f64,
    /// Host time spent to find it: the simulator's CPU time over the seeds run up to and
    /// including this one; live, the wall time of the seeds before it plus `at_ms`.
    pub(super) host_ms: f64,
}

/// One mode's runs of a scenario.
pub(super) struct Side {
    pub(super) mode: &'static str,
    pub(super) report: ScenarioReport,
    pub(super) first: Option<FirstViolation>,
    /// Host time per seed, on average (simulator: CPU; live: wall, with start and stop).
    pub(super) host_ms_per_seed: f64,
    /// The faults each seed that ran struck, by seed.
    pub(super) strikes: Vec<(u64, Vec<Strike>)>,
}

/// One scenario in every mode.
pub(super) struct Row {
    sim: Side,
    lives: Vec<Side>,
    /// `(mode, seed, what differed)` of every fault a live seed struck otherwise than the
    /// simulated seed of the same number.
    pub(super) faults_differ: Vec<(&'static str, u64, String)>,
}

impl Row {
    pub(super) fn new(scenario: &Scenario, sim: Side, lives: Vec<Side>) -> Row {
        let mut faults_differ = Vec::new();
        for live in &lives {
            for (seed, live_strikes) in &live.strikes {
                let Some((_, sim_strikes)) = sim.strikes.iter().find(|(s, _)| s == seed) else {
                    continue;
                };
                let lines = struck::differences(scenario, (sim.mode, sim_strikes), (live.mode, live_strikes));
                faults_differ.extend(lines.into_iter().map(|line| (live.mode, *seed, line)));
            }
        }
        Row {
            sim,
            lives,
            faults_differ,
        }
    }

    pub(super) fn sides(&self) -> impl Iterator<Item = &Side> {
        std::iter::once(&self.sim).chain(&self.lives)
    }

    /// The checkers compared: the scenario's expectations, but validity (live mode does
    /// not judge it).
    fn checkers(&self) -> Vec<&'static str> {
        self.sim
            .report
            .expectations
            .iter()
            .map(|(checker, _, _)| *checker)
            .filter(|checker| *checker != validity::NAME)
            .collect()
    }

    /// `(mode, checker)` of every live finding that differs from the simulator's on
    /// whether the checker was violated.
    pub(super) fn disagreements(&self) -> Vec<(&'static str, &'static str)> {
        let violated = |side: &Side, checker| side.report.finding(checker) == Finding::Violated;
        self.lives
            .iter()
            .flat_map(|live| {
                self.checkers()
                    .into_iter()
                    .filter(|checker| violated(live, checker) != violated(&self.sim, checker))
                    .map(|checker| (live.mode, checker))
            })
            .collect()
    }

    /// The row as a JUnit suite: for each expected checker, whether every live mode's
    /// finding agrees with the simulator's; then whether the faults struck agree.
    pub(super) fn suite(&self, scenario: &Scenario, file: &Path) -> Suite {
        let disagreements = self.disagreements();
        // A failed run's notes say what failed; with none, nothing is an error.
        let failed = self.sides().any(|side| !side.report.errors.is_empty());
        let errors: Vec<String> = if failed { self.notes() } else { Vec::new() };
        let outcome = |failed: Vec<String>, what: &str| match (errors.is_empty(), failed.is_empty()) {
            (false, _) => junit::Outcome::Error {
                message: "a run failed; nothing was compared".into(),
                detail: errors.clone(),
            },
            (true, true) => junit::Outcome::Passed,
            (true, false) => junit::Outcome::Failed {
                message: format!("{what} differ: {}", failed.join("; ")),
                detail: vec![self.line()],
            },
        };
        let mut cases: Vec<junit::Case> = self
            .checkers()
            .into_iter()
            .map(|checker| {
                let modes: Vec<String> = disagreements
                    .iter()
                    .filter(|(_, c)| *c == checker)
                    .map(|(mode, _)| format!("{mode} says otherwise than the simulator"))
                    .collect();
                junit::Case {
                    name: format!("{checker} agrees"),
                    outcome: outcome(modes, "the verdicts"),
                }
            })
            .collect();
        let faults = self
            .faults_differ
            .iter()
            .map(|(mode, seed, line)| format!("{mode}, seed {seed}: {line}"))
            .collect();
        cases.push(junit::Case {
            name: "the faults struck agree".into(),
            outcome: outcome(faults, "the faults struck"),
        });
        Suite {
            name: scenario.name.clone(),
            file: file.display().to_string(),
            time_s: 0.0,
            cases,
            system_out: self.notes(),
        }
    }

    /// The table row, in Markdown.
    pub(super) fn line(&self) -> String {
        let verdicts = |mode: &str| {
            self.sides()
                .find(|side| side.mode == mode)
                .map_or_else(|| "not run".to_string(), |side| self.verdict_cell(side))
        };
        let mut differ: Vec<String> = self
            .disagreements()
            .iter()
            .map(|(mode, checker)| format!("{} {mode}", short(checker)))
            .collect();
        for (mode, _, _) in &self.faults_differ {
            let said = format!("faults {mode}");
            if !differ.contains(&said) {
                differ.push(said);
            }
        }
        let agree = match differ.is_empty() {
            true => "yes".to_string(),
            false => format!("no: {}", differ.join(", ")),
        };
        format!(
            "| {} | {} | {} | {} | {} | {} | {agree} |",
            self.sim.report.name,
            self.verdict_cell(&self.sim),
            verdicts("live locksim"),
            verdicts("live redis-server"),
            self.times_cell(),
            self.speed_up_cell(),
        )
    }

    fn verdict_cell(&self, side: &Side) -> String {
        let report = &side.report;
        let cells: Vec<String> = self
            .checkers()
            .into_iter()
            .map(|checker| {
                let letter = match report.finding(checker) {
                    Finding::Violated => "V",
                    Finding::Holds => "H",
                    Finding::NotExercised => "n/e",
                    Finding::NotJudged => "n/j",
                };
                let rate = report.rate(checker);
                let control = report
                    .control
                    .as_ref()
                    .filter(|_| report.attribution(checker).is_some())
                    .map(|control| {
                        let rate = control.rate(checker);
                        format!(" ({}/{} without faults)", rate.violating, rate.seeds)
                    })
                    .unwrap_or_default();
                format!(
                    "{} {letter} {}/{}{control}",
                    short(checker),
                    rate.violating,
                    rate.seeds
                )
            })
            .collect();
        let errors = match report.errors.len() {
            0 => String::new(),
            n => format!("; {n} failed"),
        };
        format!("{}{errors}", cells.join(", "))
    }

    fn times_cell(&self) -> String {
        let sides: Vec<String> = self
            .sides()
            .map(|side| match (side.mode, side.first) {
                (_, None) => "-".to_string(),
                ("sim", Some(first)) => format!("{:.0} ({:.0})", first.at_ms, first.host_ms),
                (_, Some(first)) => format!("{:.0}", first.host_ms),
            })
            .collect();
        sides.join(" / ")
    }

    /// Live real time over the simulator's CPU time: to the first violation when the
    /// simulator found one, else per seed.
    fn speed_up_cell(&self) -> String {
        let ratios: Vec<String> = self
            .lives
            .iter()
            .map(|live| match (self.sim.first, live.first) {
                (Some(sim), Some(live)) => format!("{:.0}x", live.host_ms / sim.host_ms),
                _ => format!(
                    "{:.0}x per seed",
                    live.host_ms_per_seed / self.sim.host_ms_per_seed
                ),
            })
            .collect();
        ratios.join(" / ")
    }

    /// Lines under the row: every run that failed, with its reason, and every fault a
    /// live seed struck otherwise than the simulated one.
    pub(super) fn notes(&self) -> Vec<String> {
        let failed = self.sides().flat_map(|side| {
            side.report
                .errors
                .iter()
                .map(move |(seed, error)| format!("{} seed {seed} failed: {error}", side.mode))
        });
        let faults = self
            .faults_differ
            .iter()
            .map(|(mode, seed, line)| format!("{mode} seed {seed} struck otherwise: {line}"));
        failed.chain(faults).collect()
    }

    pub(super) fn to_json(&self) -> Value {
        let side_json = |side: &Side| {
            let mut report = side.report.to_json();
            report["mode"] = side.mode.into();
            report["host_ms_per_seed"] = side.host_ms_per_seed.into();
            report["first_violation"] = side.first.map_or(
                Value::Null,
                |first| json!({"seed": first.seed, "at_ms": first.at_ms, "host_ms": first.host_ms}),
            );
            report
        };
        json!({
            "scenario": self.sim.report.name,
            "file": self.sim.report.file.display().to_string(),
            "sides": self.sides().map(side_json).collect::<Vec<_>>(),
            "disagreements": self.disagreements().iter().map(|(mode, checker)| json!({"mode": mode, "checker": checker})).collect::<Vec<_>>(),
            "fault_differences": self.faults_differ.iter().map(|(mode, seed, line)| json!({"mode": mode, "seed": seed, "difference": line})).collect::<Vec<_>>(),
        })
    }
}

/// A checker's short name, as the verdict table heads its column.
fn short(checker: &str) -> &str {
    CHECKERS
        .iter()
        .find(|(name, _)| *name == checker)
        .map_or(checker, |(_, short)| short)
}
