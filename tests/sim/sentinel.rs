//! Failover as Sentinel does it, seen through simulated runs: clients of a demoted master,
//! which `CLIENT KILL` moves whatever they do on `READONLY` (`lock.on_readonly`), the
//! Sentinel quorum, and masters that refuse writes without enough good replicas
//! (`min-replicas-to-write`); and the fake node's `CLIENT KILL TYPE normal`, which Sentinel
//! sends, against a real redis-server. tests/sim/failover_demotion.rs has when the old master
//! is converted.

use crate::support;

use std::sync::Arc;

use support::resp::{RespClient, Value};
use support::{FakeServer, RedisServer};

use locksim::history::{EventKind, History};
use locksim::scenario::Scenario;
use locksim::sweep::run_seed;

fn load(text: &str) -> Arc<Scenario> {
    let scenario = locksim::scenario::load_str(std::path::Path::new("(test)"), text);
    Arc::new(scenario.expect("test scenario is valid"))
}

/// When the first event that `matches` happened (true µs).
fn first_true_us(history: &History, matches: impl Fn(&EventKind) -> bool) -> u64 {
    history
        .events
        .iter()
        .find(|e| matches(&e.kind))
        .map(|e| e.true_us)
        .expect("the event happens")
}

/// Acquires refused with READONLY, and acquires granted, after `from_us`.
fn after(history: &History, from_us: u64) -> (usize, usize) {
    let later = history.events.iter().filter(|e| e.true_us > from_us);
    let (mut readonly, mut granted) = (0, 0);
    for event in later {
        match &event.kind {
            EventKind::AcquireFailed { reason, .. } if reason.contains("READONLY") => readonly += 1,
            EventKind::Acquired { .. } => granted += 1,
            _ => {}
        }
    }
    (readonly, granted)
}

/// The master is cut off from its replica and the failover controller (not from the
/// clients) long enough to be replaced; about ten seconds after the heal the controller
/// makes it a replica and closes its clients' connections (`CLIENT KILL TYPE normal`).
fn demoted_master(on_readonly: &str) -> Arc<Scenario> {
    load(&format!(
        r#"{{
          "name": "test", "duration_ms": 25000, "seeds": 1,
          "topology": {{ "kind": "replicated", "replicas": 1, "down_after_ms": 500 }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": 1000, "on_readonly": "{on_readonly}" }},
          "clients": {{ "count": 2, "work_ms": [50, 100] }},
          "faults": [ {{ "kind": "partition", "groups": [["redis-1"], ["redis-1-replica-1", "sentinel"]],
                         "at_ms": 3000, "duration_ms": 2000 }} ]
        }}"#
    ))
}

/// When the old master was made a replica (the controller's or a Sentinel's trace line).
fn old_master_demoted_us(history: &History) -> u64 {
    first_true_us(
        history,
        |k| matches!(k, EventKind::Reconfigured { node, demoted: true, .. } if node == "redis-1"),
    )
}

#[test]
fn clients_that_retry_or_reconnect_on_readonly_alike_leave_the_demoted_master_when_it_kills_them() {
    // Before the CLIENT KILL came with every demotion, a client that retries on READONLY
    // stayed on the demoted master for the rest of the run.
    for on_readonly in ["retry", "reconnect"] {
        let s = demoted_master(on_readonly);
        for seed in 0..3 {
            let history = run_seed(&s, seed).unwrap();
            let demoted = old_master_demoted_us(&history);
            let (readonly, granted) = after(&history, demoted);
            assert_eq!(
                readonly, 0,
                "{on_readonly} seed {seed}: a READONLY reached the lock"
            );
            assert!(
                granted > 10,
                "{on_readonly} seed {seed}: only {granted} grants after it"
            );
        }
    }
}

/// A replicated group watched by three Sentinels (quorum 2) that fail over after 500 ms.
fn with_sentinels(lock: &str, faults: &str) -> Arc<Scenario> {
    load(&format!(
        r#"{{
          "name": "test", "duration_ms": 20000, "seeds": 1,
          "topology": {{ "kind": "replicated", "replicas": 1,
                        "sentinel": {{ "count": 3, "quorum": 2, "down_after_ms": 500, "failover_timeout_ms": 3000 }} }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": 1000 {lock} }},
          "clients": {{ "count": 2, "work_ms": [50, 100] }},
          "faults": [ {faults} ]
        }}"#
    ))
}

fn failovers(history: &History) -> Vec<(String, String)> {
    history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Failover { promoted, .. } => Some((e.node.to_string(), promoted.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_sentinel_quorum_promotes_the_replica_of_a_crashed_master_and_clients_find_it() {
    let s = with_sentinels("", r#"{ "kind": "crash", "target": "redis-1", "at_ms": 3000 }"#);
    for seed in 0..3 {
        let history = run_seed(&s, seed).unwrap();
        let failovers = failovers(&history);
        assert_eq!(failovers.len(), 1, "seed {seed}: {failovers:?}");
        let (leader, promoted) = &failovers[0];
        assert!(leader.starts_with("sentinel-"), "seed {seed}: {leader}");
        assert_eq!(promoted, "redis-1-replica-1");
        let promoted_at = first_true_us(&history, |k| matches!(k, EventKind::Failover { .. }));
        let (_, granted) = after(&history, promoted_at);
        assert!(
            granted > 10,
            "seed {seed}: only {granted} grants on the new master"
        );
    }
}

/// The outcomes of the Sentinels' elections: (Sentinel, epoch, votes, elected).
fn elections(history: &History) -> Vec<(String, u64, usize, bool)> {
    history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SentinelElection {
                epoch,
                votes,
                elected,
                ..
            } => Some((e.node.to_string(), *epoch, *votes, *elected)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_split_vote_aborts_the_failover_until_twice_the_failover_timeout() {
    // The catalogue's short-lag split brain: in seed 9 sentinel-2 and sentinel-3 ask for
    // votes at once and each votes for itself (1 of the 2 needed); both give up after the
    // 10 s election timeout, and the next try (20 s after the first) comes after the heal,
    // so nobody fails over, as Redis's Sentinel would not. In seed 0 one asks first and wins.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/sentinel-split-brain-min-replicas-short-lag.json"
    );
    let s = Arc::new(locksim::scenario::load(std::path::Path::new(path)).expect("catalogue scenario loads"));
    let split = run_seed(&s, 9).unwrap();
    let mut lost = elections(&split);
    lost.sort();
    assert_eq!(
        lost,
        vec![
            ("sentinel-2".to_string(), 1, 1, false),
            ("sentinel-3".to_string(), 1, 1, false)
        ]
    );
    assert_eq!(failovers(&split), vec![]);
    let won = run_seed(&s, 0).unwrap();
    let elected = elections(&won);
    assert_eq!(elected.len(), 1, "{elected:?}");
    assert!(elected[0].3 && elected[0].2 >= 2, "{elected:?}");
    let failovers = failovers(&won);
    assert_eq!(
        failovers,
        vec![(elected[0].0.clone(), "redis-1-replica-1".to_string())]
    );
}

#[test]
fn one_sentinel_alone_cannot_fail_over() {
    // Two of the three Sentinels are down with the master: the last one finds it down
    // (SDOWN), and nobody agrees (no ODOWN, no election).
    let s = with_sentinels(
        "",
        r#"{ "kind": "crash", "target": ["redis-1", "sentinel-1", "sentinel-2"], "at_ms": 3000 }"#,
    );
    for seed in 0..3 {
        let history = run_seed(&s, seed).unwrap();
        assert_eq!(failovers(&history), vec![], "seed {seed}");
    }
}

#[test]
fn a_returning_old_master_is_made_a_replica_and_its_clients_are_sent_to_the_new_master() {
    // Cut off from the Sentinels and its replica, not from the clients: replaced, then
    // converted at the first INFO more than 8 s after it is seen again as a master (about
    // 10 s after the heal), with CLIENT KILL, so even clients that keep their connection on
    // READONLY reconnect and ask Sentinel for the master.
    let s = with_sentinels(
        r#", "on_readonly": "retry""#,
        r#"{ "kind": "partition", "groups": [["redis-1"], ["redis-1-replica-1", "sentinel-1", "sentinel-2", "sentinel-3"]],
             "at_ms": 3000, "duration_ms": 2000 }"#,
    );
    for seed in 0..3 {
        let history = run_seed(&s, seed).unwrap();
        assert_eq!(failovers(&history).len(), 1, "seed {seed}");
        // Healed at 5 s; converted by about 16.5 s; the run ends at 20 s.
        let demoted = old_master_demoted_us(&history);
        assert!(
            (13_000_000..16_500_000).contains(&demoted),
            "seed {seed}: at {demoted} µs"
        );
        let (readonly, granted) = after(&history, demoted);
        assert_eq!(readonly, 0, "seed {seed}: clients still on the demoted master");
        assert!(granted > 10, "seed {seed}: only {granted} grants at the end");
    }
}

/// A master whose one replica is cut off from it for 6 s, with or without
/// `min-replicas-to-write 1` and a 2 s lag; nobody fails over.
fn replica_cut_off(min_replicas: &str) -> Arc<Scenario> {
    load(&format!(
        r#"{{
          "name": "test", "duration_ms": 14000, "seeds": 1,
          "topology": {{ "kind": "replicated", "replicas": 1, "down_after_ms": 60000 {min_replicas} }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": 1000 }},
          "clients": {{ "count": 2, "work_ms": [50, 100] }},
          "faults": [ {{ "kind": "partition", "groups": [["redis-1"], ["redis-1-replica-1"]],
                         "at_ms": 3000, "duration_ms": 6000 }} ]
        }}"#
    ))
}

/// Acquires refused with NOREPLICAS between `from_us` and `to_us`.
fn noreplicas_refusals_between(history: &History, from_us: u64, to_us: u64) -> usize {
    let between = history
        .events
        .iter()
        .filter(|e| (from_us..to_us).contains(&e.true_us));
    between
        .filter(
            |e| matches!(&e.kind, EventKind::AcquireFailed { reason, .. } if reason.contains("NOREPLICAS")),
        )
        .count()
}

#[test]
fn a_master_without_a_good_replica_refuses_writes_until_it_has_one_again() {
    let guarded = replica_cut_off(r#", "min_replicas_to_write": 1, "min_replicas_max_lag_s": 2"#);
    let plain = replica_cut_off("");
    for seed in 0..3 {
        let history = run_seed(&guarded, seed).unwrap();
        // The last acknowledgement before the cut is at most 1 s old at 3 s; past 2 whole
        // seconds of lag (by 6 s at the latest) every write is refused until the heal (9 s).
        assert_eq!(
            noreplicas_refusals_between(&history, 0, 3_000_000),
            0,
            "seed {seed}"
        );
        assert!(
            noreplicas_refusals_between(&history, 6_000_000, 9_000_000) >= 2,
            "seed {seed}: the cut-off master kept taking writes"
        );
        let (_, granted) = after(&history, 11_000_000);
        assert!(granted > 5, "seed {seed}: writes resumed after the heal");
        let history = run_seed(&plain, seed).unwrap();
        assert_eq!(
            noreplicas_refusals_between(&history, 0, 14_000_000),
            0,
            "seed {seed}"
        );
    }
}

fn words(text: &str) -> Vec<Vec<u8>> {
    text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

/// What `CLIENT KILL TYPE normal` answers on a server with one other client connected,
/// whether that client is closed, and whether the caller still gets an answer.
fn client_kill_on(addr: std::net::SocketAddr) -> (Value, bool, Value) {
    let mut killer = RespClient::connect(addr);
    let mut other = RespClient::connect(addr);
    assert_eq!(other.request(&words("PING")), Value::Simple("PONG".into()));
    let killed = killer.request(&words("CLIENT KILL TYPE normal"));
    (killed, other.is_closed(), killer.request(&words("PING")))
}

#[test]
fn client_kill_type_normal_closes_every_other_client_as_redis_does() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    let on_real = client_kill_on(real.addr);
    assert_eq!(
        on_real,
        (Value::Int(1), true, Value::Simple("PONG".into())),
        "redis-server"
    );
    assert_eq!(client_kill_on(fake.addr), on_real, "the fake node");
}
