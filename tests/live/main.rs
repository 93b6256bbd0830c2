//! Live mode in real time: workers, faults and failover on real processes, and the simulator
//! compared with them. Each test takes every test thread under nextest (.config/nextest.toml)
//! and `support::live::one_live_test_at_a_time` under `cargo test`, so none starves another of
//! CPU.
//!
//! One test binary for the group (each file a module), so a build links and compiles the
//! shared `support` module once for all of them, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod live;
mod live_failover;
mod live_faults;
mod live_libraries;
mod live_output;
mod real_vs_sim;
