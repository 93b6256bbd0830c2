//! The safety matrix: lock setups (rows) crossed with fault classes (columns), the
//! comparison locksim exists for.
//!
//! Both lists are data (`scenarios/matrix/grid.json`), so a user can add a row with their
//! own profile and TTL and run it again. Every cell is a scenario *generated* from its row
//! and column, never picked from the catalogue: the grid's `defaults`, then the fault
//! class's `scenario` fields and `faults`, then the setup's own fields (a setup's explicit
//! setting always wins: it is the configuration under test), merged as JSON and loaded
//! with [`scenario::load_str`](crate::scenario::load_str), so each cell is checked as a
//! user's file is. Two shorthands are expanded first:
//!
//! - a string `"ttl"` or `"K*ttl"` (`"2*ttl"`, `"0.25*ttl"`, `"-1*ttl"`) anywhere a number
//!   goes becomes K × the setup's `lock.ttl_ms`, rounded to a whole ms: faults that must
//!   outlast the TTL keep doing so for a row with another TTL;
//! - a list element `"@redis"` (every Redis node), `"@masters"` (the masters) or
//!   `"@one-master"` (the first master: one of N) becomes those node names, so one
//!   partition fault fits a single node and five masters alike; where one value goes (a
//!   fault's `target`), the shorthand becomes the one name, or the list of them.
//!
//! Generated scenarios carry no `expect`: a cell's verdict is whatever its seeds show. A
//! fault class names the topologies it applies to (and whether it needs replicas); other
//! cells are marked as not applicable and have no scenario.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Fencing, Scenario, ScenarioError, load_str};

mod expand;
mod file;
mod setup;
#[cfg(test)]
mod tests;

use expand::{Nodes, expand, merge};
use file::{Defaults, FaultSpec, SetupSpec, check_grid, defaults_value, parse_grid, setup_value};
pub use setup::{FaultColumn, SetupRow, changes, topology_words};
use setup::{settings, struck};

/// The grid shipped with locksim, relative to the repository root.
pub const GRID_FILE: &str = "scenarios/matrix/grid.json";

/// One cell before it runs.
#[derive(Debug, Clone)]
pub enum Cell {
    /// The fault class does not apply to this setup (why, in a sentence).
    NotApplicable { reason: String },
    /// The generated scenario, validated, and its JSON text.
    Generated { scenario: Arc<Scenario>, json: String },
}

/// A loaded grid: rows, columns and every cell's generated scenario.
#[derive(Debug, Clone)]
pub struct Grid {
    /// The rows, in the grid's order.
    pub setups: Vec<SetupRow>,
    /// The columns, in the grid's order.
    pub faults: Vec<FaultColumn>,
    /// `cells[setup][fault]`.
    pub cells: Vec<Vec<Cell>>,
    /// Pairs of setups to compare, `(setup, against)` as indices into `setups`.
    pub comparisons: Vec<(usize, usize)>,
    /// Setups "Clients compared" lists, as indices into `setups`.
    pub clients_compared: Vec<usize>,
    /// Seeds a compared setup's cell goes on to when its first seeds show no safety
    /// violation (the grid's `defaults.holds_seeds`).
    pub holds_seeds: Option<u64>,
}

/// The file a cell's scenario is written to (and replayed from): `<dir>/<setup>--<fault>.json`.
pub fn cell_file(dir: &Path, setup: &str, fault: &str) -> PathBuf {
    dir.join(format!("{}.json", cell_name(setup, fault)))
}

/// A cell's scenario name.
pub fn cell_name(setup: &str, fault: &str) -> String {
    format!("{setup}--{fault}")
}

impl Grid {
    /// Reads a grid file, checks it, and generates every cell.
    pub fn load(file: &Path) -> Result<Grid, ScenarioError> {
        let text = std::fs::read_to_string(file).map_err(|e| ScenarioError {
            file: file.to_path_buf(),
            field: String::new(),
            reason: format!("cannot read: {e}"),
        })?;
        Grid::parse(file, &text)
    }

    /// Checks grid text and generates every cell; `file` names it in errors.
    pub fn parse(file: &Path, text: &str) -> Result<Grid, ScenarioError> {
        let error = |(field, reason): (String, String)| ScenarioError {
            file: file.to_path_buf(),
            field,
            reason,
        };
        let grid = parse_grid(text).map_err(error)?;
        check_grid(&grid).map_err(error)?;
        let mut setups = Vec::new();
        let mut cells = Vec::new();
        for (i, spec) in grid.setups.iter().enumerate() {
            let row = Row::new(file, &grid.defaults, spec)
                .map_err(|(field, reason)| error((format!("setups[{i}].{field}"), reason)))?;
            setups.push(SetupRow {
                name: spec.name.clone(),
                label: spec.label.clone(),
                description: spec.description.clone(),
                fenced: row.base.lock.options().fencing != Fencing::None,
                fencing: row.base.lock.options().fencing,
                topology: row.base.topology.kind,
                nodes: row.base.redis_names().len(),
                masters: row.base.master_names().len(),
                settings: settings(&setup_value(spec)),
            });
            let cells_of_row = grid
                .faults
                .iter()
                .enumerate()
                .map(|(f, fault)| row.generate(file, &grid.defaults, f, fault))
                .collect::<Result<Vec<Cell>, ScenarioError>>()?;
            cells.push(cells_of_row);
        }
        let faults = grid
            .faults
            .iter()
            .enumerate()
            .map(|(f, fault)| {
                let mut strikes: Vec<(String, String)> = Vec::new();
                for (setup, row) in setups.iter().zip(&cells) {
                    if let Cell::Generated { scenario, .. } = &row[f] {
                        let entry = (topology_words(setup), struck(scenario));
                        if !strikes.iter().any(|(topology, _)| *topology == entry.0) {
                            strikes.push(entry);
                        }
                    }
                }
                FaultColumn {
                    name: fault.name.clone(),
                    label: fault.label.clone(),
                    description: fault.description.clone(),
                    strikes,
                }
            })
            .collect();
        let position = |name: &str| grid.setups.iter().position(|s| s.name == name);
        for (i, [setup, against]) in grid.comparisons.iter().enumerate() {
            let found =
                |name| &setups[position(name).expect("check_grid made sure every compared setup exists")];
            let areas: Vec<String> = changes(found(against), found(setup))
                .into_iter()
                .map(|(path, _, _)| path.split('.').next().unwrap_or("").to_string())
                .fold(Vec::new(), |mut areas, area| {
                    if !areas.contains(&area) {
                        areas.push(area);
                    }
                    areas
                });
            if areas.len() != 1 {
                return Err(error((
                    format!("comparisons[{i}]"),
                    match areas.len() {
                        0 => "the two setups have the same settings: nothing to compare".to_string(),
                        _ => format!(
                            "`{setup}` and `{against}` differ in {}: a comparison changes one thing at a time \
                             (topology, lock, clients or network), so a difference has one cause",
                            areas.join(" and ")
                        ),
                    },
                )));
            }
        }
        let comparisons = grid
            .comparisons
            .iter()
            .map(|[setup, against]| {
                let found = |name| position(name).expect("check_grid made sure every compared setup exists");
                (found(setup), found(against))
            })
            .collect();
        let clients_compared = grid
            .clients_compared
            .iter()
            .map(|name| position(name).expect("check_grid made sure every compared client's setup exists"))
            .collect();
        Ok(Grid {
            setups,
            faults,
            cells,
            comparisons,
            clients_compared,
            holds_seeds: grid.defaults.holds_seeds,
        })
    }

    /// How many cells have a scenario (for a progress bar).
    pub fn applicable_cells(&self) -> u64 {
        self.cells
            .iter()
            .flatten()
            .filter(|cell| matches!(cell, Cell::Generated { .. }))
            .count() as u64
    }

    /// Writes each generated scenario to `<dir>/<setup>--<fault>.json`, where
    /// `locksim run` and `locksim replay` take it; returns the files written.
    pub fn write_scenarios(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut written = Vec::new();
        for (row, setup) in self.cells.iter().zip(&self.setups) {
            for (cell, fault) in row.iter().zip(&self.faults) {
                if let Cell::Generated { json, .. } = cell {
                    let file = cell_file(dir, &setup.name, &fault.name);
                    std::fs::write(&file, format!("{json}\n"))?;
                    written.push(file);
                }
            }
        }
        Ok(written)
    }
}

/// A setup being turned into its row of cells.
struct Row<'a> {
    spec: &'a SetupSpec,
    /// The setup on its own (defaults and its fields, no faults), validated: its node
    /// names and lock settings decide what its cells expand to and which faults apply.
    base: Scenario,
    /// Its `lock.ttl_ms`, which TTL-relative values are multiples of.
    ttl_ms: u64,
}

impl<'a> Row<'a> {
    /// Checks the setup with the grid's defaults; the error's field is relative to it.
    fn new(file: &Path, defaults: &Defaults, spec: &'a SetupSpec) -> Result<Row<'a>, (String, String)> {
        let ttl_ms = spec.lock.get("ttl_ms").and_then(Value::as_u64).ok_or_else(|| {
            (
                "lock.ttl_ms".to_string(),
                "missing, or not a whole number of ms".to_string(),
            )
        })?;
        let mut value = json!({ "name": spec.name });
        merge(&mut value, &defaults_value(defaults));
        merge(&mut value, &setup_value(spec));
        let text = expand(value, ttl_ms, &Nodes::default())?.to_string();
        let base = load_str(file, &text).map_err(|e| {
            let reason = without_position(&e.reason);
            (e.field, format!("{reason} (the setup with the grid's defaults)"))
        })?;
        Ok(Row { spec, base, ttl_ms })
    }

    /// The cell of this setup × `fault` (number `index` of the grid's fault classes): not
    /// applicable, or its scenario generated and validated.
    fn generate(
        &self,
        file: &Path,
        defaults: &Defaults,
        index: usize,
        fault: &FaultSpec,
    ) -> Result<Cell, ScenarioError> {
        let (setup, base) = (self.spec, &self.base);
        let kind = base.topology.kind;
        if !fault.applies_to.contains(&kind) {
            let kinds: Vec<&str> = fault.applies_to.iter().map(|&k| k.name()).collect();
            return Ok(Cell::NotApplicable {
                reason: format!(
                    "`{}` applies to {} topologies; `{}` is {}",
                    fault.name,
                    kinds.join(", "),
                    setup.name,
                    kind.name()
                ),
            });
        }
        if fault.needs_replicas && base.redis_groups().iter().all(|group| group.len() < 2) {
            return Ok(Cell::NotApplicable {
                reason: format!("`{}` needs replicas; `{}` has none", fault.name, setup.name),
            });
        }
        let mut value = json!({
            "name": cell_name(&setup.name, &fault.name),
            "description": format!("{} under {}. {}", setup.label, fault.label, fault.description).trim_end(),
        });
        merge(&mut value, &defaults_value(defaults));
        merge(&mut value, &Value::Object(fault.scenario.clone()));
        value["faults"] = Value::Array(fault.faults.clone());
        merge(&mut value, &setup_value(setup));
        let nodes = Nodes {
            redis: base.redis_names(),
            masters: base.master_names(),
        };
        // A fault's field is named where the grid holds it; any other field may come from
        // the defaults, the fault class or the setup, so it is named in the cell.
        let cell_error = |field: String, reason: &str| ScenarioError {
            file: file.to_path_buf(),
            field: match field.strip_prefix("faults[") {
                Some(rest) => format!("faults[{index}].faults[{rest}"),
                None => field,
            },
            reason: format!(
                "in the scenario generated for setup `{}` × fault class `{}`: {}",
                setup.name,
                fault.name,
                without_position(reason)
            ),
        };
        let value =
            expand(value, self.ttl_ms, &nodes).map_err(|(field, reason)| cell_error(field, &reason))?;
        let json = serde_json::to_string_pretty(&value).expect("a JSON value always serializes");
        let scenario = load_str(file, &json).map_err(|e| cell_error(e.field, &e.reason))?;
        Ok(Cell::Generated {
            scenario: Arc::new(scenario),
            json,
        })
    }
}

/// A reason without serde's " at line L column C": that position is in generated text,
/// not in the grid file.
fn without_position(reason: &str) -> &str {
    match reason.rsplit_once(" at line ") {
        Some((before, position))
            if position
                .split(" column ")
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            before
        }
        _ => reason,
    }
}
