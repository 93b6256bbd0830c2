//! Setups compared pairwise, one change at a time, on the same fault classes: the table
//! that follows "What to do" ("Redlock, 5 masters against Redlock, 1 master — changes
//! topology.masters 1 → 5: safer under …; no significant difference under …").
//!
//! The pairs are the grid's `comparisons`, each checked to change one thing (its topology,
//! its lock, its clients or its network: [`crate::scenario::grid`]). Under each fault
//! class both apply to, the two cells differ only when the difference is unlikely to be
//! chance: Fisher's exact test at 5% on the seeds with two holders, or on the seeds with
//! damaged data ([`Rate::differs_from`]); a cell nobody was granted the lock in after the
//! faults differs from one that was. Anything else is *no significant difference*: 2/50
//! against 0/50 is a tie.

use serde_json::{Value, json};

use super::matrix_summary::MatrixSummary;
use super::outcome::{Outcome, Safety};
use super::rate::Rate;
use crate::scenario::grid::changes;

/// A cell's numbers in a few words: "damage 48/50" where data came to harm, else
/// "overlap 50/50" ("none in 300" where no two held it); a cell where nobody was granted the lock after
/// the faults, by the seeds it was not exercised in ("not exercised 50/50": the lock was
/// lost, not kept).
fn telling_text(outcome: &Outcome) -> String {
    match outcome.safety {
        Safety::Damage => format!("damage {}/{}", outcome.damage.violating, outcome.damage.seeds),
        Safety::NotExercised if outcome.exercised == outcome.seeds() => {
            "not exercised (its faults' dangerous state never reached)".to_string()
        }
        Safety::NotExercised => format!(
            "not exercised {}/{}",
            outcome.seeds() - outcome.exercised,
            outcome.seeds()
        ),
        _ if outcome.overlap.violating == 0 => format!("none in {}", outcome.overlap.seeds),
        _ => format!("overlap {}/{}", outcome.overlap.violating, outcome.overlap.seeds),
    }
}

/// Which of two cells is the safer, when they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// The setup compared is safer here.
    Setup,
    /// The one it is compared against is safer here.
    Against,
    /// They differ, but in whether the lock was granted at all after the faults: one kept
    /// working, the other lost the lock (neither broke safety).
    Liveness,
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
    /// Whether the two differ significantly: on damaged data, else on two holders
    /// (Fisher's exact test at 5%), or in whether anyone was granted the lock after the
    /// faults.
    pub fn differs(&self) -> bool {
        self.better().is_some()
    }

    /// Which is safer where they differ (see [`FaultComparison::differs`]); `None` for no
    /// significant difference.
    pub fn better(&self) -> Option<Better> {
        let (a, b) = (&self.setup, &self.against);
        let lower = |x: Rate, y: Rate| {
            if x.violating * y.seeds < y.violating * x.seeds {
                Better::Setup
            } else {
                Better::Against
            }
        };
        if (a.safety == Safety::NotExercised) != (b.safety == Safety::NotExercised) {
            return Some(Better::Liveness);
        }
        if a.damage.differs_from(b.damage) {
            return Some(lower(a.damage, b.damage));
        }
        a.overlap
            .differs_from(b.overlap)
            .then(|| lower(a.overlap, b.overlap))
    }

    /// The two cells' numbers: "none in 300 against damage 45/50".
    fn numbers(&self) -> String {
        format!(
            "{} against {}",
            telling_text(&self.setup),
            telling_text(&self.against)
        )
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

    /// What the comparison changes, from the setup compared against to the setup:
    /// "topology.masters 1 → 5", each setting that differs.
    pub fn change(&self, matrix: &MatrixSummary) -> String {
        let changed: Vec<String> = changes(&matrix.setups[self.against], &matrix.setups[self.setup])
            .into_iter()
            .map(|(path, from, to)| format!("{path} {from} → {to}"))
            .collect();
        changed.join(", ")
    }

    /// The fault classes where the comparison came out `better` (`None`: no significant
    /// difference).
    pub fn where_(&self, better: Option<Better>) -> Vec<&FaultComparison> {
        self.faults.iter().filter(|c| c.better() == better).collect()
    }

    /// The fault classes where the comparison came out `better`, each with both cells'
    /// numbers: "holder pause (damage 0/50 against damage 48/50); clock jump (…)"; `None`
    /// where there is none.
    pub fn listed(&self, matrix: &MatrixSummary, better: Option<Better>) -> Option<String> {
        let items = self.items(matrix, better);
        (!items.is_empty()).then(|| items.join("; "))
    }

    /// The fault classes where the comparison came out `better`, one item each with both
    /// cells' numbers: "holder pause (damage 0/50 against damage 48/50)".
    pub fn items(&self, matrix: &MatrixSummary, better: Option<Better>) -> Vec<String> {
        self.where_(better)
            .iter()
            .map(|c| format!("{} ({})", matrix.faults[c.fault].label, c.numbers()))
            .collect()
    }

    /// The fault classes with no significant difference, by label only.
    pub fn ties(&self, matrix: &MatrixSummary) -> Option<String> {
        let faults = self.where_(None);
        if faults.is_empty() {
            return None;
        }
        let labels: Vec<&str> = faults
            .iter()
            .map(|c| matrix.faults[c.fault].label.as_str())
            .collect();
        Some(labels.join(", "))
    }

    /// The comparison in sentences: what changes, where each is safer, and where there is
    /// no significant difference.
    pub fn sentence(&self, matrix: &MatrixSummary) -> String {
        let label = |s: usize| matrix.setups[s].label.as_str();
        let n = self.faults.len();
        let mut sentence = format!(
            "{} against {} (changes {}), on the {n} fault class{} both ran:",
            label(self.setup),
            label(self.against),
            self.change(matrix),
            if n == 1 { "" } else { "es" },
        );
        let parts = [
            (Some(Better::Setup), format!("safer with {}", label(self.setup))),
            (
                Some(Better::Against),
                format!("safer with {}", label(self.against)),
            ),
            (
                Some(Better::Liveness),
                "the lock lost with one of them".to_string(),
            ),
        ];
        let mut said = false;
        for (better, words) in parts {
            if let Some(list) = self.listed(matrix, better) {
                sentence += &format!(" {words} under {list}.");
                said = true;
            }
        }
        if let Some(ties) = self.ties(matrix) {
            let lead = if said {
                "No significant difference"
            } else {
                "No significant difference in any"
            };
            sentence += &format!(" {lead} (Fisher's exact test, 5%) under {ties}.");
        }
        sentence
    }

    /// The JSON form: both setups, what changes, the sentence, and each fault class's two
    /// cells.
    pub fn to_json(&self, matrix: &MatrixSummary) -> Value {
        let better = |c: &FaultComparison| match c.better() {
            None => "no significant difference",
            Some(Better::Setup) => "setup",
            Some(Better::Against) => "against",
            Some(Better::Liveness) => "liveness",
        };
        json!({
            "setup": matrix.setups[self.setup].name,
            "against": matrix.setups[self.against].name,
            "changes": self.change(matrix),
            "sentence": self.sentence(matrix),
            "test": "Fisher's exact test, two-sided, 5%",
            "faults": self.faults.iter().map(|c| json!({
                "fault": matrix.faults[c.fault].name,
                "differs": c.differs(),
                "safer": better(c),
                "p_overlap": round4(c.setup.overlap.fisher_p(c.against.overlap)),
                "p_damage": round4(c.setup.damage.fisher_p(c.against.damage)),
                "setup": c.setup.to_json(),
                "against": c.against.to_json(),
            })).collect::<Vec<_>>(),
        })
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
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
    use crate::report::{Activity, ScenarioReport};
    use crate::scenario::grid::{FaultColumn, SetupRow};
    use crate::scenario::{Fencing, TopologyKind};

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
            mode: Default::default(),
        }
    }

    /// A single-node row whose lock fences with `fencing`.
    pub(crate) fn fenced_setup(name: &str, label: &str, fencing: Fencing) -> SetupRow {
        let fencing_word = match fencing {
            Fencing::None => "none",
            Fencing::MasterIncr => "master-incr",
            Fencing::Counter => "counter",
        };
        SetupRow {
            name: name.into(),
            label: label.into(),
            description: String::new(),
            fenced: fencing != Fencing::None,
            fencing,
            topology: TopologyKind::Single,
            nodes: 1,
            masters: 1,
            settings: vec![
                ("topology.kind".into(), "\"single\"".into()),
                ("lock.algorithm".into(), "\"lua-release\"".into()),
                ("lock.ttl_ms".into(), "2000".into()),
                ("lock.fencing".into(), format!("\"{fencing_word}\"")),
            ],
        }
    }

    pub(crate) fn setup(name: &str, label: &str, fenced: bool, topology: TopologyKind) -> SetupRow {
        let mut row = fenced_setup(name, label, if fenced { Fencing::Counter } else { Fencing::None });
        if !fenced {
            row.settings.pop();
        }
        row.topology = topology;
        row.settings[0].1 = format!("\"{}\"", topology.name());
        row
    }

    fn fault(name: &str) -> FaultColumn {
        FaultColumn {
            name: name.into(),
            label: name.into(),
            description: String::new(),
            strikes: Vec::new(),
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
                    Some(cell(300, 0, 0)),
                    Some(cell(50, 50, 48)),
                    Some(cell(300, 0, 0)),
                    Some(cell(300, 0, 0)),
                ],
                vec![
                    Some(cell(300, 0, 0)),
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
    fn a_pair_names_what_changes_where_each_is_safer_and_its_ties() {
        let matrix = redlock_and_single();
        let [comparison] = comparisons(&matrix).try_into().unwrap();
        assert_eq!(comparison.faults.len(), 3, "failover applies to Redlock only");
        assert_eq!(comparison.change(&matrix), "topology.kind single → redlock");
        assert_eq!(
            comparison.sentence(&matrix),
            "Redlock against single node (changes topology.kind single → redlock), on the 3 fault classes both \
             ran: safer with Redlock under cut (none in 300 against damage 12/50). No significant difference \
             (Fisher's exact test, 5%) under none, pause."
        );
        let json = comparison.to_json(&matrix);
        assert_eq!(json["faults"][2]["fault"], "cut");
        assert_eq!(json["faults"][2]["safer"], "setup");
        assert_eq!(json["faults"][2]["against"]["damage"]["violating"], 12);
        assert_eq!(json["faults"][1]["differs"], false, "48/50 and 47/50 are a tie");
    }

    #[test]
    fn a_small_gap_is_no_difference_and_a_large_one_is() {
        let pair = |a: (u64, u64, u64), b: (u64, u64, u64)| FaultComparison {
            fault: 0,
            setup: Outcome::of(&cell(a.0, a.1, a.2), false),
            against: Outcome::of(&cell(b.0, b.1, b.2), false),
        };
        assert!(
            !pair((50, 2, 2), (50, 0, 0)).differs(),
            "2/50 against 0/50: p = 0.49"
        );
        assert_eq!(pair((300, 0, 0), (50, 45, 45)).better(), Some(Better::Setup));
        assert_eq!(pair((50, 45, 45), (300, 0, 0)).better(), Some(Better::Against));
        assert!(!pair((50, 20, 20), (50, 26, 26)).differs(), "20/50 against 26/50");
        assert!(pair((50, 3, 3), (50, 48, 48)).differs(), "3/50 against 48/50");
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
        assert_eq!(compared.better(), Some(Better::Setup));
    }

    #[test]
    fn a_cell_nobody_was_granted_in_differs_in_liveness() {
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
        assert_eq!(survived.better(), Some(Better::Liveness));
        assert_eq!(telling_text(&survived.setup), "none in 50");
        assert_eq!(telling_text(&survived.against), "not exercised 50/50");
    }

    #[test]
    fn no_violation_in_few_seeds_is_not_called_holds() {
        assert_eq!(Outcome::of(&cell(50, 0, 0), false).safety, Safety::NoneSeen);
        assert_eq!(Outcome::of(&cell(300, 0, 0), false).safety, Safety::Holds);
    }
}
