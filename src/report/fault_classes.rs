//! What each fault class of the matrix found, in computed words: which setups broke mutual
//! exclusion and in how many seeds, and, for a cell broken in only some seeds whose
//! counterexample shows it, that the holder which lost the lock had been granted it by a
//! bare majority of the nodes (what one master's fault can take away, anchors S4). The
//! grid says what a class does; what it found is only ever computed here, from the cells
//! and their counterexamples.

use super::counterexample::Counterexample;
use super::matrix_summary::MatrixSummary;
use super::outcome::Safety;
use crate::check;

/// How many setups broken in every seed a sentence names before it only counts them.
const MAX_NAMED: usize = 3;

/// What fault class `fault` found over its cells, in a sentence or two;
/// `counterexamples` are the matrix cells' (a cell's is found by its scenario name).
pub fn found(matrix: &MatrixSummary, fault: usize, counterexamples: &[Counterexample]) -> String {
    let mutex = check::mutual_exclusion::NAME;
    let applicable: Vec<usize> = (0..matrix.setups.len())
        .filter(|&s| matrix.cell(s, fault).is_some())
        .collect();
    let unexercised = applicable
        .iter()
        .filter(|&&s| {
            matrix
                .outcome(s, fault)
                .is_some_and(|o| o.safety == Safety::NotExercised)
        })
        .count();
    let broke: Vec<usize> = applicable
        .iter()
        .copied()
        .filter(|&s| matrix.cell(s, fault).is_some_and(|r| r.rate(mutex).violating > 0))
        .collect();
    let label = |s: usize| matrix.setups[s].label.as_str();
    let not_exercised = match unexercised {
        0 => String::new(),
        n => format!(" ({n} not exercised)"),
    };
    if broke.is_empty() {
        let seeds: Vec<u64> = applicable
            .iter()
            .filter_map(|&s| matrix.cell(s, fault).map(|r| r.seeds))
            .collect();
        let (fewest, most) = (
            seeds.iter().min().copied().unwrap_or(0),
            seeds.iter().max().copied().unwrap_or(0),
        );
        let seeds = match fewest == most {
            true => format!("{most} seeds each"),
            false => format!("{fewest} to {most} seeds each"),
        };
        return format!(
            "No setup broke mutual exclusion ({} setups it applies to, {seeds}{not_exercised}).",
            applicable.len()
        );
    }
    let (every, partly): (Vec<usize>, Vec<usize>) = broke.iter().partition(|&&s| {
        matrix
            .cell(s, fault)
            .is_some_and(|r| r.rate(mutex).violating == r.seeds)
    });
    let mut parts = Vec::new();
    match every.len() {
        0 => {}
        n if n <= MAX_NAMED => parts.push(format!(
            "in every seed for {}",
            every.iter().map(|&s| label(s)).collect::<Vec<_>>().join("; ")
        )),
        n => parts.push(format!("in every seed for {n} of them")),
    }
    for &s in &partly {
        let rate = matrix
            .cell(s, fault)
            .map(|r| r.rate(mutex))
            .expect("a broken cell ran");
        parts.push(format!("{} {}/{}", label(s), rate.violating, rate.seeds));
    }
    let mut sentence = format!(
        "Mutual exclusion broke for {} of {} setups{not_exercised}: {}.",
        broke.len(),
        applicable.len(),
        parts.join("; ")
    );
    // Where only some seeds broke, what set those apart: a holder granted the lock by a
    // bare majority of several nodes, in the cell's first violating seed.
    let bare: Vec<String> = partly
        .iter()
        .filter_map(|&s| {
            let report = matrix.cell(s, fault)?;
            let example = counterexamples.iter().find(|c| c.scenario == report.name)?;
            let grant = example.overlap_grant.filter(|g| g.bare_majority())?;
            Some(format!(
                "{} (seed {}: {} of {})",
                label(s),
                example.seed,
                grant.granted,
                grant.asked
            ))
        })
        .collect();
    if !bare.is_empty() {
        sentence.push_str(&format!(
            " The holder that lost the lock had been granted it by a bare majority of the nodes in the first \
             violating seed of {}.",
            bare.join("; ")
        ));
    }
    sentence
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::compare::tests::{cell, setup};
    use crate::report::matrix_summary::FaultColumn;
    use crate::scenario::TopologyKind;
    use crate::search::story::GrantShare;

    fn matrix(cells: Vec<Option<(u64, u64)>>) -> MatrixSummary {
        let labels = [
            ("Redlock", TopologyKind::Redlock),
            ("single node", TopologyKind::Single),
            ("replicated", TopologyKind::Replicated),
            ("fenced", TopologyKind::Single),
            ("watchdog", TopologyKind::Single),
        ];
        MatrixSummary {
            setups: labels
                .iter()
                .take(cells.len())
                .map(|&(l, topology)| setup(&l.replace(' ', "-"), l, false, topology))
                .collect(),
            faults: vec![FaultColumn {
                name: "jump".into(),
                label: "one master's clock jumps".into(),
                description: String::new(),
                strikes: Vec::new(),
            }],
            cells: cells
                .into_iter()
                .enumerate()
                .map(|(s, c)| {
                    vec![c.map(|(seeds, overlap)| {
                        let mut report = cell(seeds, overlap, 0);
                        report.name = format!("cell-{s}");
                        report
                    })]
                })
                .collect(),
            comparisons: Vec::new(),
            clients_compared: Vec::new(),
        }
    }

    fn example(scenario: &str, seed: u64, grant: Option<GrantShare>) -> Counterexample {
        Counterexample {
            id: format!("{scenario}-seed-{seed}"),
            scenario: scenario.into(),
            file: "cell.json".into(),
            seed,
            violations: Vec::new(),
            story: Vec::new(),
            digest: String::new(),
            overlap_grant: grant,
        }
    }

    #[test]
    fn a_class_that_broke_nothing_says_so() {
        let m = matrix(vec![Some((50, 0)), Some((50, 0)), None]);
        assert_eq!(
            found(&m, 0, &[]),
            "No setup broke mutual exclusion (2 setups it applies to, 50 seeds each)."
        );
    }

    #[test]
    fn the_sentence_gives_each_partial_break_and_the_bare_majority_behind_it() {
        let m = matrix(vec![Some((50, 2)), Some((50, 50)), Some((50, 0))]);
        let bare = GrantShare { granted: 3, asked: 5 };
        let examples = [example("cell-0", 17, Some(bare)), example("cell-1", 0, None)];
        assert_eq!(
            found(&m, 0, &examples),
            "Mutual exclusion broke for 2 of 3 setups: in every seed for single node; Redlock 2/50. The holder \
             that lost the lock had been granted it by a bare majority of the nodes in the first violating seed of \
             Redlock (seed 17: 3 of 5)."
        );
        let every = [example("cell-0", 17, Some(GrantShare { granted: 5, asked: 5 }))];
        assert!(
            !found(&m, 0, &every).contains("bare majority"),
            "a grant by every node is no bare majority"
        );
        let always = matrix(vec![Some((50, 50))]);
        assert!(
            !found(&always, 0, &[example("cell-0", 0, Some(bare))]).contains("bare majority"),
            "a cell broken in every seed needs nothing to set its seeds apart"
        );
    }

    #[test]
    fn many_setups_broken_in_every_seed_are_counted() {
        let m = matrix(vec![Some((5, 5)); 5]);
        assert_eq!(
            found(&m, 0, &[]),
            "Mutual exclusion broke for 5 of 5 setups: in every seed for 5 of them."
        );
    }
}
