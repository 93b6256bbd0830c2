//! The story's rooms told on hand-written histories.
use super::words::list;
use super::*;
use crate::check::mutual_exclusion;
use crate::history::Answer;

fn at(ms: u64, node: &str, kind: EventKind) -> Event {
    Event {
        true_us: ms * 1000,
        node: node.into(),
        local_us: (ms * 1000) as i64,
        kind,
    }
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

fn acquired(token: &str) -> EventKind {
    EventKind::Acquired {
        token: token.into(),
        fence: None,
        validity_ms: 2000,
    }
}

fn released(token: &str) -> EventKind {
    EventKind::ReleaseSent { token: token.into() }
}

fn fault(text: &str) -> EventKind {
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
    let violation = mutual_exclusion::check(&history).violation.unwrap();
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
    let violation = mutual_exclusion::check(&history).violation.unwrap();
    let steps = story(&history, mutual_exclusion::NAME, &violation);
    assert_eq!(steps[0].text, "fault: partition [redis-1] | [client-3]");
    assert_eq!(steps[1].true_us, 2_000_000, "{steps:?}");
    assert_eq!(steps.len(), 4);
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
    let violation = mutual_exclusion::check(&history).violation.unwrap();
    let steps = story(&history, mutual_exclusion::NAME, &violation);
    assert_eq!(steps[0].true_us, 2_000_000, "{steps:?}");
}

#[test]
fn another_checker_is_told_from_the_grant_its_named_client_had_before_the_violation() {
    let history = overlap_and_a_fault_at(7000);
    let violation = "client-1 accessed the resource at 4400.000 ms, 400.000 ms past its validity deadline (4000.000 ms)";
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
    let texts: Vec<String> = story(&history, "validity", "client-1 held it")
        .into_iter()
        .map(|s| s.text)
        .collect();
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
    let texts: Vec<String> = story(&history, "validity", violation)
        .into_iter()
        .map(|s| s.text)
        .collect();
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
        super::holds::fault_over(&history, 5).unwrap(),
        "fault over: pause client-1,redis-1 for 1000 ms; client-1 still paused by pause client-1 for 4000 ms until \
         4100.000 ms"
    );
    assert_eq!(
        super::holds::fault_over(&history, 7).unwrap(),
        "fault over: pause client-1 for 4000 ms",
        "nothing holds it any more"
    );
}

#[test]
fn a_crash_over_is_told_by_its_restarts_unless_another_crash_keeps_the_node_down() {
    let world = |ms, kind| at(ms, "world", kind);
    let ended = |fault: &str| EventKind::FaultEnded { fault: fault.into() };
    let (long, short) = ("crash redis-1, restart after 900 ms", "crash redis-1, restart after 100 ms");
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
        super::holds::fault_over(&history, 3).unwrap(),
        "fault over: crash redis-1, restart after 100 ms; redis-1 still kept down by crash redis-1, restart after \
         900 ms until 1000.000 ms"
    );
    assert_eq!(super::holds::fault_over(&history, 5), None, "redis-1 restarts: that says it");
}

#[test]
fn a_partition_over_says_which_links_another_still_cuts() {
    let cut = |ms, from: &str, to: &str| at(ms, from, EventKind::LinkCut { to: to.into() });
    let healed = |ms, from: &str, to: &str| at(ms, from, EventKind::LinkHealed { to: to.into() });
    let (wide, narrow) = ("partition [redis-1] | [client-1,client-2]", "partition [redis-1] | [client-1]");
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
        super::holds::fault_over(&history, 8).unwrap(),
        "fault over: partition [redis-1] | [client-1,client-2]; client-1 and redis-1 still cut off by partition \
         [redis-1] | [client-1] until 900.000 ms"
    );
    assert_eq!(
        super::holds::fault_over(&history, 11).unwrap(),
        "fault over: partition [redis-1] | [client-1]"
    );
}

/// client-3's key stored on redis-1 at 0 and released; client-1's stored at 10 (expiring
/// at `expires_ms` on redis-1's clock) and granted; redis-1 crashes at 100 and restarts at
/// 300, then stores `reloaded` (if any) at 301.
fn restart_with(expires_ms: i64, reloaded: Option<&str>) -> String {
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
    if let Some(token) = reloaded {
        events.push(at(301, "redis-1", key(token, 9000)));
    }
    let history = History {
        events,
        end_us: 1_000_000,
        ..History::default()
    };
    let life = super::keys::KeyLife::of(&history);
    let owner = |token: &str| {
        history.events.iter().find_map(|e| match &e.kind {
            EventKind::Acquired { token: t, .. } if t == token => Some(e.node.clone()),
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
        restart_with(5000, Some("a")),
        "redis-1 restarts and reloads the lock key held by client-1 from disk"
    );
    assert_eq!(
        restart_with(5000, Some("old")),
        "redis-1 restarts with an older lock key from disk: the lock key held by client-1 is gone"
    );
    assert_eq!(
        restart_with(200, None),
        "redis-1 restarts; the lock key held by client-1 had expired meanwhile"
    );
    assert_eq!(
        restart_with(5000, Some("fresh")),
        "redis-1 restarts without the lock key: the lock key held by client-1 is gone",
        "a key it never stored before is a client's, not its disk's"
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
    let violation =
        "the lock stayed free for 1000.000 ms, from 0.000 to 1000.000 ms, while client-1, client-2 wanted it; the \
         bound is 100 ms";
    story(&history, "liveness", violation)
        .into_iter()
        .map(|s| s.text)
        .collect()
}

#[test]
fn a_liveness_story_sums_up_the_tries_that_failed_alike() {
    let readonly = "unexpected reply from Redis: Error(\"READONLY You can't write against a read only replica.\")";
    let mut events = vec![
        at(0, "client-1", EventKind::AcquireStarted),
        at(0, "client-2", EventKind::AcquireStarted),
    ];
    for (ms, client) in [(5, "client-1"), (105, "client-2"), (205, "client-1")] {
        events.push(at(ms, client, answered("redis-1", Answer::Failed(readonly.into()))));
        events.push(at(ms, client, attempt_failed(readonly)));
    }
    // Then redis-1 holds client-3's key and refuses client-2.
    events.extend([
        at(300, "redis-1", EventKind::KeySet { token: "c".into(), expires_at_us: None }),
        at(301, "client-3", acquired("c")),
        at(400, "client-2", answered("redis-1", Answer::No)),
        at(400, "client-2", attempt_failed("the lock is held by another client")),
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
        at(0, "redis-2", EventKind::KeySet { token: "c".into(), expires_at_us: None }),
        at(0, "client-3", acquired("c")),
        at(10, "client-1", EventKind::AcquireStarted),
        at(12, "client-1", answered("redis-1", Answer::Yes)),
        at(12, "client-1", answered("redis-2", Answer::No)),
        at(60, "client-1", answered("redis-3", Answer::Failed("request failed: no reply within 50 ms".into()))),
        at(60, "client-1", attempt_failed("the lock is held by another client")),
    ]);
    assert_eq!(
        texts,
        ["a try by client-1 falls short of a quorum (1 of 3 nodes granted, 2 needed): redis-1 granted, redis-2 \
          refused (holding client-3's key), redis-3 no reply within 50 ms"]
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
            "2 elections by sentinel-1 and sentinel-3 to fail over redis-1 from 100.000 to 150.000 ms (epochs 1–2) \
             all fail: none won more than 1 of the 2 votes needed",
            "sentinel-2 wins the election to fail over redis-1 (epoch 3, with 2 votes of the 2 needed)",
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
        steps.push(key_step(&format!("{client}'s key leaves redis-1-replica-1"), Routine::KeyGone));
    }
    steps.push(key_step(
        "redis-1-replica-1 stores client-2's key, to expire when its clock reads 9000.000 ms",
        Routine::KeyStored,
    ));
    let texts: Vec<String> = super::fold::fold_key_churn(steps).into_iter().map(|s| s.text).collect();
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
        span_named("the lock stayed free for 9876.000 ms, from 5124.000 to 15000.000 ms, while client-1 wanted it"),
        Some((5_124_000, 15_000_000))
    );
    assert_eq!(
        span_named("client-1 crashed inside the lock at 3018.000 ms; Redis kept refusing every client from 3048.664 to 19994.249 ms"),
        Some((3_048_664, 19_994_249))
    );
    assert_eq!(span_named("client-1 held the lock [1.000, 2.000] ms"), None);
    assert_eq!(
        super::words::reason(
            "unexpected reply from Redis: Error(\"NOREPLICAS Not enough good replicas to write. script: b70c, on @user_script:1.\")"
        ),
        "NOREPLICAS (Not enough good replicas to write)"
    );
    assert_eq!(
        super::words::reason("request failed: connection error: connection refused"),
        "connection refused"
    );
}

#[test]
fn a_key_noted_twice_on_one_node_is_one_key_with_its_last_expiry() {
    let key = |ms: u64, expires_at_us| at(ms, "redis-1", EventKind::KeySet { token: "a".into(), expires_at_us });
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
    let texts: Vec<String> = story(&history, "validity", "client-1 held it")
        .into_iter()
        .map(|s| s.text)
        .collect();
    assert_eq!(texts[0], "redis-1 stores client-1's key, to expire when its clock reads 3000.000 ms");
}
