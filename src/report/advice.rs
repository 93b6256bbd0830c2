//! "What to do": the few sentences that open the report, each generated from the matrix's
//! numbers and linked to the cells and comparisons it rests on. Nothing here is written by
//! hand about a result: a sentence is said only when the numbers say it, and its numbers
//! are quoted in it.
//!
//! The sentences, in order (research/report-decides.md, the anchors' closing advice):
//! 1. the fault classes no setup survives (every setup they apply to had two holders);
//! 2. fencing, with its preconditions: tokens from a counter that survives failover,
//!    checked by the resource, protect the data and not the lock; tokens from `INCR` on
//!    the lock's own master repeat after a failover;
//! 3. the release at least a compare-and-delete needs (the lock ladder's lower tiers
//!    against tier 5, where the grid has them);
//! 4. one sentence per comparison that is not about fencing: what the change bought, and
//!    where it bought nothing.

use serde_json::{Value, json};

use super::compare::{Better, Comparison, comparisons};
use super::matrix_summary::MatrixSummary;
use super::outcome::{Outcome, Safety};
use crate::scenario::Fencing;
use crate::scenario::grid::changes;

/// One sentence of advice and the evidence it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    pub text: String,
    /// Links to the evidence: what a link says, and the page anchor it goes to.
    pub evidence: Vec<(String, String)>,
}

impl Advice {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        json!({
            "text": self.text,
            "evidence": self.evidence.iter().map(|(label, anchor)| json!({"label": label, "anchor": anchor})).collect::<Vec<_>>(),
        })
    }
}

/// The page anchor of the cell `setup` × `fault`.
pub fn cell_anchor(matrix: &MatrixSummary, setup: usize, fault: usize) -> String {
    format!(
        "cell-{}--{}",
        matrix.setups[setup].name, matrix.faults[fault].name
    )
}

/// The page anchor of comparison number `index`.
pub fn comparison_anchor(index: usize) -> String {
    format!("compare-{}", index + 1)
}

/// The page anchor of fault class `fault`.
pub fn fault_anchor(matrix: &MatrixSummary, fault: usize) -> String {
    format!("fault-{}", matrix.faults[fault].name)
}

/// How many fault classes the ladder's sentence quotes for each lower tier (the first
/// in the grid's order where it does worse).
const EXAMPLES: usize = 1;

/// Every sentence the matrix supports, in the module's order.
pub fn advice(matrix: &MatrixSummary) -> Vec<Advice> {
    let mut advice = Vec::new();
    advice.extend(unsurvived(matrix));
    advice.extend(fencing(matrix));
    advice.extend(ladder(matrix));
    for (index, comparison) in comparisons(matrix).iter().enumerate() {
        let fencing_changes = changes(
            &matrix.setups[comparison.against],
            &matrix.setups[comparison.setup],
        )
        .iter()
        .any(|(path, _, _)| path == "lock.fencing");
        if !fencing_changes {
            advice.push(change(matrix, index, comparison));
        }
    }
    advice
}

/// "overlap 50/50", "damage 48/50", "not exercised".
fn numbers(outcome: &Outcome) -> String {
    match outcome.safety {
        Safety::Damage => format!(
            "overlap {}/{}, damage {}/{}",
            outcome.overlap.violating, outcome.overlap.seeds, outcome.damage.violating, outcome.damage.seeds
        ),
        Safety::NotExercised => "not exercised".into(),
        _ => format!(
            "overlap {}/{}, no damage",
            outcome.overlap.violating, outcome.overlap.seeds
        ),
    }
}

/// How many setups may keep mutual exclusion under a fault class that a sentence still
/// calls one that (nearly) no setup survives; each is named, with what it pays instead.
const SURVIVORS: usize = 1;

/// The fault classes under which every setup exercised, or all but [`SURVIVORS`], had two
/// holders at once; a survivor is named with the liveness it loses elsewhere (a lock with
/// no TTL survives a pause by never expiring, and deadlocks when its holder crashes).
fn unsurvived(matrix: &MatrixSummary) -> Option<Advice> {
    // Fault classes grouped by who kept mutual exclusion under them, in grid order.
    let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    for fault in 0..matrix.faults.len() {
        let exercised: Vec<(usize, Outcome)> = (0..matrix.setups.len())
            .filter_map(|s| Some((s, matrix.outcome(s, fault)?)))
            .filter(|(_, o)| o.safety != Safety::NotExercised)
            .collect();
        let broke = exercised.iter().filter(|(_, o)| o.overlap.violating > 0).count();
        let kept: Vec<usize> = exercised
            .iter()
            .filter(|(_, o)| o.overlap.violating == 0)
            .map(|&(s, _)| s)
            .collect();
        if broke < 2 || kept.len() > SURVIVORS {
            continue;
        }
        match groups.iter_mut().find(|(survivors, _)| *survivors == kept) {
            Some((_, faults)) => faults.push(fault),
            None => groups.push((kept, vec![fault])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let mut evidence: Vec<(String, String)> = Vec::new();
    let mut sentences = Vec::new();
    for (kept, faults) in &groups {
        let labels: Vec<&str> = faults.iter().map(|&f| matrix.faults[f].label.as_str()).collect();
        for &f in faults {
            evidence.push((matrix.faults[f].label.clone(), fault_anchor(matrix, f)));
        }
        let sentence = match kept.first() {
            None => format!(
                "No setup here keeps mutual exclusion under {}: every setup it applies to had two clients \
                 holding the lock at once.",
                and_list(&labels)
            ),
            Some(&s) => {
                let mut sentence = format!(
                    "Under {}, only {} kept it",
                    and_list(&labels),
                    matrix.setups[s].label
                );
                match worst_stuck(matrix, s) {
                    Some((f, stuck)) => {
                        sentence += &format!(", and it {} under {}.", stuck, matrix.faults[f].label);
                        let link = (
                            format!("{} × {}", matrix.setups[s].label, matrix.faults[f].label),
                            cell_anchor(matrix, s, f),
                        );
                        if !evidence.contains(&link) {
                            evidence.push(link);
                        }
                    }
                    None => sentence.push('.'),
                }
                sentence
            }
        };
        sentences.push(sentence);
    }
    // Groups nobody survived first: they are the plainest news.
    sentences.sort_by_key(|sentence| !sentence.starts_with("No setup"));
    if !sentences[0].starts_with("No setup") {
        sentences.insert(0, "Do not count on mutual exclusion.".to_string());
    }
    Some(Advice {
        text: format!(
            "{} A Redis lock alone is an efficiency lock: where a second holder does harm, fence the writes (next).",
            sentences.join(" ")
        ),
        evidence,
    })
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The cell where setup `s` lost the most liveness (a deadlock before a stall), in words:
/// "deadlocked in 50/50 seeds".
fn worst_stuck(matrix: &MatrixSummary, s: usize) -> Option<(usize, String)> {
    (0..matrix.faults.len())
        .filter_map(|f| Some((f, matrix.outcome(s, f)?)))
        .flat_map(|(f, o)| o.stuck.into_iter().map(move |(word, rate)| (f, word, rate)))
        .max_by_key(|&(f, word, rate)| {
            (
                word == "deadlock",
                rate.violating * 1000 / rate.seeds.max(1),
                std::cmp::Reverse(f),
            )
        })
        .map(|(f, word, rate)| {
            let verb = if word == "deadlock" {
                "deadlocked"
            } else {
                "stalled"
            };
            (f, format!("{verb} in {}/{} seeds", rate.violating, rate.seeds))
        })
}

/// Fencing, with its preconditions, from the fenced setups' cells.
fn fencing(matrix: &MatrixSummary) -> Option<Advice> {
    let cells = |kind: Fencing| {
        (0..matrix.setups.len())
            .filter(move |&s| matrix.setups[s].fencing == kind)
            .flat_map(move |s| {
                (0..matrix.faults.len()).filter_map(move |f| Some((s, f, matrix.outcome(s, f)?)))
            })
    };
    let overlapped: Vec<(usize, usize, Outcome)> = cells(Fencing::Counter)
        .filter(|(_, _, o)| o.overlap.violating > 0)
        .collect();
    if overlapped.is_empty() {
        return None;
    }
    let absorbed = overlapped
        .iter()
        .filter(|(_, _, o)| o.damage.violating == 0)
        .count();
    let mut evidence = Vec::new();
    let example = overlapped
        .iter()
        .max_by_key(|(s, f, o)| (o.overlap.violating, std::cmp::Reverse((*s, *f))))
        .expect("not empty");
    evidence.push((
        format!(
            "{} × {}",
            matrix.setups[example.0].label, matrix.faults[example.1].label
        ),
        cell_anchor(matrix, example.0, example.1),
    ));
    let mut text = format!(
        "Where correctness matters, fence every write: with tokens from a separate counter, checked by the \
         resource, the data came to no harm in {absorbed} of the {} fenced cells where two clients held the lock. \
         Fencing protects the resource, not the lock: the overlap stays ({} under {}: {}), and so does any \
         lost liveness.",
        overlapped.len(),
        matrix.setups[example.0].label,
        matrix.faults[example.1].label,
        numbers(&example.2)
    );
    let repeated: Vec<(usize, usize, Outcome)> = cells(Fencing::MasterIncr)
        .filter(|(_, _, o)| o.damage.violating > 0)
        .collect();
    if let Some((s, f, o)) = repeated
        .iter()
        .max_by_key(|(s, f, o)| (o.damage.violating, std::cmp::Reverse((*s, *f))))
    {
        text += &format!(
            " The counter must survive what the lock's master does not: tokens from INCR on the lock's own master \
             repeat once it loses writes (a failover before replication, a restart without persistence), and {} \
             damaged data under {} ({}).",
            matrix.setups[*s].label,
            matrix.faults[*f].label,
            numbers(o)
        );
        evidence.push((
            format!("{} × {}", matrix.setups[*s].label, matrix.faults[*f].label),
            cell_anchor(matrix, *s, *f),
        ));
    }
    Some(Advice { text, evidence })
}

/// The release at least a compare-and-delete needs: each single-node setup that differs
/// from the Lua-release one only in its algorithm, and where it does worse.
fn ladder(matrix: &MatrixSummary) -> Option<Advice> {
    let algorithm = |s: usize| {
        matrix.setups[s]
            .settings
            .iter()
            .find(|(path, _)| path == "lock.algorithm")
            .map(|(_, value)| value.trim_matches('"').to_string())
    };
    let tier5 = (0..matrix.setups.len())
        .find(|&s| algorithm(s).as_deref() == Some("lua-release") && matrix.setups[s].settings.len() == 3)?;
    let mut parts = Vec::new();
    let mut evidence = Vec::new();
    for s in (0..matrix.setups.len()).filter(|&s| s != tier5) {
        let changed = changes(&matrix.setups[tier5], &matrix.setups[s]);
        if changed.len() != 1 || changed[0].0 != "lock.algorithm" {
            continue;
        }
        let worse: Vec<String> = Comparison::new(matrix, s, tier5)
            .faults
            .iter()
            .filter(|c| c.better() == Some(Better::Against) || stuck_only(&c.setup, &c.against))
            .take(EXAMPLES)
            .map(|c| {
                evidence.push((
                    format!("{} × {}", matrix.setups[s].label, matrix.faults[c.fault].label),
                    cell_anchor(matrix, s, c.fault),
                ));
                format!("{} ({})", matrix.faults[c.fault].label, worse_words(&c.setup))
            })
            .collect();
        if !worse.is_empty() {
            parts.push(format!("{} under {}", matrix.setups[s].label, worse.join(", ")));
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(Advice {
        text: format!(
            "Release with a random value and a compare-and-delete in Lua ({}) at least: the simpler releases \
             break or stall where it does not: {}.",
            matrix.setups[tier5].label,
            parts.join("; ")
        ),
        evidence,
    })
}

/// Whether `setup` lost liveness (a deadlock, a stalled lock) where `against` did not.
fn stuck_only(setup: &Outcome, against: &Outcome) -> bool {
    !setup.stuck.is_empty() && against.stuck.is_empty()
}

/// What went wrong in a cell, in a few words: its damage or overlap, and its liveness lost.
fn worse_words(outcome: &Outcome) -> String {
    let mut words = Vec::new();
    if outcome.overlap.violating > 0 || outcome.damage.violating > 0 {
        words.push(numbers(outcome));
    }
    if let Some(stuck) = outcome.stuck_text() {
        words.push(stuck);
    }
    words.join("; ")
}

/// What one comparison's change bought, and where it bought nothing.
fn change(matrix: &MatrixSummary, index: usize, comparison: &Comparison) -> Advice {
    let (a, b) = (
        &matrix.setups[comparison.setup].label,
        &matrix.setups[comparison.against].label,
    );
    let n = comparison.faults.len();
    let mut parts = Vec::new();
    if let Some(list) = comparison.listed(matrix, Some(Better::Setup)) {
        parts.push(format!("safer under {list}"));
    }
    if let Some(list) = comparison.listed(matrix, Some(Better::Against)) {
        parts.push(format!("less safe under {list}"));
    }
    let same = comparison.where_(None).len();
    if same == n {
        parts.push(format!(
            "no significant difference in safety under any of the {n} fault classes both ran"
        ));
    } else if same > 0 {
        parts.push(format!("no significant difference under the other {same} of {n}"));
    }
    if let Some(list) = comparison.listed(matrix, Some(Better::Liveness)) {
        parts.push(format!("the lock was lost with one of them under {list}"));
    }
    let mut text = format!(
        "{a} against {b} (changes {}): {}",
        comparison.change(matrix),
        parts.join("; ")
    );
    text.push('.');
    Advice {
        text,
        evidence: vec![(format!("comparison {}", index + 1), comparison_anchor(index))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::compare::tests::{cell, fenced_setup, setup};
    use crate::scenario::TopologyKind;
    use crate::scenario::grid::FaultColumn;

    fn fault(name: &str) -> FaultColumn {
        FaultColumn {
            name: name.into(),
            label: name.into(),
            description: String::new(),
            strikes: Vec::new(),
        }
    }

    /// Tier 5, its counter-fenced and INCR-fenced twins, under a pause and a failover.
    fn matrix(pause: [(u64, u64); 3], failover: [(u64, u64); 3]) -> MatrixSummary {
        let row = |(overlap, damage): (u64, u64)| Some(cell(50, overlap, damage));
        MatrixSummary {
            setups: vec![
                setup("lua-release", "tier 5", false, TopologyKind::Single),
                fenced_setup("counter", "tier 5 + counter", Fencing::Counter),
                fenced_setup("incr", "tier 5 + INCR", Fencing::MasterIncr),
            ],
            faults: vec![fault("pause"), fault("failover")],
            cells: (0..3).map(|s| vec![row(pause[s]), row(failover[s])]).collect(),
            comparisons: Vec::new(),
            clients_compared: Vec::new(),
        }
    }

    #[test]
    fn a_fault_every_setup_breaks_under_is_said_and_one_some_survive_is_not() {
        let m = matrix([(50, 48), (50, 0), (50, 0)], [(10, 10), (0, 0), (0, 0)]);
        let said = unsurvived(&m).expect("every setup overlaps under the pause");
        assert!(
            said.text
                .starts_with("No setup here keeps mutual exclusion under pause: every setup it applies to"),
            "{}",
            said.text
        );
        assert!(
            !said.text.contains("failover"),
            "the counter-fenced setup survived it"
        );
        assert_eq!(said.evidence, [("pause".to_string(), "fault-pause".to_string())]);
        let one_kept = matrix([(0, 0), (50, 0), (50, 0)], [(0, 0), (0, 0), (0, 0)]);
        let said = unsurvived(&one_kept).expect("one survivor is named");
        assert!(
            said.text
                .starts_with("Do not count on mutual exclusion. Under pause, only tier 5 kept it"),
            "{}",
            said.text
        );
        let calm = matrix([(0, 0), (0, 0), (50, 0)], [(0, 0), (0, 0), (0, 0)]);
        assert!(
            unsurvived(&calm).is_none(),
            "two survivors: not a fault nothing survives"
        );
    }

    #[test]
    fn fencing_says_what_it_protects_and_that_incr_on_the_master_repeats() {
        let m = matrix([(50, 48), (50, 0), (50, 0)], [(10, 10), (9, 0), (9, 9)]);
        let said = fencing(&m).expect("fenced cells overlapped");
        assert!(
            said.text.contains("no harm in 2 of the 2 fenced cells"),
            "{}",
            said.text
        );
        assert!(
            said.text.contains("protects the resource, not the lock"),
            "{}",
            said.text
        );
        assert!(
            said.text
                .contains("tier 5 + INCR damaged data under failover (overlap 9/50, damage 9/50)"),
            "{}",
            said.text
        );
        let no_overlap = matrix([(50, 48), (0, 0), (0, 0)], [(0, 0), (0, 0), (0, 0)]);
        assert!(
            fencing(&no_overlap).is_none(),
            "nothing fenced overlapped: nothing to say"
        );
    }
}
