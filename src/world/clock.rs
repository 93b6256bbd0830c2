//! Per-node clocks layered on madsim's single virtual clock.
//!
//! madsim has one global time ("true time"). Each node here reads its own clock instead:
//! `monotonic = anchor_mono + rate · (true − anchor_true)` and `wall = monotonic + shift`,
//! where the rate carries the node's drift and the shift its offset and any jumps. A jump
//! moves the wall clock only (as settimeofday does); a rate change re-anchors both. Every
//! change bumps an epoch so that sleepers re-plan their wake-up in true time.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::events;
pub use crate::clock_model::{ClockLog, ClockModel, EPOCH_NS};
use crate::platform::Clock;

const NS_PER_MS: u64 = 1_000_000;

/// True time of the running simulation, in ns.
pub fn true_now_ns() -> u64 {
    madsim::time::elapsed().as_nanos() as u64
}

/// A node's clock inside a simulated run. Clones share the clock, so the fault injector
/// can jump or skew the clock the node reads.
#[derive(Debug, Clone)]
pub struct SimClock {
    /// The model now, and every one before it (what the run's history keeps).
    log: Arc<Mutex<ClockLog>>,
    /// Bumped at every step or re-rate, to wake the sleepers; `None` for a fixed clock.
    epoch: Option<Arc<Epoch>>,
    /// A fixed clock's one model, read without taking the log's lock at every reading
    /// (issue 33); `None` for a clock that faults may change.
    fixed: Option<ClockModel>,
}

impl SimClock {
    /// A clock that faults may step and re-rate.
    pub fn new(model: ClockModel) -> Self {
        SimClock {
            log: Arc::new(Mutex::new(ClockLog::new(model))),
            epoch: Some(Arc::default()),
            fixed: None,
        }
    }

    /// A clock that keeps its offset and rate for the whole run (no fault of the scenario
    /// touches clocks): its sleepers wait on their timer alone, without also listening
    /// for steps, which cost about 5% of a seed for nothing.
    pub fn fixed(model: ClockModel) -> Self {
        SimClock {
            log: Arc::new(Mutex::new(ClockLog::new(model))),
            epoch: None,
            fixed: Some(model),
        }
    }

    fn model(&self) -> ClockModel {
        match self.fixed {
            Some(model) => model,
            None => self.log.lock().expect("clock lock poisoned").current(),
        }
    }

    /// Every model this clock has run on so far, for the run's history.
    pub fn log(&self) -> ClockLog {
        self.log.lock().expect("clock lock poisoned").clone()
    }

    fn change(&self, f: impl FnOnce(&mut ClockModel)) {
        let epoch = self
            .epoch
            .as_ref()
            .expect("a clock fault reached a clock built fixed (FaultAction::moves_clocks missed it)");
        let mut log = self.log.lock().expect("clock lock poisoned");
        let mut model = log.current();
        f(&mut model);
        log.change(true_now_ns(), model);
        drop(log);
        epoch.count.fetch_add(1, Ordering::SeqCst);
        epoch.steps.notify_waiters();
    }

    /// Listens for steps of this clock (never fires for a fixed one).
    fn steps(&self) -> Steps {
        Steps {
            seen: self
                .epoch
                .as_ref()
                .map_or(0, |epoch| epoch.count.load(Ordering::SeqCst)),
            epoch: self.epoch.clone(),
        }
    }

    /// The wall reading in µs relative to the run's epoch (what the trace shows).
    pub fn local_us(&self) -> i64 {
        self.model().local_us(true_now_ns())
    }

    /// The wall reading in µs relative to the run's epoch at an earlier true time
    /// `true_ns` (this run's), on the model in force then.
    pub fn local_us_at(&self, true_ns: u64) -> i64 {
        let log = self.log.lock().expect("clock lock poisoned");
        log.local_us(true_ns / 1000)
            .expect("a clock's log starts with its first model")
    }

    /// Steps the wall clock (an NTP step, an operator's `date -s`).
    pub fn jump_ms(&self, by_ms: i64) {
        self.change(|m| m.jump(by_ms * NS_PER_MS as i64));
    }

    /// The current drift rate.
    pub fn rate_ppm(&self) -> i64 {
        self.model().rate_ppm()
    }

    /// Changes the drift rate from now on.
    pub fn set_rate_ppm(&self, rate_ppm: i64) {
        self.change(|m| m.set_rate(true_now_ns(), rate_ppm));
    }

    /// Sleeps until the monotonic clock reads `deadline_ns`, planning again whenever the
    /// clock is stepped or re-rated. Borrows the clock (as the trait's sleeps do): a clone
    /// per sleep cost two shared counts up and down for nothing (issue 33).
    fn sleep_until_monotonic_ns(&self, deadline_ns: u64) -> impl Future<Output = ()> + Send + '_ {
        let clock = self;
        async move {
            let mut steps = clock.steps();
            loop {
                let now = true_now_ns();
                let wake = clock.model().true_ns_for_monotonic(deadline_ns);
                if wake <= now {
                    return;
                }
                if clock.epoch.is_none() {
                    // A fixed clock is never stepped: the timer alone, without a race.
                    madsim::time::sleep(Duration::from_nanos(wake - now)).await;
                    events::timer();
                    continue;
                }
                tokio::select! {
                    biased;
                    () = steps.next() => {}
                    () = madsim::time::sleep(Duration::from_nanos(wake - now)) => events::timer(),
                }
            }
        }
    }
}

impl Clock for SimClock {
    fn wall_ms(&self) -> u64 {
        (self.model().wall_ns(true_now_ns()).max(0) as u64) / NS_PER_MS
    }

    fn monotonic_ms(&self) -> u64 {
        self.model().monotonic_ns(true_now_ns()) / NS_PER_MS
    }

    fn sleep_until_monotonic(&self, deadline_ms: u64) -> impl Future<Output = ()> + Send {
        self.sleep_until_monotonic_ns(deadline_ms * NS_PER_MS)
    }

    /// Sleeps `ms` from this very instant, not from the whole millisecond the clock reads
    /// (the default): that made every sleep end on one millisecond grid shared by every
    /// process whose clock runs true, so different clients' retries and timeouts fell due
    /// at the same instant and the timer heap's tie order chose between them (issue 33:
    /// `profile-node-redlock-slow-minority`'s stall rate moved with that order). A
    /// `setTimeout(f, ms)` or a `time.Sleep` counts from the call, to well under a ms.
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        let now_ns = self.model().monotonic_ns(true_now_ns());
        self.sleep_until_monotonic_ns(now_ns.saturating_add(ms.saturating_mul(NS_PER_MS)))
    }

    /// Sleeps straight to the tick the clock model predicts, instead of waking at every
    /// tick, and plans again whenever the clock is stepped or re-rated.
    fn sleep_until_wall_on_grid(
        &self,
        wall_ms: u64,
        first_tick_ms: u64,
        period_ms: u64,
    ) -> impl Future<Output = u64> + Send {
        let clock = self.clone();
        async move {
            let mut steps = clock.steps();
            let wall_ns = wall_ms as i128 * NS_PER_MS as i128;
            let mut tick = first_tick_ms;
            loop {
                let model = clock.model();
                let now = true_now_ns();
                // A tick already due fires at once, as a late cron does (a paused node).
                if model.true_ns_for_monotonic(tick * NS_PER_MS) <= now {
                    if clock.wall_ms() >= wall_ms {
                        return tick;
                    }
                    tick += period_ms;
                    continue;
                }
                let due = model.first_tick_at_wall(wall_ns, tick, period_ms);
                let wake = model.true_ns_for_monotonic(due * NS_PER_MS);
                tokio::select! {
                    biased;
                    () = steps.next() => {
                        // Ticks before the step found nothing due: plan from the next one.
                        let (model, now) = (clock.model(), true_now_ns());
                        while model.true_ns_for_monotonic(tick * NS_PER_MS) < now {
                            tick += period_ms;
                        }
                    }
                    () = madsim::time::sleep(Duration::from_nanos(wake - now)) => {
                        events::timer();
                        if clock.wall_ms() >= wall_ms {
                            return due;
                        }
                        tick = due + period_ms;
                    }
                }
            }
        }
    }
}

/// How many times a clock was stepped or re-rated, and the sleepers to wake when it is.
///
/// Not a `tokio::sync::watch`: tokio's watch registers each waiter on one of eight lists
/// chosen by a thread RNG seeded from a process-wide counter, and wakes the lists in
/// order, so the order in which a clock step woke a node's sleepers depended on how many
/// seeds the process had run before (seed 86 of `replicated-swarm-nemesis` gave three
/// different digests). `Notify` wakes its waiters in the order they came.
#[derive(Debug, Default)]
struct Epoch {
    count: AtomicU64,
    steps: Notify,
}

/// A subscription to a clock's steps.
struct Steps {
    epoch: Option<Arc<Epoch>>,
    /// The step count last seen.
    seen: u64,
}

impl Steps {
    /// Returns at the clock's next step or re-rate; a fixed clock's never comes.
    async fn next(&mut self) {
        let Some(epoch) = &self.epoch else {
            return std::future::pending().await;
        };
        loop {
            // Listen before looking, so that a step between the two is not missed.
            let stepped = epoch.steps.notified();
            tokio::pin!(stepped);
            stepped.as_mut().enable();
            let count = epoch.count.load(Ordering::SeqCst);
            if count != self.seen {
                self.seen = count;
                return;
            }
            stepped.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_wall_deadline_on_a_grid_is_met_at_the_tick_a_cron_would_meet_it() {
        let (tick, elapsed) = simulate(|| async {
            let clock = SimClock::new(ClockModel::new(0, 0));
            let jumper = clock.clone();
            madsim::task::spawn(async move {
                madsim::time::sleep(Duration::from_millis(1_050)).await;
                jumper.jump_ms(5_000); // wall reads 6.05 s at 1.05 s
            });
            let deadline_ms = (EPOCH_NS / NS_PER_MS as i64) as u64 + 6_000;
            let tick = clock.sleep_until_wall_on_grid(deadline_ms, 100, 100).await;
            (tick, true_now_ns())
        });
        // Without the jump the deadline would be met at 6 s; the step makes the next tick do.
        assert_eq!(tick, 1_100);
        assert_near(elapsed, 1_100 * NS_PER_MS);
    }

    /// madsim's `Sleep` cannot cancel a timer; unpatched, every pending poll pushed one more
    /// onto the heap, and a sleep raced against a busy stream (a request against its
    /// timeout, madsim's TCP reader against its latency) filled the heap with duplicates
    /// that all fired. Patched (patches/madsim, issue 33), it adds one per waker.
    #[test]
    fn a_sleep_polled_again_and_again_wakes_its_task_once() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::{Context, Wake, Waker};

        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let wakes = Arc::new(Count(AtomicUsize::new(0)));
        let (elapsed, woken) = simulate(|| {
            let wakes = wakes.clone();
            async move {
                let waker = Waker::from(wakes.clone());
                let mut sleep = std::pin::pin!(madsim::time::sleep(Duration::from_millis(100)));
                for _ in 0..5 {
                    let pending = sleep.as_mut().poll(&mut Context::from_waker(&waker));
                    assert!(pending.is_pending());
                }
                madsim::time::sleep(Duration::from_millis(200)).await;
                (sleep.is_elapsed(), wakes.0.load(Ordering::SeqCst))
            }
        });
        assert!(elapsed);
        assert_eq!(woken, 1, "five polls with one waker put five timers on the heap");
    }

    /// madsim charges a few ns of virtual time per poll; a sleep ends within a µs of its target.
    fn assert_near(elapsed_ns: u64, expected_ns: u64) {
        assert!(
            elapsed_ns.abs_diff(expected_ns) < 1_000,
            "woke at {elapsed_ns} ns, expected {expected_ns} ns"
        );
    }

    /// Runs `f` inside a fresh simulation and returns its result.
    fn simulate<F: Future>(f: impl FnOnce() -> F) -> F::Output {
        madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(f())
    }

    /// A sleep counts from the instant it starts: one begun 0.6 ms into a millisecond
    /// lasts its whole 10 ms (it ended 0.6 ms early, on the millisecond grid, before).
    #[test]
    fn a_sleep_begun_mid_millisecond_lasts_its_whole_length() {
        let elapsed = simulate(|| async {
            let clock = SimClock::new(ClockModel::new(0, 0));
            madsim::time::sleep(Duration::from_micros(600)).await;
            let started = true_now_ns();
            clock.sleep_ms(10).await;
            true_now_ns() - started
        });
        assert_near(elapsed, 10 * NS_PER_MS);
    }

    #[test]
    fn sleeping_on_a_fast_clock_takes_less_true_time() {
        let elapsed = simulate(|| async {
            let clock = SimClock::new(ClockModel::new(0, 1_000_000));
            clock.sleep_ms(1000).await;
            true_now_ns()
        });
        assert_near(elapsed, S / 2);
    }

    #[test]
    fn a_sleeper_replans_when_the_rate_changes() {
        let elapsed = simulate(|| async {
            let clock = SimClock::new(ClockModel::new(0, 0));
            let skewer = clock.clone();
            madsim::task::spawn(async move {
                madsim::time::sleep(Duration::from_secs(2)).await;
                skewer.set_rate_ppm(1_000_000); // 2× from t = 2 s: 10 s of clock by t = 6 s
            });
            clock.sleep_ms(10_000).await;
            true_now_ns()
        });
        assert_near(elapsed, 6 * S);
    }

    #[test]
    fn jumps_change_wall_but_not_monotonic_sleeps() {
        let (wall_ms, elapsed) = simulate(|| async {
            let clock = SimClock::new(ClockModel::new(0, 0));
            let jumper = clock.clone();
            madsim::task::spawn(async move {
                madsim::time::sleep(Duration::from_secs(1)).await;
                jumper.jump_ms(5_000);
            });
            clock.sleep_ms(3_000).await;
            (clock.wall_ms(), true_now_ns())
        });
        assert_near(elapsed, 3 * S);
        assert_eq!(wall_ms as i64, (EPOCH_NS + 8 * S as i64) / NS_PER_MS as i64);
    }
}
