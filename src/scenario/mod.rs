//! Scenario files: what to simulate, how often, and what the user expects to see.
//!
//! A scenario is JSON, read with serde. Every struct rejects unknown fields, so a typo is
//! an error instead of a silently ignored setting. [`load`] adds the checks serde cannot
//! express (ranges, names of nodes) and words every failure as "file: field: reason".

mod aims;
mod fault;
pub mod grid;
pub mod limits;
mod load;
mod schema;

pub use fault::*;
pub use load::{ScenarioError, load, load_paths, load_str};
pub use schema::*;
