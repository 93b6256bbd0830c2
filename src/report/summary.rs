//! The one value every number of the report comes from: the catalogue's sweeps, the
//! safety matrix and the counterexamples. The page ([`super::page`]), `summary.json` and
//! the terminal table all read it, so they cannot disagree.

use serde_json::{Value, json};

use super::ScenarioReport;
use super::compare;
use super::counterexample::Counterexample;
use super::envelope::Envelope;
use super::fault_classes;
use super::matrix_summary::MatrixSummary;
use super::minimal::Minimal;
use super::outcome::Outcome;
use super::rate::Rate;
use crate::check;

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
}

impl Summary {
    /// The JSON form (`summary.json`): every number on the page.
    pub fn to_json(&self) -> Value {
        let matrix = self.matrix.as_ref().map(|matrix| {
            let setups: Vec<Value> = matrix
                .setups
                .iter()
                .map(|s| json!({"name": s.name, "label": s.label, "fenced": s.fenced, "topology": s.topology.name()}))
                .collect();
            let faults: Vec<Value> = matrix
                .faults
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    json!({"name": f.name, "label": f.label, "description": f.description,
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
            "verdict": self.verdict_sentences(),
            "answer": self.answer_sentences(),
        })
    }

    /// The opening answer: each of the grid's pairs of setups compared on the same fault
    /// classes and seeds, one sentence a pair ([`Comparison::sentence`]).
    pub fn answer_sentences(&self) -> Vec<String> {
        let Some(matrix) = &self.matrix else {
            return Vec::new();
        };
        compare::comparisons(matrix)
            .iter()
            .map(|c| c.sentence(matrix))
            .collect()
    }

    /// The report's opening: a few sentences generated from the numbers, each with the
    /// seeds behind it. Nothing here is written by hand about results.
    pub fn verdict_sentences(&self) -> Vec<String> {
        let mut sentences = Vec::new();
        if let Some(matrix) = &self.matrix {
            sentences.extend(matrix_sentences(matrix));
        }
        let met = self.catalogue.iter().filter(|r| r.expect_met()).count();
        let violated = self
            .catalogue
            .iter()
            .filter(|r| r.rate(check::mutual_exclusion::NAME).violating > 0)
            .count();
        if !self.catalogue.is_empty() {
            let seeds: u64 = self.catalogue.iter().map(|r| r.seeds).sum();
            sentences.push(format!(
                "The catalogue's {} scenarios ran {seeds} seeds: {met} met every expectation the published analyses \
                 predict, and mutual exclusion broke in {violated} of them.",
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
        }
        sentences
    }
}

/// How many fault classes the opening names (the ones that broke the most setups).
const MAX_FAULT_SENTENCES: usize = 3;

/// What the matrix says, in sentences: who kept mutual exclusion under everything, what
/// broke whom most often, and what fencing changed.
fn matrix_sentences(matrix: &MatrixSummary) -> Vec<String> {
    let mutex = check::mutual_exclusion::NAME;
    let mut sentences = Vec::new();
    let cells = |s: usize| (0..matrix.faults.len()).filter_map(move |f| matrix.cell(s, f).map(|r| (f, r)));
    let safe: Vec<String> = (0..matrix.setups.len())
        .filter(|&s| cells(s).all(|(_, r)| r.finding(mutex) == super::Finding::Holds))
        .map(|s| {
            let seeds: u64 = cells(s).map(|(_, r)| r.exercised_seeds()).sum();
            format!("{} ({seeds} exercised seeds)", matrix.setups[s].label)
        })
        .collect();
    sentences.push(match safe.len() {
        0 => format!(
            "No setup kept mutual exclusion under all {} fault classes.",
            matrix.faults.len()
        ),
        _ => format!(
            "Mutual exclusion held under every fault class that applies for: {}.",
            safe.join("; ")
        ),
    });
    // The fault classes that broke the most setups, worst first.
    let mut by_fault: Vec<(usize, usize, usize)> = (0..matrix.faults.len())
        .map(|f| {
            let applicable = (0..matrix.setups.len()).filter_map(|s| matrix.cell(s, f));
            let (count, broken) = applicable.fold((0, 0), |(n, b), r| {
                (n + 1, b + usize::from(r.rate(mutex).violating > 0))
            });
            (f, broken, count)
        })
        .filter(|&(_, broken, _)| broken > 0)
        .collect();
    by_fault.sort_by_key(|&(f, broken, _)| (std::cmp::Reverse(broken), f));
    for &(f, broken, applicable) in by_fault.iter().take(MAX_FAULT_SENTENCES) {
        let rates: Vec<(usize, Rate)> = (0..matrix.setups.len())
            .filter_map(|s| matrix.cell(s, f).map(|r| (s, r.rate(mutex))))
            .collect();
        let fraction = |rate: Rate| rate.violating as f64 / rate.seeds.max(1) as f64;
        let worst_fraction = rates.iter().map(|&(_, r)| fraction(r)).fold(0.0, f64::max);
        let worst: Vec<&(usize, Rate)> = rates
            .iter()
            .filter(|&&(_, r)| fraction(r) == worst_fraction)
            .collect();
        let worst = match worst.as_slice() {
            [(s, rate)] => format!("worst: {}, {}", matrix.setups[*s].label, rate.sentence()),
            tied => format!("{} setups tied worst at {}", tied.len(), tied[0].1.sentence()),
        };
        sentences.push(format!(
            "{}: mutual exclusion broke for {broken} of {applicable} setups ({worst}).",
            matrix.faults[f].label,
        ));
    }
    let fenced_breaks: Vec<&ScenarioReport> = (0..matrix.setups.len())
        .filter(|&s| matrix.setups[s].fenced)
        .flat_map(|s| cells(s).map(|(_, r)| r))
        .filter(|r| r.rate(mutex).violating > 0)
        .collect();
    if !fenced_breaks.is_empty() {
        let absorbed = fenced_breaks
            .iter()
            .filter(|r| Outcome::of(r, true).absorbed)
            .count();
        sentences.push(format!(
            "Fencing: in {absorbed} of the {} fenced cells where two clients believed they held the lock, the \
             storage refused every stale token and no update was lost.",
            fenced_breaks.len()
        ));
    }
    sentences
}
