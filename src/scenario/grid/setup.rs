//! A row and a column of the matrix as the report needs them: what a setup sets, how two
//! setups differ, its topology in words, and which nodes a fault class strikes.

use serde_json::Value;

use crate::scenario::{Fencing, Scenario, Target, TopologyKind};

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
pub(super) fn settings(value: &Value) -> Vec<(String, String)> {
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
pub(super) fn struck(scenario: &Scenario) -> String {
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
