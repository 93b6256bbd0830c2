//! The minimal counterexample of a fault class on a kind of deployment, as the report shows
//! it: the cell it was shrunk from, the shrunk run, what the shrink kept. `campaign::minimal`
//! picks the cells and shrinks them; this is only the result.

use serde_json::{Value, json};

use super::counterexample::Counterexample;
use crate::scenario::TopologyKind;

/// The minimal counterexample of a fault class on a kind of deployment.
#[derive(Debug, Clone)]
pub struct Minimal {
    /// The fault class's name and label.
    pub fault: String,
    pub fault_label: String,
    /// The kind of deployment it runs on: with the class, what it is the counterexample of.
    pub topology: TopologyKind,
    /// The setup whose cell was shrunk.
    pub setup_label: String,
    /// The checker it was shrunk toward.
    pub checker: String,
    /// The cell's scenario file and seed it was shrunk from.
    pub from_file: String,
    pub from_seed: u64,
    /// The shrunk run: what broke, its story, its replay (from the shrunk file).
    pub example: Counterexample,
    /// What each pass of the shrink changed.
    pub shrink_steps: Vec<String>,
    /// Of seeds 0–19, how many the shrunk schedule violates.
    pub neighbours: (u64, u64),
    /// What the cell's violation rested on, kept by the shrink, in words.
    pub mechanism: String,
    /// Simulated runs the shrink spent.
    pub runs: u64,
    /// The shrunk scenario, as its file is written.
    pub scenario: Value,
}

impl Minimal {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        json!({
            "fault": self.fault,
            "fault_label": self.fault_label,
            "topology": self.topology.name(),
            "setup": self.setup_label,
            "checker": self.checker,
            "shrunk_from": {"file": self.from_file, "seed": self.from_seed},
            "shrink": self.shrink_steps,
            "mechanism": self.mechanism,
            "violating_neighbours": {"violating": self.neighbours.0, "seeds": self.neighbours.1},
            "shrink_runs": self.runs,
            "counterexample": self.example.to_json(),
        })
    }
}
