//! The report as one self-contained HTML page: inline CSS and inline SVG figures, no
//! script, no font or file fetched from anywhere, so it opens from a mail attachment or a
//! CI artifact as it is. Every number comes from the [`Summary`]; figures are passed in
//! already drawn. The decision comes first ([`decide`]), then the matrix ([`matrix`]),
//! then the evidence, folded ([`evidence`]). Nothing is shown only on hover: what a
//! title attribute says is on the page too. It reads at 390 px (tables and figures
//! scroll sideways in their own boxes) and prints (no box cut, every fold open).

use std::collections::BTreeMap;
use std::fmt::Write;

mod decide;
mod evidence;
mod matrix;

use super::figures::{heatmap, hex};
use super::rate::Rate;
use super::summary::Summary;

/// A figure drawn for the page: its SVG, the words that say what it shows (its text
/// alternative) and the line under it (its caption).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    pub svg: String,
    pub alt: String,
    pub caption: String,
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
figure { margin: 1em 0; } figure .scroll svg { max-width: none; height: auto; }
figcaption { font-size: .85em; color: #444; margin-top: .3em; }
nav#contents ol { list-style: none; padding: 0; margin: .3em 0 1em; font-size: .9em; }
nav#contents li { display: inline; } nav#contents li + li:before { content: \" · \"; color: #888; }
.provenance { font-size: .85em; color: #444; }
ol.advice li { margin-bottom: .5em; } .evidence { font-size: .85em; }
table.compared td, table.compared th { font-size: .95em; } table.compared td { min-width: 10em; }
.note { display: block; font-weight: normal; font-size: .8em; color: #444; }
.provisional { background: #fff4ce; border: 1px solid #e0b400; padding: .5em .7em; }
div.provisional, p.provisional.small { padding: .1em .3em; }
@media (max-width: 600px) {
  body { margin: 1em auto; padding: 0 .5em; font-size: 15px; }
  table.compared td { min-width: 7em; }
}
@media print {
  body { max-width: none; margin: 0; font-size: 10pt; }
  .scroll { overflow: visible; }
  table.matrix { font-size: 6.5pt; }
  details::details-content { content-visibility: visible; display: block; }
  details > summary { list-style: none; font-weight: bold; }
  section { break-inside: auto; } tr, figure { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
";

/// The whole page, in the order a reader deciding needs it: what to do, the setups
/// compared, the matrix; then the evidence, folded (counterexamples), the envelopes, the
/// catalogue, and how the report was made.
pub fn render(summary: &Summary, figures: &Figures) -> String {
    let mut page = String::new();
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let (title, heading) = match summary.provisional {
        Some(_) => (
            "locksim (provisional): is this Redis lock safe?",
            "locksim safety report — provisional",
        ),
        None => ("locksim: is this Redis lock safe?", "locksim safety report"),
    };
    let _ = writeln!(page, "<title>{title}</title>");
    let _ = write!(page, "<style>{STYLE}</style>\n</head>\n<body>\n");
    let _ = writeln!(page, "<h1>{heading}</h1>");
    provisional_banner(&mut page, summary);
    evidence::provenance_line(&mut page, summary);
    contents(&mut page, summary);
    decide::what_to_do(&mut page, summary);
    if let Some(matrix) = &summary.matrix {
        decide::setups_compared(&mut page, matrix, summary);
        matrix::matrix_section(&mut page, matrix, summary);
        matrix::clients_compared(&mut page, matrix, summary);
    }
    evidence::minimal_counterexamples(&mut page, summary, figures);
    evidence::envelopes(&mut page, summary, figures);
    evidence::all_counterexamples(&mut page, summary);
    evidence::catalogue(&mut page, summary);
    evidence::provenance(&mut page, summary);
    page.push_str("</body>\n</html>\n");
    page
}

/// At the top of a provisional page: that it is one, what is still running and how far it
/// had got, and that the final page replaces it.
fn provisional_banner(page: &mut String, summary: &Summary) {
    let Some(provisional) = &summary.provisional else {
        return;
    };
    let mut running = Vec::new();
    if !provisional.extending.is_empty() {
        running.push(format!(
            "the {} matrix cells that showed no violation in their first seeds are being extended to {} seeds \
             (marked <em>so far</em> below)",
            provisional.extending.len(),
            provisional.holds_seeds
        ));
    }
    if provisional.envelopes_pending {
        running.push("the safety envelopes are being swept".to_string());
    }
    let _ = writeln!(
        page,
        "<p class=\"provisional\" role=\"status\"><strong>Provisional.</strong> This page was written before the run \
         ended: {}; {} of {} of those sweeps had finished. Reload when the run ends: the final report replaces this page, \
         and where they differ the final one is right. No cell is said to <em>hold</em> here: a cell still being \
         extended says only what its first seeds showed.</p>",
        running.join("; "),
        provisional.done,
        provisional.to_run
    );
}

/// On a provisional page, the note a section whose numbers still grow opens with.
fn provisional_note(page: &mut String, summary: &Summary, what: &str) {
    if let Some(provisional) = &summary.provisional {
        let _ = writeln!(
            page,
            "<p class=\"provisional small\">Provisional: {what} from the first seeds of each cell; {} cells are being \
             extended to {} seeds. Reload when the run ends.</p>",
            provisional.extending.len(),
            provisional.holds_seeds
        );
    }
}

/// The table of contents, on one line: every section the page has, in order.
fn contents(page: &mut String, summary: &Summary) {
    let has_matrix = summary.matrix.is_some();
    let has_clients = summary
        .matrix
        .as_ref()
        .is_some_and(|m| !m.clients_compared.is_empty());
    let sections = [
        ("what-to-do", "What to do", true),
        (
            "compared",
            "Setups compared",
            summary.matrix.as_ref().is_some_and(|m| !m.comparisons.is_empty()),
        ),
        ("matrix", "Safety matrix", has_matrix),
        ("clients", "Clients compared", has_clients),
        (
            "minimal",
            "Minimal counterexamples",
            !summary.minimal.is_empty() || summary.provisional.as_ref().is_some_and(|p| p.minimal_pending),
        ),
        ("envelopes", "Safety envelopes", !summary.envelopes.is_empty()),
        (
            "counterexamples",
            "All counterexamples",
            !summary.counterexamples.is_empty() || !summary.matrix_counterexamples.is_empty(),
        ),
        ("catalogue", "Catalogue", true),
        ("provenance", "How this report was made", true),
    ];
    page.push_str("<nav id=\"contents\" aria-label=\"Contents\"><ol>");
    for (id, title, present) in sections {
        if present {
            let _ = write!(page, "<li><a href=\"#{id}\">{title}</a></li>");
        }
    }
    page.push_str("</ol></nav>\n");
}

/// The colour of a violation rate on the figures' scale, and whether text on it must be
/// white.
fn shade(rate: Rate) -> (String, bool) {
    let (colour, dark) = heatmap::colour_of(rate.violating as f64 / rate.seeds.max(1) as f64);
    (hex(colour), dark)
}

/// A figure inline, in a box that scrolls sideways on a narrow screen (the figure keeps
/// its size, so its text stays legible), named by its text alternative, with its caption
/// under it.
fn inline_figure(page: &mut String, figure: &Figure) {
    let _ = writeln!(
        page,
        "<figure><div class=\"scroll\" role=\"img\" aria-label=\"{}\">{}</div><figcaption>{}</figcaption></figure>",
        escape(&figure.alt),
        strip_xml_declaration(&figure.svg),
        escape(&figure.caption),
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
    use crate::report::figures::SCALE;

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
