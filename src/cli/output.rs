//! Where a sweeping command's words go, so that a terminal, a pipe and a CI log each get
//! what suits them: the verdict table on stdout (narrow unless `--wide`, coloured only on a
//! terminal that has not asked for `NO_COLOR`), JSON lines to a file or — `--json -` — to
//! stdout, the table then moving to stderr so the JSON stays parseable; and a progress bar
//! on stderr only when stderr is a terminal.

use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use locksim::report::ScenarioReport;
use locksim::report::junit::{self, Suite};
use locksim::report::table::TableStyle;
use serde_json::Value;

use super::invalid;

/// The `--json` argument that means stdout.
const STDOUT: &str = "-";

/// A command's table, JSON lines and progress bar.
pub struct Output {
    style: TableStyle,
    /// `--json -` took stdout: the table goes to stderr.
    table_to_stderr: bool,
    json: Option<Box<dyn Write>>,
    progress: Option<ProgressBar>,
    /// `--junit FILE`: where the suites go once the command is done.
    junit: Option<(PathBuf, Vec<Suite>)>,
}

impl Output {
    /// The output of a command given `--json json` (a file, `-` for stdout, or none) and
    /// `--wide`; `Err` (exit 2, said) when the JSON file cannot be made.
    pub fn open(json: Option<&Path>, wide: bool, junit: Option<&Path>) -> Result<Output, ExitCode> {
        if let Some(path) = junit {
            // Made now, so a path that cannot be written is said before the sweep, not after.
            if let Err(e) = std::fs::write(path, "") {
                return Err(invalid(format!("--junit {}: {e}", path.display())));
            }
        }
        let table_to_stderr = json.is_some_and(|path| path.as_os_str() == STDOUT);
        let json: Option<Box<dyn Write>> = match json {
            None => None,
            Some(_) if table_to_stderr => Some(Box::new(std::io::stdout())),
            Some(path) => match std::fs::File::create(path) {
                Ok(file) => Some(Box::new(std::io::BufWriter::new(file))),
                Err(e) => return Err(invalid(format!("{}: {e}", path.display()))),
            },
        };
        let colour = match table_to_stderr {
            true => wants_colour(std::io::stderr().is_terminal()),
            false => wants_colour(std::io::stdout().is_terminal()),
        };
        Ok(Output {
            style: TableStyle { wide, colour },
            table_to_stderr,
            json,
            progress: None,
            junit: junit.map(|path| (path.to_path_buf(), Vec::new())),
        })
    }

    /// Prints a line of the table (or any human line) where the table goes, above the
    /// progress bar if one is shown; a closed pipe is not an error.
    pub fn say(&self, line: impl Display) {
        match &self.progress {
            Some(bar) => bar.suspend(|| self.write_line(&line)),
            None => self.write_line(&line),
        }
    }

    fn write_line(&self, line: &dyn Display) {
        let _ = match self.table_to_stderr {
            true => writeln!(std::io::stderr(), "{line}"),
            false => writeln!(std::io::stdout(), "{line}"),
        };
    }

    /// The table's header.
    pub fn header(&self) {
        self.say(ScenarioReport::table_header(self.style));
    }

    /// The table's legend.
    pub fn legend(&self) {
        self.say(ScenarioReport::table_legend(self.style));
    }

    /// A scenario's table lines (and a line naming the aimed-at dangerous states no seed
    /// reached, if any).
    pub fn rows(&self, report: &ScenarioReport) {
        for line in report.table_lines(self.style) {
            self.say(line);
        }
        if let Some(line) = report.activity.coverage.unreached_line(&report.aims()) {
            self.say(line);
        }
    }

    /// A scenario's table lines and its JSON object; `false` (after saying why) when the
    /// JSON could not be written.
    pub fn report(&mut self, report: &ScenarioReport) -> bool {
        self.rows(report);
        self.json_line(&report.to_json())
    }

    /// One JSON line, if the command writes JSON; `false` (after saying why) when it could
    /// not be written.
    pub fn json_line(&mut self, value: &Value) -> bool {
        let Some(out) = self.json.as_mut() else {
            return true;
        };
        match writeln!(out, "{value}").and_then(|()| out.flush()) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("error: writing the JSON report: {e}");
                false
            }
        }
    }

    /// Whether the command writes JUnit (so the caller tells the stories failures carry).
    pub fn wants_junit(&self) -> bool {
        self.junit.is_some()
    }

    /// Adds a scenario's suite to the JUnit file, if the command writes one.
    pub fn suite(&mut self, suite: Suite) {
        if let Some((_, suites)) = self.junit.as_mut() {
            suites.push(suite);
        }
    }

    /// Adds a swept scenario's suite (its table lines as the suite's output), with the
    /// story `stories(checker)` tells of each unmet expectation.
    pub fn report_suite(&mut self, report: &ScenarioReport, stories: &dyn Fn(&str) -> Vec<String>) {
        if self.wants_junit() {
            let table = report.table_lines(TableStyle::default());
            self.suite(Suite::of_report(report, stories, table));
        }
    }

    /// Writes the JUnit file, if the command writes one (also after Ctrl-C: what ran);
    /// `false` (after saying why) when it could not be written.
    pub fn write_junit(&self) -> bool {
        let Some((path, suites)) = &self.junit else {
            return true;
        };
        match std::fs::write(path, junit::render(suites)) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("error: writing --junit {}: {e}", path.display());
                false
            }
        }
    }

    /// Shows a progress bar of `total` `things` (on a terminal only) and returns it, for
    /// the sweep to advance.
    pub fn progress(&mut self, total: u64, things: &str) -> Option<ProgressBar> {
        self.progress = progress_bar(total, things);
        self.progress.clone()
    }

    /// Takes the progress bar off the screen.
    pub fn end_progress(&mut self) {
        if let Some(bar) = self.progress.take() {
            bar.finish_and_clear();
        }
    }
}

/// Colour when the stream is a terminal and the user has not said `NO_COLOR` (no-color.org)
/// or `TERM=dumb`.
pub fn wants_colour(terminal: bool) -> bool {
    terminal
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
        && std::env::var_os("TERM").is_none_or(|term| term != "dumb")
}

/// A progress bar of `total` `things` on a terminal; nothing when stderr goes to a file or
/// a pipe.
pub fn progress_bar(total: u64, things: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total);
    let template = format!("{{bar:40}} {{pos}}/{{len}} {things}  {{elapsed}}  {{msg}}");
    let style = ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}
