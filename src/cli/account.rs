//! One run told in text: its trace (every event, and the frames on the clients'
//! connections) and its verdicts (stories, evidence, each checker's word). `replay` prints
//! them; a live run that was not met keeps them in files beside its workers' output.

use std::path::Path;

use locksim::check::evidence::evidence;
use locksim::check::liveness::waits;
use locksim::check::{Verdict, check_all};
use locksim::history::{Event, History, WireRecord, fmt_ms};
use locksim::report::mode::RunMode;
use locksim::scenario::{Expectation, Scenario};
use locksim::search::story;

/// The trace: a header, then each event, and each frame on a client's connection where it
/// happened (`→` written, `←` read, `✗` no reply), one line each.
pub fn trace_lines(events: &[Event], wire: &[WireRecord]) -> Vec<String> {
    let line = |true_us: u64, node: &str, local_us: i64, what: &dyn std::fmt::Display| {
        format!(
            "{:>12}  {:<17} {:>12}  {what}",
            fmt_ms(true_us as i64),
            node,
            fmt_ms(local_us)
        )
    };
    let mut lines = vec![format!(
        "{:>12}  {:<17} {:>12}  event",
        "true ms", "node", "local ms"
    )];
    let mut frames = wire.iter().peekable();
    for (index, event) in events.iter().enumerate() {
        while let Some(frame) = frames.next_if(|frame| frame.events_before <= index) {
            lines.push(line(
                frame.true_us,
                &frame.client,
                frame.local_us,
                &format_args!("  {frame}"),
            ));
        }
        lines.push(line(event.true_us, &event.node, event.local_us, &event.kind));
    }
    for frame in frames {
        lines.push(line(
            frame.true_us,
            &frame.client,
            frame.local_us,
            &format_args!("  {frame}"),
        ));
    }
    lines
}

/// The whole trace of `history` (with the frames of `wire`, if kept), ending with the
/// run's end.
pub fn history_lines(history: &History, wire: &[WireRecord]) -> Vec<String> {
    let mut lines = trace_lines(&history.events, wire);
    lines.push(format!("{:>12}  end of run", fmt_ms(history.end_us as i64)));
    lines
}

/// `history`'s verdicts under `scenario`'s checkers, computed once for the lines below.
pub fn verdicts(history: &History, scenario: &Scenario) -> Vec<Verdict> {
    check_all(history, &scenario.check_settings())
}

/// The checkers one seed's `verdicts` violate that the scenario's `expect` does not allow:
/// one it expects to hold — or, run `without_faults` (the control), one it expects the
/// faults to violate; with no `expect` at all, any (the scenario would be unchecked).
pub fn unexpected_violations(
    verdicts: &[Verdict],
    scenario: &Scenario,
    without_faults: bool,
) -> Vec<&'static str> {
    let expected = scenario.expect.entries();
    verdicts
        .iter()
        .filter(|verdict| verdict.violation.is_some())
        .filter(
            |verdict| match expected.iter().find(|(checker, _)| *checker == verdict.checker) {
                Some((_, Expectation::Holds)) => true,
                Some((_, Expectation::Violated)) => without_faults,
                None => expected.is_empty(),
            },
        )
        .map(|verdict| verdict.checker)
        .collect()
}

/// The story of each violation of `verdicts` that `mode` judges, one after the other.
pub fn story_lines(history: &History, verdicts: &[Verdict], mode: &RunMode) -> Vec<String> {
    let mut lines = Vec::new();
    for verdict in verdicts.iter().filter(|v| mode.judges(v.checker)) {
        if let Some(why) = &verdict.violation {
            let steps = story::story(history, verdict.checker, why);
            lines.extend(story::render(&steps, verdict.checker, why));
        }
    }
    lines
}

/// `verdicts` of `history` as `mode` judges them: the evidence, each checker's word
/// (`VIOLATED: why`, `holds`, `not exercised`, or `not judged` where the mode cannot
/// judge) and the digest.
pub fn verdict_lines(
    history: &History,
    scenario: &Scenario,
    verdicts: &[Verdict],
    mode: &RunMode,
) -> Vec<String> {
    let settings = scenario.check_settings();
    let mut lines = Vec::new();
    let evidence = evidence(history, &waits(history), settings.faults);
    lines.extend(
        evidence
            .lines()
            .into_iter()
            .map(|line| format!("evidence: {line}")),
    );
    let exercised = evidence.exercised(settings.min_grants_after_fault);
    if let Err(why) = &exercised {
        lines.push(format!("evidence: NOT EXERCISED: {why}"));
    }
    for verdict in verdicts {
        lines.push(match (&verdict.violation, &exercised) {
            _ if !mode.judges(verdict.checker) => format!("{}: not judged", verdict.checker),
            (Some(why), _) => format!("{}: VIOLATED: {why}", verdict.checker),
            (None, Ok(())) => format!("{}: holds", verdict.checker),
            (None, Err(_)) => format!("{}: not exercised", verdict.checker),
        });
    }
    lines.push(format!("digest: {}", history.digest()));
    lines
}

/// Writes `lines` to `file`, one a line (its folder made if need be).
pub fn write_lines(file: &Path, lines: &[String]) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(file, text)
}
