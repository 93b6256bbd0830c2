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
//! Deterministic by construction: the requests are polled in the masters' order, all of
//! them at each wake-up, and the decision is taken after each full pass (no `select!`, no
//! draw). Every request is polled at least once, so each goes on the wire before the
//! fan-out can be decided without it, and with [`Resolve::AllNodes`] this is exactly a
//! `join_all`.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

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
    std::future::poll_fn(|cx| {
        for (i, (slot, vote)) in under_way.iter_mut().zip(votes.iter_mut()).enumerate() {
            let Some(request) = slot else { continue };
            // SAFETY: `under_way` is never grown, shrunk or moved out of while its requests
            // live: a request leaves its slot only by being dropped in place (`*slot = None`
            // here, again after the fan-out is decided, or `under_way`'s own drop), so
            // the future polled here stays at this address until it is dropped.
            let request = unsafe { Pin::new_unchecked(request) };
            if let Poll::Ready(answer) = request.poll(cx) {
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
