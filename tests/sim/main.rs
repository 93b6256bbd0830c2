//! Simulated runs: the world, the lock client inside it, the faults, the checkers, and the
//! sweeps, shrinking and search built on them.
//!
//! One test binary for the group (each file a module), so a build links and compiles the
//! shared `support` module once for all of them, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod catalog;
mod check;
mod client_ladder;
mod client_profiles;
mod client_redlock;
mod client_world;
mod composition;
mod control;
mod coverage;
mod determinism;
mod failover_demotion;
mod faults;
mod matrix;
mod min_replicas;
mod properties;
mod sentinel;
mod shrink;
mod sim_network;
mod story;
mod trace;
mod world_topology;
