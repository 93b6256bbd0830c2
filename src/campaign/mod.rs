//! Everything a report runs: the catalogue's sweeps, the safety matrix's cells, the
//! envelopes' points, each sweep's no-fault control, and the replays and shrinks of their
//! counterexamples.
//!
//! `campaign/` sits above `report/`: it runs simulations and hands `report/` plain
//! results ([`ScenarioReport`](crate::report::ScenarioReport), the matrix's cells, the
//! envelopes), which `report/` only renders. A sweep enters here once, and nothing in
//! `report/` runs a seed.

pub mod cache;
pub mod control;
pub mod counterexamples;
pub mod envelopes;
pub mod matrix;
pub mod minimal;
pub mod plan;
pub mod resume;
pub mod starter;
pub mod sweeps;
pub mod unmet;

/// Writes a generated scenario to `file` as people write them (pretty JSON, a final
/// newline), so `locksim replay` runs it; an error names the file.
pub fn write_scenario(file: &std::path::Path, scenario: &serde_json::Value) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(scenario).map_err(std::io::Error::other)? + "\n";
    std::fs::write(file, text).map_err(|e| std::io::Error::other(format!("{}: {e}", file.display())))
}
