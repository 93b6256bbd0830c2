//! The matrix as the report reads it once its seeds ran: rows, columns and each cell's
//! sweep, with what a cell shows and the matrix as a figure. Apart from the grid that
//! generates the cells ([`crate::campaign::matrix`]) and from the summary that holds it
//! ([`super::summary`]), so the comparisons, the minimal counterexamples and the page
//! read it without reaching back into either.

use super::ScenarioReport;
use super::figures::heatmap::{self, Band, Cell, Fill, Heatmap, Panel};
use super::outcome::{Outcome, Safety};
use super::rate::Rate;
pub use crate::scenario::grid::{FaultColumn, SetupRow};

/// Setups crossed with fault classes; a cell is `None` where the fault does not apply.
#[derive(Debug, Clone)]
pub struct MatrixSummary {
    pub setups: Vec<SetupRow>,
    pub faults: Vec<FaultColumn>,
    /// `cells[setup][fault]`.
    pub cells: Vec<Vec<Option<ScenarioReport>>>,
    /// Pairs of setups the opening compares, `(setup, against)` as indices into `setups`.
    pub comparisons: Vec<(usize, usize)>,
    /// Setups "Clients compared" lists, as indices into `setups`.
    pub clients_compared: Vec<usize>,
}

impl MatrixSummary {
    /// The matrix as a figure: each cell in two bands, the overlap's rate over the
    /// damage's (so a fenced overlap reads "overlap, no damage" at a glance), with the
    /// liveness lost under them; hatched where the fault does not apply, grey where the
    /// lock was not exercised.
    pub fn heatmap(&self) -> Heatmap {
        let fraction = |rate: Rate| rate.violating as f64 / rate.seeds.max(1) as f64;
        let cells = (0..self.setups.len())
            .map(|s| {
                (0..self.faults.len())
                    .map(|f| match self.outcome(s, f) {
                        None => Cell::plain(Fill::DoesNotApply, "does not apply"),
                        Some(outcome) if outcome.safety == Safety::NotExercised => Cell {
                            note: outcome.stuck_text(),
                            ..Cell::plain(Fill::NotExercised, "not exercised")
                        },
                        Some(outcome) => Cell {
                            fill: Fill::Rate(fraction(outcome.overlap)),
                            text: outcome.overlap_text(),
                            lower: Some(Band {
                                fraction: fraction(outcome.damage),
                                text: outcome.damage_text(),
                            }),
                            note: outcome.stuck_text(),
                        },
                    })
                    .collect()
            })
            .collect();
        Heatmap {
            title: "Safety matrix: two holders at once (top) and data damaged (bottom), in seeds".into(),
            x_label: "fault class".into(),
            y_label: "setup".into(),
            panels: vec![Panel {
                title: String::new(),
                columns: self.faults.iter().map(|f| f.label.clone()).collect(),
                rows: self.setups.iter().map(|s| s.label.clone()).collect(),
                cells,
                inside_bound: None,
            }],
            // The labels name topology, client and options: as wide as the longest
            // (about 5.4 px a character at the figure's size, measured in Chromium).
            row_label_width: self
                .setups
                .iter()
                .map(|s| s.label.chars().count() as u32 * 6 + 20)
                .max()
                .unwrap_or(0)
                .max(310),
            cell_width: heatmap::WIDE_CELL,
            note: "Top: seeds in which two clients believed they held the lock. Bottom: seeds in which an update \
                   was lost or a stale token accepted (absorbed: the setup fences and nothing was damaged). Under \
                   them, liveness lost: deadlock, or the lock left free while clients waited (stalled)."
                .into(),
        }
    }

    /// What the cell of `setup` × `fault` shows, if that fault applies to that setup.
    pub fn outcome(&self, setup: usize, fault: usize) -> Option<Outcome> {
        self.cell(setup, fault)
            .map(|report| Outcome::of(report, self.setups[setup].fenced))
    }
}

impl MatrixSummary {
    /// The cell of `setup` × `fault`, if that fault applies to that setup.
    pub fn cell(&self, setup: usize, fault: usize) -> Option<&ScenarioReport> {
        self.cells.get(setup)?.get(fault)?.as_ref()
    }
}
