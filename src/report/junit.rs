//! The verdicts as a JUnit XML file (`--junit FILE`), the one test-report format GitHub
//! Actions (through a reporter action), GitLab (`artifacts:reports:junit`) and Jenkins all
//! display: one `<testsuite>` per scenario file, one `<testcase>` per expectation of its
//! `expect`, and a failure that carries what a reader needs to act — why it was not met,
//! the command that replays it, and the story of the violation.
//!
//! The schema followed is the common subset those tools read (the Ant / Jenkins
//! "junit-10" form): `testsuites` › `testsuite` (`name`, `tests`, `failures`, `errors`,
//! `skipped`, `time`) › `testcase` (`name`, `classname`, `file`, `time`) with at most one
//! `failure`, `error` or `skipped` child, and `system-out`.

use std::fmt::Write;

use super::ScenarioReport;
use crate::scenario::Expectation;

/// One scenario file's (or template's) suite.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    /// The scenario's name, as the table shows it.
    pub name: String,
    /// The scenario file, as the command line named it.
    pub file: String,
    /// Wall-clock seconds the suite took.
    pub time_s: f64,
    pub cases: Vec<Case>,
    /// What the verdict table printed for it, for a reader of the CI log.
    pub system_out: Vec<String>,
}

/// One expectation.
#[derive(Debug, Clone)]
pub struct Case {
    /// `mutual_exclusion holds`, `mutual_exclusion is violated`.
    pub name: String,
    pub outcome: Outcome,
}

/// How an expectation came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Met.
    Passed,
    /// Not met: why (one line), and the replay command and story (many).
    Failed { message: String, detail: Vec<String> },
    /// Runs failed inside the harness: nothing was judged.
    Error { message: String, detail: Vec<String> },
    /// Not judged in the mode the seeds ran in (validity, live).
    Skipped { message: String },
}

/// `checker holds` or `checker is violated`: the test case's name.
pub fn case_name(checker: &str, expectation: Expectation) -> String {
    match expectation {
        Expectation::Holds => format!("{checker} holds"),
        Expectation::Violated => format!("{checker} is violated"),
    }
}

impl Suite {
    /// The suite of a swept scenario: one case per expectation, each failure with its
    /// reason, the rerun command and `stories[checker]` (the story of the first violating
    /// seed, where the caller told one). A scenario without `expect` is one failing case,
    /// `expect`: it would pass whatever its seeds did.
    pub fn of_report(
        report: &ScenarioReport,
        stories: &dyn Fn(&str) -> Vec<String>,
        table: Vec<String>,
    ) -> Suite {
        let rerun = report
            .violating_seeds()
            .first()
            .map(|seed| report.mode.rerun(&report.file, *seed));
        let mut cases: Vec<Case> = report
            .expectations
            .iter()
            .map(|&(checker, expectation, met)| {
                let outcome = if !report.errors.is_empty() {
                    Outcome::Error {
                        message: report.mode.failed_runs_reason(report.errors.len()),
                        detail: report
                            .errors
                            .iter()
                            .map(|(seed, message)| {
                                report.mode.failed_run(&report.name, &report.file, *seed, message)
                            })
                            .collect(),
                    }
                } else if !report.mode.judges(checker) {
                    Outcome::Skipped {
                        message: format!("{checker} is not judged in this mode"),
                    }
                } else if met {
                    Outcome::Passed
                } else {
                    let reason = report
                        .unmet_reasons()
                        .into_iter()
                        .find(|r| r.starts_with(checker));
                    let mut detail: Vec<String> = rerun.iter().cloned().collect();
                    detail.extend(stories(checker));
                    Outcome::Failed {
                        message: reason.unwrap_or_else(|| format!("{checker}: not met")),
                        detail,
                    }
                };
                Case {
                    name: case_name(checker, expectation),
                    outcome,
                }
            })
            .collect();
        if report.unchecked() {
            cases.push(Case {
                name: "expect".into(),
                outcome: Outcome::Failed {
                    message: report.unmet_reasons().join(" "),
                    detail: Vec::new(),
                },
            });
        }
        Suite {
            name: report.name.clone(),
            file: report.file.display().to_string(),
            time_s: report.wall_ms as f64 / 1000.0,
            cases,
            system_out: table,
        }
    }

    fn count(&self, kind: fn(&Outcome) -> bool) -> usize {
        self.cases.iter().filter(|case| kind(&case.outcome)).count()
    }
}

/// The whole file: every suite under one `testsuites` named `locksim`.
pub fn render(suites: &[Suite]) -> String {
    let failed = |o: &Outcome| matches!(o, Outcome::Failed { .. });
    let errored = |o: &Outcome| matches!(o, Outcome::Error { .. });
    let skipped = |o: &Outcome| matches!(o, Outcome::Skipped { .. });
    let total = |kind: fn(&Outcome) -> bool| suites.iter().map(|s| s.count(kind)).sum::<usize>();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"locksim\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
        suites.iter().map(|s| s.cases.len()).sum::<usize>(),
        total(failed),
        total(errored),
        total(skipped),
        suites.iter().map(|s| s.time_s).sum::<f64>(),
    );
    for suite in suites {
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" file=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            escape(&suite.file),
            escape(&suite.file),
            suite.cases.len(),
            suite.count(failed),
            suite.count(errored),
            suite.count(skipped),
            suite.time_s,
        );
        for case in &suite.cases {
            let _ = write!(
                xml,
                "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" time=\"{:.3}\"",
                escape(&case.name),
                escape(&suite.name),
                escape(&suite.file),
                suite.time_s / suite.cases.len().max(1) as f64,
            );
            match &case.outcome {
                Outcome::Passed => xml.push_str("/>\n"),
                Outcome::Failed { message, detail } => child(&mut xml, "failure", "not met", message, detail),
                Outcome::Error { message, detail } => {
                    child(&mut xml, "error", "harness error", message, detail)
                }
                Outcome::Skipped { message } => {
                    let _ = write!(
                        xml,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                        escape(message)
                    );
                }
            }
        }
        if !suite.system_out.is_empty() {
            let _ = writeln!(
                xml,
                "    <system-out>{}</system-out>",
                escape(&suite.system_out.join("\n"))
            );
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// Closes a `<testcase` with a `failure` or `error` child: the message as its attribute
/// (what a CI summary shows), the message and the detail as its text.
fn child(xml: &mut String, tag: &str, kind: &str, message: &str, detail: &[String]) {
    let text: Vec<&str> = std::iter::once(message)
        .chain(detail.iter().map(String::as_str))
        .collect();
    let _ = write!(
        xml,
        ">\n      <{tag} message=\"{}\" type=\"{kind}\">{}</{tag}>\n    </testcase>\n",
        escape(message),
        escape(&text.join("\n")),
    );
}

/// `text` as XML attribute or element text: the five special characters escaped, and the
/// characters XML 1.0 forbids (terminal colour codes, other control characters) dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(outcomes: Vec<Outcome>) -> Suite {
        Suite {
            name: "gc <pause> & \"friends\"".into(),
            file: "scenarios/x.json".into(),
            time_s: 2.0,
            cases: outcomes
                .into_iter()
                .enumerate()
                .map(|(index, outcome)| Case {
                    name: format!("case {index}"),
                    outcome,
                })
                .collect(),
            system_out: vec!["row \x1b[32mmet\x1b[0m".into()],
        }
    }

    #[test]
    fn counts_and_escapes_every_outcome() {
        let xml = render(&[suite(vec![
            Outcome::Passed,
            Outcome::Failed {
                message: "mutual_exclusion: expected to hold, but violated in 3 of 5".into(),
                detail: vec![
                    "replay: locksim replay x.json --seed 1".into(),
                    "1. a <b> & c".into(),
                ],
            },
            Outcome::Error {
                message: "1 run failed".into(),
                detail: Vec::new(),
            },
            Outcome::Skipped {
                message: "not judged".into(),
            },
        ])]);
        assert!(
            xml.contains(r#"<testsuites name="locksim" tests="4" failures="1" errors="1" skipped="1""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"classname="gc &lt;pause&gt; &amp; &quot;friends&quot;""#),
            "{xml}"
        );
        assert!(xml.contains("1. a &lt;b&gt; &amp; c</failure>"), "{xml}");
        assert!(!xml.contains('\x1b'), "control characters are not XML: {xml}");
        assert_eq!(xml.matches("<testcase").count(), 4);
    }
}
