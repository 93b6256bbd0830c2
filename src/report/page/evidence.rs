//! The evidence under the decision, folded: the minimal counterexamples, the safety
//! envelopes, every counterexample, the catalogue, and how the report was made.

use std::fmt::Write;

use super::{Figures, escape, inline_figure, shade};
use crate::report::CHECKERS;
use crate::report::counterexample::Counterexample;
use crate::report::summary::Summary;
use crate::scenario::Expectation;

/// Under the title, in one line: which locksim made the page, from which command, when.
pub fn provenance_line(page: &mut String, summary: &Summary) {
    let p = &summary.provenance;
    let _ = writeln!(
        page,
        "<p class=\"provenance\">locksim {} (commit {}), <code>{}</code>, {}. <a href=\"#provenance\">How this \
         report was made</a></p>",
        escape(&p.version),
        escape(&p.commit),
        escape(&p.command),
        escape(&p.date)
    );
}

/// How the report was made: the version, commit, command and date, the seeds, and how to
/// replay anything on it.
pub fn provenance(page: &mut String, summary: &Summary) {
    let p = &summary.provenance;
    page.push_str("<section id=\"provenance\">\n<h2>How this report was made</h2>\n<ul>\n");
    let _ = writeln!(
        page,
        "<li>locksim {}, commit {}</li>",
        escape(&p.version),
        escape(&p.commit)
    );
    let _ = writeln!(
        page,
        "<li>command: <code>{}</code>, run from the directory the paths below are relative to</li>",
        escape(&p.command)
    );
    let _ = writeln!(page, "<li>date: {}</li>", escape(&p.date));
    let _ = writeln!(page, "<li>seeds: {}</li>", escape(&p.seeds));
    page.push_str(
        "</ul>\n<p class=\"small\">Every run on this page replays bit for bit with the same locksim commit: \
         <code>locksim replay FILE --seed N</code> with the file and seed it names (matrix cells in \
         <code>matrix/</code>, shrunk counterexamples in <code>minimal/</code>, envelope points in \
         <code>envelope/</code>, beside this page).</p>\n</section>\n",
    );
}

/// One shrunk counterexample per fault class that broke something, each folded under a
/// line that says what it shows, with its timeline and story inside.
pub fn minimal_counterexamples(page: &mut String, summary: &Summary, figures: &Figures) {
    if summary.provisional.as_ref().is_some_and(|p| p.minimal_pending) {
        page.push_str(
            "<section id=\"minimal\">\n<h2>Minimal counterexamples</h2>\n<p class=\"provisional small\">Provisional: \
             the minimal counterexamples are being shrunk; this page is written again with them when they are. \
             Until then each scenario's and cell's first violating seed is shown as it ran, not shrunk, under \
             <a href=\"#counterexamples\">All counterexamples</a>.</p>\n</section>\n",
        );
        return;
    }
    if summary.minimal.is_empty() {
        return;
    }
    page.push_str("<section id=\"minimal\">\n<h2>Minimal counterexamples</h2>\n");
    page.push_str("<p>For each fault class that broke something, one cell of the matrix (the setups the answer \
                   compares first), its first violating seed shrunk to the smallest schedule that still breaks the \
                   same checker: fewer faults, clients and nodes, the faults moved early, the run cut after the \
                   violation. The timeline outlines the first two clients that believed they held the lock and \
                   rings the write a stale write erased; the story runs from the first grant that matters to the \
                   violation. Each replays bit for bit with the command shown.</p>\n<ul class=\"small\">\n");
    for minimal in &summary.minimal {
        let _ = writeln!(
            page,
            "<li><a href=\"#{}\">{}</a>: {}, {}</li>",
            escape(&minimal.example.id),
            escape(&minimal.fault_label),
            escape(&minimal.setup_label),
            escape(&minimal.checker)
        );
    }
    page.push_str("</ul>\n");
    for minimal in &summary.minimal {
        let example = &minimal.example;
        let _ = writeln!(
            page,
            "<details id=\"{}\"><summary><strong>{}</strong> — {}: {}</summary>\n<article>",
            escape(&example.id),
            escape(&minimal.fault_label),
            escape(&minimal.setup_label),
            escape(&minimal.checker)
        );
        page.push_str("<ul>\n");
        violation_items(page, example);
        page.push_str("</ul>\n");
        if let Some(figure) = figures.get(&example.id) {
            inline_figure(page, figure);
        }
        let _ = writeln!(
            page,
            "<pre>{}</pre>\n<p><code>{}</code> <span class=\"small\">digest {}</span></p>",
            escape(&example.story.join("\n")),
            escape(&example.replay_command()),
            &example.digest[..16.min(example.digest.len())]
        );
        let _ = writeln!(
            page,
            "<p class=\"small\">Shrunk from {} seed {} in {} simulated runs: {}. The shrunk schedule breaks {} \
             in {} of seeds 0–{}.</p>\n</article></details>",
            escape(&minimal.from_file),
            minimal.from_seed,
            minimal.runs,
            escape(&if minimal.shrink_steps.is_empty() {
                "nothing could be taken away".to_string()
            } else {
                minimal.shrink_steps.join("; ")
            }),
            escape(&minimal.checker),
            minimal.neighbours.0,
            minimal.neighbours.1.saturating_sub(1)
        );
    }
    page.push_str("</section>\n");
}

/// Every other counterexample, folded: the first violating seed of each catalogue
/// scenario that broke, then of each matrix cell that broke.
pub fn all_counterexamples(page: &mut String, summary: &Summary) {
    if summary.counterexamples.is_empty() && summary.matrix_counterexamples.is_empty() {
        return;
    }
    page.push_str("<section id=\"counterexamples\">\n<h2>All counterexamples</h2>\n");
    page.push_str("<p>The first violating seed of every scenario and matrix cell that broke, not shrunk, folded: \
                   what broke, the replay command, the story, and its lease timeline as a file beside the page \
                   (true time; believed holdings per client, the key's life on each Redis node, faults, the \
                   overlap in red).</p>\n");
    if !summary.counterexamples.is_empty() {
        page.push_str("<h3 id=\"timelines\">Catalogue scenarios</h3>\n");
        for example in &summary.counterexamples {
            folded_counterexample(page, example);
        }
    }
    if !summary.matrix_counterexamples.is_empty() {
        page.push_str(
            "<h3 id=\"matrix-counterexamples\">Matrix cells</h3>\n<p class=\"small\">A cell's rate links \
             here.</p>\n",
        );
        for example in &summary.matrix_counterexamples {
            folded_counterexample(page, example);
        }
    }
    page.push_str("</section>\n");
}

/// One counterexample, folded: what broke in its summary line; the replay command, a link
/// to its timeline and the story inside.
fn folded_counterexample(page: &mut String, example: &Counterexample) {
    let _ = write!(
        page,
        "<details id=\"{id}\"><summary>{} — seed {}: {}</summary>\n<ul>\n",
        escape(&example.scenario),
        example.seed,
        escape(
            &example
                .violations
                .iter()
                .map(|(checker, _)| checker.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        id = escape(&example.id)
    );
    violation_items(page, example);
    let _ = writeln!(
        page,
        "</ul>\n<p><code>{}</code> <a href=\"figures/{id}.svg\">timeline</a></p>\n<pre>{}</pre>\n</details>",
        escape(&example.replay_command()),
        escape(&example.story.join("\n")),
        id = escape(&example.id)
    );
}

/// What each violated checker said of a counterexample, as list items.
fn violation_items(page: &mut String, example: &Counterexample) {
    for (checker, why) in &example.violations {
        let _ = writeln!(
            page,
            "<li><strong>{}</strong>: {}</li>",
            escape(checker),
            escape(why)
        );
    }
}

pub fn envelopes(page: &mut String, summary: &Summary, figures: &Figures) {
    if summary.envelopes.is_empty() {
        return;
    }
    page.push_str("<section id=\"envelopes\">\n<h2>Safety envelopes</h2>\n");
    page.push_str(
        "<p>Where a configuration stops being safe: two parameters swept, the fraction of seeds that \
                   broke mutual exclusion at each point (darker is worse), and the analytic bound drawn as a \
                   black line around the points it calls safe (in the tables, the points it calls unsafe are \
                   outlined).</p>\n",
    );
    for envelope in &summary.envelopes {
        let _ = writeln!(
            page,
            "<h3 id=\"envelope-{}\">{}</h3>",
            escape(&envelope.name),
            escape(&envelope.title)
        );
        if let Some(figure) = figures.get(&format!("envelope-{}", envelope.name)) {
            inline_figure(page, figure);
        }
        let _ = writeln!(page, "<p class=\"small\">{}</p>", escape(&envelope.caption()));
        page.push_str("<details><summary>the numbers, with their 95% intervals</summary>\n");
        for (series, safe) in envelope.series.iter().zip(&envelope.bound_safe) {
            let _ = write!(
                page,
                "<table>\n<caption>{}</caption>\n<tr><th scope=\"col\">{} \\ {}</th>",
                escape(&series.label),
                escape(&envelope.y_label),
                escape(&envelope.x_label)
            );
            for x in &envelope.xs {
                let _ = write!(page, "<th scope=\"col\">{x}</th>");
            }
            page.push_str("</tr>\n");
            for (y, row) in series.rates.iter().enumerate().rev() {
                let _ = write!(page, "<tr><th scope=\"row\">{}</th>", envelope.ys[y]);
                for (x, rate) in row.iter().enumerate() {
                    let (colour, dark) = shade(*rate);
                    let class = if dark { "cell dark" } else { "cell" };
                    let outline = if safe[y][x] {
                        ""
                    } else {
                        "outline: 2px dashed #0072b2; outline-offset: -3px;"
                    };
                    let _ = write!(
                        page,
                        "<td class=\"{class}\" style=\"background:{colour};{outline}\">{}</td>",
                        escape(&rate.cell())
                    );
                }
                page.push_str("</tr>\n");
            }
            page.push_str("</table>\n");
        }
        page.push_str("</details>\n");
    }
    page.push_str("</section>\n");
}

pub fn catalogue(page: &mut String, summary: &Summary) {
    page.push_str("<section id=\"catalogue\">\n<h2>Catalogue</h2>\n");
    page.push_str(
        "<p>Every scenario file: what it shows, what the published analyses predict (expected \
                   <em>violated</em> or <em>holds</em>), and what the seeds found. An expected violation is \
                   <em>caused by the faults</em> when its first violating seeds, run again without the \
                   scenario's faults, no longer violate (the no-fault control).</p>\n",
    );
    page.push_str(
        "<table>\n<caption>Every scenario file: seeds that violated each checker, against what the published \
         analyses predict</caption>\n<tr><th scope=\"col\">scenario</th><th scope=\"col\">exercised</th>",
    );
    for (_, short) in CHECKERS {
        let _ = write!(page, "<th scope=\"col\">{short}</th>");
    }
    page.push_str("<th scope=\"col\">verdict</th></tr>\n");
    for report in &summary.catalogue {
        let link = summary
            .counterexamples
            .iter()
            .find(|c| c.scenario == report.name)
            .map(|c| format!(" <a href=\"#{}\">timeline</a>", escape(&c.id)))
            .unwrap_or_default();
        let _ = write!(
            page,
            "<tr><th scope=\"row\" class=\"scenario\"><strong>{}</strong>{link}<br><span class=\"small\">{}</span></th><td class=\"cell\">{}/{}</td>",
            escape(&report.name),
            escape(&report.description),
            report.exercised_seeds(),
            report.seeds
        );
        for (checker, _) in CHECKERS {
            let rate = report.rate(checker);
            let expectation = report.expectations.iter().find(|(c, _, _)| *c == checker);
            let (colour, dark) = shade(rate);
            let class = if dark { "cell dark" } else { "cell" };
            let mark = match expectation {
                None => String::new(),
                Some((_, expected, met)) => {
                    let word = match expected {
                        Expectation::Violated => "expected violated",
                        Expectation::Holds => "expected to hold",
                    };
                    let class = if *met { "met" } else { "unmet" };
                    let cause = report
                        .attribution_note(checker)
                        .map(|note| format!("<br><span class=\"small\">{}</span>", escape(&note)))
                        .unwrap_or_default();
                    format!("<br><span class=\"small {class}\">{word}</span>{cause}")
                }
            };
            let _ = write!(
                page,
                "<td class=\"{class}\" style=\"background:{colour}\">{}{mark}</td>",
                escape(&rate.cell())
            );
        }
        let verdict = if report.expect_met() {
            "<span class=\"met\">met</span>".to_string()
        } else {
            format!(
                "<span class=\"unmet\">{}</span><br><span class=\"small\">{}</span>",
                report.verdict_word().to_uppercase(),
                escape(&report.unmet_reasons().join("; "))
            )
        };
        let _ = writeln!(page, "<td>{verdict}</td></tr>");
    }
    page.push_str("</table>\n</section>\n");
}
