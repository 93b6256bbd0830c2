//! The threads seeds run on: each thread that runs seeds hands them to a long-lived thread
//! of its own, which runs them one after another (issue 33). What a thread keeps between
//! seeds is then made once, not once a seed: the nodes' Lua interpreters
//! (`redis::lua_pool`, ~700,000 instructions each to make), the allocator's heap for the
//! thread, and the thread itself.
//!
//! Why a reused thread runs a seed as a new one would (the same digest: tested here and by
//! `tests/sim/determinism.rs`, which runs seeds in other orders and on other thread counts):
//! every seed makes its own madsim runtime, with its own RNG, clock, network and tasks;
//! the interpreters kept are reset to what a new one is (`redis::lua_pool`); and the one
//! thing madsim seeds per thread rather than per runtime, std's `HashMap` keys (its
//! `init_std_random_state` works on a thread's first runtime only), reaches no decision:
//! madsim's own std-hashed maps (its simulators by type, its nodes, DNS records, files)
//! are only looked up, or walked to count or to tell every simulator the same thing; its
//! network's maps use a fixed hasher; locksim's run-time maps are `BTreeMap`s or use a
//! fixed hasher.
//!
//! A run that panics, or outlives its wall-clock budget, gives its thread up: a panic may
//! have left thread-local state half-made, and a hung run cannot be stopped (its thread is
//! left behind, and ends when the run does). The next seed gets a new thread.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

/// A seed's work, sent to the thread that runs it.
type Job = Box<dyn FnOnce() + Send>;

/// A long-lived thread running the jobs sent to it, in order; it ends when its sender is
/// dropped.
struct SeedThread {
    jobs: mpsc::Sender<Job>,
}

impl SeedThread {
    fn start() -> Result<Self, String> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("seeds".into())
            .spawn(move || {
                for job in queue {
                    job();
                }
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        Ok(SeedThread { jobs })
    }
}

thread_local! {
    /// The seed thread of the thread that is asking, between its seeds.
    static OWN: RefCell<Option<SeedThread>> = const { RefCell::new(None) };
}

/// Runs `work` (seed `seed`'s run) on the calling thread's seed thread, within `limit` of
/// host time: its result, the message of its panic, or a message saying it ran out of time.
pub(crate) fn run_on_seed_thread<T: Send + 'static>(
    seed: u64,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let thread = match OWN.with(|own| own.borrow_mut().take()) {
        Some(thread) => thread,
        None => SeedThread::start()?,
    };
    let (done, result) = mpsc::channel();
    let job: Job = Box::new(move || {
        let _ = done.send(catch_unwind(AssertUnwindSafe(work)));
    });
    thread
        .jobs
        .send(job)
        .map_err(|_| format!("seed {seed}: its thread has ended"))?;
    match result.recv_timeout(limit) {
        Ok(Ok(value)) => {
            OWN.with(|own| *own.borrow_mut() = Some(thread));
            Ok(value)
        }
        Ok(Err(panic)) => Err(panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the run panicked".to_string())),
        Err(_) => Err(format!(
            "the run did not finish within {} s of host time (budget.wall_s)",
            limit.as_secs_f64()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_id() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[test]
    fn seeds_asked_for_by_one_thread_run_on_one_other_thread() {
        let first = run_on_seed_thread(1, Duration::from_secs(60), thread_id).unwrap();
        let second = run_on_seed_thread(2, Duration::from_secs(60), thread_id).unwrap();
        assert_eq!(first, second);
        assert_ne!(first, thread_id());
    }

    #[test]
    fn a_panicking_run_is_an_error_with_its_message_and_the_next_seed_gets_a_new_thread() {
        let before = run_on_seed_thread(6, Duration::from_secs(60), thread_id).unwrap();
        let outcome: Result<(), String> =
            run_on_seed_thread(7, Duration::from_secs(60), || panic!("boom at seed 7"));
        assert_eq!(outcome, Err("boom at seed 7".to_string()));
        let after = run_on_seed_thread(8, Duration::from_secs(60), thread_id).unwrap();
        assert_ne!(before, after);
    }

    #[test]
    fn a_hung_run_is_reported_and_left_behind() {
        let outcome = run_on_seed_thread(8, Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_millis(500));
        });
        let message = outcome.unwrap_err();
        assert!(message.contains("did not finish within 0.02 s"), "{message}");
        let next = run_on_seed_thread(9, Duration::from_secs(60), || 9).unwrap();
        assert_eq!(next, 9);
    }
}
