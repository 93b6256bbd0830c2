//! The provisional page of `locksim report`: written as soon as the first pass's verdicts
//! are in and its counterexamples replayed, its minimal counterexamples said to be still
//! shrinking; written again once they are shrunk, and as the last sweeps finish.

use std::path::Path;
use std::sync::Mutex;

use locksim::campaign::cache::RunCache;
use locksim::campaign::minimal;
use locksim::campaign::plan::{Plan, Remaining, Swept};
use locksim::report::files;
use locksim::report::page::{self, Figures};
use locksim::report::summary::{Provisional, Summary};

use super::{Reuse, replayed_summary, shrink_into};
use crate::cli::clock::Phase;

/// A provisional page being kept up to date while the report's last sweeps run.
pub(super) struct ProvisionalPage {
    /// The page's summary (its [`Provisional`] counting the sweeps done) and figures.
    page: Mutex<(Summary, Figures)>,
}

impl ProvisionalPage {
    /// Writes the page again, `done` of its sweeps still to run now finished, each
    /// twentieth of them (rendering the page takes a moment); a page that cannot be
    /// written only warns (the final one is what counts).
    pub(super) fn rewrite(&self, out: &Path, done: usize) {
        let mut page = self.page.lock().expect("page lock poisoned");
        let (summary, figures) = &mut *page;
        let Some(provisional) = &mut summary.provisional else {
            return;
        };
        let twentieths = |done: usize| done * 20 / provisional.to_run.max(1);
        if twentieths(done) <= twentieths(provisional.done) {
            return;
        }
        provisional.done = done;
        if let Err(e) = files::write_page(out, &page::render(summary, figures)) {
            eprintln!("warning: rewriting the provisional report: {e}");
        }
    }
}

/// Writes the provisional page of `first` (the catalogue and the matrix's cells at their
/// first seeds) into `out` as soon as its counterexamples are replayed, its minimal ones
/// said to be still shrinking, and says so on stderr; then shrinks them and writes the page
/// again with them. `remaining` is what is still to run. `None` when the page could not be
/// written (after a warning: the final page still comes).
pub(super) fn provisional_page(
    plan: &Plan,
    out: &Path,
    first: Swept,
    remaining: &Remaining,
    jobs: usize,
    cache: &RunCache,
    reuse: &Reuse,
) -> Option<ProvisionalPage> {
    let replaying = Phase::start();
    let (mut summary, timelines) = replayed_summary(plan, first, jobs, cache, reuse);
    let replayed = replaying.took();
    let shrinking = summary
        .matrix
        .as_ref()
        .is_some_and(|matrix| !minimal::picks(matrix).is_empty());
    summary.provisional = Some(Provisional {
        extending: remaining.extending.clone(),
        holds_seeds: remaining.holds_seeds,
        done: 0,
        to_run: remaining.sweeps,
        envelopes_pending: remaining.envelopes,
        minimal_pending: shrinking,
    });
    let writing = Phase::start();
    let mut figures = Figures::default();
    files::write_provisional_page(out, &summary, &timelines, jobs, &mut figures)
        .map_err(|e| eprintln!("warning: writing the provisional report: {e}"))
        .ok()?;
    eprintln!(
        "a first report is ready: {} (counterexamples replayed: {replayed}, {}; page: {}){}; extending {} matrix \
         cells to {} seeds{}: the final report replaces it when the run ends",
        out.join("index.html").display(),
        reuse.replays_words(),
        writing.took(),
        if shrinking {
            "; its minimal counterexamples are being shrunk"
        } else {
            ""
        },
        remaining.extending.len(),
        remaining.holds_seeds,
        if remaining.envelopes {
            " and sweeping the envelopes"
        } else {
            ""
        },
    );
    if shrinking {
        with_minimal(out, &mut summary, &mut figures, jobs, cache, reuse);
    }
    Some(ProvisionalPage {
        page: Mutex::new((summary, figures)),
    })
}

/// The provisional page `summary` (drawn as `figures`) with its minimal counterexamples
/// shrunk into it, written again into `out` and said on stderr. Shrinks that fail to be
/// written leave the page as it was (after a warning).
fn with_minimal(
    out: &Path,
    summary: &mut Summary,
    figures: &mut Figures,
    jobs: usize,
    cache: &RunCache,
    reuse: &Reuse,
) {
    let shrinking = Phase::start();
    let timelines = match shrink_into(summary, out, jobs, cache, &reuse.shrinks) {
        Ok((timelines, _)) => timelines,
        Err(e) => {
            eprintln!("warning: {e}");
            return;
        }
    };
    if let Some(provisional) = &mut summary.provisional {
        provisional.minimal_pending = false;
    }
    let shrunk = shrinking.took();
    let writing = Phase::start();
    match files::write_provisional_page(out, summary, &timelines, jobs, figures) {
        Ok(()) => eprintln!(
            "the first report now shows its {} minimal counterexamples (shrunk: {shrunk}, {}; page: {})",
            summary.minimal.len(),
            reuse.shrinks_words(),
            writing.took()
        ),
        Err(e) => eprintln!("warning: rewriting the provisional report: {e}"),
    }
}
