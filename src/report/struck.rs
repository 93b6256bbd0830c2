//! The faults two runs of one scenario and seed struck, compared: what `compare-live`
//! checks beside the verdicts, so that two modes that agree on a verdict but struck
//! different nodes (or one struck a fault the other never did) are not called in
//! agreement.
//!
//! Each scheduled fault is compared by what it struck: its kind, its nodes as resolved
//! when it struck (the node `holder` stood for shown as `holder`: which client holds the
//! lock at a given instant is the workload's timing, not the schedule's), and its time.
//! Times are compared only for a fault whose time was set in advance (`at_ms`, no wait for
//! a holder), within [`TOLERANCE_MS`]: a live strike comes a few ms after its time, and a
//! fault waiting for a grant strikes when the grant comes, which real timing moves.

use crate::history::Strike;
use crate::scenario::{Scenario, Trigger};

/// How far apart two strikes of a fault set for one instant may be and still agree: live
/// timers fire late by the host's scheduling, a few ms on an idle machine.
pub const TOLERANCE_MS: u64 = 100;

/// One fault as a run struck it, in the terms compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Struck {
    /// The fault's index in the scenario's `faults`.
    pub fault: usize,
    pub kind: &'static str,
    /// Its nodes, `holder` for the node the holder word stood for.
    pub on: String,
    /// When it struck, ms into the run (rounded to the ms).
    pub at_ms: u64,
    /// Whether its time was set in advance, so that times compare.
    pub timed: bool,
}

impl Struck {
    /// Scheduled fault `strike.fault` of `scenario` as struck.
    pub fn of(scenario: &Scenario, strike: &Strike) -> Struck {
        let fault = &scenario.faults[strike.fault];
        let holder = strike.on.holder.as_deref();
        let named = |node: &String| match Some(node.as_str()) == holder {
            true => "holder".to_string(),
            false => node.clone(),
        };
        let mut on = strike.on.clone();
        on.targets = on.targets.iter().map(named).collect();
        on.groups = on.groups.iter().map(|g| g.iter().map(named).collect()).collect();
        Struck {
            fault: strike.fault,
            kind: fault.action.kind(),
            on: on.describe(),
            at_ms: (strike.true_us + 500) / 1000,
            timed: matches!(fault.trigger, Trigger::At { .. }) && holder.is_none(),
        }
    }

    fn shown(&self) -> String {
        let on = match self.on.is_empty() {
            true => String::new(),
            false => format!(" {}", self.on),
        };
        format!("{}{on} at {} ms", self.kind, self.at_ms)
    }
}

/// Every scheduled fault that `first` (mode `first_mode`) and `second` (mode
/// `second_mode`), runs of `scenario` with the same seed, struck differently: one line
/// each, naming the fault and what each mode struck. Empty when they agree.
pub fn differences(
    scenario: &Scenario,
    (first_mode, first): (&str, &[Strike]),
    (second_mode, second): (&str, &[Strike]),
) -> Vec<String> {
    let find = |strikes: &[Strike], index| {
        strikes
            .iter()
            .find(|strike| strike.fault == index)
            .map(|strike| Struck::of(scenario, strike))
    };
    let mut lines = Vec::new();
    for index in 0..scenario.faults.len() {
        let (a, b) = (find(first, index), find(second, index));
        let agree = match (&a, &b) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                a.on == b.on && (!(a.timed && b.timed) || a.at_ms.abs_diff(b.at_ms) <= TOLERANCE_MS)
            }
            _ => false,
        };
        if agree {
            continue;
        }
        let said = |mode: &str, struck: &Option<Struck>| match struck {
            Some(struck) => format!("{mode} struck {}", struck.shown()),
            None => format!("{mode} never struck it"),
        };
        lines.push(format!(
            "fault {index} ({}): {}; {}",
            scenario.faults[index].action.kind(),
            said(first_mode, &a),
            said(second_mode, &b)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::StruckOn;

    /// A replicated pair whose holder pauses at 2 s and whose any Redis node crashes at 3 s.
    fn scenario() -> Scenario {
        let text = r#"{
            "name": "struck", "duration_ms": 5000, "seeds": 1,
            "topology": { "kind": "replicated", "replicas": 1 },
            "lock": { "algorithm": "lua-release", "ttl_ms": 1000 },
            "clients": { "count": 2, "work_ms": [100, 200] },
            "faults": [ { "kind": "pause", "target": "holder", "at_ms": 2000, "duration_ms": 500 },
                        { "kind": "crash", "target": "any-redis", "at_ms": 3000 } ]
        }"#;
        crate::scenario::load_str(std::path::Path::new("struck.json"), text).expect("a good scenario")
    }

    fn strike(fault: usize, at_ms: u64, targets: &[&str], holder: Option<&str>) -> Strike {
        Strike {
            fault,
            true_us: at_ms * 1000,
            events_before: 0,
            on: StruckOn {
                targets: targets.iter().map(|t| t.to_string()).collect(),
                groups: Vec::new(),
                holder: holder.map(str::to_string),
            },
        }
    }

    #[test]
    fn the_same_faults_on_the_same_nodes_agree_whoever_held_the_lock() {
        let scenario = scenario();
        let sim = [
            strike(0, 2000, &["client-1"], Some("client-1")),
            strike(1, 3000, &["redis-2"], None),
        ];
        // Live: client-2 held the lock at 2 s, and the grant it waited for came later.
        let live = [
            strike(0, 2180, &["client-2"], Some("client-2")),
            strike(1, 3004, &["redis-2"], None),
        ];
        assert_eq!(
            differences(&scenario, ("sim", &sim), ("live", &live)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_fault_on_another_node_late_or_never_struck_differs() {
        let scenario = scenario();
        let sim = [
            strike(0, 2000, &["client-1"], Some("client-1")),
            strike(1, 3000, &["redis-2"], None),
        ];
        let elsewhere = [
            strike(0, 2000, &["client-1"], Some("client-1")),
            strike(1, 3000, &["redis-1-replica-1"], None),
        ];
        assert_eq!(
            differences(&scenario, ("sim", &sim), ("live locksim", &elsewhere)),
            vec![
                "fault 1 (crash): sim struck crash redis-2 at 3000 ms; live locksim struck crash redis-1-replica-1 at 3000 ms"
                    .to_string()
            ]
        );
        let late = [
            sim[0].clone(),
            strike(1, 3000 + TOLERANCE_MS + 1, &["redis-2"], None),
        ];
        assert_eq!(differences(&scenario, ("sim", &sim), ("live", &late)).len(), 1);
        let never = [sim[1].clone()];
        assert_eq!(
            differences(&scenario, ("sim", &sim), ("live", &never)),
            vec!["fault 0 (pause): sim struck pause holder at 2000 ms; live never struck it".to_string()]
        );
    }
}
