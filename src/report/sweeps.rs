//! One sweep of a report: a scenario over seeds `0..N`, and which part of the report (the
//! catalogue, a matrix cell, an envelope point) it belongs to. The matrix and the envelopes
//! make their sweeps; [`super::plan`] runs, logs and assembles them.

use std::path::PathBuf;
use std::sync::Arc;

use super::ScenarioReport;
use crate::scenario::Scenario;
use crate::sweep::Shard;

/// Which part of a report a sweep belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SweepKind {
    /// A scenario of the catalogue (a file the user named).
    Catalogue,
    /// A cell of the safety matrix.
    Matrix,
    /// A point of a safety envelope.
    Envelope,
}

impl SweepKind {
    /// The word a seed log uses.
    pub fn word(self) -> &'static str {
        match self {
            SweepKind::Catalogue => "catalogue",
            SweepKind::Matrix => "matrix",
            SweepKind::Envelope => "envelope",
        }
    }

    /// The kind a seed log's word names.
    pub fn from_word(word: &str) -> Option<SweepKind> {
        [SweepKind::Catalogue, SweepKind::Matrix, SweepKind::Envelope]
            .into_iter()
            .find(|kind| kind.word() == word)
    }
}

/// One scenario a report sweeps over seeds `0..seeds`.
#[derive(Debug, Clone)]
pub struct Sweep {
    pub kind: SweepKind,
    /// What a seed log calls it (with its kind): the scenario file for the catalogue,
    /// `matrix/<setup>--<fault>.json` (its file in the report's directory) for a cell,
    /// `envelope/<envelope>-<series>-<x>-<y>.json` for an envelope point.
    pub id: String,
    /// The file its report names (and replays from).
    pub file: PathBuf,
    pub scenario: Arc<Scenario>,
    pub seeds: u64,
}

impl Sweep {
    /// Runs every seed on `jobs` threads.
    pub fn run(&self, jobs: usize) -> ScenarioReport {
        ScenarioReport::sweep(&self.file, &self.scenario, 0, self.seeds, jobs)
    }

    /// The seeds `shard` owns (all of them without a shard).
    pub fn seeds_of(&self, shard: Option<Shard>) -> Vec<u64> {
        (0..self.seeds)
            .filter(|&seed| shard.is_none_or(|shard| shard.owns(seed)))
            .collect()
    }
}
