//! One request sent to every master at once, decided the way the client's library decides
//! it ([`Resolve`]): once every master answered (or timed out), or as soon as a quorum voted.
//!
//! A request still out when its fan-out is decided is dropped: the client goes on without
//! its answer, as node-redlock's `_attemptOperation` resolves its promise and leaves the
//! other calls running. What the request had written still reaches its master and is
//! applied there; the late reply is not read, and the next request to that master opens a
//! new connection (`conn.rs`), as after any abandoned request (ioredis would keep the
//! connection and read the reply before the next one's).
//!
//! Deterministic by construction: the requests are polled in the masters' order, and the
//! decision is taken after each pass (no `select!`, no draw). Every request is polled at
//! least once, so each goes on the wire before the fan-out can be decided without it, and
//! with [`Resolve::AllNodes`] this is exactly a `join_all`.
//!
//! A pass polls only the requests whose own waker fired since they were last polled
//! ([`SlotWaker`]): polling all of them at every wake-up polled each master's request at
//! every other master's reply, ~9 polls a request with five masters (issue 33). A request
//! moves only when something wakes it (its socket, its timer, a clock step), so skipping
//! the others changes no outcome; a request woken during the pass, behind the one being
//! polled, is still polled in this pass, as before.
//!
//! The wakers are the client's ([`FanOutWakers`], one set a lock, kept from one fan-out
//! to the next): master `i`'s request is polled under the same waker each time, so the
//! connection's timeout keeps its own waker (`woken.rs`) and nothing is allocated a
//! fan-out (issue 33). A wake left behind by an earlier fan-out's request (a timer madsim
//! cannot cancel) marks master `i`'s slot, whose next request is then polled once for
//! nothing, as a connection's timeout already is.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::options::Resolve;

/// How one master voted on a fanned-out request.
pub(crate) enum Vote<T> {
    /// It answered (or failed): `T`.
    Answered(T),
    /// The request was still under way when the fan-out was decided.
    Pending,
    /// The fan-out did not send it this request.
    Skipped,
}

impl<T> Vote<T> {
    /// The answer, if it came in time.
    pub(crate) fn answer(&self) -> Option<&T> {
        match self {
            Vote::Answered(answer) => Some(answer),
            Vote::Pending | Vote::Skipped => None,
        }
    }
}

/// Runs `requests` (one per master; `None` for a master not asked) at once and returns
/// each master's vote once `resolve` decides the fan-out: `granted` says which answers are
/// a yes, and a quorum is a majority of all the masters. `report` hears each answer as it
/// comes in (`Some`), and each master the fan-out was decided without (`None`), whose
/// request is then dropped.
pub(crate) async fn fan_out<T, F: Future<Output = T>>(
    wakers: &FanOutWakers,
    requests: Vec<Option<F>>,
    resolve: Resolve,
    granted: impl Fn(&T) -> bool,
    report: impl Fn(usize, Option<&T>),
) -> Vec<Vote<T>> {
    let quorum = requests.len() / 2 + 1;
    let asked = requests.iter().filter(|request| request.is_some()).count();
    // The requests stay where the caller built them, in `under_way`'s buffer: a box per
    // request cost an allocation and a copy of each (large) request future (issue 33).
    let mut under_way = requests;
    let mut votes: Vec<Vote<T>> = under_way
        .iter()
        .map(|request| match request {
            Some(_) => Vote::Pending,
            None => Vote::Skipped,
        })
        .collect();
    // One request alone has nothing to be told apart from: it is polled at every wake-up.
    let slot_wakers = (asked > 1).then(|| wakers.for_requests(under_way.len()));
    std::future::poll_fn(|cx| {
        if let Some(slot_wakers) = &slot_wakers {
            slot_wakers.task_polled_by(cx.waker());
        }
        for (i, (slot, vote)) in under_way.iter_mut().zip(votes.iter_mut()).enumerate() {
            let Some(request) = slot else { continue };
            let waker = match &slot_wakers {
                Some(slot_wakers) => match slot_wakers.take_woken(i) {
                    Some(waker) => waker,
                    None => continue,
                },
                None => cx.waker(),
            };
            // SAFETY: `under_way` is never grown, shrunk or moved out of while its requests
            // live: a request leaves its slot only by being dropped in place (`*slot = None`
            // here, again after the fan-out is decided, or `under_way`'s own drop), so
            // the future polled here stays at this address until it is dropped.
            let request = unsafe { Pin::new_unchecked(request) };
            if let Poll::Ready(answer) = request.poll(&mut Context::from_waker(waker)) {
                report(i, Some(&answer));
                *vote = Vote::Answered(answer);
                *slot = None;
            }
        }
        let answers = votes.iter().filter_map(Vote::answer);
        let (yes, no) = answers.fold((0, 0), |(yes, no), answer| match granted(answer) {
            true => (yes + 1, no),
            false => (yes, no + 1),
        });
        let decided = yes + no == asked
            || match resolve {
                Resolve::AllNodes => false,
                Resolve::Quorum => yes >= quorum || no >= quorum,
                Resolve::GrantQuorum => yes >= quorum,
            };
        if decided { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    for (i, slot) in under_way.iter_mut().enumerate() {
        if slot.is_some() {
            *slot = None;
            report(i, None);
        }
    }
    votes
}

/// The wakers a client's fan-outs poll their requests with, one a master, and the waker of
/// the task that polls the fan-out, which each of them wakes.
pub(crate) struct FanOutWakers {
    task: Arc<Mutex<Waker>>,
    slots: Vec<(Arc<SlotWaker>, Waker)>,
}

impl FanOutWakers {
    /// Wakers for fan-outs to `masters` masters.
    pub(crate) fn new(masters: usize) -> Self {
        let task = Arc::new(Mutex::new(Waker::noop().clone()));
        let slots = (0..masters)
            .map(|_| {
                let slot = Arc::new(SlotWaker {
                    woken: AtomicBool::new(false),
                    task: task.clone(),
                });
                (slot.clone(), Waker::from(slot))
            })
            .collect();
        FanOutWakers { task, slots }
    }

    /// The wakers for a fan-out of `requests` requests, each marked woken: every request is
    /// polled in the first pass.
    fn for_requests(&self, requests: usize) -> &Self {
        assert!(
            requests <= self.slots.len(),
            "a fan-out of {requests} requests has wakers for {} masters",
            self.slots.len()
        );
        for (slot, _) in &self.slots[..requests] {
            slot.woken.store(true, Ordering::Release);
        }
        self
    }

    /// Makes every request's wake wake `task`, the fan-out's task as it polls it now.
    fn task_polled_by(&self, task: &Waker) {
        let mut current = self.task.lock().expect("fan-out waker lock poisoned");
        if !current.will_wake(task) {
            current.clone_from(task);
        }
    }

    /// The waker to poll request `i` with, if it was woken since it was last polled (and
    /// now counts as not woken).
    fn take_woken(&self, i: usize) -> Option<&Waker> {
        let (slot, waker) = &self.slots[i];
        slot.woken.swap(false, Ordering::AcqRel).then_some(waker)
    }
}

/// The waker one request is polled with: it marks the request as woken and wakes the task
/// that polls the fan-out.
struct SlotWaker {
    /// The request has been woken since it was last polled.
    woken: AtomicBool,
    /// The fan-out's task, as it last polled the fan-out. Kept, not taken by a wake (as
    /// an `AtomicWaker` would): every wake of a request wakes the task, as when the
    /// requests were polled with the task's own waker. A request dropped undecided leaves
    /// timers that still wake it, and each such wake runs the task once more, drawing
    /// the executor's random numbers: waking it only once moved digests.
    task: Arc<Mutex<Waker>>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task
            .lock()
            .expect("fan-out waker lock poisoned")
            .wake_by_ref();
    }
}
