//! The lock client and `locksim lock` on real TCP against real redis-server processes, and the
//! lock libraries from PyPI and npm against them.
//!
//! One test binary for the group (each file a module), so a build links and compiles the
//! shared `support` module once for all of them, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod real_extend;
mod real_libraries;
mod real_lock_cli;
mod real_lock_process;
mod real_redis;
mod real_redlock;
