//! The starter set `locksim init` writes for a user's setup: a baseline without faults and
//! one scenario per fault a lock must be judged under (a pause of the holder, a failover
//! where the topology fails over, a clock jump, a restart, a partition), each scaled to
//! the user's TTL and saying what it tests and what a violation of it means.
//!
//! The files are built here without `expect`: what holds and what breaks depends on the
//! whole setup (profile, fencing, masters), so `campaign::starter` runs each file and
//! writes down what its seeds show, rather than a rule guessing it.

use serde_json::{Value, json};

use super::load::load_str;
use super::schema::Scenario;

/// The deployments `init` knows, as its `--topology` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StarterTopology {
    /// One Redis node.
    Single,
    /// A master, two replicas and locksim's failover controller.
    Replicated,
    /// A master, two replicas and three Sentinels (quorum 2).
    Sentinel,
    /// Independent masters, the lock taken by Redlock.
    Redlock,
}

impl StarterTopology {
    /// Every topology, by its `--topology` name.
    pub const ALL: [(&'static str, StarterTopology); 4] = [
        ("single", StarterTopology::Single),
        ("replicated", StarterTopology::Replicated),
        ("sentinel", StarterTopology::Sentinel),
        ("redlock", StarterTopology::Redlock),
    ];

    /// The topology's `--topology` name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, topology)| *topology == self)
            .map_or("single", |(name, _)| name)
    }

    /// The topology `--topology` names, if any.
    pub fn from_name(name: &str) -> Option<StarterTopology> {
        Self::ALL
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, topology)| *topology)
    }

    /// Whether the deployment promotes a replica when its master dies.
    fn fails_over(self) -> bool {
        matches!(self, StarterTopology::Replicated | StarterTopology::Sentinel)
    }
}

/// What the user told `init` about their lock.
#[derive(Debug, Clone)]
pub struct Setup {
    pub topology: StarterTopology,
    /// Redlock masters (`redlock` only).
    pub masters: u32,
    pub ttl_ms: u64,
    /// A lock profile's name (`redisson` …), checked by the scenario loader.
    pub profile: Option<String>,
    /// A fencing mode's name (`none`, `master-incr`, `counter`), checked by the loader.
    pub fencing: Option<String>,
    /// The live worker each client runs (`run --live`), as one shell command.
    pub command: Option<String>,
    /// Seeds each file asks for.
    pub seeds: u64,
}

/// The shortest and longest TTL a starter set takes: below a second the clients' retries
/// (100 ms and more) are as long as the work, and above five minutes the longest file
/// would outrun the hour a scenario may last.
pub const STARTER_TTL_MS: [u64; 2] = [1_000, 300_000];

/// Clients contending for the lock in every file.
const CLIENTS: u32 = 3;

/// One file of the starter set, before its expectations are measured.
#[derive(Debug, Clone)]
pub struct StarterFile {
    /// The file's name in the starter directory (`pause-holder.json`).
    pub file_name: String,
    /// The scenario, without `expect` and with `description` still to be written.
    pub scenario: Value,
    /// What the file tests, in a sentence or two.
    pub tests: String,
    /// What a violation of it means for the user's lock.
    pub violation_means: String,
    /// The checkers whose verdicts the file is to claim.
    pub checkers: Vec<&'static str>,
}

/// The starter set of `setup`, or the loader's error (field, reason) when the setup is not
/// a valid lock (a profile that does not speak Redlock, a TTL the profile refuses …).
pub fn starter_set(setup: &Setup) -> Result<Vec<StarterFile>, (String, String)> {
    let ttl = setup.ttl_ms;
    let base = base_scenario(setup);
    let loaded =
        load_str(std::path::Path::new("(init)"), &base.to_string()).map_err(|e| (e.field, e.reason))?;
    let fault_at = 2 * ttl;
    let mut checkers = vec![
        crate::check::mutual_exclusion::NAME,
        crate::check::resource_safety::NAME,
        crate::check::validity::NAME,
        crate::check::deadlock::NAME,
    ];
    if setup.fencing.as_deref().is_some_and(|f| f != "none") {
        checkers.push(crate::check::stale_write::NAME);
    }
    let file = |file_name, faults: Value, tests: String, violation_means: &str| {
        let mut scenario = base.clone();
        scenario["name"] = json!(format!("{}-{}", setup_name(setup), file_name));
        scenario["faults"] = faults;
        StarterFile {
            file_name: format!("{file_name}.json"),
            scenario,
            tests,
            violation_means: violation_means.to_string(),
            checkers: checkers.clone(),
        }
    };
    // The node that granted the lock: `master` follows a failover; Redlock has several,
    // and its faults strike the first.
    let master = match setup.topology {
        StarterTopology::Redlock => "redis-1",
        _ => "master",
    };
    let mut files = vec![
        file(
            "baseline",
            json!([]),
            "The baseline: the clients take the lock in turn, with no fault at all.".into(),
            "A violation here means the lock is unsafe even when nothing goes wrong: the settings themselves (TTL against the work, the retries) are at fault.",
        ),
        file(
            "pause-holder",
            json!([{ "kind": "pause", "target": "holder", "on": "acquired", "at_ms": fault_at, "delay_ms": 10, "duration_ms": 3 * ttl }]),
            format!(
                "The holder freezes for {} (a GC pause, a VM stop, SIGSTOP) just after it takes the lock: three TTLs, so its key expires under it and another client may take the lock.",
                human(3 * ttl)
            ),
            "A mutual-exclusion violation means two clients believed they held the lock at once: the paused holder woke up and went on as if nothing happened. Only fencing tokens checked by the resource keep its data safe then (resource_safety, stale_write).",
        ),
    ];
    if setup.topology.fails_over() {
        files.push(file(
            "failover",
            json!([{ "kind": "crash", "target": master, "on": "write_before_replication", "at_ms": fault_at, "delay_ms": 20 }]),
            format!("The master crashes just after it granted the lock and before the grant reached any replica; {} later a replica is promoted without the lock key.", human(ttl / 10)),
            "A mutual-exclusion violation means the promoted replica granted the lock again while its first holder still held it: asynchronous replication loses acknowledged lock grants (only WAIT for the replicas, or fencing, helps).",
        ));
    }
    files.push(file(
        "clock-jump",
        json!([{ "kind": "clock_jump", "target": master, "on": "acquired", "at_ms": fault_at, "delay_ms": 10, "by_ms": 2 * ttl }]),
        format!("The wall clock of the Redis node that granted the lock (the master; redis-1 under Redlock) steps {} forward just after a grant (an NTP step, an operator's `date -s`): Redis expires keys by that clock.", human(2 * ttl)),
        "A violation means the key expired early on the node's clock and another client took the lock while the holder still worked: one node's clock decided the lock.",
    ));
    files.push(file(
        "restart",
        json!([{ "kind": "restart", "target": master, "on": "acquired", "at_ms": fault_at, "delay_ms": 10 }]),
        "The Redis node that granted the lock (the master; redis-1 under Redlock) is killed and started again at once, without persistence, just after a grant: it comes back without the lock key.".into(),
        "A violation means the restarted node granted the lock again while its holder still held it: a lock on a node without persistence (or without a restart delay of a TTL) does not survive the node's restart.",
    ));
    let (groups, cut) = partition_groups(setup, &loaded);
    files.push(file(
        "partition",
        json!([{ "kind": "partition", "groups": groups, "on": "acquired", "at_ms": fault_at, "duration_ms": 4 * ttl + 10_000 }]),
        format!("A network partition for {} just after a grant: {cut}", human(4 * ttl + 10_000)),
        "A violation means the two sides of the partition each had a lock holder: the lock did not survive the split.",
    ));
    Ok(files)
}

/// Who the partition of `setup` cuts off from whom, and the words saying so.
fn partition_groups(setup: &Setup, loaded: &Scenario) -> (Value, String) {
    match setup.topology {
        StarterTopology::Single | StarterTopology::Redlock => (
            json!([["holder"], loaded.master_names()]),
            "the holder is cut off from Redis (every master); its release waits in the network, and the key expires by itself.".into(),
        ),
        StarterTopology::Replicated | StarterTopology::Sentinel => {
            let others: Vec<String> = loaded
                .node_names()
                .into_iter()
                .filter(|name| name != "redis-1" && name != super::FENCE_COUNTER)
                .collect();
            (
                json!([["redis-1", "holder"], others]),
                "the master and the holder on one side, the replicas, the failover controller (or the Sentinels) and the other clients on the other (split brain): the majority side promotes a replica while the holder keeps using the old master.".into(),
            )
        }
    }
}

/// The scenario every file of the set shares: topology, lock and clients, with no
/// faults. Its run is ten TTLs and 20 s long: room for the lock to change hands before
/// the fault (at two TTLs), for the fault (at most four TTLs and 10 s) and after it.
fn base_scenario(setup: &Setup) -> Value {
    let ttl = setup.ttl_ms;
    // A failover within the holder's work (a tenth of the TTL: 1 s for a 10 s lock), so a
    // lost grant can overlap a holder that still works, as it does when work is long.
    let down_after_ms = ttl / 10;
    let topology = match setup.topology {
        StarterTopology::Single => json!({ "kind": "single" }),
        StarterTopology::Replicated => {
            json!({ "kind": "replicated", "replicas": 2, "down_after_ms": down_after_ms })
        }
        StarterTopology::Sentinel => json!({
            "kind": "replicated", "replicas": 2,
            "sentinel": { "count": 3, "quorum": 2, "down_after_ms": down_after_ms }
        }),
        StarterTopology::Redlock => json!({ "kind": "redlock", "masters": setup.masters }),
    };
    let algorithm = match setup.topology {
        StarterTopology::Redlock => "redlock",
        _ => "lua-release",
    };
    let mut lock = json!({ "algorithm": algorithm, "ttl_ms": ttl });
    if let Some(profile) = &setup.profile {
        lock["profile"] = json!(profile);
    }
    if let Some(fencing) = &setup.fencing {
        lock["fencing"] = json!(fencing);
    }
    // Work of a quarter to a half of the TTL: well within it, and long enough that a
    // waiting client's retry (every 100 to 300 ms) comes while the holder still works.
    let mut clients = json!({ "count": CLIENTS, "work_ms": [ttl / 4, ttl / 2] });
    if let Some(command) = &setup.command {
        clients["command"] = json!(["sh", "-c", command]);
    }
    json!({
        "$schema": super::SchemaKind::Scenario.file_name(),
        "name": setup_name(setup),
        "description": "",
        "duration_ms": 10 * ttl + 20_000,
        "seeds": setup.seeds,
        "topology": topology,
        "lock": lock,
        "clients": clients,
        "faults": []
    })
}

/// The setup in a word or three, the prefix of every file's `name` (`redlock-5-redisson`).
fn setup_name(setup: &Setup) -> String {
    let mut name = setup.topology.name().to_string();
    if setup.topology == StarterTopology::Redlock {
        name += &format!("-{}", setup.masters);
    }
    for part in [&setup.profile, &setup.fencing].into_iter().flatten() {
        if part != "none" {
            name += &format!("-{part}");
        }
    }
    name
}

/// A duration as a person writes it: `"30 s"`, `"1.5 s"`, `"250 ms"`.
pub fn human(ms: u64) -> String {
    match ms {
        ms if ms.is_multiple_of(1000) => format!("{} s", ms / 1000),
        ms if ms >= 1000 => format!("{} s", ms as f64 / 1000.0),
        ms => format!("{ms} ms"),
    }
}

/// A starter file's text: one top-level field a line, in the order a person reads them,
/// each value on one line (the faults one a line), as the shipped scenarios are written.
pub fn starter_text(scenario: &Value) -> String {
    const ORDER: [&str; 11] = [
        "$schema",
        "name",
        "description",
        "duration_ms",
        "seeds",
        "topology",
        "lock",
        "clients",
        "network",
        "faults",
        "expect",
    ];
    let object = scenario.as_object().expect("a scenario is an object");
    let field = |key: &str, value: &Value| match value {
        Value::Array(faults) if key == "faults" && !faults.is_empty() => {
            let lines: Vec<String> = faults.iter().map(|f| format!("    {f}")).collect();
            format!("  \"faults\": [\n{}\n  ]", lines.join(",\n"))
        }
        _ => format!("  {}: {value}", Value::from(key)),
    };
    let others = object
        .keys()
        .map(String::as_str)
        .filter(|key| !ORDER.contains(key));
    let lines: Vec<String> = ORDER
        .into_iter()
        .chain(others)
        .filter_map(|key| object.get(key).map(|value| field(key, value)))
        .collect();
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(topology: StarterTopology) -> Setup {
        Setup {
            topology,
            masters: 5,
            ttl_ms: 2000,
            profile: None,
            fencing: None,
            command: None,
            seeds: 10,
        }
    }

    #[test]
    fn every_topology_gets_a_baseline_and_the_faults_it_can_suffer() {
        for (name, topology) in StarterTopology::ALL {
            let files = starter_set(&setup(topology)).unwrap();
            let names: Vec<&str> = files.iter().map(|f| f.file_name.as_str()).collect();
            let failover = topology.fails_over();
            assert_eq!(names.contains(&"failover.json"), failover, "{name}: {names:?}");
            assert_eq!(names.len(), 5 + usize::from(failover), "{name}: {names:?}");
            for file in files {
                let text = starter_text(&file.scenario);
                let parsed: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(parsed, file.scenario, "the text is the scenario");
                load_str(std::path::Path::new(&file.file_name), &text)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }

    #[test]
    fn a_setup_the_loader_refuses_is_refused_with_its_field() {
        let mut redis_py_redlock = setup(StarterTopology::Redlock);
        redis_py_redlock.profile = Some("redis-py".into());
        let (field, reason) = starter_set(&redis_py_redlock).unwrap_err();
        assert_eq!(field, "lock.profile");
        assert!(reason.contains("single-node"), "{reason}");
    }
}
