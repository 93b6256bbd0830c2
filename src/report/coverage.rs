//! How far a sweep's search got: for each dangerous state (see
//! [`crate::check::coverage`]), how many seeds reached it and the lowest seed that did, so
//! a reader can replay it. Folded in seed by seed, in any finishing order, to the same
//! numbers.

use serde_json::{Map, Value, json};

use crate::check::coverage::State;

/// The seeds that reached one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    /// How many seeds reached it.
    pub seeds: u64,
    /// The lowest seed that did.
    pub first_seed: u64,
}

/// Per state (in [`State::ALL`]'s order), the seeds of a sweep that reached it; `None`
/// where none did. A few numbers, copied as freely as the rest of [`super::Activity`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage([Option<Reached>; State::ALL.len()]);

impl Coverage {
    /// Folds in the states one seed reached.
    pub fn add(&mut self, seed: u64, states: &[State]) {
        for &state in states {
            let slot = &mut self.0[state.index()];
            *slot = Some(match *slot {
                None => Reached {
                    seeds: 1,
                    first_seed: seed,
                },
                Some(reached) => Reached {
                    seeds: reached.seeds + 1,
                    first_seed: reached.first_seed.min(seed),
                },
            });
        }
    }

    /// The seeds that reached `state`, if any did.
    pub fn reached(&self, state: State) -> Option<Reached> {
        self.0[state.index()]
    }

    /// The states of `aims` that no seed reached, in their order.
    pub fn unreached(&self, aims: &[State]) -> Vec<State> {
        aims.iter()
            .copied()
            .filter(|&state| self.reached(state).is_none())
            .collect()
    }

    /// The JSON form: every state by id, with its seeds (0 where none reached it), the
    /// first seed that did (`null` where none), and whether the faults aim at it.
    pub fn to_json(&self, aims: &[State]) -> Value {
        let states: Map<String, Value> = State::ALL
            .iter()
            .map(|&state| {
                let reached = self.reached(state);
                let entry = json!({
                    "seeds": reached.map_or(0, |r| r.seeds),
                    "first_seed": reached.map(|r| r.first_seed),
                    "aimed": aims.contains(&state),
                });
                (state.id().to_string(), entry)
            })
            .collect();
        Value::Object(states)
    }

    /// The line `locksim run` prints under a scenario whose faults aim at a state no seed
    /// reached; `None` when every aimed-at state was reached.
    pub fn unreached_line(&self, aims: &[State]) -> Option<String> {
        let unreached = self.unreached(aims);
        (!unreached.is_empty()).then(|| {
            let ids: Vec<&str> = unreached.iter().map(|state| state.id()).collect();
            format!("  aimed at by its faults, reached by no seed: {}", ids.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_seed_is_the_lowest_in_any_finishing_order() {
        let runs = [
            (7, vec![State::CrashInQuorum]),
            (3, vec![State::CrashInQuorum, State::HolderCutOff]),
            (5, vec![]),
            (9, vec![State::HolderCutOff]),
        ];
        let mut forward = Coverage::default();
        for (seed, states) in &runs {
            forward.add(*seed, states);
        }
        let mut backward = Coverage::default();
        for (seed, states) in runs.iter().rev() {
            backward.add(*seed, states);
        }
        assert_eq!(forward, backward);
        assert_eq!(
            forward.reached(State::CrashInQuorum),
            Some(Reached {
                seeds: 2,
                first_seed: 3
            })
        );
        assert_eq!(forward.reached(State::FailoverUnreplicated), None);
    }

    #[test]
    fn every_state_is_listed_and_the_unreached_aims_are_named() {
        let mut coverage = Coverage::default();
        coverage.add(4, &[State::CrashInQuorum]);
        let aims = [State::FailoverUnreplicated, State::CrashInQuorum];
        let json = coverage.to_json(&aims);
        assert_eq!(json.as_object().unwrap().len(), State::ALL.len());
        assert_eq!(
            json["crash-in-quorum"],
            json!({"seeds": 1, "first_seed": 4, "aimed": true})
        );
        assert_eq!(
            json["failover-unreplicated"],
            json!({"seeds": 0, "first_seed": null, "aimed": true})
        );
        assert_eq!(json["holder-cut-off"]["aimed"], json!(false));
        assert_eq!(coverage.unreached(&aims), [State::FailoverUnreplicated]);
        assert_eq!(
            coverage.unreached_line(&aims).unwrap(),
            "  aimed at by its faults, reached by no seed: failover-unreplicated"
        );
        assert_eq!(coverage.unreached_line(&[State::CrashInQuorum]), None);
    }
}
