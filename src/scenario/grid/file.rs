//! The grid file as written (`defaults`, `setups`, `faults`, `comparisons`): its serde
//! types, the checks serde cannot express, and each part as scenario fields.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::scenario::TopologyKind;

/// A grid file as written: shared defaults, the rows and the columns.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GridFile {
    pub(super) defaults: Defaults,
    pub(super) setups: Vec<SetupSpec>,
    pub(super) faults: Vec<FaultSpec>,
    /// Pairs of setups the report compares in sentences, each `[setup, against]` by name.
    #[serde(default)]
    pub(super) comparisons: Vec<[String; 2]>,
    /// Setups the report's "Clients compared" lists side by side, by name.
    #[serde(default)]
    pub(super) clients_compared: Vec<String>,
}

/// `defaults`: the fields every cell starts from, in the scenario-file format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Defaults {
    pub(super) duration_ms: u64,
    pub(super) seeds: u64,
    /// Seeds a cell of a compared setup goes on to when its first `seeds` show no safety
    /// violation, so a *holds* the comparisons state rests on enough of them.
    #[serde(default)]
    pub(super) holds_seeds: Option<u64>,
    pub(super) clients: Map<String, Value>,
    #[serde(default)]
    pub(super) network: Option<Map<String, Value>>,
}

/// One row: a lock setup, its fields in the scenario-file format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SetupSpec {
    pub(super) name: String,
    pub(super) label: String,
    #[serde(default)]
    pub(super) description: String,
    pub(super) topology: Map<String, Value>,
    pub(super) lock: Map<String, Value>,
    #[serde(default)]
    pub(super) clients: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) network: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) duration_ms: Option<u64>,
    #[serde(default)]
    pub(super) seeds: Option<u64>,
}

/// One column: a class of faults, and the scenario fields it needs besides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FaultSpec {
    pub(super) name: String,
    pub(super) label: String,
    #[serde(default)]
    pub(super) description: String,
    pub(super) applies_to: Vec<TopologyKind>,
    #[serde(default)]
    pub(super) needs_replicas: bool,
    pub(super) faults: Vec<Value>,
    #[serde(default)]
    pub(super) scenario: Map<String, Value>,
}

/// The scenario fields a fault class may set besides its faults; the rest belong to the
/// grid (name, seeds), the setup, or nobody (`expect`).
pub(super) const FAULT_CLASS_FIELDS: [&str; 7] = [
    "duration_ms",
    "topology",
    "lock",
    "clients",
    "network",
    "clocks",
    "checks",
];

/// Parses grid JSON, returning the failing field's path and the reason.
pub(super) fn parse_grid(text: &str) -> Result<GridFile, (String, String)> {
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
pub(super) fn check_grid(grid: &GridFile) -> Result<(), (String, String)> {
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
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let usable = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(usable) || name.contains("--") {
        return Err(format!(
            "`{name}`: use letters, digits, `-` and `_` (no `--`): it names files"
        ));
    }
    Ok(())
}

/// The defaults as scenario fields.
pub(super) fn defaults_value(defaults: &Defaults) -> Value {
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
pub(super) fn setup_value(setup: &SetupSpec) -> Value {
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
