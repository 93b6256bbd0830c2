//! A madsim sleep that puts its timer on madsim's heap once, not once per poll.
//!
//! madsim's `Sleep` cannot cancel a timer, so every poll of a pending `Sleep` pushes a new
//! one. A sleep raced against something else (a request against its timeout, the server
//! loop's expiry tick against every connection) is polled each time its task wakes for the
//! other thing, and the heap fills with duplicates that all fire, each waking the task
//! again. [`Timer`] registers once per waker: a task's waker does not change between polls,
//! so a later poll only checks whether the deadline has passed.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Sleeps `duration` of true time (madsim's virtual time), as `madsim::time::sleep` does.
pub fn sleep(duration: Duration) -> Timer {
    Timer {
        sleep: madsim::time::sleep(duration),
        registered: None,
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct Timer {
    sleep: madsim::time::Sleep,
    /// The waker madsim's heap will wake at the deadline.
    registered: Option<Waker>,
}

impl Future for Timer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.sleep.is_elapsed() {
            return Poll::Ready(());
        }
        if self
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        let this = &mut *self;
        match Pin::new(&mut this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending => {
                this.registered = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::clock::true_now_ns;

    #[test]
    fn a_timer_polled_again_by_other_wakes_still_fires_at_its_deadline() {
        let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        let (fired_at_ns, wakes) = runtime.block_on(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            madsim::task::spawn(async move {
                for _ in 0..50 {
                    madsim::time::sleep(Duration::from_millis(10)).await;
                    let _ = tx.send(());
                }
            });
            let timer = sleep(Duration::from_secs(1));
            tokio::pin!(timer);
            let mut wakes = 0;
            loop {
                tokio::select! {
                    biased;
                    () = &mut timer => break,
                    Some(()) = rx.recv() => wakes += 1,
                }
            }
            (true_now_ns(), wakes)
        });
        assert_eq!(wakes, 50);
        assert!(
            fired_at_ns.abs_diff(1_000_000_000) < 1_000,
            "fired at {fired_at_ns} ns"
        );
    }
}
