//! The top of the page: "What to do" (the advice the numbers support, each sentence linked
//! to its evidence) and the setups compared one change at a time.

use std::fmt::Write;

use super::escape;
use crate::report::advice::comparison_anchor;
use crate::report::compare::{Better, comparisons};
use crate::report::matrix_summary::MatrixSummary;
use crate::report::summary::Summary;

/// "What to do": the advice, then what its numbers mean.
pub fn what_to_do(page: &mut String, summary: &Summary) {
    page.push_str("<section id=\"what-to-do\">\n<h2>What to do</h2>\n");
    super::provisional_note(page, summary, "this advice is");
    let advice = summary.advice();
    if advice.is_empty() {
        page.push_str("<p>This report ran no safety matrix, so it has no advice: see the catalogue.</p>\n");
    } else {
        page.push_str("<ol class=\"advice\">\n");
        for item in &advice {
            let links: Vec<String> = item
                .evidence
                .iter()
                .map(|(label, anchor)| format!("<a href=\"#{}\">{}</a>", escape(anchor), escape(label)))
                .collect();
            let _ = writeln!(
                page,
                "<li>{} <span class=\"evidence\">(evidence: {})</span></li>",
                escape(&item.text),
                links.join(", ")
            );
        }
        page.push_str("</ol>\n");
    }
    for sentence in summary.catalogue_sentences() {
        let _ = writeln!(page, "<p class=\"small\">{}</p>", escape(&sentence));
    }
    page.push_str(
        "<p class=\"small\"><em>Overlap</em>: seeds in which two clients believed they held the lock at once; \
         <em>damage</em>: seeds in which an update was lost or a stale token accepted. A cell is said to \
         <em>hold</em> only with no violation in 300 seeds or more (95% upper bound 1.3%); with fewer it says \
         <em>no violation in N seeds</em>. Two setups differ only where Fisher's exact test finds the \
         difference significant at 5%.</p>\n</section>\n",
    );
}

/// How many fault classes a cell of the table lists in the open; more fold under their
/// count, so each pair's row stays a few lines high and the matrix stays near the top.
const INLINE: usize = 3;

/// The grid's pairs, one row each: what the pair changes, where each is the safer, and
/// where there is no significant difference.
pub fn setups_compared(page: &mut String, matrix: &MatrixSummary, summary: &Summary) {
    let comparisons = comparisons(matrix);
    if comparisons.is_empty() {
        return;
    }
    page.push_str("<section id=\"compared\">\n<h2>Setups compared, one change at a time</h2>\n");
    super::provisional_note(page, summary, "these comparisons are");
    page.push_str(
        "<p class=\"small\">Each pair differs in one thing only (the change column), on the same fault classes, \
         workload and seed numbers. A fault class is listed under a setup where that setup is significantly \
         safer there (less damage, else fewer overlaps; Fisher's exact test, 5%), with both cells' numbers, \
         A's first.</p>\n",
    );
    page.push_str(
        "<div class=\"scroll\"><table class=\"compared\">\n<caption>Setups compared pairwise: what changes, and \
         under which fault classes each is safer</caption>\n<tr><th scope=\"col\">setup A</th><th \
         scope=\"col\">against B</th><th scope=\"col\">changes (B → A)</th><th scope=\"col\">A safer</th><th \
         scope=\"col\">B safer</th><th scope=\"col\">no significant difference in safety</th></tr>\n",
    );
    for (index, comparison) in comparisons.iter().enumerate() {
        let listed = |better| {
            let items = comparison.items(matrix, Some(better));
            match items.len() {
                0 => "none".to_string(),
                n if n <= INLINE => escape(&items.join("; ")),
                n => format!(
                    "<details><summary>{n} of {} fault classes</summary><ul>{}</ul></details>",
                    comparison.faults.len(),
                    items
                        .iter()
                        .map(|item| format!("<li>{}</li>", escape(item)))
                        .collect::<String>()
                ),
            }
        };
        let b_safer = listed(Better::Against);
        let ties = comparison.where_(None).len();
        let mut same = match comparison.ties(matrix) {
            Some(list) => format!(
                "<details><summary>{ties} of {} fault classes</summary>{}</details>",
                comparison.faults.len(),
                escape(&list)
            ),
            None => "none".to_string(),
        };
        if let Some(lost) = comparison.listed(matrix, Some(Better::Liveness)) {
            same += &format!(
                "<span class=\"note\">the lock lost with one of them: {}</span>",
                escape(&lost)
            );
        }
        let _ = writeln!(
            page,
            "<tr id=\"{}\"><th scope=\"row\">{}</th><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            comparison_anchor(index),
            escape(&matrix.setups[comparison.setup].label),
            escape(&matrix.setups[comparison.against].label),
            escape(&comparison.change(matrix)),
            listed(Better::Setup),
            b_safer,
            same,
        );
    }
    page.push_str("</table></div>\n");
    page.push_str("</section>\n");
}
