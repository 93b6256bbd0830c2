//! How a report's seeds ran — on the simulated cluster, or live on real processes — and
//! what that changes in what the report may claim: which checkers were judged at all, how
//! a seed is run again, and what a run that failed was.
//!
//! A report must never claim what its mode did not run: a live report that showed
//! validity as `0/N` or "holds" would say a check passed that never ran, and a `replay`
//! hint under a live row would rerun locksim's own client on the simulator, not the
//! user's worker on real processes.

use std::path::Path;

use serde_json::{Value, json};

use crate::check;

/// How the seeds of a report ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RunMode {
    /// On the simulated cluster, with locksim's lock client: every checker is judged, and
    /// every seed replays bit for bit.
    #[default]
    Simulated,
    /// Live: one real process per client, in real time, against Redis nodes on loopback.
    Live {
        /// Real `redis-server` processes (`--redis-server`), else locksim's own nodes.
        redis_server: bool,
        /// The clients' command: the scenario's `clients.command`, or `None` for
        /// `locksim worker` (locksim's own client).
        command: Option<Vec<String>>,
    },
}

/// The checkers live mode cannot judge, and why (a table prints it once per scenario).
pub const NOT_JUDGED_LIVE: [(&str, &str); 1] = [(
    check::validity::NAME,
    "it needs the lock client's answer from every node, which a worker does not report",
)];

impl RunMode {
    /// Whether the seeds of this mode judged `checker` (live mode cannot judge validity).
    pub fn judges(&self, checker: &str) -> bool {
        match self {
            RunMode::Simulated => true,
            RunMode::Live { .. } => !NOT_JUDGED_LIVE.iter().any(|(name, _)| *name == checker),
        }
    }

    /// The command that runs `seed` of the scenario in `file` again, in this mode:
    /// `replay: …` for a simulated seed (bit for bit), `rerun: …` for a live one (the same
    /// faults and workload, in real time).
    pub fn rerun(&self, file: &Path, seed: u64) -> String {
        match self {
            RunMode::Simulated => format!("replay: locksim replay {} --seed {seed}", file.display()),
            RunMode::Live { redis_server, .. } => format!(
                "rerun: locksim run --live{} {} --seed-start {seed} --seeds 1",
                if *redis_server { " --redis-server" } else { "" },
                file.display()
            ),
        }
    }

    /// The line that reports a run that failed: in the simulator a panic or a hang (a bug
    /// of locksim's); live, a process that ended early or a node that did not start.
    pub fn failed_run(&self, scenario: &str, file: &Path, seed: u64, message: &str) -> String {
        match self {
            RunMode::Simulated => super::harness_error(scenario, file, seed, message),
            RunMode::Live { .. } => format!(
                "run error: scenario {scenario} seed {seed} (live): {message}; {}",
                self.rerun(file, seed)
            ),
        }
    }

    /// A failed run's verdict word: a harness error is locksim's own failure; a live run
    /// error is a process's or the machine's.
    pub fn failed_word(&self) -> &'static str {
        match self {
            RunMode::Simulated => "harness error",
            RunMode::Live { .. } => "run error",
        }
    }

    /// Why the expectations say nothing when `failed` runs failed, in one sentence.
    pub fn failed_runs_reason(&self, failed: usize) -> String {
        match self {
            RunMode::Simulated => format!(
                "{failed} runs hit a harness error (a panic or a hang inside the simulator): their seeds say nothing"
            ),
            RunMode::Live { .. } => format!(
                "{failed} live runs failed (a worker ended early, or a node or worker did not start; see each below): their seeds say nothing"
            ),
        }
    }

    /// What ran, in a line under the scenario's row: live mode names its clients and its
    /// nodes; the simulator's is the table's default and says nothing.
    pub fn ran(&self) -> Option<String> {
        let RunMode::Live {
            redis_server,
            command,
        } = self
        else {
            return None;
        };
        Some(format!(
            "ran live: clients {}; nodes {}",
            match command {
                Some(command) => format!("`{}` (the scenario's clients.command)", command.join(" ")),
                None => "`locksim worker` (locksim's own lock client)".to_string(),
            },
            match redis_server {
                true => "real redis-server processes",
                false => "locksim's own Redis nodes on loopback",
            }
        ))
    }

    /// The mode's fields of a report's JSON object.
    pub fn to_json(&self) -> Value {
        match self {
            RunMode::Simulated => json!({"mode": "simulated", "redis": "simulated", "clients": "locksim"}),
            RunMode::Live {
                redis_server,
                command,
            } => json!({
                "mode": "live",
                "redis": if *redis_server { "redis-server" } else { "locksim" },
                "clients": command.as_ref().map_or("locksim worker".to_string(), |c| c.join(" ")),
            }),
        }
    }
}

/// `Err` (the message for exit 2) when the scenario in `file` names its own clients'
/// `command` (`clients.command`) and is about to run on the simulator, which runs only
/// locksim's own lock client: its verdict would say nothing of the user's code. With
/// `simulated_client` (the user's `--simulated-client`) the user asked for locksim's
/// client on purpose.
pub fn simulation_refused(
    file: &Path,
    command: Option<&[String]>,
    simulated_client: bool,
) -> Result<(), String> {
    match command {
        Some(command) if !simulated_client => Err(format!(
            "{}: clients.command: the simulator runs locksim's own lock client, not your worker `{}`; \
             run your worker with `locksim run --live {}` (add --redis-server for real Redis), or pass \
             --simulated-client to simulate locksim's client with this scenario's lock settings",
            file.display(),
            command.join(" "),
            file.display()
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_seed_is_rerun_live_on_the_same_nodes_and_a_simulated_one_replayed() {
        let file = Path::new("s.json");
        assert_eq!(
            RunMode::Simulated.rerun(file, 7),
            "replay: locksim replay s.json --seed 7"
        );
        let live = |redis_server| RunMode::Live {
            redis_server,
            command: None,
        };
        assert_eq!(
            live(false).rerun(file, 7),
            "rerun: locksim run --live s.json --seed-start 7 --seeds 1"
        );
        assert_eq!(
            live(true).rerun(file, 7),
            "rerun: locksim run --live --redis-server s.json --seed-start 7 --seeds 1"
        );
    }

    #[test]
    fn live_mode_judges_every_checker_but_validity() {
        let live = RunMode::Live {
            redis_server: false,
            command: Some(vec!["python3".into(), "w.py".into()]),
        };
        for (checker, _) in super::super::CHECKERS {
            assert!(RunMode::Simulated.judges(checker));
            assert_eq!(
                live.judges(checker),
                checker != check::validity::NAME,
                "{checker}"
            );
        }
        assert!(live.ran().unwrap().contains("`python3 w.py`"));
        assert_eq!(RunMode::Simulated.ran(), None);
    }
}
