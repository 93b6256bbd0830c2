//! The story behind an unmet expectation of a simulated sweep, for the places a reader
//! meets it without a terminal to run `replay` in: a JUnit failure in CI, a failed
//! assertion in a team's own `cargo test`.

use std::sync::Arc;

use crate::check::check_all;
use crate::report::ScenarioReport;
use crate::scenario::Scenario;
use crate::search::story;
use crate::sweep::run_seed;

/// The story of `checker`'s violation as `replay --story` tells it: of the first seed
/// that violated it (an expected *holds* broken), or of the control's first violating
/// seed run without the faults (a violation present without them); nothing where no seed
/// violated it, or where the seed no longer runs.
pub fn unmet_story(report: &ScenarioReport, scenario: &Arc<Scenario>, checker: &str) -> Vec<String> {
    let control = report
        .control
        .as_ref()
        .and_then(|control| control.first_violating(checker));
    let (scenario, seed) = match control {
        Some(seed) => (Arc::new(scenario.without_faults()), seed),
        None => match report.violations.get(checker).and_then(|seeds| seeds.first()) {
            Some(&seed) => (scenario.clone(), seed),
            None => return Vec::new(),
        },
    };
    let Ok(history) = run_seed(&scenario, seed) else {
        return Vec::new();
    };
    check_all(&history, &scenario.check_settings())
        .into_iter()
        .filter(|verdict| verdict.checker == checker)
        .filter_map(|verdict| {
            let why = verdict.violation?;
            Some(story::render(
                &story::story(&history, checker, &why),
                checker,
                &why,
            ))
        })
        .flatten()
        .collect()
}
