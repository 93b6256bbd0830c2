//! The timeline's tests: rows, crops, lanes and labels, and both renderings.

use super::super::{png, svg};
use super::draw::draw;
use super::*;
use crate::history::{Event, EventKind, History};

fn at(ms: u64, node: &str, kind: EventKind) -> Event {
    Event {
        true_us: ms * 1000,
        node: node.into(),
        local_us: (ms * 1000) as i64,
        kind,
    }
}

fn run(second_grant_ms: u64) -> History {
    let acquired = |token: &str| EventKind::Acquired {
        token: token.into(),
        fence: None,
        validity_ms: 2000,
    };
    let release = |token: &str| EventKind::ReleaseSent { token: token.into() };
    History {
        events: vec![
            at(
                1000,
                "redis-1",
                EventKind::KeySet {
                    token: "a".into(),
                    expires_at_us: Some(3_000_000),
                },
            ),
            at(1001, "client-1", acquired("a")),
            at(
                1500,
                "world",
                EventKind::FaultStarted {
                    fault: "pause client-1 for 3000 ms".into(),
                },
            ),
            at(3000, "redis-1", EventKind::KeyGone { token: "a".into() }),
            at(
                4500,
                "world",
                EventKind::FaultEnded {
                    fault: "pause client-1 for 3000 ms".into(),
                },
            ),
            at(
                4600,
                "client-1",
                EventKind::ResourceWrite {
                    value: 1,
                    fence: None,
                },
            ),
            at(4600, "client-1", release("a")),
            at(second_grant_ms, "client-2", acquired("b")),
            at(second_grant_ms + 500, "client-2", release("b")),
        ],
        end_us: 8_000_000,
        ..History::default()
    }
}

/// The overlap band's fill, as SVG writes it.
const OVERLAP_FILL: &str = "#F6C4A6";

#[test]
fn an_overlap_is_drawn_in_red_and_only_when_there_is_one() {
    let overlapping = Timeline::from_history(&run(3100), "overlap", None);
    assert_eq!(overlapping.overlaps, vec![(3100.0, 3600.0)]);
    let drawn = svg(overlapping.size(), |root| draw(root, &overlapping));
    assert!(
        drawn.to_uppercase().contains(OVERLAP_FILL),
        "the overlap band is there"
    );
    let apart = Timeline::from_history(&run(5000), "apart", None);
    assert!(apart.overlaps.is_empty());
    // The legend's swatch uses the colour too: count the bands, not the mentions.
    let bands = |svg: &str| svg.to_uppercase().matches(OVERLAP_FILL).count();
    assert!(bands(&drawn) > bands(&svg(apart.size(), |root| draw(root, &apart))));
}

#[test]
fn the_same_history_draws_the_same_bytes() {
    let timeline = Timeline::from_history(&run(3100), "twice", None);
    let first = timeline.svg();
    assert_eq!(first, timeline.svg());
    assert!(
        first.contains("<title>Lease timeline of twice: two clients believed they held the lock from 3100 to 3600 ms, under 1 fault.</title>"),
        "{first}"
    );
    let dir = std::env::temp_dir();
    let (a, b) = (
        dir.join(format!("locksim-tl-a-{}.png", std::process::id())),
        dir.join(format!("locksim-tl-b-{}.png", std::process::id())),
    );
    png(&a, timeline.size(), |root| draw(root, &timeline)).unwrap();
    png(&b, timeline.size(), |root| draw(root, &timeline)).unwrap();
    let (a_bytes, b_bytes) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(a_bytes.starts_with(b"\x89PNG"));
    assert_eq!(a_bytes, b_bytes);
    let _ = (std::fs::remove_file(a), std::fs::remove_file(b));
}

#[test]
fn a_crashed_node_is_shaded_once_as_down_and_a_paused_one_as_targeted() {
    let fault = |kind: fn(String) -> EventKind, text: &str| kind(text.to_string());
    let crash = "crash redis-1, restart after 100 ms";
    let history = History {
        events: vec![
            at(1000, "client-1", EventKind::AcquireStarted),
            at(
                2000,
                "world",
                fault(|fault| EventKind::FaultStarted { fault }, crash),
            ),
            at(2000, "redis-1", EventKind::Crashed),
            at(2100, "redis-1", EventKind::Restarted),
            at(
                2100,
                "world",
                fault(|fault| EventKind::FaultEnded { fault }, crash),
            ),
            at(
                3000,
                "world",
                fault(
                    |fault| EventKind::FaultStarted { fault },
                    "pause redis-1 for 500 ms",
                ),
            ),
            at(
                3500,
                "world",
                fault(
                    |fault| EventKind::FaultEnded { fault },
                    "pause redis-1 for 500 ms",
                ),
            ),
        ],
        end_us: 5_000_000,
        ..History::default()
    };
    let timeline = Timeline::from_history(&history, "crash", None);
    let row = timeline.rows.iter().position(|r| r == "redis-1").unwrap();
    let shading: Vec<(f64, f64, RGBColor)> = timeline
        .bars
        .iter()
        .filter(|b| b.row == row && !b.solid)
        .map(|b| (b.from_ms, b.to_ms, b.colour))
        .collect();
    assert_eq!(
        shading,
        vec![(2000.0, 2100.0, DOWN), (3000.0, 3500.0, TARGETED)],
        "the crash once, as down; the pause as targeted"
    );
    assert_eq!(timeline.faults.len(), 2, "both in the fault lane");
}

#[test]
fn too_many_faults_to_name_in_place_are_numbered_and_named_in_a_key() {
    let fault = |ms: u64, started: bool, n: u64| {
        let fault = format!("pause client-{} for 50 ms", n % 3 + 1);
        let kind = match started {
            true => EventKind::FaultStarted { fault },
            false => EventKind::FaultEnded { fault },
        };
        at(ms, "world", kind)
    };
    let history = |faults: u64| History {
        events: (0..faults)
            .flat_map(|n| [fault(1000 + 200 * n, true, n), fault(1050 + 200 * n, false, n)])
            .chain(std::iter::once(at(900, "client-1", EventKind::AcquireStarted)))
            .collect(),
        end_us: 5_000_000,
        ..History::default()
    };
    let few = Timeline::from_history(&history(2), "few", None);
    assert!(!few.fault_key);
    assert_eq!(few.faults[0].mark, "pause client-1 for 50 ms", "named in place");
    let many = Timeline::from_history(&history(12), "many", None);
    assert!(many.fault_key && many.fault_lanes <= MAX_NAMED_LANES, "{many:?}");
    let marks: Vec<&str> = many.faults.iter().map(|f| f.mark.as_str()).collect();
    assert_eq!(marks[..3], ["1", "2", "3"], "numbered in order of start");
    let drawn = svg(many.size(), |root| draw(root, &many));
    assert!(drawn.contains("\n12\n</text>") && drawn.contains("\npause client-3 for 50 ms\n</text>"));
    assert!(many.size().1 > few.size().1, "the key takes room under the chart");
}

#[test]
fn an_instants_line_stops_at_the_fault_lane() {
    let jump = "clock of client-1 jumps +500 ms";
    let history = History {
        events: vec![
            at(900, "client-1", EventKind::AcquireStarted),
            at(
                1000,
                "world",
                EventKind::FaultStarted {
                    fault: "pause client-1 for 3000 ms".into(),
                },
            ),
            at(1200, "world", EventKind::FaultStarted { fault: jump.into() }),
        ],
        end_us: 5_000_000,
        ..History::default()
    };
    let timeline = Timeline::from_history(&history, "jump", None);
    assert_eq!(
        timeline.fault_lanes, 2,
        "the jump's label under the pause's: {timeline:?}"
    );
    let drawn = svg(timeline.size(), |root| draw(root, &timeline));
    let number = |tag: &str, name: &str| -> i32 {
        let value = tag.split(&format!(" {name}=\"")).nth(1).unwrap();
        value[..value.find('"').unwrap()].parse().unwrap()
    };
    // The fault lane's ground ends where the rows begin.
    let ground = drawn
        .split("<rect")
        .find(|rect| rect.contains("fill=\"#F8F8F4\""))
        .unwrap();
    let lane_bottom = number(ground, "y") + number(ground, "height");
    let instant = drawn
        .split("<polyline")
        .skip(1)
        .find(|line| line.contains("stroke=\"#3C3C3C\""))
        .unwrap();
    let points = instant.split("points=\"").nth(1).unwrap();
    let top: i32 = points.split([',', ' ']).nth(1).unwrap().parse().unwrap();
    assert!(
        (lane_bottom - 1..=lane_bottom + 1).contains(&top),
        "from the lane's bottom ({lane_bottom}), not through the labels above it: {instant}"
    );
}

#[test]
fn keys_are_coloured_by_their_client_and_the_fault_is_a_band() {
    let timeline = Timeline::from_history(&run(3100), "keys", None);
    let redis_row = timeline.rows.iter().position(|r| r == "redis-1").unwrap();
    let key = timeline.bars.iter().find(|b| b.row == redis_row).unwrap();
    assert_eq!((key.from_ms, key.to_ms), (1000.0, 3000.0));
    assert_eq!(key.colour, CLIENT_COLOURS[0], "client-1's colour");
    assert_eq!(timeline.faults.len(), 1);
    assert_eq!(timeline.writes, vec![(0, 4600.0, true)]);
}
