//! The safety matrix on the page (every setup under every fault class, each column with
//! the nodes its faults strike in each topology) and the lock clients compared within
//! each topology.

use std::fmt::Write;

use super::{escape, shade};
use crate::check;
use crate::report::ScenarioReport;
use crate::report::advice::{cell_anchor, fault_anchor};
use crate::report::fault_classes;
use crate::report::figures::{heatmap, hex};
use crate::report::matrix_summary::MatrixSummary;
use crate::report::outcome::Safety;
use crate::report::rate::Rate;
use crate::report::summary::Summary;
use crate::scenario::grid::{FaultColumn, topology_words};

/// "< 1.3%": the 95% upper bound of a rate with no violation.
fn bound(rate: Rate) -> String {
    let (_, high) = rate.wilson95();
    format!("< {:.1}%", high * 100.0)
}

/// A column's strikes in full: "single node: the master; Redlock, 5 masters: 3 of 5 masters".
fn strikes_text(fault: &FaultColumn) -> String {
    let parts: Vec<String> = fault
        .strikes
        .iter()
        .map(|(topology, struck)| format!("{topology}: {struck}"))
        .collect();
    parts.join("; ")
}

/// A column's strikes in a few words, for its header: what most topologies have said once
/// ("the master"), and each topology that differs by name ("Redlock, 5 masters: 3 of 5
/// masters; others: the master").
fn strikes_short(fault: &FaultColumn) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (topology, struck) in &fault.strikes {
        match groups.iter_mut().find(|(said, _)| said == struck) {
            Some((_, topologies)) => topologies.push(topology),
            None => groups.push((struck, vec![topology])),
        }
    }
    let Some(most) = (0..groups.len()).max_by_key(|&g| (groups[g].1.len(), std::cmp::Reverse(g))) else {
        return String::new();
    };
    if groups.len() == 1 {
        return groups[most].0.to_string();
    }
    let mut parts: Vec<String> = groups
        .iter()
        .enumerate()
        .filter(|&(g, _)| g != most)
        .flat_map(|(_, (struck, topologies))| topologies.iter().map(move |t| format!("{t}: {struck}")))
        .collect();
    parts.push(format!("others: {}", groups[most].0));
    parts.join("; ")
}

/// The matrix's key: each step of the colour scale as the cells use it, then the two
/// greys.
fn matrix_legend(page: &mut String) {
    page.push_str("<p class=\"legend small\">");
    for (fraction, text) in heatmap::scale_steps() {
        let (colour, dark) = heatmap::colour_of(fraction);
        let dark = if dark { " class=\"dark\"" } else { "" };
        let _ = write!(
            page,
            "<span style=\"background:{}\"{dark}>{}</span>",
            hex(colour),
            escape(&text)
        );
    }
    page.push_str(
        " of the seeds <span class=\"na\" style=\"width:auto\">does not apply</span> \
                   <span class=\"nx\" style=\"width:auto\">not exercised</span></p>\n",
    );
}

pub fn matrix_section(page: &mut String, matrix: &MatrixSummary, summary: &Summary) {
    page.push_str("<section id=\"matrix\">\n<h2>Safety matrix</h2>\n");
    page.push_str(
        "<p class=\"small\">Each cell is a setup (row) under a fault class (column): top, the seeds in which two \
         clients believed they held the lock at once; bottom, the seeds in which data came to harm (an update lost, \
         a stale token accepted), <em>absorbed</em> where fencing kept it whole; in red, the liveness lost (a \
         deadlock, or the lock left free while clients waited). 50 seeds a cell; a setup the comparisons name goes \
         on to 300 where its first 50 show no violation. Under each fault class, the Redis nodes it strikes. \
         Darker is worse.</p>\n",
    );
    super::provisional_note(page, summary, "the cells marked <em>so far</em> are");
    matrix_legend(page);
    page.push_str(
        "<div class=\"scroll\"><table class=\"matrix\">\n<caption>Each setup (rows) under each fault class (columns): seeds with \
         two holders over seeds with data damaged</caption>\n<tr><th scope=\"col\">setup \\ fault</th>",
    );
    for (f, fault) in matrix.faults.iter().enumerate() {
        let _ = write!(
            page,
            "<th scope=\"col\"><a href=\"#{}\">{}</a><span class=\"note\">{}</span></th>",
            fault_anchor(matrix, f),
            escape(&fault.label),
            escape(&strikes_short(fault))
        );
    }
    page.push_str("</tr>\n");
    for (s, setup) in matrix.setups.iter().enumerate() {
        let _ = write!(page, "<tr><th scope=\"row\">{}</th>", escape(&setup.label));
        for f in 0..matrix.faults.len() {
            matrix_cell(page, matrix, s, f, summary, true);
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
    page.push_str(
        "<details><summary id=\"fault-classes\">The fault classes: what each does, which nodes it \
                   strikes in each topology, and what it found</summary>\n<dl>\n",
    );
    for (f, fault) in matrix.faults.iter().enumerate() {
        let _ = writeln!(
            page,
            "<dt id=\"{}\"><strong>{}</strong></dt>\n<dd>{} <em>Strikes:</em> {}. <em>Found:</em> {}</dd>",
            fault_anchor(matrix, f),
            escape(&fault.label),
            escape(&fault.description),
            escape(&strikes_text(fault)),
            escape(&fault_classes::found(matrix, f, &summary.matrix_counterexamples))
        );
    }
    page.push_str("</dl>\n</details>\n</section>\n");
}

/// One cell of the matrix (also shown in Clients compared), in two bands: the seeds in
/// which two clients believed they held the lock (linked to the cell's counterexample),
/// over the seeds in which data came to harm ("absorbed" where the setup fences and
/// nothing was); under them the liveness lost and the seeds not exercised. Hatched where
/// the fault does not apply, grey where no seed contended after the faults.
fn matrix_cell(
    page: &mut String,
    matrix: &MatrixSummary,
    setup: usize,
    fault: usize,
    summary: &Summary,
    anchored: bool,
) {
    let id = match anchored {
        true => format!(" id=\"{}\"", cell_anchor(matrix, setup, fault)),
        false => String::new(),
    };
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
            "<td class=\"cell nx\"{id}>not exercised<br><span class=\"small\">{} seeds: {}</span>{foot}</td>",
            report.seeds,
            escape(&report.not_exercised_reason())
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
            "<div class=\"small\">{partly} of {} seeds not exercised</div>",
            report.seeds
        )
    } else {
        String::new()
    };
    let claim = match outcome.safety {
        Safety::Holds => format!(
            "<div class=\"small\">holds ({})</div>",
            escape(&bound(outcome.overlap))
        ),
        Safety::NoneSeen => format!(
            "<div class=\"small\">none in {} ({})</div>",
            outcome.overlap.seeds,
            escape(&bound(outcome.overlap))
        ),
        _ => String::new(),
    };
    let claim = match &summary.provisional {
        Some(provisional) if provisional.extends(setup, fault) => format!(
            "{claim}<div class=\"small provisional\">so far: going on to {} seeds</div>",
            provisional.holds_seeds
        ),
        _ => claim,
    };
    let _ = write!(
        page,
        "<td class=\"cell two\"{id}>{}{}{claim}{foot}{partly}</td>",
        band(outcome.overlap, overlap),
        band(outcome.damage, escape(&outcome.damage_text())),
    );
}

/// The grid's `clients_compared` setups side by side, one column each (so the table fits a
/// 1400 px window however many fault classes there are): how much the lock gets done on
/// the workload they share, how long a client waited before it was granted the lock, and
/// what each fault class did to each (the matrix's cells).
pub fn clients_compared(page: &mut String, matrix: &MatrixSummary, summary: &Summary) {
    // Grouped by topology, in the grid's order within each: a client runs on its own
    // topology, so only clients side by side under one topology heading compare like
    // with like.
    let mut topologies: Vec<String> = Vec::new();
    for &s in &matrix.clients_compared {
        let words = topology_words(&matrix.setups[s]);
        if !topologies.contains(&words) {
            topologies.push(words);
        }
    }
    let clients: Vec<usize> = topologies
        .iter()
        .flat_map(|t| {
            matrix
                .clients_compared
                .iter()
                .copied()
                .filter(move |&s| topology_words(&matrix.setups[s]) == *t)
        })
        .collect();
    let clients = &clients;
    if clients.is_empty() {
        return;
    }
    let no_fault = matrix.faults.iter().position(|f| f.name == "none");
    page.push_str("<section id=\"clients\">\n<h2>Clients compared</h2>\n");
    page.push_str(
        "<p>Lock clients side by side on one workload (the matrix's: the same clients, jobs and pauses for \
         every one), on the same faults and seeds, grouped by the topology each runs on: compare clients \
         within a group; across groups the topology differs too. For each: how much the lock gets done \
         (acquisitions per simulated second), the longest any client waited before it was granted the lock, \
         and what each fault class did to mutual exclusion and to the data. A wait runs from a client's first \
         attempt through every failed one to its grant (a wait cut short by a crash or the end of the run is \
         left out); under it, the cell and seed it comes from (and its replay command, folded), and \
         <em>starved</em> where the starvation checker flagged that seed: the others took the lock again and \
         again while this client kept asking, since a client that retries on a timer loses every race to one \
         that releases and asks again at once.</p>\n",
    );
    page.push_str(
        "<div class=\"scroll\"><table>\n<caption>Lock clients on one workload: how much the lock gets done, \
         and what each fault class did to each, grouped by topology</caption>\n<tr><th scope=\"col\">topology</th>",
    );
    for topology in &topologies {
        let span = clients
            .iter()
            .filter(|&&s| topology_words(&matrix.setups[s]) == *topology)
            .count();
        let _ = write!(
            page,
            "<th scope=\"colgroup\" colspan=\"{span}\">{}</th>",
            escape(topology)
        );
    }
    page.push_str("</tr>\n<tr><th scope=\"col\">client</th>");
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
            matrix_cell(page, matrix, s, f, summary, false);
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
        "<td class=\"cell\">{} ms<div class=\"small\">{}</div><details class=\"small\"><summary>replay</summary>\
         <code>locksim replay {} --seed {seed}</code></details></td>",
        activity.longest_wait_us / 1000,
        origin.join(", "),
        escape(&report.file.display().to_string()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_labels_each_colour_with_the_rates_it_colours() {
        let mut legend = String::new();
        matrix_legend(&mut legend);
        // Each swatch: its background and its label ("none", "&gt; 0%", "≥ 20%", …).
        let swatches: Vec<(&str, &str)> = legend
            .split("<span style=\"background:")
            .skip(1)
            .map(|swatch| {
                let colour = &swatch[..7];
                let label = &swatch[swatch.find('>').unwrap() + 1..swatch.find("</span>").unwrap()];
                (colour, label)
            })
            .collect();
        assert_eq!(swatches.len(), 6, "{legend}");
        for violating in 0..=50 {
            let rate = Rate { violating, seeds: 50 };
            let percent = violating * 2;
            let colour = shade(rate).0;
            let (_, label) = swatches
                .iter()
                .find(|(c, _)| *c == colour)
                .unwrap_or_else(|| panic!("{violating}/50 is coloured {colour}, which the legend lacks"));
            let fits = match *label {
                "none" => percent == 0,
                "&gt; 0%" => percent > 0 && percent < 20,
                at_least => {
                    let low: u64 = at_least
                        .trim_start_matches("≥ ")
                        .trim_end_matches('%')
                        .parse()
                        .unwrap();
                    percent >= low && (low == 80 || percent < low + 20)
                }
            };
            assert!(fits, "{violating}/50 ({percent}%) is coloured as {label}");
        }
    }
}
