//! Live runs from a test: a scenario file written from JSON, run live (on locksim's nodes
//! or real redis-server, `locksim worker` unless the scenario names its own command), its
//! control without the faults, and the checkers' verdicts on the history.

use std::path::{Path, PathBuf};

use locksim::check::{Verdict, check_all};
use locksim::history::{EventKind, History};
use locksim::live::{self, LiveSetup};
use locksim::scenario::{self, Scenario};
use serde_json::Value;

/// Live tests run in real time on a 2-core machine: run side by side, their workers and
/// nodes starve each other of CPU and a pause or lease is measured late. Each live test holds
/// this for its whole run, so one runs at a time in the `live` binary under `cargo test` (a
/// failed test poisons nothing); `cargo nextest` runs each alone anyway
/// (.config/nextest.toml).
pub fn one_live_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes the scenario `fields` (a JSON object) as `dir/name.json`, named `name`, with one
/// seed unless `fields` says otherwise.
pub fn scenario_file(dir: &Path, name: &str, mut fields: Value) -> PathBuf {
    fields["name"] = name.into();
    if fields.get("seeds").is_none() {
        fields["seeds"] = 1.into();
    }
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, serde_json::to_string_pretty(&fields).unwrap()).unwrap();
    file
}

/// JSON text of the test's own (a fault list, say) as a value to put in a scenario.
pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Where and how a test runs its scenarios live: scratch directory, kind of node, and
/// what the workers' environment gets besides live mode's own variables.
pub struct Live {
    dir: PathBuf,
    redis_server: bool,
    worker_env: Vec<(String, String)>,
}

impl Live {
    /// Live runs in `dir`, on real redis-server when `redis_server`, else on locksim's nodes.
    pub fn new(dir: &Path, redis_server: bool) -> Live {
        Live {
            dir: dir.to_path_buf(),
            redis_server,
            worker_env: Vec::new(),
        }
    }

    /// The same, with `worker_env` added to every worker's environment.
    pub fn with_worker_env(mut self, worker_env: Vec<(String, String)>) -> Live {
        self.worker_env = worker_env;
        self
    }

    /// What `live::run` needs for the scenario read from `file` (a worker command in it is
    /// run from that file's folder; else `locksim worker`).
    pub fn setup(&self, file: &Path) -> LiveSetup {
        LiveSetup {
            scenario_file: file.to_path_buf(),
            default_worker: vec![env!("CARGO_BIN_EXE_locksim").to_string(), "worker".into()],
            redis_server: self.redis_server,
            worker_env: self.worker_env.clone(),
            scratch: self.dir.join("runs"),
        }
    }

    /// Runs `scenario` (as read from `file`, maybe changed since) live, seed 0.
    pub fn run(&self, scenario: &Scenario, file: &Path) -> History {
        let setup = self.setup(file);
        live::unsupported(scenario, &setup).unwrap();
        live::run(scenario, 0, &setup).unwrap()
    }

    /// Runs the scenario in `file` live.
    pub fn run_file(&self, file: &Path) -> History {
        self.run(&scenario::load(file).unwrap(), file)
    }

    /// Runs the scenario in `file` live without its faults (the control that the faults
    /// caused a violation); the scenario run, and its history.
    pub fn run_without_faults(&self, file: &Path) -> (Scenario, History) {
        let calm = scenario::load(file).unwrap().without_faults();
        let history = self.run(&calm, file);
        (calm, history)
    }
}

/// The checkers' verdicts that found a violation in `history` of `scenario`.
pub fn violations(history: &History, scenario: &Scenario) -> Vec<Verdict> {
    check_all(history, &scenario.check_settings())
        .into_iter()
        .filter(|v| v.violation.is_some())
        .collect()
}

/// Whether `checker` found a violation in `history` of `scenario`.
pub fn violated(history: &History, scenario: &Scenario, checker: &str) -> bool {
    violations(history, scenario).iter().any(|v| v.checker == checker)
}

/// Fails the test, showing the history, unless `checker` found a violation in `history`
/// of the scenario in `file`.
pub fn assert_violated(history: &History, file: &Path, checker: &str) {
    let scenario = scenario::load(file).unwrap();
    assert!(
        violated(history, &scenario, checker),
        "{checker} held: {:#?}",
        history.events
    );
}

/// Fails the test, showing the history, unless `checker` held in `history` of the scenario
/// in `file`.
pub fn assert_held(history: &History, file: &Path, checker: &str) {
    let scenario = scenario::load(file).unwrap();
    assert!(
        !violated(history, &scenario, checker),
        "{checker} violated: {:#?}",
        history.events
    );
}

/// How many events of `history` are of a kind `matches` accepts.
pub fn count(history: &History, matches: impl Fn(&EventKind) -> bool) -> usize {
    history.events.iter().filter(|e| matches(&e.kind)).count()
}

/// When the first event of a kind `matches` accepts happened (true µs); `what` names it
/// in the panic when there is none.
pub fn first_us(history: &History, what: &str, matches: impl Fn(&EventKind) -> bool) -> u64 {
    let first = history.events.iter().find(|e| matches(&e.kind));
    first
        .unwrap_or_else(|| panic!("no {what} in {:#?}", history.events))
        .true_us
}
