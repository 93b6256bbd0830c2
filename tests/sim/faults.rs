//! Each fault kind does to a simulated run what it says, seen through the history.

use std::sync::Arc;

use locksim::check::check_all;
use locksim::history::{EventKind, History};
use locksim::scenario::Scenario;
use locksim::sweep::run_seed;

/// A single-node scenario with the given faults (a JSON array) and TTL.
fn scenario(ttl_ms: u64, work_ms: [u64; 2], faults: &str) -> Arc<Scenario> {
    let text = format!(
        r#"{{
          "name": "test", "duration_ms": 20000, "seeds": 1,
          "topology": {{ "kind": "single" }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": {ttl_ms} }},
          "clients": {{ "count": 3, "work_ms": [{}, {}] }},
          "faults": {faults}
        }}"#,
        work_ms[0], work_ms[1]
    );
    let scenario = locksim::scenario::load_str(std::path::Path::new("(test)"), &text);
    Arc::new(scenario.expect("test scenario is valid"))
}

fn violated(scenario: &Arc<Scenario>, history: &History, checker: &str) -> bool {
    check_all(history, &scenario.check_settings())
        .into_iter()
        .any(|v| v.checker == checker && v.violation.is_some())
}

fn events<'a>(history: &'a History, node: &'a str) -> impl Iterator<Item = &'a locksim::history::Event> + 'a {
    history.events.iter().filter(move |e| e.node == node)
}

#[test]
fn a_crashed_holder_stops_holding_and_its_lock_expires() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "crash", "target": "holder", "at_ms": 5000 }]"#,
    );
    for seed in 0..5 {
        let history = run_seed(&s, seed).unwrap();
        let crash = history
            .events
            .iter()
            .find(|e| e.kind == EventKind::Crashed)
            .expect("a crash is recorded");
        assert!(crash.node.starts_with("client-"));
        assert!(
            events(&history, &crash.node).all(|e| e.true_us <= crash.true_us),
            "a dead process does nothing"
        );
        let regained = history
            .events
            .iter()
            .find(|e| e.true_us > crash.true_us && matches!(e.kind, EventKind::Acquired { .. }));
        let regained = regained.expect("another client acquires after the TTL");
        assert!(
            regained.true_us - crash.true_us < 2_000_000 + 1_500_000,
            "within the TTL plus one retry cycle"
        );
        assert!(!violated(&s, &history, "mutual_exclusion") && !violated(&s, &history, "deadlock"));
    }
}

#[test]
fn redis_restarting_empty_within_the_ttl_grants_the_lock_twice() {
    let s = scenario(
        5000,
        [1000, 3000],
        r#"[{ "kind": "crash", "target": "redis-1", "on": "acquired", "at_ms": 5000, "delay_ms": 100, "restart_after_ms": 200 }]"#,
    );
    let history = run_seed(&s, 0).unwrap();
    assert!(
        history
            .events
            .iter()
            .any(|e| e.node == "redis-1" && e.kind == EventKind::Restarted)
    );
    assert!(violated(&s, &history, "mutual_exclusion"));
}

#[test]
fn a_forward_jump_of_the_redis_clock_expires_the_lock_early() {
    let faults = |by_ms: i64| {
        format!(
            r#"[{{ "kind": "clock_jump", "target": "redis-1", "on": "acquired", "at_ms": 5000, "by_ms": {by_ms} }}]"#
        )
    };
    let forward = scenario(5000, [1000, 3000], &faults(6000));
    assert!(violated(
        &forward,
        &run_seed(&forward, 0).unwrap(),
        "mutual_exclusion"
    ));
    let backward = scenario(5000, [1000, 3000], &faults(-6000));
    assert!(!violated(
        &backward,
        &run_seed(&backward, 0).unwrap(),
        "mutual_exclusion"
    ));
}

#[test]
fn an_event_trigger_fires_after_the_event_and_its_delay() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "pause", "target": "holder", "on": "acquired", "at_ms": 3000, "delay_ms": 50, "duration_ms": 100 }]"#,
    );
    let history = run_seed(&s, 0).unwrap();
    let start = history
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::FaultStarted { .. }))
        .unwrap();
    let trigger = history
        .events
        .iter()
        .find(|e| e.true_us >= 3_000_000 && matches!(e.kind, EventKind::Acquired { .. }))
        .unwrap();
    // The injector wakes on the event's record, a scheduling step (well under 5 µs) later.
    let after_us = start.true_us - trigger.true_us;
    assert!((50_000..50_005).contains(&after_us), "{after_us} µs");
    assert!(
        start.kind.to_string().contains(trigger.node.as_str()),
        "holder means the client of the event"
    );
}

#[test]
fn a_partitioned_client_cannot_acquire_until_the_heal() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "partition", "groups": [["client-1"], ["redis-1"]], "at_ms": 2000, "duration_ms": 6000 },
            { "kind": "crash", "target": ["client-2", "client-3"], "at_ms": 2000 }]"#,
    );
    let history = run_seed(&s, 1).unwrap();
    let acquired_at: Vec<u64> = events(&history, "client-1")
        .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .map(|e| e.true_us / 1000)
        .collect();
    assert!(
        acquired_at.iter().all(|&t| !(2100..8000).contains(&t)),
        "{acquired_at:?}"
    );
    assert!(
        acquired_at.iter().any(|&t| t >= 8000),
        "client-1 acquires again after the heal"
    );
    // A partition drops what crosses it: each attempt waits out its request timeout.
    assert!(
        events(&history, "client-1").any(
            |e| matches!(&e.kind, EventKind::AttemptFailed { reason, .. } if reason.contains("no reply within"))
        ),
        "its attempts time out"
    );
}

#[test]
fn a_drifting_clock_moves_away_from_true_time() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "clock_drift", "target": "client-1", "at_ms": 1000, "rate_ppm": 100000 }]"#,
    );
    let history = run_seed(&s, 0).unwrap();
    let late = events(&history, "client-1")
        .filter(|e| e.true_us > 15_000_000)
        .last()
        .unwrap();
    let skew_us = late.local_us - late.true_us as i64;
    assert!(
        skew_us > 1_000_000,
        "10% fast for 14 s is more than 1 s ahead: {skew_us} µs"
    );
}

#[test]
fn a_reset_client_reconnects_and_goes_on() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "reset", "target": "redis-1", "at_ms": 3000 }]"#,
    );
    let history = run_seed(&s, 0).unwrap();
    for client in ["client-1", "client-2", "client-3"] {
        assert!(
            events(&history, client)
                .any(|e| e.true_us > 4_000_000 && matches!(e.kind, EventKind::Acquired { .. })),
            "{client} acquires after the reset"
        );
    }
}

#[test]
fn the_nemesis_is_seeded() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "random", "rate_per_s": 1.0, "kinds": ["pause", "crash", "clock_jump", "partition", "reset"], "duration_ms": [100, 2000] }]"#,
    );
    let first = run_seed(&s, 3).unwrap();
    assert_eq!(first.digest(), run_seed(&s, 3).unwrap().digest());
    assert_ne!(first.digest(), run_seed(&s, 4).unwrap().digest());
    let faults = first
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::FaultStarted { .. }))
        .count();
    assert!(
        (5..60).contains(&faults),
        "about one fault a second for 20 s: {faults}"
    );
}

/// How long each acquire that started within `[from_ms, to_ms)` took, per client, in ms.
fn acquire_times(
    history: &History,
    from_ms: u64,
    to_ms: u64,
) -> std::collections::BTreeMap<String, Vec<u64>> {
    let mut started: std::collections::BTreeMap<&str, u64> = Default::default();
    let mut took: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for event in &history.events {
        match event.kind {
            EventKind::AcquireStarted => {
                started.insert(&event.node, event.true_us);
            }
            EventKind::Acquired { .. } => {
                if let Some(from) = started.remove(event.node.as_str())
                    && (from_ms * 1000..to_ms * 1000).contains(&from)
                {
                    took.entry(event.node.to_string())
                        .or_default()
                        .push((event.true_us - from) / 1000);
                }
            }
            _ => {}
        }
    }
    took
}

#[test]
fn a_slow_node_delays_only_its_own_replies() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "latency", "target": "redis-1", "latency_ms": [300, 300], "at_ms": 5000, "duration_ms": 5000 }]"#,
    );
    let history = run_seed(&s, 0).unwrap();
    // Each grant is one SET round trip; while redis-1 is slow it takes its 300 ms more.
    let slow: Vec<u64> = acquire_times(&history, 5100, 9500)
        .into_values()
        .flatten()
        .collect();
    let fast: Vec<u64> = acquire_times(&history, 10_500, 20_000)
        .into_values()
        .flatten()
        .collect();
    assert!(!slow.is_empty() && slow.iter().all(|&ms| ms >= 300), "{slow:?}");
    assert!(fast.iter().any(|&ms| ms < 100), "{fast:?}");
}

#[test]
fn a_slow_link_delays_only_the_messages_that_cross_it() {
    let s = scenario(
        2000,
        [100, 500],
        r#"[{ "kind": "latency", "groups": [["client-1"], ["redis-1"]], "one_way": true,
              "latency_ms": [300, 300], "at_ms": 5000, "duration_ms": 10000 }]"#,
    );
    let history = run_seed(&s, 0).unwrap();
    let took = acquire_times(&history, 5100, 14_000);
    let client_1 = &took["client-1"];
    assert!(
        client_1.iter().all(|&ms| ms >= 300),
        "client-1's requests cross the slow link: {client_1:?}"
    );
    let others: Vec<u64> = ["client-2", "client-3"]
        .iter()
        .flat_map(|c| took.get(*c).cloned().unwrap_or_default())
        .collect();
    assert!(
        others.iter().any(|&ms| ms < 100),
        "the others' do not: {others:?}"
    );
}

/// Every kind the nemesis can draw, on the replicated topology (so a stall has a replica).
const EVERY_KIND: &str = r#"["pause", "crash", "restart", "clock_jump", "clock_drift", "partition", "heal",
    "latency", "loss", "reset", "replication_stall"]"#;

fn replicated_nemesis(swarm: bool) -> Arc<Scenario> {
    let text = scenario_text(swarm);
    Arc::new(locksim::scenario::load_str(std::path::Path::new("(nemesis)"), &text).expect("valid"))
}

fn scenario_text(swarm: bool) -> String {
    format!(
        r#"{{
          "name": "nemesis", "duration_ms": 20000, "seeds": 1,
          "topology": {{ "kind": "replicated", "replicas": 1 }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": 2000 }},
          "clients": {{ "count": 3, "work_ms": [100, 500] }},
          "faults": [{{ "kind": "random", "rate_per_s": 2.0, "kinds": {EVERY_KIND}, "duration_ms": [100, 1500],
                       "jump_ms": [500, 3000], "drift_ppm": [-50000, 50000], "latency_ms": [20, 300],
                       "loss_rate": [0.2, 0.6], "swarm": {swarm} }}]
        }}"#
    )
}

/// The kinds the nemesis drew in one run, from its record of them.
fn drawn_kinds(history: &History) -> std::collections::BTreeSet<String> {
    history
        .drawn
        .iter()
        .map(|fault| {
            let fault: serde_json::Value = serde_json::from_str(fault).unwrap();
            fault["kind"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn the_nemesis_draws_every_kind_and_records_each_fault_as_a_file_writes_it() {
    let s = replicated_nemesis(false);
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..4 {
        let history = run_seed(&s, seed).unwrap();
        assert!(!history.drawn.is_empty());
        // Every recorded fault, put back into a scenario file, loads as a fault.
        let explicit = format!("[{}]", history.drawn.join(","));
        let mut file: serde_json::Value = serde_json::from_str(&scenario_text(false)).unwrap();
        file["faults"] = serde_json::from_str(&explicit).unwrap();
        locksim::scenario::load_str(std::path::Path::new("(materialised)"), &file.to_string())
            .unwrap_or_else(|e| panic!("seed {seed}: the drawn faults do not load: {e}"));
        kinds.extend(drawn_kinds(&history));
    }
    let every: std::collections::BTreeSet<String> = serde_json::from_str::<Vec<String>>(EVERY_KIND)
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(kinds, every, "four seeds at two faults a second draw every kind");
}

#[test]
fn a_swarm_nemesis_differs_from_seed_to_seed() {
    let s = replicated_nemesis(true);
    let sets: Vec<_> = (0..6)
        .map(|seed| drawn_kinds(&run_seed(&s, seed).unwrap()))
        .collect();
    assert!(
        sets.iter().any(|kinds| kinds.len() < 8),
        "some seed runs with only some kinds on: {sets:?}"
    );
    assert!(
        sets.windows(2).any(|pair| pair[0] != pair[1]),
        "seeds draw different nemeses: {sets:?}"
    );
}

#[test]
fn a_holder_fault_that_waited_for_the_next_grant_counts_no_grant_of_its_victim_after_it() {
    // One client that mostly thinks: at 5 s it seldom holds the lock, so `holder` waits
    // for its next grant; the crash kills it for good, so no grant can follow the fault.
    let text = r#"{
      "name": "test", "duration_ms": 10000, "seeds": 1,
      "topology": { "kind": "single" },
      "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
      "clients": { "count": 1, "work_ms": [50, 50], "think_ms": [400, 400] },
      "faults": [{ "kind": "crash", "target": "holder", "at_ms": 5000 }]
    }"#;
    let s = Arc::new(locksim::scenario::load_str(std::path::Path::new("(test)"), text).unwrap());
    let mut waited = 0;
    for seed in 0..5 {
        let history = run_seed(&s, seed).unwrap();
        let crash = history
            .events
            .iter()
            .find(|e| e.kind == EventKind::Crashed)
            .unwrap();
        waited += usize::from(crash.true_us > 5_000_100);
        let evidence =
            locksim::check::evidence::evidence(&history, &locksim::check::liveness::waits(&history), 1);
        assert_eq!(evidence.faults[0].struck_us, Some(crash.true_us), "seed {seed}");
        assert_eq!(evidence.faults[0].grants_after, 0, "seed {seed}");
    }
    assert!(waited > 0, "some seed had to wait for the next grant");
}

#[test]
fn latency_and_loss_reach_the_sentinel_and_the_fencing_counter_like_any_node() {
    let text = r#"{
      "name": "test", "duration_ms": 8000, "seeds": 1,
      "topology": { "kind": "replicated", "replicas": 1, "down_after_ms": 1000 },
      "lock": { "algorithm": "lua-release", "ttl_ms": 2000, "fencing": "counter" },
      "clients": { "count": 2, "work_ms": [100, 300] },
      "faults": [
        { "kind": "latency", "target": ["sentinel", "fence-counter"], "latency_ms": [300, 300], "at_ms": 2000, "duration_ms": 3000 },
        { "kind": "loss", "target": ["sentinel"], "rate": 0.5, "at_ms": 2000, "duration_ms": 3000 },
        { "kind": "latency", "groups": [["sentinel"], ["redis-1"]], "latency_ms": [50, 50], "at_ms": 2500, "duration_ms": 1000 }
      ]
    }"#;
    let s = Arc::new(locksim::scenario::load_str(std::path::Path::new("(test)"), text).unwrap());
    let history = run_seed(&s, 0).unwrap();
    let ended = history
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::FaultEnded { .. }))
        .count();
    assert_eq!(ended, 3, "every fault struck and ended");
    let slow_grants = history
        .events
        .iter()
        .filter(|e| {
            (2_000_000..5_000_000).contains(&e.true_us) && matches!(e.kind, EventKind::Acquired { .. })
        })
        .count();
    assert!(
        slow_grants > 0,
        "clients still get the lock, fenced by a slow counter"
    );
}

#[test]
fn hundreds_of_clients_each_get_an_address_of_their_own() {
    let text = r#"{
      "name": "test", "duration_ms": 1000, "seeds": 1,
      "topology": { "kind": "single" },
      "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
      "clients": { "count": 300, "work_ms": [1, 2] }
    }"#;
    let s = Arc::new(locksim::scenario::load_str(std::path::Path::new("(test)"), text).unwrap());
    let history = run_seed(&s, 0).unwrap();
    let acquirers: std::collections::BTreeSet<&str> = history
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .map(|e| e.node.as_str())
        .collect();
    assert!(acquirers.len() > 1, "the clients run: {acquirers:?}");
}

/// `single-node-restart-aof-everysec` with its crash of redis-1 as `kind`.
fn everysec_restart(kind: &str) -> Arc<Scenario> {
    let text = std::fs::read_to_string("scenarios/single-node-restart-aof-everysec.json").unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["faults"][0]["kind"] = kind.into();
    Arc::new(locksim::scenario::load_str(std::path::Path::new("(test)"), &json.to_string()).unwrap())
}

#[test]
fn under_everysec_a_process_kill_loses_no_acknowledged_write_and_a_power_loss_does() {
    let (killed, powered_off) = (everysec_restart("crash"), everysec_restart("power_loss"));
    let mut broken_by_power_loss = 0;
    for seed in 0..10 {
        let history = run_seed(&killed, seed).unwrap();
        assert!(
            !violated(&killed, &history, "mutual_exclusion"),
            "seed {seed}: the restarted process reads back the grant it wrote before replying"
        );
        let history = run_seed(&powered_off, seed).unwrap();
        broken_by_power_loss += usize::from(violated(&powered_off, &history, "mutual_exclusion"));
    }
    // A grant fsynced before the power cut survives it: only some seeds break.
    assert!(broken_by_power_loss > 0, "{broken_by_power_loss} of 10 seeds");
}

/// One master and a replica whose stream waits `lag_ms` in the master's output buffer,
/// with `faults` (a JSON list's items, each followed by a comma) first; the master dies
/// 10 ms after a grant and the replica is promoted 250 ms later.
fn failover_with(lag_ms: u64, faults: &str) -> Arc<Scenario> {
    let text = format!(
        r#"{{
          "name": "test", "duration_ms": 12000, "seeds": 1,
          "topology": {{ "kind": "replicated", "replicas": 1, "down_after_ms": 250,
                        "replication_lag_ms": {lag_ms} }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": 2000 }},
          "clients": {{ "count": 3, "work_ms": [1000, 1500] }},
          "faults": [ {faults}
            {{ "kind": "crash", "target": "master", "on": "acquired", "at_ms": 5000, "delay_ms": 10 }} ]
        }}"#
    );
    let scenario = locksim::scenario::load_str(std::path::Path::new("(test)"), &text);
    Arc::new(scenario.expect("test scenario is valid"))
}

#[test]
fn replication_lag_dies_with_the_master() {
    let mutex = locksim::check::mutual_exclusion::NAME;
    for seed in 0..3 {
        let lagging = failover_with(200, "");
        let history = run_seed(&lagging, seed).unwrap();
        assert!(
            violated(&lagging, &history, mutex),
            "seed {seed}: the unstreamed grant is lost"
        );
        let prompt = failover_with(0, "");
        let history = run_seed(&prompt, seed).unwrap();
        assert!(
            !violated(&prompt, &history, mutex),
            "seed {seed}: the grant was streamed"
        );
    }
}

/// The grant a master wrote to its replica 10 ms before it was killed is still on the
/// wire, 200 ms slow: it arrives, and the replica applies it (even though the replica's
/// acknowledgements to the dead master fail meanwhile).
#[test]
fn a_grant_on_the_wire_when_the_master_dies_reaches_the_replica() {
    let s = failover_with(
        0,
        r#"{ "kind": "latency", "groups": [["redis-1"], ["redis-1-replica-1"]], "one_way": true,
             "latency_ms": [200, 200], "at_ms": 0 },"#,
    );
    for seed in 0..8 {
        let history = run_seed(&s, seed).unwrap();
        let crash = history
            .events
            .iter()
            .position(|e| matches!(e.kind, EventKind::Crashed))
            .expect("the master crashes");
        let last_grant = history.events[..crash]
            .iter()
            .rev()
            .find_map(|e| match &e.kind {
                EventKind::KeySet { token, .. } if e.node == "redis-1" => Some(token.clone()),
                _ => None,
            })
            .expect("a grant before the crash");
        let reached = events(&history, "redis-1-replica-1")
            .any(|e| matches!(&e.kind, EventKind::KeySet { token, .. } if *token == last_grant));
        assert!(
            reached,
            "seed {seed}: grant {last_grant} never reached the replica"
        );
    }
}
