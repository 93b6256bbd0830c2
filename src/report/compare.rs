//! Setups compared pairwise on the same fault classes and seeds: the sentences that open
//! the report ("Redlock, 5 masters against tier 5 …: they differ in 2 of 9 fault classes:
//! …; they tie in 7: …").
//!
//! The pairs are the grid's `comparisons`. A cell is judged on both levels of safety at
//! once ([`Safety`]): did two clients believe they held the lock, and did the data come to
//! harm. Two cells differ when they land on different levels, or on the same level with
//! 95% intervals that do not overlap; anything else is a tie, and is named as one.

use serde_json::{Value, json};

use super::matrix_summary::MatrixSummary;
use super::outcome::{Outcome, Safety};
use super::rate::Rate;

/// What two setups that tie at `safety` do, before the fault classes are named.
fn tie_words(safety: Safety) -> &'static str {
    match safety {
        Safety::NotExercised => "neither is exercised",
        Safety::Holds => "both hold",
        Safety::OverlapNoDamage => "both overlap without damage",
        Safety::Damage => "both damage data",
    }
}

/// The rate that decides a cell's level: the damage where data came to harm, else the
/// overlap.
fn telling_rate(outcome: &Outcome) -> Rate {
    match outcome.safety {
        Safety::Damage => outcome.damage,
        _ => outcome.overlap,
    }
}

/// That rate, named: "damage 48/50", else "overlap 50/50" (or "overlap 0/50"); a cell
/// where nobody was granted the lock after the faults, by the seeds it was not
/// exercised in ("not exercised 50/50": the lock was lost, not kept).
fn telling_text(outcome: &Outcome) -> String {
    let rate = telling_rate(outcome);
    match outcome.safety {
        Safety::Damage => format!("damage {}/{}", rate.violating, rate.seeds),
        Safety::NotExercised => format!(
            "not exercised {}/{}",
            outcome.seeds() - outcome.exercised,
            outcome.seeds()
        ),
        _ => format!("overlap {}/{}", rate.violating, rate.seeds),
    }
}

/// Whether two rates' 95% intervals are apart (one is surely higher).
fn apart(a: Rate, b: Rate) -> bool {
    let ((a_low, a_high), (b_low, b_high)) = (interval(a), interval(b));
    a_high < b_low || b_high < a_low
}

/// A rate's 95% interval: the rule of three's when none violated, else Wilson's.
fn interval(rate: Rate) -> (f64, f64) {
    if rate.violating == 0 {
        (0.0, rate.upper_bound_if_none())
    } else {
        rate.wilson95()
    }
}

/// Two setups' cells under one fault class that applies to both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultComparison {
    /// Index into the matrix's fault classes.
    pub fault: usize,
    pub setup: Outcome,
    pub against: Outcome,
}

impl FaultComparison {
    /// Whether the two differ: different levels, or the same level of harm at rates whose
    /// intervals are apart.
    pub fn differs(&self) -> bool {
        let (a, b) = (&self.setup, &self.against);
        a.safety != b.safety
            || (a.safety >= Safety::OverlapNoDamage && apart(telling_rate(a), telling_rate(b)))
    }
}

/// One setup against another, fault class by fault class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Indices into the matrix's setups.
    pub setup: usize,
    pub against: usize,
    /// Every fault class that applies to both, in the grid's order.
    pub faults: Vec<FaultComparison>,
}

impl Comparison {
    /// `setup` against `against` on every fault class the matrix ran for both.
    pub fn new(matrix: &MatrixSummary, setup: usize, against: usize) -> Comparison {
        let faults = (0..matrix.faults.len())
            .filter_map(|fault| {
                Some(FaultComparison {
                    fault,
                    setup: matrix.outcome(setup, fault)?,
                    against: matrix.outcome(against, fault)?,
                })
            })
            .collect();
        Comparison {
            setup,
            against,
            faults,
        }
    }

    /// "50 seeds each" (or "the same seeds in each" where the cells ran different counts).
    fn seeds_text(&self) -> String {
        let seeds: Vec<u64> = self
            .faults
            .iter()
            .flat_map(|c| [c.setup.overlap.seeds, c.against.overlap.seeds])
            .collect();
        match seeds.first() {
            Some(&1) if seeds.iter().all(|&s| s == 1) => "1 seed each".to_string(),
            Some(&first) if seeds.iter().all(|&s| s == first) => format!("{first} seeds each"),
            _ => "the same seeds in each".to_string(),
        }
    }

    /// The fault classes where the two differ (`true`) or tie (`false`).
    fn where_they(&self, differ: bool) -> Vec<&FaultComparison> {
        self.faults.iter().filter(|c| c.differs() == differ).collect()
    }

    /// Where the two differ, grouped by what each did, with both cells' numbers ("holds
    /// against damage under clock jumps (overlap 0/50 against damage 50/50)"); `None` where
    /// they differ nowhere.
    fn difference_groups(&self, matrix: &MatrixSummary) -> Option<String> {
        let differ = self.where_they(true);
        if differ.is_empty() {
            return None;
        }
        let groups: Vec<String> = grouped(&differ, |c| (c.setup.safety, c.against.safety))
            .into_iter()
            .map(|((a, b), group)| {
                let numbers: Vec<String> = group
                    .iter()
                    .map(|c| format!("{} against {}", telling_text(&c.setup), telling_text(&c.against)))
                    .collect();
                let numbers = match numbers.as_slice() {
                    [first, rest @ ..] if !rest.is_empty() && rest.iter().all(|n| n == first) => {
                        format!("{first} in each")
                    }
                    _ => numbers.join("; "),
                };
                format!(
                    "{} against {} under {} ({numbers})",
                    a.word(),
                    b.word(),
                    fault_labels(matrix, &group)
                )
            })
            .collect();
        Some(groups.join("; "))
    }

    /// Where the two tie, grouped by what both did ("both hold under no fault, holder
    /// crashes"); `None` where they tie nowhere.
    fn tie_groups(&self, matrix: &MatrixSummary) -> Option<String> {
        let tie = self.where_they(false);
        if tie.is_empty() {
            return None;
        }
        let groups: Vec<String> = grouped(&tie, |c| c.setup.safety)
            .into_iter()
            .map(|(safety, group)| format!("{} under {}", tie_words(safety), fault_labels(matrix, &group)))
            .collect();
        Some(groups.join("; "))
    }

    /// The answer table's "differs in" cell: "2 of 9: " and where, or `None`.
    pub fn differences(&self, matrix: &MatrixSummary) -> Option<String> {
        let groups = self.difference_groups(matrix)?;
        Some(format!(
            "{} of {}: {groups}",
            self.where_they(true).len(),
            self.faults.len()
        ))
    }

    /// The answer table's "same in" cell: "7 of 9: " and where, or `None`.
    pub fn ties(&self, matrix: &MatrixSummary) -> Option<String> {
        let groups = self.tie_groups(matrix)?;
        Some(format!(
            "{} of {}: {groups}",
            self.where_they(false).len(),
            self.faults.len()
        ))
    }

    /// The comparison in one or two sentences: where the two differ, then where they tie
    /// ([`Comparison::differences`], [`Comparison::ties`]).
    pub fn sentence(&self, matrix: &MatrixSummary) -> String {
        let label = |s: usize| matrix.setups[s].label.as_str();
        let n = self.faults.len();
        let mut sentence = format!(
            "{} against {}, on the {n} fault class{} both ran ({}): ",
            label(self.setup),
            label(self.against),
            if n == 1 { "" } else { "es" },
            self.seeds_text()
        );
        let differ = self.where_they(true).len();
        if let Some(groups) = self.difference_groups(matrix) {
            sentence += &format!("they differ in {differ} of {n}: {groups}.");
        }
        if let Some(groups) = self.tie_groups(matrix) {
            let lead = match differ {
                0 => format!("a tie in all {n}"),
                _ => format!(" They tie in {}", n - differ),
            };
            sentence += &format!("{lead}: {groups}.");
        }
        sentence
    }

    /// The JSON form: both setups, the sentence, and each fault class's two cells.
    pub fn to_json(&self, matrix: &MatrixSummary) -> Value {
        json!({
            "setup": matrix.setups[self.setup].name,
            "against": matrix.setups[self.against].name,
            "sentence": self.sentence(matrix),
            "seeds": self.seeds_text(),
            "differs_in": self.differences(matrix),
            "same_in": self.ties(matrix),
            "faults": self.faults.iter().map(|c| json!({
                "fault": matrix.faults[c.fault].name,
                "differs": c.differs(),
                "setup": c.setup.to_json(),
                "against": c.against.to_json(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// `items` grouped by `key`, groups in the order their first item comes.
fn grouped<'a, K: PartialEq>(
    items: &[&'a FaultComparison],
    key: impl Fn(&FaultComparison) -> K,
) -> Vec<(K, Vec<&'a FaultComparison>)> {
    let mut groups: Vec<(K, Vec<&'a FaultComparison>)> = Vec::new();
    for &item in items {
        let k = key(item);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, group)) => group.push(item),
            None => groups.push((k, vec![item])),
        }
    }
    groups
}

/// The fault classes' labels, joined.
fn fault_labels(matrix: &MatrixSummary, group: &[&FaultComparison]) -> String {
    let labels: Vec<&str> = group
        .iter()
        .map(|c| matrix.faults[c.fault].label.as_str())
        .collect();
    labels.join(", ")
}

/// Every comparison the grid asks for, in its order.
pub fn comparisons(matrix: &MatrixSummary) -> Vec<Comparison> {
    matrix
        .comparisons
        .iter()
        .map(|&(setup, against)| Comparison::new(matrix, setup, against))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::check;
    use crate::check::evidence::NotExercised;
    use crate::report::matrix_summary::{FaultColumn, SetupRow};
    use crate::report::{Activity, ScenarioReport};
    use crate::scenario::TopologyKind;

    /// A cell of `seeds` seeds: the first `overlap` violate mutual exclusion, the first
    /// `damage` lose an update.
    pub(crate) fn cell(seeds: u64, overlap: u64, damage: u64) -> ScenarioReport {
        let mut violations = BTreeMap::new();
        violations.insert(check::mutual_exclusion::NAME, (0..overlap).collect());
        violations.insert(check::resource_safety::NAME, (0..damage).collect());
        ScenarioReport {
            file: PathBuf::from("cell.json"),
            name: "cell".into(),
            description: String::new(),
            seed_start: 0,
            seeds,
            violations,
            errors: Vec::new(),
            not_exercised: Vec::new(),
            faults: Vec::new(),
            expectations: Vec::new(),
            activity: Activity::default(),
            control: None,
            wall_ms: 0,
        }
    }

    pub(crate) fn setup(name: &str, label: &str, fenced: bool, topology: TopologyKind) -> SetupRow {
        SetupRow {
            name: name.into(),
            label: label.into(),
            description: String::new(),
            fenced,
            topology,
        }
    }

    fn fault(name: &str) -> FaultColumn {
        FaultColumn {
            name: name.into(),
            label: name.into(),
            description: String::new(),
        }
    }

    /// Redlock against a single node under four fault classes, one of which (failover)
    /// applies to Redlock only.
    fn redlock_and_single() -> MatrixSummary {
        MatrixSummary {
            setups: vec![
                setup("redlock", "Redlock", false, TopologyKind::Redlock),
                setup("single", "single node", false, TopologyKind::Single),
            ],
            faults: vec![fault("none"), fault("pause"), fault("cut"), fault("failover")],
            cells: vec![
                vec![
                    Some(cell(50, 0, 0)),
                    Some(cell(50, 50, 48)),
                    Some(cell(50, 0, 0)),
                    Some(cell(50, 0, 0)),
                ],
                vec![
                    Some(cell(50, 0, 0)),
                    Some(cell(50, 49, 47)),
                    Some(cell(50, 50, 12)),
                    None,
                ],
            ],
            comparisons: vec![(0, 1)],
            clients_compared: Vec::new(),
        }
    }

    #[test]
    fn a_pair_names_its_differences_with_both_numbers_and_its_ties_as_ties() {
        let matrix = redlock_and_single();
        let [comparison] = comparisons(&matrix).try_into().unwrap();
        assert_eq!(comparison.faults.len(), 3, "failover applies to Redlock only");
        assert_eq!(
            comparison.sentence(&matrix),
            "Redlock against single node, on the 3 fault classes both ran (50 seeds each): they differ in 1 of 3: \
             holds against damage under cut (overlap 0/50 against damage 12/50). They tie in 2: both hold under none; \
             both damage data under pause."
        );
        let json = comparison.to_json(&matrix);
        assert_eq!(json["faults"][2]["fault"], "cut");
        assert_eq!(json["faults"][2]["differs"], true);
        assert_eq!(json["faults"][2]["against"]["damage"]["violating"], 12);
        assert_eq!(json["faults"][1]["differs"], false, "48/50 and 47/50 are a tie");
    }

    #[test]
    fn a_pair_that_never_differs_is_a_tie_in_all() {
        let mut matrix = redlock_and_single();
        matrix.cells[1][2] = Some(cell(50, 0, 0));
        let [comparison] = comparisons(&matrix).try_into().unwrap();
        assert!(
            comparison.sentence(&matrix).ends_with(
                "(50 seeds each): a tie in all 3: both hold under none, cut; both damage data under pause."
            ),
            "{}",
            comparison.sentence(&matrix)
        );
    }

    #[test]
    fn fencing_differs_from_no_fencing_by_the_damage_not_the_overlap() {
        let fenced = Outcome::of(&cell(50, 50, 0), true);
        let bare = Outcome::of(&cell(50, 50, 45), false);
        assert_eq!(fenced.safety, Safety::OverlapNoDamage);
        assert!(fenced.absorbed);
        assert_eq!(bare.safety, Safety::Damage);
        assert_eq!(telling_text(&fenced), "overlap 50/50");
        let compared = FaultComparison {
            fault: 0,
            setup: fenced,
            against: bare,
        };
        assert!(compared.differs());
    }

    #[test]
    fn differences_of_one_kind_are_grouped_with_their_numbers() {
        let mut matrix = redlock_and_single();
        matrix.cells[0][1] = Some(cell(50, 50, 0));
        matrix.cells[1][0] = Some(cell(50, 50, 30));
        matrix.cells[0][0] = Some(cell(50, 50, 0));
        let [comparison] = comparisons(&matrix).try_into().unwrap();
        assert_eq!(
            comparison.sentence(&matrix),
            "Redlock against single node, on the 3 fault classes both ran (50 seeds each): they differ in 3 of 3: \
             overlap, no damage against damage under none, pause (overlap 50/50 against damage 30/50; overlap \
             50/50 against damage 47/50); holds against damage under cut (overlap 0/50 against damage 12/50)."
        );
        matrix.cells[1][0] = Some(cell(50, 49, 47));
        assert!(
            comparison_sentence(&matrix)
                .contains("under none, pause (overlap 50/50 against damage 47/50 in each)"),
            "{}",
            comparison_sentence(&matrix)
        );
    }

    fn comparison_sentence(matrix: &MatrixSummary) -> String {
        comparisons(matrix)[0].sentence(matrix)
    }

    #[test]
    fn a_cell_nobody_was_granted_in_is_told_by_its_seeds_not_exercised() {
        let mut lost = cell(50, 0, 0);
        lost.not_exercised = (0..50)
            .map(|seed| {
                let why = NotExercised::TooFewGrants {
                    fault: Some(0),
                    grants: 0,
                    needed: 1,
                };
                (seed, why)
            })
            .collect();
        let survived = FaultComparison {
            fault: 0,
            setup: Outcome::of(&cell(50, 0, 0), false),
            against: Outcome::of(&lost, false),
        };
        assert!(survived.differs());
        assert_eq!(telling_text(&survived.setup), "overlap 0/50");
        assert_eq!(telling_text(&survived.against), "not exercised 50/50");
    }

    #[test]
    fn the_same_level_differs_only_when_the_intervals_are_apart() {
        let pair = |a, b| FaultComparison {
            fault: 0,
            setup: Outcome::of(&cell(50, 50, a), false),
            against: Outcome::of(&cell(50, 50, b), false),
        };
        assert!(pair(3, 48).differs(), "3/50 against 48/50");
        assert!(!pair(20, 26).differs(), "20/50 against 26/50");
        let holds = Outcome::of(&cell(50, 0, 0), false);
        assert!(
            !FaultComparison {
                fault: 0,
                setup: holds.clone(),
                against: holds
            }
            .differs()
        );
    }
}
