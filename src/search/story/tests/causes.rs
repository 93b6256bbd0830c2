//! What a restart lost, what a fault's end leaves held, why a liveness story's tries
//! failed, and what folds.

use super::super::words::reason;
use super::super::*;
use super::{acquired, at, fault, texts};
use crate::history::Answer;

#[test]
fn a_fault_over_says_which_nodes_another_fault_still_holds() {
    let world = |ms, kind| at(ms, "world", kind);
    let ended = |fault: &str| EventKind::FaultEnded { fault: fault.into() };
    let (long, short) = ("pause client-1 for 4000 ms", "pause client-1,redis-1 for 1000 ms");
    let history = History {
        events: vec![
            world(100, fault(long)),
            at(100, "client-1", EventKind::Paused),
            world(500, fault(short)),
            at(500, "redis-1", EventKind::Paused),
            at(1500, "redis-1", EventKind::Resumed),
            world(1500, ended(short)),
            at(4100, "client-1", EventKind::Resumed),
            world(4100, ended(long)),
        ],
        end_us: 9_000_000,
        ..History::default()
    };
    assert_eq!(
        super::super::holds::fault_over(&history, 5).unwrap(),
        "fault over: pause client-1,redis-1 for 1000 ms, but client-1 is still paused by pause client-1 for 4000 ms until \
         4100.000 ms"
    );
    assert_eq!(
        super::super::holds::fault_over(&history, 7).unwrap(),
        "fault over: pause client-1 for 4000 ms",
        "nothing holds it any more"
    );
}

#[test]
fn a_crash_over_is_told_by_its_restarts_unless_another_crash_keeps_the_node_down() {
    let world = |ms, kind| at(ms, "world", kind);
    let ended = |fault: &str| EventKind::FaultEnded { fault: fault.into() };
    let (long, short) = (
        "crash redis-1, restart after 900 ms",
        "crash redis-1, restart after 100 ms",
    );
    let history = History {
        events: vec![
            world(100, fault(long)),
            at(100, "redis-1", EventKind::Crashed),
            world(150, fault(short)),
            world(250, ended(short)),
            at(1000, "redis-1", EventKind::Restarted),
            world(1000, ended(long)),
        ],
        end_us: 2_000_000,
        ..History::default()
    };
    assert_eq!(
        super::super::holds::fault_over(&history, 3).unwrap(),
        "fault over: crash redis-1, restart after 100 ms, but redis-1 is still kept down by crash redis-1, restart after \
         900 ms until 1000.000 ms"
    );
    assert_eq!(
        super::super::holds::fault_over(&history, 5),
        None,
        "redis-1 restarts: that says it"
    );
}

#[test]
fn a_partition_over_says_which_links_another_still_cuts() {
    let cut = |ms, from: &str, to: &str| at(ms, from, EventKind::LinkCut { to: to.into() });
    let healed = |ms, from: &str, to: &str| at(ms, from, EventKind::LinkHealed { to: to.into() });
    let (wide, narrow) = (
        "partition [redis-1] | [client-1,client-2]",
        "partition [redis-1] | [client-1]",
    );
    let history = History {
        events: vec![
            cut(100, "redis-1", "client-1"),
            cut(100, "redis-1", "client-2"),
            cut(100, "client-1", "redis-1"),
            cut(100, "client-2", "redis-1"),
            at(100, "world", fault(wide)),
            at(200, "world", fault(narrow)),
            healed(300, "redis-1", "client-2"),
            healed(300, "client-2", "redis-1"),
            at(300, "world", EventKind::FaultEnded { fault: wide.into() }),
            healed(900, "redis-1", "client-1"),
            healed(900, "client-1", "redis-1"),
            at(900, "world", EventKind::FaultEnded { fault: narrow.into() }),
        ],
        end_us: 1_000_000,
        ..History::default()
    };
    assert_eq!(
        super::super::holds::fault_over(&history, 8).unwrap(),
        "fault over: partition [redis-1] | [client-1,client-2], but client-1 and redis-1 are still cut off by partition \
         [redis-1] | [client-1] until 900.000 ms"
    );
    assert_eq!(
        super::super::holds::fault_over(&history, 11).unwrap(),
        "fault over: partition [redis-1] | [client-1]"
    );
}

/// client-3's key stored on redis-1 at 0 and released; client-1's stored at 10 (expiring
/// at `expires_ms` on redis-1's clock) and granted; redis-1 crashes at 100 and restarts at
/// 300, then stores `reloaded` (if any: its token and when, in ms).
fn restart_with(expires_ms: i64, reloaded: Option<(&str, u64)>) -> String {
    let key = |token: &str, at_ms: i64| EventKind::KeySet {
        token: token.into(),
        expires_at_us: Some(at_ms * 1000),
    };
    let mut events = vec![
        at(0, "redis-1", key("old", 9000)),
        at(1, "client-3", acquired("old")),
        at(5, "redis-1", EventKind::KeyGone { token: "old".into() }),
        at(10, "redis-1", key("a", expires_ms)),
        at(11, "client-1", acquired("a")),
        at(100, "redis-1", EventKind::Crashed),
        at(300, "redis-1", EventKind::Restarted),
    ];
    if let Some((token, at_ms)) = reloaded {
        events.push(at(at_ms, "redis-1", key(token, 9000)));
    }
    let history = History {
        events,
        end_us: 1_000_000,
        ..History::default()
    };
    let life = super::super::keys::KeyLife::of(&history);
    let owner = |token: &str| {
        history.events.iter().find_map(|e| match &e.kind {
            EventKind::Acquired { token: t, .. } if t == token => Some(e.node.to_string()),
            _ => None,
        })
    };
    life.restarts[&6].told("redis-1", owner)
}

#[test]
fn a_restart_says_whether_it_lost_the_key_the_node_held() {
    assert_eq!(
        restart_with(5000, None),
        "redis-1 restarts without the lock key: the lock key held by client-1 is gone"
    );
    assert_eq!(
        restart_with(5000, Some(("a", 301))),
        "redis-1 restarts and reloads the lock key held by client-1 from disk"
    );
    assert_eq!(
        restart_with(5000, Some(("old", 301))),
        "redis-1 restarts with an older lock key from disk: the lock key held by client-1 is gone"
    );
    assert_eq!(
        restart_with(200, None),
        "redis-1 restarts; the lock key held by client-1 had expired meanwhile"
    );
    assert_eq!(
        restart_with(5000, Some(("fresh", 301))),
        "redis-1 restarts without the lock key: the lock key held by client-1 is gone",
        "a key it never stored before is a client's, not its disk's"
    );
    assert_eq!(
        restart_with(5000, Some(("a", 304))),
        "redis-1 restarts without the lock key: the lock key held by client-1 is gone",
        "a replica's full resync from its master, a round trip after it starts, is not its disk"
    );
}

fn answered(redis: &str, answer: Answer) -> EventKind {
    EventKind::NodeAnswered {
        request: "acquire",
        redis: redis.into(),
        answer,
        redis_local_us: 0,
    }
}

fn attempt_failed(reason: &str) -> EventKind {
    EventKind::AttemptFailed {
        attempt: 1,
        reason: reason.into(),
    }
}

/// The texts of the liveness story of `events`, the lock free from 0 to 1000 ms.
fn liveness_texts(events: Vec<Event>) -> Vec<String> {
    let history = History {
        events,
        end_us: 1_000_000,
        ..History::default()
    };
    let violation = "the lock stayed free for 1000.000 ms, from 0.000 to 1000.000 ms, while client-1, client-2 wanted it; the \
         bound is 100 ms";
    texts(&history, "liveness", violation)
}

#[test]
fn a_liveness_story_sums_up_the_tries_that_failed_alike() {
    let readonly =
        "unexpected reply from Redis: Error(\"READONLY You can't write against a read only replica.\")";
    let mut events = vec![
        at(0, "client-1", EventKind::AcquireStarted),
        at(0, "client-2", EventKind::AcquireStarted),
    ];
    for (ms, client) in [(5, "client-1"), (105, "client-2"), (205, "client-1")] {
        events.push(at(
            ms,
            client,
            answered("redis-1", Answer::Failed(readonly.into())),
        ));
        events.push(at(ms, client, attempt_failed(readonly)));
    }
    // Then redis-1 holds client-3's key and refuses client-2.
    events.extend([
        at(
            300,
            "redis-1",
            EventKind::KeySet {
                token: "c".into(),
                expires_at_us: None,
            },
        ),
        at(301, "client-3", acquired("c")),
        at(400, "client-2", answered("redis-1", Answer::No)),
        at(
            400,
            "client-2",
            attempt_failed("the lock is held by another client"),
        ),
    ]);
    let texts = liveness_texts(events);
    assert_eq!(
        texts,
        [
            "3 tries by client-1 and client-2 from 5.000 to 205.000 ms all get READONLY (You can't write against a \
             read only replica) from redis-1",
            "a try by client-2 is refused by redis-1, which held client-3's key",
        ],
        "the key of another client's grant inside the span is not told: the refusal says it"
    );
}

#[test]
fn a_redlock_try_short_of_a_quorum_names_each_nodes_answer() {
    let texts = liveness_texts(vec![
        at(
            0,
            "redis-2",
            EventKind::KeySet {
                token: "c".into(),
                expires_at_us: None,
            },
        ),
        at(0, "client-3", acquired("c")),
        at(10, "client-1", EventKind::AcquireStarted),
        at(12, "client-1", answered("redis-1", Answer::Yes)),
        at(12, "client-1", answered("redis-2", Answer::No)),
        at(
            60,
            "client-1",
            answered(
                "redis-3",
                Answer::Failed("request failed: no reply within 50 ms".into()),
            ),
        ),
        at(
            60,
            "client-1",
            attempt_failed("the lock is held by another client"),
        ),
    ]);
    assert_eq!(
        texts,
        [
            "a try by client-1 falls short of a quorum (1 of 3 nodes granted, 2 needed): redis-1 granted, redis-2 \
          refused (holding client-3's key), redis-3 no reply within 50 ms"
        ]
    );
}

#[test]
fn a_liveness_story_tells_the_failed_sentinel_elections_as_one_step() {
    let election = |epoch, votes, elected| EventKind::SentinelElection {
        master: "redis-1".into(),
        epoch,
        votes,
        needed: 2,
        elected,
    };
    let texts = liveness_texts(vec![
        at(100, "sentinel-1", election(1, 1, false)),
        at(150, "sentinel-3", election(2, 1, false)),
        at(700, "sentinel-2", election(3, 2, true)),
    ]);
    assert_eq!(
        texts,
        [
            "2 elections by Sentinels sentinel-1 and sentinel-3 to fail over redis-1 from 100.000 to 150.000 ms (epochs \
             1–2) all fail: none won more than 1 of the 2 votes needed",
            "Sentinel sentinel-2 wins the election to fail over redis-1 (epoch 3, with 2 votes of the 2 needed)",
        ]
    );
}

#[test]
fn many_keys_of_one_node_in_one_instant_fold_into_one_step() {
    let key_step = |text: &str, routine| Step {
        true_us: 7_000_000,
        node: "redis-1-replica-1".into(),
        local_us: 7_000_000,
        text: text.into(),
        routine: Some(routine),
    };
    let mut steps = Vec::new();
    for client in ["client-1", "client-2", "client-1"] {
        steps.push(key_step(
            &format!("redis-1-replica-1 stores {client}'s key, to expire when its clock reads 1.000 ms"),
            Routine::KeyStored,
        ));
        steps.push(key_step(
            &format!("{client}'s key leaves redis-1-replica-1"),
            Routine::KeyGone,
        ));
    }
    steps.push(key_step(
        "redis-1-replica-1 stores client-2's key, to expire when its clock reads 9000.000 ms",
        Routine::KeyStored,
    ));
    let texts: Vec<String> = super::super::fold::fold_key_churn(steps)
        .into_iter()
        .map(|s| s.text)
        .collect();
    assert_eq!(
        texts,
        [
            "redis-1-replica-1 stores and drops 3 keys of client-1 and client-2 in the same instant (6 steps folded)",
            "redis-1-replica-1 stores client-2's key, to expire when its clock reads 9000.000 ms",
        ]
    );
}

#[test]
fn a_liveness_message_names_its_span_and_a_reply_reads_short() {
    assert_eq!(
        span_named(
            "the lock stayed free for 9876.000 ms, from 5124.000 to 15000.000 ms, while client-1 wanted it"
        ),
        Some((5_124_000, 15_000_000))
    );
    assert_eq!(
        span_named(
            "client-1 crashed inside the lock at 3018.000 ms; Redis kept refusing every client from 3048.664 to 19994.249 ms"
        ),
        Some((3_048_664, 19_994_249))
    );
    assert_eq!(span_named("client-1 held the lock [1.000, 2.000] ms"), None);
    assert_eq!(
        reason(
            "unexpected reply from Redis: Error(\"NOREPLICAS Not enough good replicas to write. script: b70c, on @user_script:1.\")"
        ),
        "NOREPLICAS (Not enough good replicas to write)"
    );
    assert_eq!(
        reason("request failed: connection error: connection refused"),
        "connection refused"
    );
}

#[test]
fn a_key_noted_twice_on_one_node_is_one_key_with_its_last_expiry() {
    let key = |ms: u64, expires_at_us| {
        at(
            ms,
            "redis-1",
            EventKind::KeySet {
                token: "a".into(),
                expires_at_us,
            },
        )
    };
    let history = History {
        events: vec![
            at(0, "client-1", EventKind::AcquireStarted),
            key(1, None),
            key(2, Some(3_000_000)),
            at(3, "client-1", acquired("a")),
        ],
        end_us: 5_000_000,
        ..History::default()
    };
    let texts = texts(&history, "validity", "client-1 held it");
    assert_eq!(
        texts[0],
        "redis-1 stores client-1's key, to expire when its clock reads 3000.000 ms"
    );
}
