//! `min-replicas-to-write` across a partition, as Redis 7.0 keeps it (replication.c,
//! refreshGoodSlavesCount): a replica is good while its last acknowledgement is at most
//! `min-replicas-max-lag` whole seconds old, and it leaves the master's list only when its
//! connection closes, which a partition hides. So a master cut off from its replicas
//! refuses writes (NOREPLICAS) from last ACK + lag, whether or not the replicas behind the
//! cut die meanwhile.

use std::sync::Arc;

use locksim::history::{EventKind, History};
use locksim::scenario::Scenario;
use locksim::sweep::run_seed;

/// A master with two replicas and `min-replicas-to-write 1`, `min-replicas-max-lag 10`,
/// cut off from both replicas (its clients stay with it) from 5 s to 20 s; nobody fails
/// over. With `deaths`, both replicas die at 8 s, behind the partition, and stay down.
fn cut_off_master(deaths: bool) -> Arc<Scenario> {
    let crash =
        r#", { "kind": "crash", "target": ["redis-1-replica-1", "redis-1-replica-2"], "at_ms": 8000 }"#;
    let text = format!(
        r#"{{
          "name": "test", "duration_ms": 25000, "seeds": 1,
          "topology": {{ "kind": "replicated", "replicas": 2, "down_after_ms": 600000,
                         "min_replicas_to_write": 1, "min_replicas_max_lag_s": 10 }},
          "lock": {{ "algorithm": "lua-release", "ttl_ms": 2000 }},
          "clients": {{ "count": 2, "work_ms": [100, 500] }},
          "faults": [ {{ "kind": "partition",
                         "groups": [["redis-1", "client-1", "client-2"], ["redis-1-replica-1", "redis-1-replica-2"]],
                         "at_ms": 5000, "duration_ms": 15000 }} {} ]
        }}"#,
        if deaths { crash } else { "" }
    );
    let scenario = locksim::scenario::load_str(std::path::Path::new("(test)"), &text);
    Arc::new(scenario.expect("test scenario is valid"))
}

/// When (true µs) writes were refused with NOREPLICAS from `from_us` on: the first and the
/// last refusal, and how many.
fn refusals(history: &History, from_us: u64) -> Option<(u64, u64, usize)> {
    let times: Vec<u64> = (history.events.iter())
        .filter(|e| e.true_us >= from_us)
        .filter(
            |e| matches!(&e.kind, EventKind::AcquireFailed { reason, .. } if reason.contains("NOREPLICAS")),
        )
        .map(|e| e.true_us)
        .collect();
    Some((*times.first()?, *times.last()?, times.len()))
}

#[test]
fn replicas_that_die_behind_a_partition_stay_good_until_their_last_ack_is_too_old() {
    for seed in 0..3 {
        // (Before 1 s: the replicas have not attached yet.)
        let alive = refusals(&run_seed(&cut_off_master(false), seed).unwrap(), 1_000_000);
        let dead = refusals(&run_seed(&cut_off_master(true), seed).unwrap(), 1_000_000);
        for (what, refused) in [("alive", alive), ("dead", dead)] {
            let (first_us, _, count) =
                refused.unwrap_or_else(|| panic!("seed {seed}, {what}: never refused"));
            // The last ACK before the cut came in at 4-5 s (or just after 5 s, sent
            // before it): its lag passes 10 whole seconds at 15 s at the earliest, 16 s
            // at the latest; the master counts once a second and a client must ask.
            assert!(
                (15_000_000..17_500_000).contains(&first_us),
                "seed {seed}, replicas {what}: first NOREPLICAS at {first_us} µs"
            );
            assert!(count >= 3, "seed {seed}, replicas {what}: {count} refusals");
        }
        // After the heal (20 s) the dead replicas' closes arrive: the master keeps refusing.
        let (_, last_us, _) = dead.unwrap();
        assert!(
            last_us > 22_000_000,
            "seed {seed}: the last refusal at {last_us} µs"
        );
    }
}
