//! Real lock libraries' own code, from PyPI and npm, against redis-server 7.0 and against the
//! fake node `locksim serve` runs: the same outcome from both, and the outcome a correct server
//! gives (issue 19's proof that the fake Redis is whole enough for the libraries users run).
//!
//! The libraries are pinned in tests/libraries/ (requirements.txt, package.json and its
//! lock) and installed into the target directory the first time, with pip and npm; a machine
//! without them fails here and says what is missing. The scripts print, per library, what it
//! did step by step (who holds, who is refused, what is left behind): timing-free facts.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::libraries::{LIBRARIES, node_libraries, python_libraries, run};
use support::{FakeServer, RedisServer};

/// What each library did against the server at `addr`, as the script printed it.
fn outcomes(
    interpreter: &str,
    script: &str,
    path_var: &str,
    path: &Path,
    addr: std::net::SocketAddr,
) -> serde_json::Value {
    let stdout = run(
        Command::new(interpreter)
            .arg(format!("{LIBRARIES}/{script}"))
            .arg(format!("redis://{addr}"))
            .env(path_var, path),
        &format!("{interpreter} {script} against {addr}"),
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{script} printed {stdout:?}: {e}"))
}

/// Every step of every library came out as a correct server makes it (all true, no error).
fn assert_all_succeeded(server: &str, outcomes: &serde_json::Value) {
    for (library, steps) in outcomes.as_object().unwrap() {
        for (step, result) in steps.as_object().unwrap() {
            assert_eq!(
                result,
                &serde_json::Value::Bool(true),
                "on {server}, {library}: {step} = {result}"
            );
        }
    }
}

fn same_outcomes(interpreter: &str, script: &str, path_var: &str, path: &Path) {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    let on_real = outcomes(interpreter, script, path_var, path, real.addr);
    assert_all_succeeded("redis-server", &on_real);
    let on_fake = outcomes(interpreter, script, path_var, path, fake.addr);
    assert_eq!(
        on_fake, on_real,
        "{script}: locksim serve (left) and redis-server (right) differ"
    );
}

#[test]
fn python_lock_libraries_behave_the_same_on_serve_and_redis_server() {
    let libraries = python_libraries();
    same_outcomes("python3", "py_locks.py", "PYTHONPATH", &libraries);
}

#[test]
fn node_lock_libraries_behave_the_same_on_serve_and_redis_server() {
    let libraries = node_libraries();
    same_outcomes("node", "node_locks.js", "NODE_PATH", &libraries);
}
