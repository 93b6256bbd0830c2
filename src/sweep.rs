//! Runs many seeds of a scenario in parallel, each on a long-lived thread of its worker
//! (`seed_thread`).
//!
//! A seed whose run panics is reported with its seed and message; the other seeds go on,
//! and nothing already computed is lost.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::check::coverage::{self, State};
use crate::check::evidence::{Evidence, FaultEvidence, evidence};
use crate::check::{self, CheckSettings, Spans, Verdict, check_with};
use crate::history::{History, WireRecord};
use crate::scenario::Scenario;
use crate::seed_thread::run_on_seed_thread;
use crate::world;
use crate::world::events::EventCounts;

/// What one seed produced.
#[derive(Debug, Clone)]
pub struct SeedRun {
    pub seed: u64,
    /// The run's digest and verdicts, or the message of the panic that ended it.
    pub outcome: Result<RunSummary, String>,
}

/// The part of a run that a sweep keeps (histories are large; seeds replay them).
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub digest: String,
    pub verdicts: Vec<Verdict>,
    /// The grants after each fault: whether the run is evidence for "holds".
    pub evidence: Evidence,
    /// How many messages and timer firings the run processed (for `locksim bench`).
    pub events: EventCounts,
    /// The dangerous states the run reached, in [`State::ALL`]'s order: whether the
    /// search got where the lock could break.
    pub coverage: Vec<State>,
}

impl RunSummary {
    /// Judges one finished run: its digest, every checker's verdict, its evidence and
    /// the dangerous states it reached, with `events` as the world counted them.
    pub fn of(history: &History, settings: &CheckSettings, events: EventCounts) -> Self {
        let spans = Spans::of(history);
        RunSummary {
            digest: history.digest(),
            verdicts: check_with(history, &spans, settings),
            evidence: evidence(history, &spans.waits, settings.faults),
            events,
            coverage: coverage::reached(history),
        }
    }
}

impl SeedRun {
    /// One line of a seed log (`run --seed-log`): everything a report needs of this seed,
    /// so shards run apart can be merged into one report.
    pub fn to_json(&self, scenario_file: &str) -> Value {
        let mut line = json!({ "file": scenario_file, "seed": self.seed });
        match &self.outcome {
            Ok(summary) => {
                let verdicts: serde_json::Map<String, Value> = summary
                    .verdicts
                    .iter()
                    .map(|v| (v.checker.to_string(), json!(v.violation)))
                    .collect();
                let evidence = &summary.evidence;
                line["digest"] = json!(summary.digest);
                line["verdicts"] = Value::Object(verdicts);
                line["events"] =
                    json!({"messages": summary.events.messages, "timers": summary.events.timers});
                line["evidence"] = json!({
                    "grants": evidence.grants,
                    "run_us": evidence.run_us,
                    "longest_wait_us": evidence.longest_wait_us,
                    "faults": evidence.faults.iter().map(|f| json!({"struck_us": f.struck_us, "grants_after": f.grants_after})).collect::<Vec<_>>(),
                });
                line["coverage"] = json!(
                    summary
                        .coverage
                        .iter()
                        .map(|state| state.id())
                        .collect::<Vec<_>>()
                );
            }
            Err(message) => line["error"] = json!(message),
        }
        line
    }

    /// Reads a seed-log line back: the scenario file it belongs to and the run; `Err` says
    /// which field is missing or malformed. A line without `coverage` was written by a
    /// locksim that did not look for dangerous states: what its run reached is unknown, and
    /// is read as nothing reached, so a report merged from such logs calls a hold over
    /// aimed-at states *not exercised* rather than claiming a coverage it never saw. A
    /// state id this locksim does not know is an error, not silently dropped.
    pub fn from_json(line: &Value) -> Result<(String, SeedRun), String> {
        let field = |name: &str| line.get(name).ok_or_else(|| format!("no `{name}`"));
        let file = field("file")?
            .as_str()
            .ok_or("`file` is not a string")?
            .to_string();
        let seed = field("seed")?.as_u64().ok_or("`seed` is not a number")?;
        if let Some(message) = line.get("error") {
            let message = message.as_str().ok_or("`error` is not a string")?.to_string();
            return Ok((
                file,
                SeedRun {
                    seed,
                    outcome: Err(message),
                },
            ));
        }
        let verdicts = field("verdicts")?
            .as_object()
            .ok_or("`verdicts` is not an object")?;
        let verdicts = check::NAMES
            .iter()
            .map(|&checker| match verdicts.get(checker) {
                Some(Value::Null) => Ok(Verdict {
                    checker,
                    violation: None,
                }),
                Some(Value::String(why)) => Ok(Verdict {
                    checker,
                    violation: Some(why.clone()),
                }),
                _ => Err(format!("`verdicts.{checker}` is missing or not a string or null")),
            })
            .collect::<Result<Vec<_>, String>>()?;
        let e = field("evidence")?;
        let number = |v: &Value, name: &str| {
            v.get(name)
                .and_then(Value::as_u64)
                .ok_or(format!("`evidence.{name}` is not a number"))
        };
        let faults = e
            .get("faults")
            .and_then(Value::as_array)
            .ok_or("`evidence.faults` is not a list")?
            .iter()
            .map(|f| {
                Ok(FaultEvidence {
                    struck_us: f.get("struck_us").and_then(Value::as_u64),
                    grants_after: number(f, "grants_after")?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let evidence = Evidence {
            grants: number(e, "grants")?,
            run_us: number(e, "run_us")?,
            longest_wait_us: number(e, "longest_wait_us")?,
            faults,
        };
        let digest = field("digest")?
            .as_str()
            .ok_or("`digest` is not a string")?
            .to_string();
        let counted = |name: &str| {
            line.get("events")
                .and_then(|e| e.get(name))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let events = EventCounts {
            messages: counted("messages"),
            timers: counted("timers"),
        };
        let coverage = match line.get("coverage") {
            None => Vec::new(),
            Some(ids) => ids
                .as_array()
                .ok_or("`coverage` is not a list")?
                .iter()
                .map(|id| {
                    id.as_str().and_then(State::from_id).ok_or_else(|| {
                        format!("`coverage` names {id}, which is not a state this locksim knows")
                    })
                })
                .collect::<Result<Vec<_>, String>>()?,
        };
        Ok((
            file,
            SeedRun {
                seed,
                outcome: Ok(RunSummary {
                    digest,
                    verdicts,
                    evidence,
                    events,
                    coverage,
                }),
            },
        ))
    }
}

/// Runs one seed on the caller's seed thread, catching a panic as an error message.
pub fn run_seed(scenario: &Arc<Scenario>, seed: u64) -> Result<History, String> {
    let scenario = scenario.clone();
    run_on_seed_thread(seed, scenario.wall_budget(), move || world::run(&scenario, seed))
}

/// [`run_seed`], keeping every frame the clients wrote and read too (`replay --commands`).
pub fn run_seed_keeping_wire(
    scenario: &Arc<Scenario>,
    seed: u64,
) -> Result<(History, Vec<WireRecord>), String> {
    let scenario = scenario.clone();
    run_on_seed_thread(seed, scenario.wall_budget(), move || {
        world::run_keeping_wire(&scenario, seed)
    })
}

/// Runs one seed and its checkers on the caller's seed thread: a panic in either is that seed's
/// failure, reported with its message, and the sweep goes on.
pub fn run_and_check(
    scenario: &Arc<Scenario>,
    seed: u64,
    settings: &CheckSettings,
) -> Result<RunSummary, String> {
    let (scenario, settings) = (scenario.clone(), settings.clone());
    run_on_seed_thread(seed, scenario.wall_budget(), move || {
        let history = world::run(&scenario, seed);
        RunSummary::of(&history, &settings, world::events::take())
    })
}

/// Runs every seed of `seeds` with up to `jobs` at a time; results are in seed order.
pub fn sweep(scenario: &Arc<Scenario>, seeds: Range<u64>, jobs: usize) -> Vec<SeedRun> {
    let seeds: Vec<u64> = seeds.collect();
    sweep_seeds(scenario, &seeds, jobs, |run| run)
}

/// Runs the listed seeds with up to `jobs` at a time and hands each run to `done` as it
/// finishes (in the order they finish); what `done` returns comes back in the list's
/// order. A sweep keeps only that: `()` keeps nothing, however many seeds run.
pub fn sweep_seeds<T: Send>(
    scenario: &Arc<Scenario>,
    seeds: &[u64],
    jobs: usize,
    done: impl Fn(SeedRun) -> T + Sync,
) -> Vec<T> {
    let never = AtomicBool::new(false);
    sweep_seeds_until(scenario, seeds, jobs, &never, done)
        .into_iter()
        .map(|result| result.expect("nothing stops a sweep that cannot be stopped"))
        .collect()
}

/// [`sweep_seeds`] that the user can stop (Ctrl-C): once `stop` is set, no seed starts,
/// the seeds already running finish and are handed to `done`, and a seed that never ran
/// is `None` in the list.
pub fn sweep_seeds_until<T: Send>(
    scenario: &Arc<Scenario>,
    seeds: &[u64],
    jobs: usize,
    stop: &AtomicBool,
    done: impl Fn(SeedRun) -> T + Sync,
) -> Vec<Option<T>> {
    let settings = scenario.check_settings();
    in_parallel(0..seeds.len() as u64, jobs, |index| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let seed = seeds[index as usize];
        Some(done(SeedRun {
            seed,
            outcome: run_and_check(scenario, seed, &settings),
        }))
    })
}

/// Part `index` (0-based) of `count` parts of a sweep: every `count`-th seed, so each part
/// gets its share of slow and fast seeds (cargo-nextest's `--partition count:K/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Whether `seed` is this shard's.
    pub fn owns(self, seed: u64) -> bool {
        seed % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    /// `K/N`, as it is written on the command line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `K/N`, 1 ≤ K ≤ N.
    fn from_str(text: &str) -> Result<Self, String> {
        let parsed = text
            .split_once('/')
            .and_then(|(k, n)| Some((k.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?)));
        match parsed {
            Some((k, n)) if (1..=n).contains(&k) => Ok(Shard {
                index: k - 1,
                count: n,
            }),
            _ => Err(format!(
                "`{text}` is not a shard: write K/N with 1 <= K <= N (e.g. 2/4)"
            )),
        }
    }
}

/// `work` for every number in `numbers`, up to `jobs` at a time; results in order.
pub fn in_parallel<T: Send>(numbers: Range<u64>, jobs: usize, work: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let next = AtomicU64::new(numbers.start);
    // One slot per number, made up front: results arrive in any order, and a sweep that
    // keeps `()` per seed keeps one byte a seed, never a growing list.
    let slots = (numbers.end.saturating_sub(numbers.start)) as usize;
    let results = Mutex::new((0..slots).map(|_| None).collect::<Vec<Option<T>>>());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let number = next.fetch_add(1, Ordering::Relaxed);
                    if number >= numbers.end {
                        return;
                    }
                    let result = work(number);
                    results.lock().expect("results lock poisoned")[(number - numbers.start) as usize] =
                        Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("results lock poisoned")
        .into_iter()
        .map(|result| result.expect("every number ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_seeds_between_them() {
        let shards: Vec<Shard> = (1..=3).map(|k| format!("{k}/3").parse().unwrap()).collect();
        for seed in 0..30 {
            assert_eq!(shards.iter().filter(|s| s.owns(seed)).count(), 1);
        }
        assert_eq!(shards[1].to_string(), "2/3");
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_seed_log_line_reads_back_as_the_run() {
        let run = SeedRun {
            seed: 7,
            outcome: Ok(RunSummary {
                digest: "abc".into(),
                verdicts: check::NAMES
                    .iter()
                    .map(|&checker| Verdict {
                        checker,
                        violation: (checker == check::mutual_exclusion::NAME).then(|| "two holders".into()),
                    })
                    .collect(),
                evidence: Evidence {
                    grants: 3,
                    run_us: 1_000,
                    longest_wait_us: 20,
                    faults: vec![FaultEvidence {
                        struck_us: Some(5),
                        grants_after: 2,
                    }],
                },
                events: EventCounts {
                    messages: 40,
                    timers: 9,
                },
                coverage: vec![State::FailoverUnreplicated, State::ReleaseAfterExpiry],
            }),
        };
        let (file, back) = SeedRun::from_json(&run.to_json("s.json")).unwrap();
        assert_eq!(file, "s.json");
        assert_eq!(format!("{back:?}"), format!("{run:?}"));
        let failed = SeedRun {
            seed: 8,
            outcome: Err("boom".into()),
        };
        let (_, back) = SeedRun::from_json(&failed.to_json("s.json")).unwrap();
        assert_eq!(back.outcome.unwrap_err(), "boom");
        assert!(
            SeedRun::from_json(&json!({"file": "s.json"}))
                .unwrap_err()
                .contains("seed")
        );
    }

    #[test]
    fn a_seed_log_line_keeps_the_states_reached_and_an_older_line_reached_none() {
        let mut line = SeedRun {
            seed: 7,
            outcome: Ok(RunSummary {
                digest: "abc".into(),
                verdicts: check::NAMES
                    .iter()
                    .map(|&checker| Verdict {
                        checker,
                        violation: None,
                    })
                    .collect(),
                evidence: Evidence {
                    grants: 1,
                    run_us: 1_000,
                    longest_wait_us: 0,
                    faults: Vec::new(),
                },
                events: EventCounts::default(),
                coverage: vec![State::ClockJumpInQuorum],
            }),
        }
        .to_json("s.json");
        assert_eq!(line["coverage"], json!(["clock-jump-in-quorum"]));
        line.as_object_mut().unwrap().remove("coverage");
        let (_, older) = SeedRun::from_json(&line).unwrap();
        assert_eq!(older.outcome.unwrap().coverage, []);
        line["coverage"] = json!(["clock-jump-in-quorum", "a-state-from-the-future"]);
        let unknown = SeedRun::from_json(&line).unwrap_err();
        assert!(unknown.contains("a-state-from-the-future"), "{unknown}");
    }
}
