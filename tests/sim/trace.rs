//! The trace is complete: every node's answer to every acquire, extend and release (with
//! that node's clock), every failed attempt and every failed renewal are in the history.

use std::sync::Arc;

use locksim::history::{Answer, EventKind, History};
use locksim::scenario::load;
use locksim::sweep::run_seed;

fn run(file: &str, seed: u64) -> History {
    let scenario = Arc::new(load(file.as_ref()).expect("a catalogue scenario loads"));
    run_seed(&scenario, seed).expect("the run succeeds")
}

/// The answers `client` heard to `request` since its last attempt began.
fn answers_since_attempt<'a>(
    history: &'a History,
    client: &str,
    before: usize,
) -> Vec<(&'a str, &'a Answer)> {
    let mut answers = Vec::new();
    for event in history.events[..before].iter().filter(|e| e.node == client) {
        match &event.kind {
            EventKind::AcquireStarted | EventKind::AttemptFailed { .. } => answers.clear(),
            EventKind::NodeAnswered {
                request: "acquire",
                redis,
                answer,
                ..
            } => answers.push((redis.as_str(), answer)),
            _ => {}
        }
    }
    answers
}

#[test]
fn every_redlock_grant_is_backed_by_a_quorum_of_recorded_answers() {
    let history = run("scenarios/redlock-slow-node.json", 0);
    let mut grants = 0;
    for (index, event) in history.events.iter().enumerate() {
        if let EventKind::Acquired { .. } = event.kind {
            grants += 1;
            let answers = answers_since_attempt(&history, &event.node, index);
            let yes = answers.iter().filter(|(_, a)| **a == Answer::Yes).count();
            assert_eq!(
                answers.len(),
                5,
                "one answer per master before grant {index}: {answers:?}"
            );
            assert!(yes >= 3, "a quorum granted grant {index}: {answers:?}");
        }
    }
    assert!(grants > 10);
    // redis-3 is slowed past the node timeout from 5 s on: its silence is in the trace.
    let silent = history.events.iter().any(|e| {
        e.true_us > 5_000_000
            && matches!(&e.kind, EventKind::NodeAnswered { redis, answer: Answer::Failed(why), .. }
                if redis == "redis-3" && why.contains("no reply within 50 ms"))
    });
    assert!(silent, "redis-3's timeouts are recorded");
}

#[test]
fn a_nodes_answer_carries_that_nodes_clock() {
    // redis-1's clock runs 10% fast in this scenario; its answers carry its own reading.
    let history = run("scenarios/single-node-redis-clock-fast.json", 0);
    let skewed = history.events.iter().any(|e| {
        matches!(&e.kind, EventKind::NodeAnswered { redis_local_us, .. }
            if (*redis_local_us - e.true_us as i64).abs() > 1_000)
    });
    assert!(
        skewed,
        "some answer shows the Redis node's own clock, not the client's"
    );
}

#[test]
fn a_grant_quotes_the_nodes_clock_when_it_set_the_key_not_when_the_late_reply_arrived() {
    // Every message takes 2.5 s from 5 s on: replies land 2.5 s after the node acted.
    let history = run("scenarios/single-node-slow-network-during-acquire.json", 0);
    let mut late_grants = 0;
    for (i, event) in history.events.iter().enumerate() {
        let EventKind::NodeAnswered {
            request: "acquire",
            answer: Answer::Yes,
            redis_local_us,
            ..
        } = &event.kind
        else {
            continue;
        };
        let set = history.events[..i]
            .iter()
            .rfind(|e| e.node == "redis-1" && matches!(e.kind, EventKind::KeySet { .. }))
            .expect("a grant follows the key it set");
        assert!(
            (redis_local_us - set.local_us).abs() < 1_000,
            "granted at redis-1-clock={redis_local_us} µs, key set at {} µs",
            set.local_us
        );
        late_grants += usize::from(event.true_us - set.true_us >= 2_500_000);
    }
    assert!(late_grants > 0, "some reply arrived 2.5 s after its grant");
}

#[test]
fn every_renewal_and_its_failure_is_recorded() {
    let history = run("scenarios/watchdog-renewal-lost-signalled.json", 0);
    let renewals = history
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Renewed { .. }))
        .count();
    let extends_granted = history
        .events
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::NodeAnswered {
                    request: "extend",
                    answer: Answer::Yes,
                    ..
                }
            )
        })
        .count();
    assert!(renewals > 0);
    assert!(
        extends_granted >= renewals,
        "{extends_granted} extends for {renewals} renewals"
    );
    // The watchdog's loss is explained by the renewal that failed before it.
    let lost = history
        .events
        .iter()
        .position(|e| matches!(e.kind, EventKind::LockLost { .. }))
        .expect("the partitioned holder loses its lock");
    let failed_renewal = history.events[..lost]
        .iter()
        .rev()
        .find(|e| e.node == history.events[lost].node)
        .expect("an event before the loss");
    assert!(
        matches!(failed_renewal.kind, EventKind::RenewalFailed { .. }),
        "{failed_renewal:?}"
    );
    // Every failed attempt says why.
    assert!(history.events.iter().any(|e| matches!(&e.kind,
        EventKind::AttemptFailed { reason, .. } if reason.contains("held by another client"))));
}

#[test]
fn a_node_never_holds_two_tokens_at_once_in_the_trace() {
    // A clock jump expires the holder's key unseen; the next client's SET NX replaces it in
    // one command. The trace still says the old key left before the new one came.
    for file in [
        "scenarios/single-node-clock-jump-forward.json",
        "scenarios/redlock-clock-jump-split-vote.json",
        "scenarios/replicated-swarm-nemesis.json",
    ] {
        let history = run(file, 0);
        let mut present: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
        for event in &history.events {
            match &event.kind {
                EventKind::KeySet { token, .. } => {
                    if let Some(old) = present.insert(&event.node, token) {
                        assert_eq!(
                            old, token,
                            "{file}: {} replaced a key without its leaving",
                            event.node
                        );
                    }
                }
                EventKind::KeyGone { .. } | EventKind::Crashed | EventKind::Restarted => {
                    present.remove(event.node.as_str());
                }
                _ => {}
            }
        }
    }
}
