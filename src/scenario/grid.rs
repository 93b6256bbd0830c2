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

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Fencing, Scenario, ScenarioError, Target, TopologyKind, load_str};

/// The grid shipped with locksim, relative to the repository root.
pub const GRID_FILE: &str = "scenarios/matrix/grid.json";

/// A grid file as written: shared defaults, the rows and the columns.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GridFile {
    defaults: Defaults,
    setups: Vec<SetupSpec>,
    faults: Vec<FaultSpec>,
    /// Pairs of setups the report compares in sentences, each `[setup, against]` by name.
    #[serde(default)]
    comparisons: Vec<[String; 2]>,
    /// Setups the report's "Clients compared" lists side by side, by name.
    #[serde(default)]
    clients_compared: Vec<String>,
}

/// `defaults`: the fields every cell starts from, in the scenario-file format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    duration_ms: u64,
    seeds: u64,
    /// Seeds a cell of a compared setup goes on to when its first `seeds` show no safety
    /// violation, so a *holds* the comparisons state rests on enough of them.
    #[serde(default)]
    holds_seeds: Option<u64>,
    clients: Map<String, Value>,
    #[serde(default)]
    network: Option<Map<String, Value>>,
}

/// One row: a lock setup, its fields in the scenario-file format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetupSpec {
    name: String,
    label: String,
    #[serde(default)]
    description: String,
    topology: Map<String, Value>,
    lock: Map<String, Value>,
    #[serde(default)]
    clients: Option<Map<String, Value>>,
    #[serde(default)]
    network: Option<Map<String, Value>>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default)]
    seeds: Option<u64>,
}

/// One column: a class of faults, and the scenario fields it needs besides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultSpec {
    name: String,
    label: String,
    #[serde(default)]
    description: String,
    applies_to: Vec<TopologyKind>,
    #[serde(default)]
    needs_replicas: bool,
    faults: Vec<Value>,
    #[serde(default)]
    scenario: Map<String, Value>,
}

/// The scenario fields a fault class may set besides its faults; the rest belong to the
/// grid (name, seeds), the setup, or nobody (`expect`).
const FAULT_CLASS_FIELDS: [&str; 7] = [
    "duration_ms",
    "topology",
    "lock",
    "clients",
    "network",
    "clocks",
    "checks",
];

/// A row of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupRow {
    /// Short name, used in scenario and file names.
    pub name: String,
    /// What a table shows for the row.
    pub label: String,
    /// Anything the label leaves out (may be empty).
    pub description: String,
    /// Whether its lock hands out fencing tokens: where an overlap can be absorbed.
    pub fenced: bool,
    /// Where its tokens come from (`None` when it does not fence).
    pub fencing: Fencing,
    /// Its topology's kind, and how many Redis nodes and masters it has.
    pub topology: TopologyKind,
    pub nodes: usize,
    pub masters: usize,
    /// Every setting the row gives, as `field.path = value` (`topology.masters = 5`), in
    /// the grid's order: two rows compared differ in these and nothing else.
    pub settings: Vec<(String, String)>,
}

/// A column of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultColumn {
    /// Short name, used in scenario and file names.
    pub name: String,
    /// What a table shows for the column.
    pub label: String,
    /// What the faults do, and which published scenario they reproduce (the grid's words:
    /// what the seeds found is computed, never written here).
    pub description: String,
    /// Which Redis nodes its faults strike in each kind of setup it applies to, computed
    /// from the generated cells: `("Redlock, 5 masters", "3 of 5 masters")`, in the
    /// grid's row order, one entry per distinct topology.
    pub strikes: Vec<(String, String)>,
}

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

/// Parses grid JSON, returning the failing field's path and the reason.
fn parse_grid(text: &str) -> Result<GridFile, (String, String)> {
    let mut json = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let path = e.path().to_string();
        let reason = e.into_inner().to_string();
        // serde reports a missing field at its parent; name the field itself.
        match reason
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split_once('`'))
        {
            Some((name, location)) if path == "." => (name.to_string(), format!("missing{location}")),
            Some((name, location)) => (format!("{path}.{name}"), format!("missing{location}")),
            None => (path, reason),
        }
    })
}

/// The checks of the grid serde cannot express: names, labels, what a fault class sets.
fn check_grid(grid: &GridFile) -> Result<(), (String, String)> {
    let fail = |field: String, reason: &str| Err((field, reason.to_string()));
    if grid.defaults.seeds == 0 {
        return fail("defaults.seeds".into(), "must be at least 1");
    }
    if grid
        .defaults
        .holds_seeds
        .is_some_and(|more| more < grid.defaults.seeds)
    {
        return fail(
            "defaults.holds_seeds".into(),
            "must be at least `seeds`: a cell goes on to it from there",
        );
    }
    if grid.setups.is_empty() {
        return fail("setups".into(), "needs at least one setup");
    }
    if grid.faults.is_empty() {
        return fail("faults".into(), "needs at least one fault class");
    }
    let setups = grid.setups.iter().map(|s| (s.name.as_str(), s.label.as_str()));
    let faults = grid.faults.iter().map(|f| (f.name.as_str(), f.label.as_str()));
    for (list, entries) in [
        ("setups", setups.collect::<Vec<_>>()),
        ("faults", faults.collect()),
    ] {
        for (i, (name, label)) in entries.iter().enumerate() {
            check_name(name).map_err(|reason| (format!("{list}[{i}].name"), reason))?;
            if label.trim().is_empty() {
                return fail(format!("{list}[{i}].label"), "must not be empty");
            }
            if entries[..i].iter().any(|(earlier, _)| earlier == name) {
                return fail(format!("{list}[{i}].name"), &format!("`{name}` is used twice"));
            }
        }
    }
    for (i, fault) in grid.faults.iter().enumerate() {
        if fault.applies_to.is_empty() {
            return fail(format!("faults[{i}].applies_to"), "names no topology");
        }
        for key in fault.scenario.keys() {
            let reason = match key.as_str() {
                "expect" => {
                    "a cell's verdict is whatever its seeds show: generated scenarios expect nothing".into()
                }
                "faults" => "goes in the fault class's own `faults`".into(),
                key if FAULT_CLASS_FIELDS.contains(&key) => continue,
                _ => format!(
                    "not a field a fault class sets (it may set {})",
                    FAULT_CLASS_FIELDS.join(", ")
                ),
            };
            return fail(format!("faults[{i}].scenario.{key}"), &reason);
        }
    }
    for (i, pair) in grid.comparisons.iter().enumerate() {
        for (j, name) in pair.iter().enumerate() {
            if !grid.setups.iter().any(|s| &s.name == name) {
                return fail(
                    format!("comparisons[{i}][{j}]"),
                    &format!("`{name}` is not a setup's name"),
                );
            }
        }
        if pair[0] == pair[1] {
            return fail(format!("comparisons[{i}]"), "compares a setup with itself");
        }
    }
    for (i, name) in grid.clients_compared.iter().enumerate() {
        if !grid.setups.iter().any(|s| &s.name == name) {
            return fail(
                format!("clients_compared[{i}]"),
                &format!("`{name}` is not a setup's name"),
            );
        }
    }
    Ok(())
}

/// A row or column name goes into file names: letters, digits, `-` and `_`, no `--`
/// (which separates setup from fault).
fn check_name(name: &str) -> Result<(), String> {
    let usable = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(usable) || name.contains("--") {
        return Err(format!(
            "`{name}`: use letters, digits, `-` and `_` (no `--`): it names files"
        ));
    }
    Ok(())
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

/// The defaults as scenario fields.
fn defaults_value(defaults: &Defaults) -> Value {
    let mut value = json!({
        "duration_ms": defaults.duration_ms,
        "seeds": defaults.seeds,
        "clients": defaults.clients,
    });
    if let Some(network) = &defaults.network {
        value["network"] = Value::Object(network.clone());
    }
    value
}

/// The setup's scenario fields (its name and label are the grid's business).
fn setup_value(setup: &SetupSpec) -> Value {
    let mut value = json!({ "topology": setup.topology, "lock": setup.lock });
    let optional = [
        ("clients", setup.clients.clone().map(Value::Object)),
        ("network", setup.network.clone().map(Value::Object)),
        ("duration_ms", setup.duration_ms.map(Value::from)),
        ("seeds", setup.seeds.map(Value::from)),
    ];
    for (field, given) in optional {
        if let Some(given) = given {
            value[field] = given;
        }
    }
    value
}

/// Where `to` differs from `from`: each setting's path, its value in `from` and in `to`
/// (`-` where one of them leaves it unset), in `from`'s order, then `to`'s.
pub fn changes(from: &SetupRow, to: &SetupRow) -> Vec<(String, String, String)> {
    let value = |row: &SetupRow, path: &str| {
        row.settings
            .iter()
            .find(|(p, _)| p == path)
            .map_or("-".to_string(), |(_, v)| v.trim_matches('"').to_string())
    };
    let mut paths: Vec<&str> = Vec::new();
    for (path, _) in from.settings.iter().chain(&to.settings) {
        if !paths.contains(&path.as_str()) {
            paths.push(path);
        }
    }
    paths
        .into_iter()
        .map(|path| (path.to_string(), value(from, path), value(to, path)))
        .filter(|(_, a, b)| a != b)
        .collect()
}

/// A setup's fields as `path = value` pairs, objects walked field by field.
fn settings(value: &Value) -> Vec<(String, String)> {
    fn walk(value: &Value, path: &str, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(fields) => {
                for (key, value) in fields {
                    let path = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(value, &path, out);
                }
            }
            other => out.push((path.to_string(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    walk(value, "", &mut out);
    out
}

/// Merges `over` into `base`: objects field by field, anything else replaced.
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

/// The node names a cell's `@` shorthands stand for.
#[derive(Debug, Default)]
struct Nodes {
    redis: Vec<String>,
    masters: Vec<String>,
}

impl Nodes {
    /// The names a list element stands for, if it is a shorthand.
    fn shorthand(&self, element: &Value) -> Option<&[String]> {
        match element.as_str()? {
            "@redis" => Some(&self.redis),
            "@masters" => Some(&self.masters),
            "@one-master" => self.masters.get(..1),
            _ => None,
        }
    }
}

/// Expands the shorthands of a cell: TTL-relative values and node lists. The error names
/// the field (a dotted path) and why.
fn expand(value: Value, ttl_ms: u64, nodes: &Nodes) -> Result<Value, (String, String)> {
    fn walk(value: Value, path: &str, ttl_ms: u64, nodes: &Nodes) -> Result<Value, (String, String)> {
        let child = |name: &str| match path {
            "" => name.to_string(),
            _ => format!("{path}.{name}"),
        };
        match value {
            Value::Object(fields) => fields
                .into_iter()
                .map(|(key, value)| match key.as_str() {
                    // Free text is never a value.
                    "name" | "description" => Ok((key, value)),
                    _ => Ok((key.clone(), walk(value, &child(&key), ttl_ms, nodes)?)),
                })
                .collect::<Result<Map<String, Value>, _>>()
                .map(Value::Object),
            Value::Array(elements) => {
                let mut expanded = Vec::with_capacity(elements.len());
                for (i, element) in elements.into_iter().enumerate() {
                    match nodes.shorthand(&element) {
                        Some(names) if !names.is_empty() => {
                            expanded.extend(names.iter().cloned().map(Value::String));
                        }
                        _ => expanded.push(walk(element, &format!("{path}[{i}]"), ttl_ms, nodes)?),
                    }
                }
                Ok(Value::Array(expanded))
            }
            // A shorthand where one value goes (a fault's `target`): one name, or the list.
            Value::String(_) if nodes.shorthand(&value).is_some_and(|names| !names.is_empty()) => {
                match nodes.shorthand(&value).unwrap_or_default() {
                    [one] => Ok(Value::String(one.clone())),
                    names => Ok(Value::from(names.to_vec())),
                }
            }
            Value::String(text) if text.contains("ttl") => {
                ttl_multiple(&text, ttl_ms).map(Value::from).ok_or_else(|| {
                    (
                        path.to_string(),
                        format!(
                            "`{text}` is not a TTL-relative duration: write \"ttl\" or \"K*ttl\" (\"2*ttl\")"
                        ),
                    )
                })
            }
            other => Ok(other),
        }
    }
    walk(value, "", ttl_ms, nodes)
}

/// `"ttl"` or `"K*ttl"` (K a decimal, possibly negative) as whole ms; `None` for anything
/// else.
fn ttl_multiple(text: &str, ttl_ms: u64) -> Option<i64> {
    let factor = match text.trim() {
        "ttl" => 1.0,
        other => {
            let (factor, unit) = other.split_once('*')?;
            if unit.trim() != "ttl" {
                return None;
            }
            factor.trim().parse::<f64>().ok().filter(|f| f.is_finite())?
        }
    };
    Some((factor * ttl_ms as f64).round() as i64)
}

/// A setup's topology in words: "single node", "master + 1 replica", "Redlock, 5 masters".
pub fn topology_words(setup: &SetupRow) -> String {
    match setup.topology {
        TopologyKind::Single => "single node".to_string(),
        TopologyKind::Replicated => match setup.nodes - setup.masters {
            1 => "master + 1 replica".to_string(),
            replicas => format!("master + {replicas} replicas"),
        },
        TopologyKind::Redlock if setup.masters == 1 => "Redlock, 1 master".to_string(),
        TopologyKind::Redlock => format!("Redlock, {} masters", setup.masters),
    }
}

/// Which Redis nodes a cell's faults strike, in words: "the master", "3 of 5 masters",
/// "1 of 3 nodes, drawn"; "clients and the network" where no fault targets a node.
fn struck(scenario: &Scenario) -> String {
    let (nodes, masters) = (scenario.redis_names(), scenario.master_names());
    let mut words: Vec<String> = Vec::new();
    for fault in &scenario.faults {
        let said = match &fault.target {
            Some(Target::Master | Target::Majority | Target::Minority) if masters.len() == 1 => {
                "the master".to_string()
            }
            Some(Target::Master) => "the master".to_string(),
            Some(Target::Majority) => format!("{} of {} masters", masters.len() / 2 + 1, masters.len()),
            Some(Target::Minority) => format!(
                "{} of {} masters",
                ((masters.len() - 1) / 2).max(1),
                masters.len()
            ),
            Some(Target::AnyRedis) => format!("1 of {} nodes, drawn", nodes.len()),
            Some(Target::Nodes(names)) => {
                let hit = names.iter().filter(|name| nodes.contains(name)).count();
                match hit {
                    0 => continue,
                    _ => format!("{hit} of {} nodes", nodes.len()),
                }
            }
            Some(Target::Holder) if fault.action.kind() == "crash" => "the holder's process".to_string(),
            _ => continue,
        };
        if !words.contains(&said) {
            words.push(said);
        }
    }
    match words.is_empty() {
        true => "no Redis node (clients, the network)".to_string(),
        false => words.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{FaultAction, Target};

    fn shipped() -> Grid {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(GRID_FILE);
        Grid::load(&file).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A one-setup, one-fault grid; `setup` and `fault` are JSON objects.
    fn grid(setup: &str, fault: &str) -> String {
        format!(
            r#"{{
              "defaults": {{ "duration_ms": 20000, "seeds": 4, "clients": {{ "count": 3, "work_ms": [100, 500] }} }},
              "setups": [ {setup} ],
              "faults": [ {fault} ]
            }}"#
        )
    }

    const SINGLE: &str = r#"{ "name": "single", "label": "one node",
        "topology": { "kind": "single" }, "lock": { "algorithm": "lua-release", "ttl_ms": 1500 } }"#;

    const PAUSE: &str = r#"{ "name": "pause", "label": "pause", "applies_to": ["single", "redlock"],
        "faults": [ { "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": "2*ttl" } ] }"#;

    fn error_of(text: &str) -> ScenarioError {
        Grid::parse(Path::new("grid.json"), text).expect_err("the grid should be rejected")
    }

    fn scenario_of(matrix: &Grid, setup: usize, fault: usize) -> &Scenario {
        match &matrix.cells[setup][fault] {
            Cell::Generated { scenario, .. } => scenario,
            Cell::NotApplicable { reason } => panic!("not applicable: {reason}"),
        }
    }

    #[test]
    fn every_applicable_cell_of_the_shipped_grid_is_a_valid_scenario() {
        let matrix = shipped();
        assert_eq!(matrix.cells.len(), matrix.setups.len());
        for (s, row) in matrix.cells.iter().enumerate() {
            assert_eq!(row.len(), matrix.faults.len());
            for (f, cell) in row.iter().enumerate() {
                if let Cell::Generated { scenario, json } = cell {
                    let name = cell_name(&matrix.setups[s].name, &matrix.faults[f].name);
                    assert_eq!(scenario.name, name);
                    assert!(scenario.expect.entries().is_empty(), "{name} expects something");
                    assert!(!json.contains("ttl\""), "{name} kept a TTL shorthand");
                    assert!(!json.contains("\"@"), "{name} kept a node shorthand");
                    load_str(Path::new(&name), json).unwrap_or_else(|e| panic!("{e}"));
                }
            }
        }
        assert!(matrix.applicable_cells() > 100, "{}", matrix.applicable_cells());
    }

    #[test]
    fn failover_before_replication_applies_only_where_there_are_replicas() {
        let matrix = shipped();
        let failover = matrix.faults.iter().position(|f| f.name == "failover").unwrap();
        for (setup, row) in matrix.setups.iter().zip(&matrix.cells) {
            let replicated = setup.name.starts_with("replicated") || setup.name == "redisson";
            match &row[failover] {
                Cell::Generated { .. } => assert!(replicated, "{} has no replicas", setup.name),
                Cell::NotApplicable { reason } => {
                    assert!(!replicated, "{}: {reason}", setup.name);
                    assert!(reason.contains(&setup.name), "{reason}");
                }
            }
        }
    }

    #[test]
    fn the_shipped_comparisons_change_one_thing_each() {
        let matrix = shipped();
        let pairs: Vec<(&str, &str)> = matrix
            .comparisons
            .iter()
            .map(|&(a, b)| (matrix.setups[a].name.as_str(), matrix.setups[b].name.as_str()))
            .collect();
        let changed = |&(a, b): &(usize, usize)| -> Vec<String> {
            changes(&matrix.setups[b], &matrix.setups[a])
                .into_iter()
                .map(|(path, _, _)| path)
                .collect()
        };
        // Topology with the client held: Redlock's client on 1 master against 5.
        let redlock = matrix.comparisons.iter().find(|&&(a, b)| {
            (matrix.setups[a].name.as_str(), matrix.setups[b].name.as_str()) == ("redlock-5", "redlock-1")
        });
        assert_eq!(
            redlock.map(changed),
            Some(vec!["topology.masters".to_string()]),
            "{pairs:?}"
        );
        // The validity check alone, and fencing none / INCR on the master / a counter.
        for (a, b, path) in [
            ("lua-release-validity", "lua-release", "lock.validity_check"),
            ("replicated-fencing-incr", "replicated", "lock.fencing"),
            ("replicated-fencing", "replicated", "lock.fencing"),
        ] {
            let pair = matrix
                .comparisons
                .iter()
                .find(|&&(x, y)| (matrix.setups[x].name.as_str(), matrix.setups[y].name.as_str()) == (a, b))
                .unwrap_or_else(|| panic!("{a} against {b} missing: {pairs:?}"));
            assert_eq!(changed(pair), [path.to_string()]);
        }
        for &(a, b) in &matrix.comparisons {
            let (setup, against) = (&matrix.setups[a], &matrix.setups[b]);
            if setup.fenced != against.fenced {
                assert!(setup.fenced, "the fenced setup comes first: {pairs:?}");
            }
        }
    }

    #[test]
    fn a_comparison_that_changes_two_things_is_refused() {
        let mut grid: Value = serde_json::from_str(&grid(SINGLE, PAUSE)).unwrap();
        let other = json!({ "name": "other", "label": "other", "topology": { "kind": "redlock", "masters": 3 },
                            "lock": { "algorithm": "redlock", "ttl_ms": 2000 } });
        grid["setups"].as_array_mut().unwrap().push(other);
        grid["comparisons"] = json!([["other", "single"]]);
        let error = error_of(&grid.to_string());
        assert_eq!(error.field, "comparisons[0]");
        assert!(
            error.reason.contains("differ in lock and topology"),
            "{}",
            error.reason
        );
    }

    #[test]
    fn the_shipped_fencing_rows_are_marked_fenced() {
        let matrix = shipped();
        for setup in &matrix.setups {
            assert_eq!(setup.fenced, setup.name.contains("fencing"), "{}", setup.name);
        }
    }

    #[test]
    fn one_master_is_the_first_master_of_any_topology() {
        let one = r#"{ "name": "one", "label": "one master restarts", "applies_to": ["single", "redlock"],
            "faults": [ { "kind": "crash", "target": "@one-master", "at_ms": 5000, "restart_after_ms": "0.05*ttl" },
                        { "kind": "partition", "groups": [["@one-master"], ["client-1"]], "at_ms": 6000 } ] }"#;
        let redlock = r#"{ "name": "rl", "label": "Redlock", "topology": { "kind": "redlock", "masters": 5 },
            "lock": { "algorithm": "redlock", "ttl_ms": 1000 } }"#;
        let text = grid(&format!("{SINGLE}, {redlock}"), one);
        let matrix = Grid::parse(Path::new("grid.json"), &text).unwrap_or_else(|e| panic!("{e}"));
        for setup in [0, 1] {
            let cell = scenario_of(&matrix, setup, 0);
            assert_eq!(
                cell.faults[0].target,
                Some(Target::Nodes(vec!["redis-1".into()])),
                "one name, not a list"
            );
            let FaultAction::Partition { groups, .. } = &cell.faults[1].action else {
                panic!("{:?}", cell.faults[1]);
            };
            assert_eq!(groups[0], ["redis-1"], "one of the masters in a list");
        }
    }

    #[test]
    fn ttl_relative_values_and_node_lists_are_expanded() {
        let partition = r#"{ "name": "cut", "label": "cut", "applies_to": ["redlock"],
            "faults": [ { "kind": "partition", "groups": [["@masters"], ["client-1"]], "at_ms": 5000, "duration_ms": "ttl" },
                        { "kind": "clock_jump", "target": ["@redis"], "at_ms": 5000, "by_ms": "-0.5*ttl" } ],
            "scenario": { "clients": { "write_delay_ms": ["1.25 * ttl", "1.5*ttl"] } } }"#;
        let redlock = r#"{ "name": "rl", "label": "Redlock", "topology": { "kind": "redlock", "masters": 3, "replicas": 1 },
            "lock": { "algorithm": "redlock", "ttl_ms": 1000 } }"#;
        let text = grid(&format!("{SINGLE}, {redlock}"), &format!("{PAUSE}, {partition}"));
        let matrix = Grid::parse(Path::new("grid.json"), &text).unwrap_or_else(|e| panic!("{e}"));
        let paused = scenario_of(&matrix, 0, 0);
        assert_eq!(paused.faults[0].action, FaultAction::Pause { duration_ms: 3000 });
        assert_eq!(paused.seeds, 4, "the defaults' seeds");
        let cut = scenario_of(&matrix, 1, 1);
        let FaultAction::Partition {
            groups, duration_ms, ..
        } = &cut.faults[0].action
        else {
            panic!("{:?}", cut.faults[0]);
        };
        assert_eq!(groups[0], ["redis-1", "redis-2", "redis-3"]);
        assert_eq!(*duration_ms, Some(1000));
        assert_eq!(cut.faults[1].action, FaultAction::ClockJump { by_ms: -500 });
        let Some(Target::Nodes(every)) = &cut.faults[1].target else {
            panic!("{:?}", cut.faults[1].target);
        };
        assert_eq!(every.len(), 6, "three masters and their replicas: {every:?}");
        assert_eq!(cut.clients.write_delay_ms, Some([1250, 1500]));
        assert!(
            matches!(&matrix.cells[0][1], Cell::NotApplicable { reason } if reason.contains("redlock")),
            "the partition class applies to Redlock only"
        );
    }

    #[test]
    fn the_setup_wins_over_the_fault_class_and_the_defaults() {
        let long_work = r#"{ "name": "long", "label": "long work", "topology": { "kind": "single" },
            "lock": { "algorithm": "lua-release", "ttl_ms": 2000, "node_timeout_ms": 300 },
            "clients": { "work_ms": ["ttl", "2*ttl"] }, "seeds": 7 }"#;
        let slow = r#"{ "name": "slow", "label": "slow", "applies_to": ["single"], "faults": [],
            "scenario": { "lock": { "node_timeout_ms": 9000 }, "clients": { "work_ms": [1, 2], "think_ms": [5, 5] } } }"#;
        let matrix =
            Grid::parse(Path::new("grid.json"), &grid(long_work, slow)).unwrap_or_else(|e| panic!("{e}"));
        let cell = scenario_of(&matrix, 0, 0);
        assert_eq!(cell.clients.work_ms, [2000, 4000]);
        assert_eq!(
            cell.clients.think_ms,
            [5, 5],
            "what the setup leaves open, the fault class sets"
        );
        assert_eq!(cell.clients.count, 3, "the defaults");
        assert_eq!(cell.lock.options().request_timeout_ms, 300);
        assert_eq!(cell.seeds, 7);
    }

    #[test]
    fn an_unknown_field_is_named_with_the_file() {
        let text =
            grid(SINGLE, PAUSE).replace(r#""label": "one node","#, r#""label": "one node", "lable": "x","#);
        let e = error_of(&text);
        assert_eq!(e.field, "setups[0].lable");
        assert!(e.reason.contains("unknown field"), "{e}");
        assert!(
            e.to_string().starts_with("grid.json: field `setups[0].lable`"),
            "{e}"
        );
        let e = error_of(&grid(SINGLE, PAUSE).replace(r#""defaults""#, r#""extra": 1, "defaults""#));
        assert_eq!(e.field, "extra");
        let e = error_of(&grid(
            SINGLE,
            &PAUSE.replace(r#""applies_to""#, r#""applies": 1, "applies_to""#),
        ));
        assert_eq!(e.field, "faults[0].applies");
    }

    #[test]
    fn an_unknown_setup_algorithm_is_named() {
        let e = error_of(&grid(&SINGLE.replace("lua-release", "lua-relase"), PAUSE));
        assert_eq!(e.field, "setups[0].lock.algorithm");
        assert!(e.reason.contains("lua-relase"), "{e}");
        let e = error_of(&grid(
            &SINGLE.replace(r#""ttl_ms": 1500"#, r#""ttl_ms": "2s""#),
            PAUSE,
        ));
        assert_eq!(e.field, "setups[0].lock.ttl_ms");
    }

    #[test]
    fn bad_grids_are_errors_naming_the_field() {
        let cases = [
            (
                grid(SINGLE, &PAUSE.replace(r#""single", "redlock""#, r#""ring""#)),
                "faults[0].applies_to[0]",
            ),
            (
                grid(
                    SINGLE,
                    &PAUSE.replace(r#""applies_to": ["single", "redlock"]"#, r#""applies_to": []"#),
                ),
                "faults[0].applies_to",
            ),
            (
                grid(
                    SINGLE,
                    &PAUSE.replace(r#""faults": ["#, r#""scenario": { "expect": {} }, "faults": ["#),
                ),
                "faults[0].scenario.expect",
            ),
            (
                grid(
                    SINGLE,
                    &PAUSE.replace(r#""faults": ["#, r#""scenario": { "seeds": 3 }, "faults": ["#),
                ),
                "faults[0].scenario.seeds",
            ),
            (grid(&format!("{SINGLE}, {SINGLE}"), PAUSE), "setups[1].name"),
            (
                grid(
                    &SINGLE.replace(r#""single", "label""#, r#""one node", "label""#),
                    PAUSE,
                ),
                "setups[0].name",
            ),
            (
                grid(SINGLE, &PAUSE.replace(r#""label": "pause""#, r#""label": " ""#)),
                "faults[0].label",
            ),
            (
                grid(&SINGLE.replace(r#", "ttl_ms": 1500"#, ""), PAUSE),
                "setups[0].lock.ttl_ms",
            ),
            (
                grid(SINGLE, PAUSE).replace(r#""seeds": 4"#, r#""seeds": 0"#),
                "defaults.seeds",
            ),
            (
                grid(SINGLE, PAUSE).replace(r#""seeds": 4,"#, ""),
                "defaults.seeds",
            ),
            (
                grid(SINGLE, PAUSE).replace(
                    r#""defaults""#,
                    r#""comparisons": [["single", "redlock"]], "defaults""#,
                ),
                "comparisons[0][1]",
            ),
            (
                grid(SINGLE, PAUSE).replace(
                    r#""defaults""#,
                    r#""comparisons": [["single", "single"]], "defaults""#,
                ),
                "comparisons[0]",
            ),
            (
                grid(SINGLE, PAUSE).replace(
                    r#""defaults""#,
                    r#""clients_compared": ["single", "redisson"], "defaults""#,
                ),
                "clients_compared[1]",
            ),
        ];
        for (text, field) in cases {
            assert_eq!(error_of(&text).field, field, "{text}");
        }
    }

    #[test]
    fn a_cell_that_does_not_validate_names_its_setup_and_fault() {
        let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""2*ttl""#, r#""0*ttl""#)));
        assert_eq!(e.field, "faults[0].faults[0].duration_ms");
        assert!(e.reason.contains("setup `single` × fault class `pause`"), "{e}");
        assert!(
            e.reason.contains("0 is out of range: must be 1..=3600000 ms"),
            "{e}"
        );
        let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""2*ttl""#, r#""2x ttl""#)));
        assert_eq!(e.field, "faults[0].faults[0].duration_ms");
        let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""2*ttl""#, r#""twice the ttl""#)));
        assert!(e.reason.contains("K*ttl"), "{e}");
        let backwards = r#""scenario": { "clients": { "write_delay_ms": [500, 100] } }, "faults""#;
        let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""faults""#, backwards)));
        assert_eq!(e.field, "clients.write_delay_ms", "a field of the merged cell");
        assert!(e.reason.contains("fault class `pause`"), "{e}");
    }

    #[test]
    fn positions_in_generated_text_are_left_out() {
        let e = error_of(&grid(&SINGLE.replace("lua-release", "lua-relase"), PAUSE));
        assert!(!e.reason.contains("at line"), "{e}");
        assert_eq!(without_position("missing at line 1 column 91"), "missing");
        assert_eq!(without_position("stays at line 4"), "stays");
        assert_eq!(without_position("at line one"), "at line one");
    }

    #[test]
    fn ttl_multiples_round_to_whole_ms() {
        assert_eq!(ttl_multiple("ttl", 2000), Some(2000));
        assert_eq!(ttl_multiple("0.333*ttl", 1000), Some(333));
        assert_eq!(ttl_multiple(" -1 * ttl ", 750), Some(-750));
        assert_eq!(ttl_multiple("2*ttls", 2000), None);
        assert_eq!(ttl_multiple("ttl*2", 2000), None);
        assert_eq!(ttl_multiple("inf*ttl", 2000), None);
    }

    #[test]
    fn written_scenarios_load_back_as_generated() {
        let dir = std::env::temp_dir().join(format!("locksim-matrix-{}", std::process::id()));
        let matrix = Grid::parse(Path::new("grid.json"), &grid(SINGLE, PAUSE)).unwrap();
        let written = matrix.write_scenarios(&dir).unwrap();
        assert_eq!(written, [dir.join("single--pause.json")]);
        let loaded = crate::scenario::load(&written[0]).unwrap();
        assert_eq!(loaded.faults, scenario_of(&matrix, 0, 0).faults);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
