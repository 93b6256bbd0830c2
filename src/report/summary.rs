//! The one value every number of the report comes from: the catalogue's sweeps, the
//! safety matrix and the counterexamples. The page ([`super::page`]), `summary.json` and
//! the terminal table all read it, so they cannot disagree.

use serde_json::{Value, json};

use super::ScenarioReport;
use super::advice::{self, Advice};
use super::compare;
use super::counterexample::Counterexample;
use super::envelope::Envelope;
use super::fault_classes;
use super::matrix_summary::MatrixSummary;
use super::minimal::Minimal;
use super::outcome::Outcome;

/// Everything one report shows.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The catalogue's scenarios, in file order.
    pub catalogue: Vec<ScenarioReport>,
    pub matrix: Option<MatrixSummary>,
    pub counterexamples: Vec<Counterexample>,
    /// The first violating seed of each matrix cell that broke.
    pub matrix_counterexamples: Vec<Counterexample>,
    /// The safety envelopes, when they were swept.
    pub envelopes: Vec<Envelope>,
    /// One shrunk counterexample per kind of deployment and fault class of the matrix that
    /// broke something.
    pub minimal: Vec<Minimal>,
    /// How the report was made.
    pub provenance: Provenance,
    /// Set on a page written before the report's last sweeps end (never in
    /// `summary.json`, which is written once, from the final results).
    pub provisional: Option<Provisional>,
}

/// What a provisional page does not show yet: `locksim report` writes one as soon as the
/// catalogue and the matrix's cells have run their first seeds, so a reader sees the
/// decision in a fraction of the run, then replaces it with the final page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provisional {
    /// The matrix's cells (setup, fault class) whose first seeds showed no safety
    /// violation and that go on to [`Provisional::holds_seeds`]: what they show may grow
    /// into a *holds*, or turn into a violation.
    pub extending: Vec<(usize, usize)>,
    /// The seeds those cells go on to.
    pub holds_seeds: u64,
    /// How many sweeps still to run (cells extended, envelope points) had finished when
    /// the page was written, of [`Provisional::to_run`].
    pub done: usize,
    pub to_run: usize,
    /// Whether the safety envelopes are still being swept (the page has none yet).
    pub envelopes_pending: bool,
    /// Whether the minimal counterexamples are still being shrunk (the page has none yet,
    /// and says so: its counterexamples are the cells' first violating seeds, unshrunk).
    pub minimal_pending: bool,
}

impl Provisional {
    /// Whether the cell of `setup` under `fault` is still being extended.
    pub fn extends(&self, setup: usize, fault: usize) -> bool {
        self.extending.contains(&(setup, fault))
    }
}

impl Summary {
    /// The JSON form (`summary.json`): every number on the page.
    pub fn to_json(&self) -> Value {
        let matrix = self.matrix.as_ref().map(|matrix| {
            let setups: Vec<Value> = matrix
                .setups
                .iter()
                .map(|s| json!({"name": s.name, "label": s.label, "fenced": s.fenced, "topology": crate::scenario::grid::topology_words(s), "kind": s.topology.name()}))
                .collect();
            let faults: Vec<Value> = matrix
                .faults
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    json!({"name": f.name, "label": f.label, "description": f.description,
                           "strikes": f.strikes.iter().map(|(topology, struck)| json!({"topology": topology, "struck": struck})).collect::<Vec<_>>(),
                           "found": fault_classes::found(matrix, i, &self.matrix_counterexamples)})
                })
                .collect();
            let cells: Vec<Value> = matrix
                .cells
                .iter()
                .enumerate()
                .flat_map(|(s, row)| {
                    row.iter().enumerate().map(move |(f, cell)| {
                        let mut value = match cell {
                            None => json!({"applies": false}),
                            Some(report) => {
                                let mut value = report.to_json();
                                value["applies"] = json!(true);
                                let outcome = Outcome::of(report, matrix.setups[s].fenced);
                                value["overlap_absorbed"] = json!(outcome.absorbed);
                                value["safety"] = json!(outcome.safety.word());
                                value["outcome"] = outcome.to_json();
                                value
                            }
                        };
                        value["setup"] = json!(matrix.setups[s].name);
                        value["fault"] = json!(matrix.faults[f].name);
                        value
                    })
                })
                .collect();
            let comparisons: Vec<Value> = compare::comparisons(matrix)
                .iter()
                .map(|c| c.to_json(matrix))
                .collect();
            let clients: Vec<&str> = matrix
                .clients_compared
                .iter()
                .map(|&s| matrix.setups[s].name.as_str())
                .collect();
            json!({"setups": setups, "faults": faults, "cells": cells, "comparisons": comparisons,
                   "clients_compared": clients})
        });
        json!({
            "catalogue": self.catalogue.iter().map(ScenarioReport::to_json).collect::<Vec<_>>(),
            "matrix": matrix,
            "counterexamples": self.counterexamples.iter().map(Counterexample::to_json).collect::<Vec<_>>(),
            "matrix_counterexamples": self.matrix_counterexamples.iter().map(Counterexample::to_json).collect::<Vec<_>>(),
            "envelopes": self.envelopes.iter().map(Envelope::to_json).collect::<Vec<_>>(),
            "minimal_counterexamples": self.minimal.iter().map(Minimal::to_json).collect::<Vec<_>>(),
            "what_to_do": self.advice().iter().map(Advice::to_json).collect::<Vec<_>>(),
            "catalogue_summary": self.catalogue_sentences(),
            "provenance": self.provenance.to_json(),
        })
    }

    /// "What to do": the advice the matrix supports ([`advice::advice`]); none without a
    /// matrix.
    pub fn advice(&self) -> Vec<Advice> {
        self.matrix.as_ref().map(advice::advice).unwrap_or_default()
    }

    /// What the catalogue found, in a sentence or two: how many scenarios met the
    /// published analyses' predictions, and which did not.
    pub fn catalogue_sentences(&self) -> Vec<String> {
        let mut sentences = Vec::new();
        if self.catalogue.is_empty() {
            return sentences;
        }
        let met = self.catalogue.iter().filter(|r| r.expect_met()).count();
        let seeds: u64 = self.catalogue.iter().map(|r| r.seeds).sum();
        sentences.push(format!(
            "The catalogue's {} scenarios, written from the published analyses, ran {seeds} seeds: {met} met \
             every expectation.",
            self.catalogue.len()
        ));
        let unmet: Vec<&str> = self
            .catalogue
            .iter()
            .filter(|r| !r.expect_met())
            .map(|r| r.name.as_str())
            .collect();
        if !unmet.is_empty() {
            sentences.push(format!("Expectations not met: {}.", unmet.join(", ")));
        }
        sentences
    }
}

/// Where a report came from: enough to make it again and to replay anything on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// locksim's version and the commit it was built from (`unknown` outside a git
    /// checkout).
    pub version: String,
    pub commit: String,
    /// The command line that made the report, as typed.
    pub command: String,
    /// The day it was made (UTC, `YYYY-MM-DD`).
    pub date: String,
    /// The seeds it ran, in words.
    pub seeds: String,
}

impl Provenance {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        json!({
            "locksim": self.version,
            "commit": self.commit,
            "command": self.command,
            "date": self.date,
            "seeds": self.seeds,
        })
    }
}
