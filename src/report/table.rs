//! The verdict table a terminal or a CI log shows: one row per scenario, then why an
//! expectation was not met and how to replay the first violating seed.
//!
//! Two widths. The default fits 120 columns — a CI log or a laptop terminal — so each
//! checker's cell is only its violating-seed count and its mark, the seeds once per row;
//! `--wide` gives every cell its rate and 95% interval (~210 columns). Colour marks the
//! verdict and every unmet cell, and only when the table goes to a terminal: a pipe or a
//! log file gets plain text, which scripts can grep.

use super::control::Attribution;
use super::{CHECKERS, ScenarioReport};
use crate::scenario::Expectation;

/// How to lay the table out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableStyle {
    /// Every cell with its rate and 95% interval (~210 columns), not only its count.
    pub wide: bool,
    /// ANSI colours (a terminal that wants them; never a pipe).
    pub colour: bool,
}

/// Width of a wide checker cell ("100/100 96-100%" and a mark).
const WIDE_CELL: usize = 18;
/// Width of the scenario name in a wide row.
const WIDE_NAME: usize = 44;
/// Width of the scenario name in a narrow row; a longer name gets a line of its own.
const NARROW_NAME: usize = 34;
/// Narrowest checker cell ("100 v!").
const NARROW_CELL: usize = 6;
/// Width of the no-fault control's cell ("20/20", "workload").
const CONTROL: usize = 9;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

impl TableStyle {
    /// `text` in `colour`, when this style colours.
    fn paint(self, text: &str, colour: &str) -> String {
        match self.colour {
            true => format!("{colour}{text}{RESET}"),
            false => text.to_string(),
        }
    }
}

/// A narrow checker column's width: its header's, or the narrowest cell's.
fn narrow_width(header: &str) -> usize {
    header.len().max(NARROW_CELL)
}

impl ScenarioReport {
    /// The header of the verdict table: one column per checker, then the verdict.
    pub fn table_header(style: TableStyle) -> String {
        if style.wide {
            let columns: String = CHECKERS
                .iter()
                .map(|(_, header)| format!(" {header:>width$}   ", width = WIDE_CELL - 3))
                .collect();
            return format!(
                "{:<WIDE_NAME$} {:>9}{columns} {:>CONTROL$}  verdict",
                "scenario", "exercised", "no faults"
            );
        }
        let columns: String = CHECKERS
            .iter()
            .map(|(_, header)| format!(" {header:>width$}", width = narrow_width(header)))
            .collect();
        format!(
            "{:<NARROW_NAME$} {:>9}{columns} {:>CONTROL$}  verdict",
            "scenario", "exercised", "no faults"
        )
    }

    /// The legend printed under the table.
    pub fn table_legend(style: TableStyle) -> &'static str {
        match style.wide {
            true => {
                "cells: violating/seeds and the 95% interval (Wilson; < 3/N when none); exercised: seeds with a grant \
                 after every fault; v / h = expected violated / holds; ! = expectation not met; no faults: the \
                 first violating seeds of an expected violation run again without the faults (0/N: the faults caused it; \
                 workload: the scenario has no faults)"
            }
            false => {
                "cells: violating seeds (--wide: of how many, with the 95% interval); v / h = expected violated / \
                 holds; ! = not met\n\
                 exercised: seeds with a grant after every fault; n/j = not judged in this mode\n\
                 no faults: the first violating seeds of an expected violation run again without the faults \
                 (0/N: the faults\n\
                 caused it; workload: the scenario has no faults)"
            }
        }
    }

    /// One row of the verdict table, then why an expectation was not met, and a replay
    /// hint for the first violating seed.
    pub fn table_lines(&self, style: TableStyle) -> Vec<String> {
        let cells: String = CHECKERS
            .iter()
            .map(|(checker, header)| {
                let expectation = self.expectations.iter().find(|(c, _, _)| c == checker);
                let mark = match expectation {
                    None => "  ",
                    Some((_, Expectation::Violated, true)) => "v ",
                    Some((_, Expectation::Holds, true)) => "h ",
                    Some((_, Expectation::Violated, false)) => "v!",
                    Some((_, Expectation::Holds, false)) => "h!",
                };
                let judged = self.mode.judges(checker);
                let (cell, width) = match (style.wide, judged) {
                    (true, true) => (format!("{} {mark}", self.rate(checker).cell()), WIDE_CELL),
                    (true, false) => ("not judged   ".to_string(), WIDE_CELL),
                    (false, true) => (
                        format!("{} {mark}", self.rate(checker).violating),
                        narrow_width(header),
                    ),
                    (false, false) => ("n/j  ".to_string(), narrow_width(header)),
                };
                let cell = format!("{cell:>width$}");
                match expectation {
                    Some((_, _, false)) => format!(" {}", style.paint(&cell, RED)),
                    _ => format!(" {cell}"),
                }
            })
            .collect();
        let control = CHECKERS
            .iter()
            .filter(|(checker, _)| self.attribution(checker).is_some())
            .filter_map(|(checker, _)| Some(self.control.as_ref()?.rate(checker)))
            .max_by_key(|rate| (rate.violating, rate.seeds))
            .map(|rate| format!("{}/{}", rate.violating, rate.seeds));
        let workload = CHECKERS
            .iter()
            .any(|(checker, _)| self.attribution(checker) == Some(Attribution::Workload));
        let control = match (control, workload) {
            (Some(rate), _) => rate,
            (None, true) => "workload".to_string(),
            (None, false) => "-".to_string(),
        };
        let verdict = match (self.verdict_word(), self.errors.len()) {
            (_, n) if n > 0 => style.paint(
                &format!("{} ({n} runs)", self.mode.failed_word().to_uppercase()),
                RED,
            ),
            ("not met", _) => style.paint("NOT MET", RED),
            ("met", _) => style.paint("met", GREEN),
            (word, _) => style.paint(word, YELLOW),
        };
        let exercised = format!("{}/{}", self.exercised_seeds(), self.seeds);
        let mut lines = Vec::new();
        let name_width = match style.wide {
            true => WIDE_NAME,
            false => NARROW_NAME,
        };
        let name = match self.name.chars().count() > name_width {
            true => {
                lines.push(self.name.clone());
                ""
            }
            false => self.name.as_str(),
        };
        lines.push(format!(
            "{name:<name_width$} {exercised:>9}{cells} {control:>CONTROL$}  {verdict}"
        ));
        lines.extend(self.mode.ran().map(|ran| format!("  {ran}")));
        for reason in self.unmet_reasons() {
            lines.push(format!("  {reason}"));
        }
        if let Some(seed) = self.violating_seeds().first() {
            lines.push(self.mode.rerun(&self.file, *seed));
        }
        for (seed, message) in &self.errors {
            lines.push(self.mode.failed_run(&self.name, &self.file, *seed, message));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;
    use crate::report::compare::tests::cell;

    /// Five seeds, all violating mutual exclusion, as a GC pause gives: expected and met.
    fn gc_pause_report() -> ScenarioReport {
        let mut report = cell(5, 5, 0);
        report.name = "single-node-gc-pause".into();
        report.expectations = vec![
            (check::mutual_exclusion::NAME, Expectation::Violated, true),
            (check::stale_write::NAME, Expectation::Holds, true),
        ];
        report
    }

    #[test]
    fn the_narrow_table_fits_120_columns_and_the_wide_one_keeps_every_interval() {
        let report = gc_pause_report();
        let narrow = TableStyle::default();
        let wide = TableStyle {
            wide: true,
            colour: false,
        };
        let header = ScenarioReport::table_header(narrow);
        let row = &report.table_lines(narrow)[0];
        assert!(header.chars().count() <= 120, "{header}");
        assert!(row.chars().count() <= 120, "{row}");
        assert!(!row.contains('%'), "a narrow cell is a count: {row}");
        assert!(
            report.table_lines(wide)[0].contains('%'),
            "a wide cell has its interval"
        );
        assert!(ScenarioReport::table_header(wide).chars().count() > 120);
    }

    #[test]
    fn a_long_name_gets_its_own_line_and_the_row_still_fits() {
        let mut report = gc_pause_report();
        report.name = "n".repeat(90);
        let lines = report.table_lines(TableStyle::default());
        assert_eq!(lines[0], report.name);
        assert!(lines[1].chars().count() <= 120, "{}", lines[1]);
    }

    #[test]
    fn colour_only_when_asked_and_an_unmet_cell_is_red() {
        let mut report = gc_pause_report();
        let plain = report.table_lines(TableStyle::default()).join("\n");
        assert!(!plain.contains('\x1b'), "{plain}");
        let colour = TableStyle {
            wide: false,
            colour: true,
        };
        assert!(report.table_lines(colour)[0].contains(&format!("{GREEN}met{RESET}")));
        // stale_write was expected to hold: say it was not met.
        report.expectations[1].2 = false;
        let row = &report.table_lines(colour)[0];
        assert!(row.contains(&format!("{RED}NOT MET{RESET}")), "{row}");
        assert!(row.contains(RED) && row.matches(RED).count() > 1, "{row}");
    }
}
