//! locksim: tells whether a Redis lock is safe, by running the real lock client against a
//! fake Redis cluster whose clocks, network and processes it controls, under seeded,
//! deterministic schedules.
//!
//! The data path, one module each:
//! [`scenario`] → [`schedule`] (when and whom faults strike) → [`world`] (clocks,
//! network, faults) → [`redis`] / [`client`] →
//! [`history`] → [`check`] → [`report`]; [`sweep`] runs many seeds of a scenario;
//! [`search`] shrinks a violating run to its minimal story; [`live`] runs a scenario in
//! real time on real processes and ends in the same history.
//!
//! To use locksim from a test of your own, start at [`api`]: the rest is its insides.
//!
//! Those insides are documented for the people who work on them, private items included
//! (`make doc`, which fails on a broken link): a module's doc names the private parts it
//! is made of, and those links resolve there.
#![allow(rustdoc::private_intra_doc_links)]

#[cfg(not(madsim))]
compile_error!(
    "locksim is a simulation and must be built with `--cfg madsim`. .cargo/config.toml sets it \
     for cargo commands run inside the repository, but a RUSTFLAGS environment variable replaces that \
     setting (unset RUSTFLAGS, use `make`, or add `--cfg madsim` to it), and `cargo install` \
     or `--manifest-path` from elsewhere never reads it: install with \
     RUSTFLAGS=\"--cfg madsim\" cargo install --locked --git <repository> (or --path <checkout>)."
);

pub mod api;
pub mod campaign;
pub mod check;
pub mod client;
pub mod clock_model;
pub mod history;
pub mod live;
pub mod platform;
pub mod real;
pub mod redis;
pub mod report;
pub mod scenario;
pub mod schedule;
pub mod search;
mod seed_thread;
pub mod sweep;
mod woken;
pub mod world;
