//! Scenario files: what to simulate, how often, and what the user expects to see.
//!
//! A scenario is JSON, read with serde. Every struct rejects unknown fields, so a typo is
//! an error instead of a silently ignored setting. [`load`](fn@load) adds the checks serde cannot
//! express (ranges, names of nodes) and words every failure as "file: field: reason".
//!
//! The rooms: `schema` (the file's top level), `topology` (the Redis deployment), `nodes`
//! (the names of every node and how each is set up), `lock_spec` (the lock's settings), `fault`, `fault_kinds` (with the nemesis) and
//! `target` (faults, the list of their kinds, the random ones, and whom they hit), `limits` (ranges and durations), `load` (reading and wording
//! errors), `json_schema` and `schema_forms` (the JSON Schema of the files, generated from
//! these types), `validate` (the checks serde cannot express), `grid` and `aims` (scenarios
//! generated from a grid, and what each is meant to show), `starter` (the files `locksim
//! init` writes for a user's setup).

mod aims;
mod fault;
mod fault_kinds;
pub mod grid;
mod json_schema;
pub mod limits;
mod load;
mod lock_spec;
mod nodes;
mod schema;
mod schema_forms;
pub mod starter;
mod target;
#[cfg(test)]
mod testing;
mod topology;
mod validate;

pub use fault::*;
pub use json_schema::{SchemaKind, field_paths, json_schema, json_schema_text};
pub use load::{Loaded, ScenarioError, load, load_each, load_paths, load_str};
pub use lock_spec::*;
pub use schema::*;
pub use target::*;
pub use topology::*;
