//! Running the safety matrix: each applicable cell of a [`Grid`] as a sweep, and the
//! cells' reports put back in their places.

use std::path::Path;

use super::sweeps::{Sweep, SweepKind};
use crate::report::ScenarioReport;
use crate::report::matrix_summary::MatrixSummary;
use crate::scenario::grid::{Cell, Grid, cell_file, cell_name};

/// Sweeps every applicable cell of `grid` over `seeds` seeds (or each scenario's own, and
/// no more: [`sweeps`]' `holds_seeds` off) on `jobs` threads; `progress` is told of each cell done. Reports name each cell's file in
/// `scenario_dir`, so their replay hints work once the scenarios are written there.
pub fn run(
    grid: &Grid,
    scenario_dir: &Path,
    seeds: Option<u64>,
    jobs: usize,
    progress: &dyn Fn(),
) -> MatrixSummary {
    let reports = sweeps(grid, scenario_dir, seeds, None)
        .iter()
        .map(|sweep| {
            let report = sweep.run(jobs);
            progress();
            report
        })
        .collect();
    results(grid, reports)
}

/// Every applicable cell of `grid` as a sweep of `seeds` seeds (or its scenario's own),
/// the cells of a setup the comparisons name going on to `holds_seeds` (none: no further)
/// where their first seeds show no safety violation; row by row, in the order [`results`] reads their reports; each names its file in
/// `scenario_dir` (where [`Grid::write_scenarios`] puts them).
pub fn sweeps(grid: &Grid, scenario_dir: &Path, seeds: Option<u64>, holds_seeds: Option<u64>) -> Vec<Sweep> {
    let mut sweeps = Vec::new();
    let compared = |setup: usize| grid.comparisons.iter().any(|&(a, b)| a == setup || b == setup);
    for (index, (row, setup)) in grid.cells.iter().zip(&grid.setups).enumerate() {
        for (cell, fault) in row.iter().zip(&grid.faults) {
            if let Cell::Generated { scenario, .. } = cell {
                let name = cell_name(&setup.name, &fault.name);
                sweeps.push(Sweep {
                    kind: SweepKind::Matrix,
                    id: format!("matrix/{name}.json"),
                    file: cell_file(scenario_dir, &setup.name, &fault.name),
                    scenario: scenario.clone(),
                    seeds: seeds.unwrap_or(scenario.seeds),
                    holds_at: holds_seeds.filter(|_| compared(index)),
                });
            }
        }
    }
    sweeps
}

/// Where each of [`sweeps`]' sweeps sits in the grid: (setup, fault class), in its order.
pub fn places(grid: &Grid) -> Vec<(usize, usize)> {
    let mut places = Vec::new();
    for (setup, row) in grid.cells.iter().enumerate() {
        for (fault, cell) in row.iter().enumerate() {
            if let Cell::Generated { .. } = cell {
                places.push((setup, fault));
            }
        }
    }
    places
}

/// The grid's cells with the reports of their sweeps (one per applicable cell, in
/// [`sweeps`]' order).
pub fn results(grid: &Grid, reports: Vec<ScenarioReport>) -> MatrixSummary {
    let mut reports = reports.into_iter();
    let cells = grid
        .cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| match cell {
                    Cell::NotApplicable { .. } => None,
                    Cell::Generated { .. } => {
                        Some(reports.next().expect("a report for every applicable cell"))
                    }
                })
                .collect()
        })
        .collect();
    MatrixSummary {
        setups: grid.setups.clone(),
        faults: grid.faults.clone(),
        cells,
        comparisons: grid.comparisons.clone(),
        clients_compared: grid.clients_compared.clone(),
    }
}
