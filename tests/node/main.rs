//! The fake Redis node, alone and against a real redis-server 7.0 (each test starts its own, on
//! a free port): commands, scripting, replication, persistence, `locksim serve`.
//!
//! One test binary for the group (each file a module), so a build links and compiles the
//! shared `support` module once for all of them, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod redis_auth;
mod redis_clients;
mod redis_command;
mod redis_differential;
mod redis_fuzz;
mod redis_persistence;
mod redis_propagation;
mod redis_pubsub;
mod redis_replication;
mod redis_script_cache;
mod redis_scripting;
mod redis_serve;
mod redis_server_commands;
mod redis_sets_sort_streams;
mod redis_sync;
mod redis_transactions;
mod script_busy;
