//! The library workers shipped in examples/workers/ (pottery's Redlock, python-redis-lock,
//! node-redlock v5, redis-semaphore's Mutex), each run live on locksim's nodes with its
//! library's own code: a pause of the holder longer than the TTL breaks mutual exclusion;
//! with a fencing token on the resource (the worker's `INCR <key>:fence`) the resource
//! refuses the paused holder's stale write; with no fault the workers take turns and
//! nothing breaks. The three runs of a library go side by side on their own ports, a few
//! seconds each, one library at a time. The libraries are the pinned ones of tests/libraries/, installed when
//! missing (tests/support/libraries.rs).

mod support;

use std::path::{Path, PathBuf};

use locksim::check::check_all;
use locksim::client::Fencing;
use locksim::history::{EventKind, History};
use locksim::live::{self, LiveSetup};
use locksim::report::control::without_faults;
use locksim::scenario::{self, Scenario};

use support::cli::scratch;
use support::libraries::{node_libraries, python_libraries};

/// The scenario shipped beside worker `name`.
fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/workers/{name}/pause.json"))
}

fn run(scenario: &Scenario, file: &Path, dir: &Path, worker_env: &[(String, String)]) -> History {
    let setup = LiveSetup {
        scenario_file: file.to_path_buf(),
        default_worker: Vec::new(),
        redis_server: false,
        worker_env: worker_env.to_vec(),
        scratch: dir.join("runs"),
    };
    live::unsupported(scenario, &setup).unwrap();
    live::run(scenario, 0, &setup).unwrap()
}

fn violated(history: &History, scenario: &Scenario, checker: &str) -> bool {
    check_all(history, &scenario.check_settings())
        .into_iter()
        .any(|v| v.checker == checker && v.violation.is_some())
}

fn count(history: &History, matches: impl Fn(&EventKind) -> bool) -> usize {
    history.events.iter().filter(|e| matches(&e.kind)).count()
}

/// Held while a library's three runs go: twelve interpreters starting at once on a loaded
/// 2-core machine (load 9) took longer to import their libraries than a run lasts.
static ONE_LIBRARY_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs worker `name`'s scenario paused, fenced and without faults, side by side, and
/// checks each verdict.
fn breaks_under_a_pause_is_fenced_and_holds_without_it(name: &str, worker_env: Vec<(String, String)>) {
    let file = shipped(name);
    let paused = scenario::load(&file).unwrap();
    let mut fenced = paused.clone();
    fenced.lock.fencing = Some(Fencing::MasterIncr);
    // Long critical sections: the pause must catch the holder before its write.
    fenced.clients.work_ms = [250, 300];
    let calm = without_faults(&paused);
    let dir = scratch(name);
    let _one_library_at_a_time = ONE_LIBRARY_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let [paused_run, fenced_run, calm_run] = std::thread::scope(|scope| {
        [&paused, &fenced, &calm]
            .map(|scenario| scope.spawn(|| run(scenario, &file, &dir, &worker_env)))
            .map(|run| run.join().unwrap())
    });

    assert!(
        violated(&paused_run, &paused, "mutual_exclusion"),
        "{name}, paused: {:#?}",
        paused_run.events
    );

    assert!(
        violated(&fenced_run, &fenced, "mutual_exclusion"),
        "{name}, fenced: {:#?}",
        fenced_run.events
    );
    assert!(
        count(&fenced_run, |k| matches!(k, EventKind::ResourceRejected { .. })) >= 1,
        "{name}, fenced: no stale access refused: {:#?}",
        fenced_run.events
    );
    for checker in ["resource_safety", "stale_write"] {
        assert!(
            !violated(&fenced_run, &fenced, checker),
            "{name}, fenced: {checker}"
        );
    }

    let writes = count(&calm_run, |k| matches!(k, EventKind::ResourceWrite { .. }));
    assert!(writes >= 4, "{name}, no fault: only {writes} writes");
    let verdicts = check_all(&calm_run, &calm.check_settings());
    assert!(
        verdicts.iter().all(|v| v.violation.is_none()),
        "{name}, no fault: {verdicts:?}"
    );
}

fn python_path() -> Vec<(String, String)> {
    vec![("PYTHONPATH".into(), python_libraries().display().to_string())]
}

fn node_path() -> Vec<(String, String)> {
    vec![("NODE_PATH".into(), node_libraries().display().to_string())]
}

#[test]
fn pottery_redlock_worker() {
    breaks_under_a_pause_is_fenced_and_holds_without_it("pottery", python_path());
}

#[test]
fn python_redis_lock_worker() {
    breaks_under_a_pause_is_fenced_and_holds_without_it("python-redis-lock", python_path());
}

#[test]
fn node_redlock_worker() {
    breaks_under_a_pause_is_fenced_and_holds_without_it("node-redlock", node_path());
}

#[test]
fn redis_semaphore_mutex_worker() {
    breaks_under_a_pause_is_fenced_and_holds_without_it("redis-semaphore", node_path());
}
