//! Running the `locksim` binary from a test, and a scratch directory for what it writes.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

/// Runs the `locksim` binary this test was built with.
pub fn locksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(args)
        .output()
        .expect("locksim runs")
}

/// An empty scratch directory named after the test binary, this process, a count of the
/// directories it made before, and `name`: two tests of one binary (under `cargo test`, threads
/// of one process) never share one, though both ask for the same name.
pub fn scratch(name: &str) -> PathBuf {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "locksim-{}-{}-{}-{name}",
        env!("CARGO_CRATE_NAME"),
        std::process::id(),
        MADE.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A JSON value without its host-time fields (`wall_ms`), the one thing that may differ.
pub fn without_wall_time(value: Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .filter(|(key, _)| key != "wall_ms")
                .map(|(key, value)| (key, without_wall_time(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_wall_time).collect()),
        other => other,
    }
}
