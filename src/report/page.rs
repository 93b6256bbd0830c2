//! The report as one self-contained HTML page: inline CSS and inline SVG figures, no
//! script, no font or file fetched from anywhere, so it opens from a mail attachment or a
//! CI artifact as it is. Every number comes from the [`Summary`]; figures are passed in
//! already drawn.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::compare;
use super::counterexample::Counterexample;
use super::fault_classes;
use super::figures::{SCALE, heatmap, hex};
use super::matrix_summary::MatrixSummary;
use super::outcome::Safety;
use super::rate::Rate;
use super::summary::Summary;
use super::{CHECKERS, ScenarioReport};
use crate::check;
use crate::scenario::Expectation;

/// A figure drawn for the page: its SVG and the words that say what it shows (its text
/// alternative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    pub svg: String,
    pub alt: String,
}

/// Figures by id: each counterexample's timeline (by the counterexample's id), each
/// envelope's heatmap (`envelope-<name>`), the matrix (`matrix`).
pub type Figures = BTreeMap<String, Figure>;

/// The CSS of the page; fixed, so the page is byte-identical run to run.
const STYLE: &str = "
body { font-family: 'DejaVu Sans', Verdana, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1400px; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: .85em; }
caption { text-align: left; font-weight: bold; padding: .3em 0; }
th, td { border: 1px solid #ccc; padding: .3em .5em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
th.scenario { font-weight: normal; }
td.cell { text-align: center; min-width: 6.5em; }
table.answer th, table.answer td:nth-child(2) { min-width: 9em; }
td.na { color: #555; background: repeating-linear-gradient(45deg, #fff, #fff 4px, #eee 4px, #eee 8px); }
td.nx { color: #222; background: #bdbdbd; font-style: italic; }
td.two { padding: 0; }
.band { padding: .2em .4em; }
.stuck { color: #8a1c00; font-weight: bold; font-size: .8em; padding: .1em .3em; }
.small { font-size: .8em; color: #555; }
td.cell .small, td.cell a, td.cell .met, td.cell .unmet { color: inherit; }
.dark { color: #fff; }
code, pre { font-family: 'DejaVu Sans Mono', monospace; font-size: .85em; }
pre { background: #f7f7f7; padding: .6em; overflow-x: auto; }
.met { color: #1a7f37; } .unmet { color: #b3261e; font-weight: bold; }
.scroll { overflow-x: auto; max-width: 100%; }
.legend span { display: inline-block; min-width: 2.2em; padding: 0 .2em; text-align: center; border: 1px solid #ccc; color: #222; }
.legend span.dark { color: #fff; }
.legend .na { color: #555; background: repeating-linear-gradient(45deg, #fff, #fff 4px, #eee 4px, #eee 8px); padding: 0 .3em; }
.legend .nx { background: #bdbdbd; font-style: italic; padding: 0 .3em; }
table.matrix { font-size: .75em; } table.matrix th, table.matrix td { padding: .25em .3em; }
table.matrix td.cell { min-width: 0; } table.matrix td.two { padding: 0; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
";

/// The whole page.
pub fn render(summary: &Summary, figures: &Figures) -> String {
    let mut page = String::new();
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    page.push_str("<title>locksim: is this Redis lock safe?</title>\n");
    let _ = write!(page, "<style>{STYLE}</style>\n</head>\n<body>\n");
    page.push_str("<h1>locksim safety report</h1>\n");
    contents(&mut page, summary);
    answer(&mut page, summary);
    verdict(&mut page, summary);
    minimal_counterexamples(&mut page, summary, figures);
    if let Some(matrix) = &summary.matrix {
        matrix_section(&mut page, matrix, summary);
        clients_compared(&mut page, matrix, summary);
    }
    envelopes(&mut page, summary, figures);
    all_counterexamples(&mut page, summary);
    catalogue(&mut page, summary);
    page.push_str("</body>\n</html>\n");
    page
}

/// The table of contents: every section the page has, in order.
fn contents(page: &mut String, summary: &Summary) {
    let has_matrix = summary.matrix.is_some();
    let has_clients = summary
        .matrix
        .as_ref()
        .is_some_and(|m| !m.clients_compared.is_empty());
    let sections = [
        (
            "answer",
            "The answer: setups compared",
            summary.matrix.as_ref().is_some_and(|m| !m.comparisons.is_empty()),
        ),
        ("verdict", "Verdict", true),
        (
            "minimal",
            "One minimal counterexample per fault class",
            !summary.minimal.is_empty(),
        ),
        ("matrix", "Safety matrix", has_matrix),
        ("clients", "Clients compared", has_clients),
        ("envelopes", "Safety envelopes", !summary.envelopes.is_empty()),
        (
            "counterexamples",
            "All counterexamples",
            !summary.counterexamples.is_empty() || !summary.matrix_counterexamples.is_empty(),
        ),
        ("catalogue", "Catalogue", true),
    ];
    page.push_str("<nav id=\"contents\" aria-label=\"Contents\">\n<h2>Contents</h2>\n<ol>\n");
    for (id, title, present) in sections {
        if present {
            let _ = writeln!(page, "<li><a href=\"#{id}\">{title}</a></li>");
        }
    }
    page.push_str("</ol>\n</nav>\n");
}

/// The answer first: each pair of setups the grid compares, a row each (setup A | setup B
/// | differs in | same in), computed from the matrix's cells as `summary.json` has them.
fn answer(page: &mut String, summary: &Summary) {
    let Some(matrix) = &summary.matrix else {
        return;
    };
    let comparisons = compare::comparisons(matrix);
    if comparisons.is_empty() {
        return;
    }
    page.push_str("<section id=\"answer\">\n<h2>The answer: setups compared</h2>\n");
    page.push_str("<p class=\"small\">Each pair on the same fault classes and seeds. <em>Overlap</em>: two clients \
                   believed they held the lock at once (mutual exclusion broke); <em>damage</em>: an update was \
                   lost or a stale token accepted. Two cells differ when they land on different levels, or \
                   on the same level with 95% intervals apart; anything else is a tie.</p>\n");
    page.push_str(
        "<div class=\"scroll\"><table class=\"answer\">\n<caption>Setups compared pairwise: the fault classes where \
         they differ (A's cells against B's) and where they tie</caption>\n<tr><th scope=\"col\">setup A</th>\
         <th scope=\"col\">setup B</th><th scope=\"col\">differs in</th><th scope=\"col\">same in</th></tr>\n",
    );
    for comparison in &comparisons {
        let _ = writeln!(
            page,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&matrix.setups[comparison.setup].label),
            escape(&matrix.setups[comparison.against].label),
            escape(&comparison.differences(matrix).unwrap_or_else(|| "none".into())),
            escape(&comparison.ties(matrix).unwrap_or_else(|| "none".into())),
        );
    }
    page.push_str("</table></div>\n</section>\n");
}

fn verdict(page: &mut String, summary: &Summary) {
    page.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n<ul>\n");
    for sentence in summary.verdict_sentences() {
        let _ = writeln!(page, "<li>{}</li>", escape(&sentence));
    }
    page.push_str("</ul>\n<p class=\"small\">Rates are violating seeds out of all seeds run, with the 95% Wilson \
                   interval; with no violation, the rule of three's bound (&lt; 3/N). A checker that found nothing \
                   in runs where nobody got the lock after the fault is <em>not exercised</em>, never \
                   <em>holds</em>.</p>\n</section>\n");
}

/// The colour of a violation rate on the figures' scale, and whether text on it must be
/// white.
fn shade(rate: Rate) -> (String, bool) {
    let (colour, dark) = heatmap::colour_of(rate.violating as f64 / rate.seeds.max(1) as f64);
    (hex(colour), dark)
}

fn matrix_section(page: &mut String, matrix: &MatrixSummary, summary: &Summary) {
    page.push_str("<section id=\"matrix\">\n<h2>Safety matrix</h2>\n");
    page.push_str("<p>Each cell crosses a setup with a fault class and runs the seeds. Top: the seeds in which two \
                   clients believed they held the lock at once (mutual exclusion broke). Bottom: the seeds in which \
                   data came to harm, an update lost or a stale token accepted; <em>absorbed</em> where the setup \
                   fences and nothing was damaged. Under them, in red, the liveness lost: a deadlock, or the lock \
                   left free while clients waited (stalled). Darker is worse.</p>\n");
    page.push_str("<p class=\"legend small\">");
    for (i, colour) in SCALE.iter().map(|c| hex(*c)).enumerate() {
        let dark = if i >= 3 { " class=\"dark\"" } else { "" };
        let _ = write!(
            page,
            "<span style=\"background:{colour}\"{dark}>{}%</span>",
            i * 20
        );
    }
    page.push_str(
        " fraction of seeds (white: none) <span class=\"na\" style=\"width:auto\">does not apply</span> \
                   <span class=\"nx\" style=\"width:auto\">not exercised</span></p>\n",
    );
    page.push_str(
        "<div class=\"scroll\"><table class=\"matrix\">\n<caption>Each setup (rows) under each fault class (columns): seeds with \
         two holders over seeds with data damaged</caption>\n<tr><th scope=\"col\">setup \\ fault</th>",
    );
    for fault in &matrix.faults {
        let _ = write!(page, "<th scope=\"col\">{}</th>", escape(&fault.label));
    }
    page.push_str("</tr>\n");
    for (s, setup) in matrix.setups.iter().enumerate() {
        let _ = write!(page, "<tr><th scope=\"row\">{}</th>", escape(&setup.label));
        for f in 0..matrix.faults.len() {
            matrix_cell(page, matrix, s, f, summary);
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
    page.push_str("<h3 id=\"fault-classes\">The fault classes, and what each found</h3>\n<dl>\n");
    for (f, fault) in matrix.faults.iter().enumerate() {
        let _ = writeln!(
            page,
            "<dt id=\"fault-{}\"><strong>{}</strong></dt>\n<dd>{} <em>Found:</em> {}</dd>",
            escape(&fault.name),
            escape(&fault.label),
            escape(&fault.description),
            escape(&fault_classes::found(matrix, f, &summary.matrix_counterexamples))
        );
    }
    page.push_str("</dl>\n</section>\n");
}

/// One shrunk counterexample per fault class that broke something, each with its
/// timeline inline and its story open: the page's evidence, up front.
fn minimal_counterexamples(page: &mut String, summary: &Summary, figures: &Figures) {
    if summary.minimal.is_empty() {
        return;
    }
    page.push_str("<section id=\"minimal\">\n<h2>One minimal counterexample per fault class</h2>\n");
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
            "<article id=\"{}\">\n<h3>{} — {}</h3>",
            escape(&example.id),
            escape(&minimal.fault_label),
            escape(&minimal.setup_label)
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
             in {} of seeds 0–{}.</p>\n</article>",
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
fn all_counterexamples(page: &mut String, summary: &Summary) {
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

/// One cell of the matrix (also shown in Clients compared), in two bands: the seeds in
/// which two clients believed they held the lock (linked to the cell's counterexample),
/// over the seeds in which data came to harm ("absorbed" where the setup fences and
/// nothing was); under them the liveness lost and the seeds not exercised. Hatched where
/// the fault does not apply, grey where no seed contended after the faults.
fn matrix_cell(page: &mut String, matrix: &MatrixSummary, setup: usize, fault: usize, summary: &Summary) {
    let (Some(report), Some(outcome)) = (matrix.cell(setup, fault), matrix.outcome(setup, fault)) else {
        page.push_str("<td class=\"cell na\">does not apply</td>");
        return;
    };
    let foot = outcome
        .stuck_text()
        .map(|text| format!("<div class=\"stuck\">{}</div>", escape(&text)))
        .unwrap_or_default();
    if outcome.safety == Safety::NotExercised {
        let _ = write!(
            page,
            "<td class=\"cell nx\" title=\"{}\">not exercised<br><span class=\"small\">no seed of {} contended \
             after the faults</span>{foot}</td>",
            escape(&report.not_exercised_reason()),
            report.seeds
        );
        return;
    }
    let band = |rate: Rate, text: String| {
        let (colour, dark) = shade(rate);
        let class = if dark { "band dark" } else { "band" };
        format!("<div class=\"{class}\" style=\"background:{colour}\">{text}</div>")
    };
    let overlap = escape(&outcome.overlap_text());
    let overlap = match summary
        .matrix_counterexamples
        .iter()
        .find(|c| c.scenario == report.name)
    {
        Some(example) => format!("<a href=\"#{}\">{overlap}</a>", escape(&example.id)),
        None => overlap,
    };
    let partly = report.seeds - outcome.exercised;
    let partly = if partly > 0 {
        format!(
            "<div class=\"small\" title=\"{}\">{partly} of {} seeds not exercised</div>",
            escape(&report.not_exercised_reason()),
            report.seeds
        )
    } else {
        String::new()
    };
    let _ = write!(
        page,
        "<td class=\"cell two\" title=\"overlap {}; damage {}\">{}{}{foot}{partly}</td>",
        outcome.overlap.cell(),
        outcome.damage.cell(),
        band(outcome.overlap, overlap),
        band(outcome.damage, escape(&outcome.damage_text())),
    );
}

/// The grid's `clients_compared` setups side by side, one column each (so the table fits a
/// 1400 px window however many fault classes there are): how much the lock gets done on
/// the workload they share, how long a client waited before it was granted the lock, and
/// what each fault class did to each (the matrix's cells).
fn clients_compared(page: &mut String, matrix: &MatrixSummary, summary: &Summary) {
    let clients = &matrix.clients_compared;
    if clients.is_empty() {
        return;
    }
    let no_fault = matrix.faults.iter().position(|f| f.name == "none");
    page.push_str("<section id=\"clients\">\n<h2>Clients compared</h2>\n");
    page.push_str(
        "<p>Lock clients side by side on one workload (the matrix's: the same clients, jobs and pauses for \
         every one, each on its own topology), on the same faults and seeds: how much the lock gets done \
         (acquisitions per simulated second), the longest any client waited before it was granted the lock, \
         and what each fault class did to mutual exclusion and to the data. A wait runs from a client's first \
         attempt through every failed one to its grant (a wait cut short by a crash or the end of the run is \
         left out); under it, the cell and seed it comes from (hover for the replay command), and \
         <em>starved</em> where the starvation checker flagged that seed: the others took the lock again and \
         again while this client kept asking, since a client that retries on a timer loses every race to one \
         that releases and asks again at once.</p>\n",
    );
    page.push_str(
        "<div class=\"scroll\"><table>\n<caption>Lock clients on one workload: how much the lock gets done, \
         and what each fault class did to each</caption>\n<tr><th scope=\"col\">client</th>",
    );
    for &s in clients {
        let _ = write!(page, "<th scope=\"col\">{}</th>", escape(&matrix.setups[s].label));
    }
    page.push_str("</tr>\n");
    let no_fault_cell = |s: usize| no_fault.and_then(|f| matrix.cell(s, f));
    let acquisitions: Vec<Option<String>> = clients
        .iter()
        .map(|&s| no_fault_cell(s).map(|report| format!("{:.1}", report.activity.acquisitions_per_s())))
        .collect();
    let _ = write!(page, "<tr><th scope=\"row\">acquisitions/s (no fault)</th>");
    for value in acquisitions {
        match value {
            Some(text) => {
                let _ = write!(page, "<td class=\"cell\">{text}</td>");
            }
            None => page.push_str("<td class=\"cell na\">—</td>"),
        }
    }
    page.push_str("</tr>\n");
    let waits = [
        ("longest wait until granted (no fault)", false),
        ("longest wait until granted (any fault)", true),
    ];
    for (label, any_fault) in waits {
        let _ = write!(page, "<tr><th scope=\"row\">{label}</th>");
        for &s in clients {
            let longest = match any_fault {
                false => no_fault.and_then(|f| Some((f, matrix.cell(s, f)?))),
                true => longest_wait_under_a_fault(matrix, s, no_fault),
            };
            match longest {
                Some((f, report)) => wait_cell(page, matrix, f, report, any_fault),
                None => page.push_str("<td class=\"cell na\">—</td>"),
            }
        }
        page.push_str("</tr>\n");
    }
    for (f, fault) in matrix.faults.iter().enumerate() {
        let _ = write!(page, "<tr><th scope=\"row\">{}</th>", escape(&fault.label));
        for &s in clients {
            matrix_cell(page, matrix, s, f, summary);
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n</section>\n");
}

/// Setup `s`'s cell with the longest wait under any fault class but `no_fault`, with its
/// fault class (the first in grid order where cells tie).
fn longest_wait_under_a_fault(
    matrix: &MatrixSummary,
    s: usize,
    no_fault: Option<usize>,
) -> Option<(usize, &ScenarioReport)> {
    (0..matrix.faults.len())
        .filter(|&f| Some(f) != no_fault)
        .filter_map(|f| Some((f, matrix.cell(s, f)?)))
        .fold(None, |longest, (f, report)| match longest {
            Some((_, kept)) if kept.activity.longest_wait_us >= report.activity.longest_wait_us => longest,
            _ => Some((f, report)),
        })
}

/// A longest wait: how long, and under it where it comes from (the fault class when
/// `name_fault`, and the seed) and whether the starvation checker flagged that seed, with
/// the replay command as its title.
fn wait_cell(
    page: &mut String,
    matrix: &MatrixSummary,
    fault: usize,
    report: &ScenarioReport,
    name_fault: bool,
) {
    let activity = report.activity;
    let Some(seed) = activity.longest_wait_seed else {
        page.push_str("<td class=\"cell\">0 ms</td>");
        return;
    };
    let starved = report
        .violations
        .get(check::starvation::NAME)
        .is_some_and(|seeds| seeds.contains(&seed));
    let mut origin = Vec::new();
    if name_fault {
        origin.push(escape(&matrix.faults[fault].label));
    }
    origin.push(format!("seed {seed}"));
    if starved {
        origin.push("starved".to_string());
    }
    let _ = write!(
        page,
        "<td class=\"cell\" title=\"locksim replay {} --seed {seed}\">{} ms<div class=\"small\">{}</div></td>",
        escape(&report.file.display().to_string()),
        activity.longest_wait_us / 1000,
        origin.join(", ")
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

fn envelopes(page: &mut String, summary: &Summary, figures: &Figures) {
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

fn catalogue(page: &mut String, summary: &Summary) {
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

/// A figure inline: an image to assistive technology, named by its text alternative.
fn inline_figure(page: &mut String, figure: &Figure) {
    let _ = writeln!(
        page,
        "<figure role=\"img\" aria-label=\"{}\">{}</figure>",
        escape(&figure.alt),
        strip_xml_declaration(&figure.svg)
    );
}

/// An SVG file's text without its `<?xml …?>` line, for inlining into HTML.
fn strip_xml_declaration(svg: &str) -> &str {
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest.find("?>").map_or(svg, |end| rest[end + 2..].trim_start()),
        None => svg,
    }
}

/// Text made safe to put in HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }

    #[test]
    fn the_xml_declaration_is_dropped_for_inlining() {
        assert_eq!(strip_xml_declaration("<?xml version=\"1.0\"?>\n<svg/>"), "<svg/>");
        assert_eq!(strip_xml_declaration("<svg/>"), "<svg/>");
    }

    #[test]
    fn worse_rates_are_darker() {
        let rate = |violating| Rate {
            violating,
            seeds: 100,
        };
        assert_eq!(shade(rate(0)).0, "#ffffff");
        assert_eq!(shade(rate(100)), (hex(SCALE[5]), true));
        let step = |r| SCALE.iter().position(|c| hex(*c) == shade(rate(r)).0);
        assert!(step(10) < step(90));
    }
}
