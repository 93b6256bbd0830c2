//! The story told on hand-written histories: what it keeps and from when ([`causes`]: what
//! a restart lost, what a fault's end leaves held, why tries failed).

mod causes;

use super::words::list;
use super::*;
use crate::check::mutual_exclusion;
use crate::history::Answer;

pub(super) fn at(ms: u64, node: &str, kind: EventKind) -> Event {
    Event {
        true_us: ms * 1000,
        node: node.into(),
        local_us: (ms * 1000) as i64,
        kind,
    }
}

/// The texts of the steps of `checker`'s story of `violation`.
pub(super) fn texts(history: &History, checker: &str, violation: &str) -> Vec<String> {
    story(history, checker, violation)
        .into_iter()
        .map(|s| s.text)
        .collect()
}

#[test]
fn the_story_keeps_the_named_clients_and_the_faults_only() {
    let acquired = |token: &str| EventKind::Acquired {
        token: token.into(),
        fence: None,
        validity_ms: 2000,
    };
    let history = History {
        events: vec![
            at(100, "client-3", acquired("c")),
            at(200, "client-3", EventKind::ReleaseSent { token: "c".into() }),
            at(1000, "client-1", acquired("a")),
            at(
                1001,
                "redis-1",
                EventKind::KeySet {
                    token: "a".into(),
                    expires_at_us: Some(3_001_000),
                },
            ),
            at(
                1500,
                "world",
                EventKind::FaultStarted {
                    fault: "pause client-1 for 4000 ms".into(),
                },
            ),
            at(3001, "redis-1", EventKind::KeyGone { token: "a".into() }),
            at(3100, "client-2", acquired("b")),
            at(3200, "client-3", EventKind::AcquireStarted),
        ],
        end_us: 6_000_000,
        ..History::default()
    };
    let violation =
        "client-1 held the lock [1000.000, 5500.000] ms while client-2 held it [3100.000, 5000.000] ms";
    let steps = story(&history, "mutual_exclusion", violation);
    let texts: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "client-1 gets the lock (it believes it for 2000 ms)",
            "redis-1 stores client-1's key, to expire when its clock reads 3001.000 ms",
            "fault: pause client-1 for 4000 ms",
            "client-1's key leaves redis-1",
            "client-2 gets the lock (it believes it for 2000 ms)",
        ]
    );
    let lines = render(&steps, "mutual_exclusion", violation);
    assert_eq!(lines[0], "Story of the mutual_exclusion violation:");
    assert!(lines[1].starts_with(" 1. t=1000.000 ms: client-1 gets the lock"));
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("However, mutual_exclusion is broken")
    );
}

pub(super) fn acquired(token: &str) -> EventKind {
    EventKind::Acquired {
        token: token.into(),
        fence: None,
        validity_ms: 2000,
    }
}

fn released(token: &str) -> EventKind {
    EventKind::ReleaseSent { token: token.into() }
}

pub(super) fn fault(text: &str) -> EventKind {
    EventKind::FaultStarted { fault: text.into() }
}

/// Routine cycles, then two overlapping holds: `client-1` from 2000 ms (too slow to
/// release in time), `client-2` from 4100 ms; the partition starts at `fault_ms`.
fn overlap_and_a_fault_at(fault_ms: u64) -> History {
    let mut events = vec![
        at(10, "client-1", acquired("a1")),
        at(500, "client-1", released("a1")),
        at(600, "client-2", acquired("b1")),
        at(1000, "client-2", released("b1")),
        at(2000, "client-1", acquired("a2")),
        at(4100, "client-2", acquired("b2")),
        at(4500, "client-1", released("a2")),
        at(5000, "client-2", released("b2")),
        at(fault_ms, "world", fault("partition [redis-1] | [client-3]")),
    ];
    events.sort_by_key(|e| e.true_us);
    History {
        events,
        end_us: 9_000_000,
        ..History::default()
    }
}

#[test]
fn a_violation_before_the_first_fault_is_told_from_its_earliest_grant() {
    let history = overlap_and_a_fault_at(7000);
    let violation = mutual_exclusion::check(&mutual_exclusion::holdings(&history))
        .violation
        .unwrap();
    let window = window(&history, mutual_exclusion::NAME, &violation);
    assert_eq!((window.from_us, window.to_us), (2_000_000, 4_500_000));
    let steps = story(&history, mutual_exclusion::NAME, &violation);
    let texts: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "client-1 gets the lock (it believes it for 2000 ms)",
            "client-2 gets the lock (it believes it for 2000 ms)",
            "client-1 releases the lock",
        ]
    );
}

#[test]
fn a_violation_after_the_first_fault_is_told_from_its_earliest_grant_with_the_fault_it_met() {
    let history = overlap_and_a_fault_at(300);
    let violation = mutual_exclusion::check(&mutual_exclusion::holdings(&history))
        .violation
        .unwrap();
    let steps = story(&history, mutual_exclusion::NAME, &violation);
    assert_eq!(steps[0].text, "fault: partition [redis-1] | [client-3]");
    assert_eq!(steps[1].true_us, 2_000_000, "{steps:?}");
    assert_eq!(steps.len(), 4);
}

#[test]
fn a_promotion_before_the_earliest_grant_is_told_while_its_master_stands() {
    let promote = |promoted: &str, replaced: &str| EventKind::Failover {
        promoted: promoted.into(),
        replaced: replaced.into(),
    };
    let mut history = overlap_and_a_fault_at(7000);
    history.events.extend([
        at(100, "sentinel-2", promote("redis-2", "redis-1")),
        at(200, "sentinel-3", promote("redis-3", "redis-2")),
        at(300, "sentinel-1", promote("redis-5", "redis-4")),
    ]);
    history.events.sort_by_key(|e| e.true_us);
    let violation = mutual_exclusion::check(&mutual_exclusion::holdings(&history))
        .violation
        .unwrap();
    let texts = texts(&history, mutual_exclusion::NAME, &violation);
    assert_eq!(
        texts[..2],
        [
            "Sentinel sentinel-3 promotes redis-3 in place of redis-2",
            "Sentinel sentinel-1 promotes redis-5 in place of redis-4",
        ],
        "redis-2, replaced since, is no master of the window: {texts:#?}"
    );
    assert_eq!(texts.len(), 5, "{texts:#?}");
}

#[test]
fn the_failover_controller_and_each_sentinel_are_named_as_such() {
    let mut history = overlap_and_a_fault_at(7000);
    history.events.extend([
        at(2100, "sentinel", EventKind::Crashed),
        at(2200, "sentinel-1", EventKind::Crashed),
        at(2300, "sentinel-1", EventKind::Restarted),
        at(
            2400,
            "sentinel",
            EventKind::Failover {
                promoted: "redis-2".into(),
                replaced: "redis-1".into(),
            },
        ),
    ]);
    history.events.sort_by_key(|e| e.true_us);
    let violation = mutual_exclusion::check(&mutual_exclusion::holdings(&history))
        .violation
        .unwrap();
    let texts = texts(&history, mutual_exclusion::NAME, &violation);
    assert_eq!(
        texts[1..5],
        [
            "the failover controller crashes",
            "Sentinel sentinel-1 crashes",
            "Sentinel sentinel-1 restarts",
            "the failover controller promotes redis-2 in place of redis-1",
        ],
        "{texts:#?}"
    );
}

#[test]
fn a_fault_over_before_the_earliest_grant_is_not_told() {
    let mut history = overlap_and_a_fault_at(300);
    history.events.push(at(
        400,
        "world",
        EventKind::FaultEnded {
            fault: "partition [redis-1] | [client-3]".into(),
        },
    ));
    history.events.sort_by_key(|e| e.true_us);
    let violation = mutual_exclusion::check(&mutual_exclusion::holdings(&history))
        .violation
        .unwrap();
    let steps = story(&history, mutual_exclusion::NAME, &violation);
    assert_eq!(steps[0].true_us, 2_000_000, "{steps:?}");
}

#[test]
fn another_checker_is_told_from_the_grant_its_named_client_had_before_the_violation() {
    let history = overlap_and_a_fault_at(7000);
    let violation =
        "client-1 accessed the resource at 4400.000 ms, 400.000 ms past its validity deadline (4000.000 ms)";
    let window = window(&history, "validity", violation);
    assert_eq!(
        (window.clients.len(), window.from_us, window.to_us),
        (1, 2_000_000, 4_400_000)
    );
}

#[test]
fn a_reused_token_brings_in_only_the_key_stored_for_the_grant_in_the_window() {
    let key_set = |ms: u64| {
        at(
            ms,
            "redis-1",
            EventKind::KeySet {
                token: "same".into(),
                expires_at_us: None,
            },
        )
    };
    let history = History {
        events: vec![
            at(0, "client-1", EventKind::AcquireStarted),
            key_set(5),
            at(10, "client-1", acquired("same")),
            at(100, "client-1", released("same")),
            at(200, "client-1", EventKind::AcquireStarted),
            key_set(205),
            at(210, "client-1", acquired("same")),
            at(300, "client-1", EventKind::Crashed),
        ],
        end_us: 1_000_000,
        ..History::default()
    };
    let steps = story(
        &history,
        "deadlock",
        "client-1 crashed inside the lock at 300.000 ms",
    );
    let times: Vec<u64> = steps.iter().map(|s| s.true_us / 1000).collect();
    assert_eq!(times, [205, 210, 300]);
}

#[test]
fn a_holder_that_crashes_before_its_release_is_answered_only_started_to_release() {
    let crash_after_release_sent = |answered: bool| {
        let mut events = vec![
            at(
                0,
                "redis-1",
                EventKind::KeySet {
                    token: "a".into(),
                    expires_at_us: None,
                },
            ),
            at(1, "client-1", acquired("a")),
            at(100, "client-1", released("a")),
        ];
        if answered {
            events.push(at(101, "client-1", EventKind::Released { owned: true }));
        }
        events.push(at(150, "client-1", EventKind::Crashed));
        let history = History {
            events,
            end_us: 1_000_000,
            ..History::default()
        };
        texts(
            &history,
            "deadlock",
            "client-1 crashed inside the lock at 150.000 ms",
        )
        .into_iter()
        .filter(|t| t.contains("release"))
        .collect::<Vec<_>>()
    };
    assert_eq!(
        crash_after_release_sent(false),
        ["client-1 starts to release the lock"]
    );
    assert_eq!(crash_after_release_sent(true), ["client-1 releases the lock"]);
}

#[test]
fn the_story_ends_at_the_last_time_the_violation_names() {
    assert_eq!(
        last_time_named("held it [7349.683, 9299.000] ms; the bound is 3300 ms"),
        Some(9_299_000)
    );
    assert_eq!(last_time_named("nothing timed"), None);
}

#[test]
fn node_lists_read_as_a_person_writes_them() {
    let names = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(list(&names(&["redis-3", "redis-1", "redis-2"])), "redis-1..3");
    assert_eq!(list(&names(&["redis-4", "redis-1"])), "redis-1 and redis-4");
    assert_eq!(
        list(&names(&["redis-10", "redis-2", "redis-1"])),
        "redis-1, redis-2 and redis-10"
    );
    assert_eq!(list(&names(&["redis-1a", "sentinel"])), "redis-1a and sentinel");
}

#[test]
fn routine_cycles_in_a_row_fold_between_the_first_grant_and_the_last_write() {
    let write = |value| EventKind::ResourceWrite { value, fence: None };
    let key = |token: &str| EventKind::KeySet {
        token: token.into(),
        expires_at_us: Some(9_000_000),
    };
    let mut events = vec![
        at(0, "redis-1", key("a")),
        at(1, "client-1", acquired("a")),
        at(2, "world", fault("pause client-1 for 9000 ms")),
    ];
    // client-2 takes the lock four times while client-1 sleeps, writing 1 to 4.
    for cycle in 0..4 {
        let t = 2000 + cycle * 500;
        let token = format!("b{cycle}");
        events.push(at(t, "redis-1", key(&token)));
        events.push(at(t + 1, "client-2", acquired(&token)));
        events.push(at(t + 100, "client-2", write(cycle as i64 + 1)));
        events.push(at(t + 100, "client-2", released(&token)));
    }
    events.push(at(9002, "client-1", write(1)));
    let history = History {
        events,
        end_us: 10_000_000,
        ..History::default()
    };
    let violation =
        "client-1 wrote 1 at 9002.000 ms from its read of 0, but client-2 had written 4 meanwhile";
    let steps = story(&history, "resource_safety", violation);
    let texts: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts.len(), 8, "{texts:#?}");
    assert_eq!(
        texts[3], "client-2 gets the lock (it believes it for 2000 ms)",
        "the first grant stays"
    );
    assert!(
        texts[4].starts_with("… client-2 writes, releases the lock and takes it again 3 time(s)"),
        "{}",
        texts[4]
    );
    assert_eq!(
        texts[5], "client-2 writes 4 to the resource",
        "the last write stays"
    );
    assert_eq!(texts[7], "client-1 writes 1 to the resource");
}

#[test]
fn a_grant_names_the_nodes_that_gave_it_and_key_events_merge() {
    let answered = |redis: &str, answer: Answer| EventKind::NodeAnswered {
        request: "acquire",
        redis: redis.into(),
        answer,
        redis_local_us: 0,
    };
    let key_set = |at: i64| EventKind::KeySet {
        token: "a".into(),
        expires_at_us: Some(at),
    };
    let history = History {
        events: vec![
            at(0, "client-1", EventKind::AcquireStarted),
            at(1, "redis-1", key_set(2_001_000)),
            at(1, "redis-2", key_set(2_001_000)),
            at(2, "client-1", answered("redis-1", Answer::Yes)),
            at(2, "client-1", answered("redis-2", Answer::Yes)),
            at(
                50,
                "client-1",
                answered("redis-3", Answer::Failed("no reply within 50 ms".into())),
            ),
            at(
                50,
                "client-1",
                EventKind::Acquired {
                    token: "a".into(),
                    fence: None,
                    validity_ms: 1900,
                },
            ),
        ],
        end_us: 3_000_000,
        ..History::default()
    };
    let texts = texts(&history, "validity", "client-1 held it");
    assert_eq!(
        texts,
        [
            "redis-1 and redis-2 store client-1's key, to expire when their clocks read 2001.000 ms",
            "client-1 gets the lock from redis-1 and redis-2 (2 of 3 nodes; no answer from redis-3) (it believes it for 1900 ms)",
        ]
    );
}

#[test]
fn a_late_access_is_told_from_its_grant_with_the_restart_that_brought_back_a_key() {
    let key_set = |token: &str| EventKind::KeySet {
        token: token.into(),
        expires_at_us: Some(9_000_000),
    };
    let history = History {
        events: vec![
            at(0, "redis-1", key_set("old")),
            at(1, "client-3", acquired("old")),
            at(100, "client-3", released("old")),
            at(101, "redis-1", EventKind::KeyGone { token: "old".into() }),
            at(200, "redis-1", key_set("a")),
            at(201, "client-2", acquired("a")),
            at(300, "redis-1", EventKind::Crashed),
            at(400, "redis-1", EventKind::Restarted),
            at(401, "redis-1", key_set("old")),
            at(
                500,
                "client-2",
                EventKind::ResourceWrite {
                    value: 1,
                    fence: None,
                },
            ),
            at(900, "redis-1", key_set("b")),
            at(1000, "client-2", acquired("b")),
        ],
        end_us: 3_000_000,
        ..History::default()
    };
    let violation = "client-2 accessed the resource at 500.000 ms past its validity: its grant (token a) stood \
                     on 0 of 1 node(s), 1 needed (redis-1: key held token old); the client believed it had 2000 \
                     ms of validity at 201.000 ms, so until about 2201.000 ms";
    let told = window(&history, "validity", violation);
    assert_eq!(
        (told.from_us, told.to_us),
        (201_000, 500_000),
        "the grant to the access"
    );
    let texts = texts(&history, "validity", violation);
    for expected in [
        "client-2 gets the lock",
        "redis-1 crashes",
        "redis-1 restarts",
        "redis-1 stores client-3's key",
        "client-2 writes 1",
    ] {
        assert!(
            texts.iter().any(|t| t.starts_with(expected)),
            "{expected:?} in {texts:#?}"
        );
    }
    assert!(
        !texts.iter().any(|t| t.contains("client-3 releases")),
        "client-3's own cycle is not told: {texts:#?}"
    );
}

#[test]
fn the_first_overlap_names_how_many_nodes_granted_its_earlier_holder() {
    let answered = |redis: &str, answer: Answer| EventKind::NodeAnswered {
        request: "acquire",
        redis: redis.into(),
        answer,
        redis_local_us: 0,
    };
    let overlapping = |third: Answer| History {
        events: vec![
            at(0, "client-1", EventKind::AcquireStarted),
            at(2, "client-1", answered("redis-1", Answer::Yes)),
            at(2, "client-1", answered("redis-2", Answer::Yes)),
            at(3, "client-1", answered("redis-3", third)),
            at(3, "client-1", acquired("a")),
            at(100, "client-2", acquired("b")),
            at(200, "client-1", released("a")),
            at(300, "client-2", released("b")),
        ],
        end_us: 1_000_000,
        ..History::default()
    };
    let bare = first_overlap_grant(&overlapping(Answer::No)).unwrap();
    assert_eq!(bare, GrantShare { granted: 2, asked: 3 });
    assert!(bare.bare_majority());
    let every = first_overlap_grant(&overlapping(Answer::Yes)).unwrap();
    assert!(!every.bare_majority(), "3 of 3 is more than a bare majority");
    assert!(
        !GrantShare { granted: 1, asked: 1 }.bare_majority(),
        "one node is no majority of several"
    );
    let mut apart = overlapping(Answer::No);
    apart.events.retain(|e| e.node != "client-2");
    assert_eq!(first_overlap_grant(&apart), None, "no overlap, nothing to say");
}
