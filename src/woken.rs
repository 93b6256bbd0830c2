//! A future that is polled beside others on every wake of their task, but only does
//! anything when its own waker was called: a request's timeout (the client), and the
//! node's accept, replan and timer branches beside its connections (the server).
//!
//! A request races its exchange against a timeout, and the fan-out polls every request at
//! each wake of the client's task, so a Redlock request's timeout was polled about eight
//! times (each poll read the clock, found the deadline ahead and the same waker
//! registered: `Pending`, ~140 instructions) for the one poll that mattered, after its
//! timer fired (issue 33). [`Woken`] hands the timeout a waker of its own that notes the
//! wake before waking the task, and polls the timeout only after such a wake. A node's
//! loop is the same: each request wakes its connection, which wakes the node's task, whose
//! `select!` then polled the listener's accept, the replan notice and every timer too.
//!
//! Skipping those polls changes nothing the future does: a poll without a wake found the
//! deadline ahead (time moves only when timers fire, and its timer wakes it) and a step of
//! the clock not yet seen (a step notifies the sleep's waiters); a channel or a notice
//! wakes its receiver when something comes. Its timers are added as
//! before: on its first poll, and again whenever the task's waker is not the one it
//! registered (then it gets a new waker of its own too, which a timer already set does not
//! hold). A timer left behind by an earlier request still wakes the task, as it did; it
//! also notes a wake, and the next request's timeout is polled once more for nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// Polls a future only on its first poll and after its waker was called; kept for the
/// futures one place makes one after another (a connection's request timeouts, a branch
/// of the node's loop).
#[derive(Default)]
pub(crate) struct Woken {
    /// The waker the future is polled with, and its note; `None` until the first poll.
    waker: Option<(Arc<Noted>, Waker)>,
}

/// A task's waker that notes it was called.
struct Noted {
    woken: AtomicBool,
    task: Waker,
}

impl Wake for Noted {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake_by_ref();
    }
}

impl Woken {
    /// The next future polled is a new one: its first poll goes through.
    pub(crate) fn start(&mut self) {
        if let Some((noted, _)) = &self.waker {
            noted.woken.store(true, Ordering::Release);
        }
    }

    /// `future`, polled through this from its first poll on (see [`Woken::poll`]): a
    /// branch of a `select!` made anew at each pass of a loop.
    pub(crate) fn gate<'a, F: Future + 'a>(&'a mut self, future: F) -> impl Future<Output = F::Output> + 'a {
        self.start();
        async move {
            let mut future = std::pin::pin!(future);
            std::future::poll_fn(|cx| self.poll(future.as_mut(), cx)).await
        }
    }

    /// Polls `future` if it is new ([`Woken::start`]), was woken since its last poll, or
    /// `cx`'s waker is not the one it was last polled under; `Pending` otherwise.
    #[inline]
    pub(crate) fn poll<F: Future + ?Sized>(
        &mut self,
        future: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        if let Some((noted, waker)) = &self.waker
            && noted.task.will_wake(cx.waker())
        {
            if !noted.woken.swap(false, Ordering::Acquire) {
                return Poll::Pending;
            }
            return future.poll(&mut Context::from_waker(waker));
        }
        self.poll_under_new_waker(future, cx)
    }

    /// Polls `future` with a new waker of its own that wakes `cx`'s (apart from the check
    /// above, so that the common case needs no room on the stack).
    #[cold]
    #[inline(never)]
    fn poll_under_new_waker<F: Future + ?Sized>(
        &mut self,
        future: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        let noted = Arc::new(Noted {
            woken: AtomicBool::new(false),
            task: cx.waker().clone(),
        });
        let (_, waker) = self.waker.insert((noted.clone(), Waker::from(noted)));
        future.poll(&mut Context::from_waker(waker))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts its polls; its waker is kept so that the test can wake it.
    #[derive(Default)]
    struct Counted {
        polls: usize,
        waker: Option<Waker>,
    }

    impl Future for Counted {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls += 1;
            self.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    /// A task's waker that counts its wakes.
    struct Task(AtomicUsize);

    impl Wake for Task {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_future_is_polled_first_and_then_only_after_its_own_wake() {
        let task = Arc::new(Task(AtomicUsize::new(0)));
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        let mut woken = Woken::default();
        let mut future = std::pin::pin!(Counted::default());
        woken.start();
        for _ in 0..3 {
            assert!(woken.poll(future.as_mut(), &mut cx).is_pending());
        }
        assert_eq!(future.polls, 1, "polled again without a wake");
        future.waker.take().unwrap().wake();
        assert_eq!(task.0.load(Ordering::SeqCst), 1, "the wake reached the task");
        for _ in 0..3 {
            assert!(woken.poll(future.as_mut(), &mut cx).is_pending());
        }
        assert_eq!(future.polls, 2);
        // The next future's first poll goes through.
        let mut next = std::pin::pin!(Counted::default());
        woken.start();
        assert!(woken.poll(next.as_mut(), &mut cx).is_pending());
        assert_eq!(next.polls, 1);
    }

    #[test]
    fn a_future_is_polled_again_under_another_task_waker() {
        let (first, second) = (
            Arc::new(Task(AtomicUsize::new(0))),
            Arc::new(Task(AtomicUsize::new(0))),
        );
        let mut woken = Woken::default();
        let mut future = std::pin::pin!(Counted::default());
        woken.start();
        let waker = Waker::from(first);
        assert!(
            woken
                .poll(future.as_mut(), &mut Context::from_waker(&waker))
                .is_pending()
        );
        let waker = Waker::from(second.clone());
        assert!(
            woken
                .poll(future.as_mut(), &mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(future.polls, 2, "a new task waker was not handed on");
        future.waker.take().unwrap().wake();
        assert_eq!(second.0.load(Ordering::SeqCst), 1, "the new task was not woken");
    }
}
