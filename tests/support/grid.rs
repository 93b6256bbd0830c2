//! The shipped matrix grid (scenarios/matrix/grid.json) cut down for a test: only the
//! named setups and fault classes, and only the comparisons and compared clients among
//! the setups kept.

use locksim::scenario::grid::GRID_FILE;
use serde_json::Value;

/// The shipped grid with only `setups` and `faults` (each must exist there).
pub fn shipped_grid_subset(setups: &[&str], faults: &[&str]) -> Value {
    let mut grid: Value = serde_json::from_str(&std::fs::read_to_string(GRID_FILE).unwrap()).unwrap();
    let keep = |list: &mut Value, names: &[&str]| {
        let entries = list.as_array_mut().unwrap();
        entries.retain(|entry| names.contains(&entry["name"].as_str().unwrap()));
        assert_eq!(
            entries.len(),
            names.len(),
            "the shipped grid lacks one of {names:?}"
        );
    };
    keep(&mut grid["setups"], setups);
    keep(&mut grid["faults"], faults);
    if let Some(clients) = grid["clients_compared"].as_array_mut() {
        clients.retain(|name| setups.contains(&name.as_str().unwrap()));
    }
    if let Some(pairs) = grid["comparisons"].as_array_mut() {
        pairs.retain(|pair| {
            pair.as_array()
                .unwrap()
                .iter()
                .all(|name| setups.contains(&name.as_str().unwrap()))
        });
    }
    grid
}
