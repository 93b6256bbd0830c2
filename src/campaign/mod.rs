//! Everything a report runs: the catalogue's sweeps, the safety matrix's cells, the
//! envelopes' points, each sweep's no-fault control, and the replays and shrinks of their
//! counterexamples.
//!
//! `campaign/` sits above `report/`: it runs simulations and hands `report/` plain
//! results ([`ScenarioReport`](crate::report::ScenarioReport), the matrix's cells, the
//! envelopes), which `report/` only renders. A sweep enters here once, and nothing in
//! `report/` runs a seed.

pub mod control;
pub mod envelopes;
pub mod matrix;
pub mod plan;
pub mod sweeps;
