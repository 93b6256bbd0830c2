//! The lease timeline of one run (a Gantt chart, true time on x): per client, the span it
//! *believed* it held the lock, its validity deadlines and its writes (accepted or refused
//! by fencing); per Redis node, the life of each client's key (colour = client, grey = an
//! abandoned attempt's) and the spans it was down; faults shaded across the chart,
//! failovers marked, and the overlap of two believed holders in red.

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{CLIENT_COLOURS, OVERLAP};
use crate::check::mutual_exclusion::{holdings, overlap};
use crate::check::resource_safety::lost_update;
use crate::history::{EventKind, History, names_node};

/// A span on one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub row: usize,
    pub from_ms: f64,
    pub to_ms: f64,
    pub colour: RGBColor,
    /// A key or a holding drawn solid; a down span drawn light.
    pub solid: bool,
}

/// Everything the chart shows, in chart units (ms of true time, rows from the top).
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub title: String,
    pub from_ms: f64,
    pub to_ms: f64,
    /// Clients first, then Redis nodes.
    pub rows: Vec<String>,
    pub bars: Vec<Bar>,
    /// Validity deadlines: (row, ms).
    pub deadlines: Vec<(usize, f64)>,
    /// Writes: (row, ms, accepted).
    pub writes: Vec<(usize, f64, bool)>,
    /// Faults with a duration: (from, to, label).
    pub faults: Vec<(f64, f64, String)>,
    /// Instant marks across the chart (a clock jump, a reset, a failover): (ms, label).
    pub marks: Vec<(f64, String)>,
    /// Spans where two clients believed they held the lock.
    pub overlaps: Vec<(f64, f64)>,
    /// The first two clients that believed they held the lock at once: (row, from, to)
    /// of each holding, outlined on the chart.
    pub holders: Vec<(usize, f64, f64)>,
    /// The first update lost: (row, ms) of the write a stale write erased.
    pub lost_write: Option<(usize, f64)>,
}

/// The band on the row of a node a fault targets (paused, partitioned, slowed).
const TARGETED: RGBColor = RGBColor(204, 160, 0);

/// Context kept around the interesting part of a run, in ms.
const MARGIN_MS: f64 = 1500.0;

impl Timeline {
    /// The chart of `history`, cropped to the faults and what followed them up to
    /// `until_ms` (the end of the violation) plus a margin; the whole run without faults.
    pub fn from_history(history: &History, title: &str, until_ms: Option<f64>) -> Timeline {
        let ms = |us: u64| us as f64 / 1000.0;
        let end_ms = ms(history.end_us);
        let mut rows: Vec<String> = Vec::new();
        let mut clients: Vec<String> = history
            .events
            .iter()
            .filter(|e| e.node.starts_with("client-"))
            .map(|e| e.node.clone())
            .collect();
        clients.sort_by_key(|c| (c.len(), c.clone()));
        clients.dedup();
        let mut redis: Vec<String> = history
            .events
            .iter()
            .filter(|e| e.node.starts_with("redis-"))
            .map(|e| e.node.clone())
            .collect();
        redis.sort();
        redis.dedup();
        rows.extend(clients.iter().cloned());
        rows.extend(redis.iter().cloned());
        let row_of = |node: &str| rows.iter().position(|r| r == node);
        let colour_of = |client: &str| {
            let i = clients.iter().position(|c| c == client).unwrap_or(0);
            CLIENT_COLOURS[i % CLIENT_COLOURS.len()]
        };
        let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
        let mut bars = Vec::new();
        let mut deadlines = Vec::new();
        let mut writes = Vec::new();
        let mut marks = Vec::new();
        let mut faults = Vec::new();
        let mut open_faults: Vec<(String, f64)> = Vec::new();
        let mut keys: BTreeMap<&str, (&str, f64)> = BTreeMap::new(); // node -> (token, since)
        let mut down: BTreeMap<&str, f64> = BTreeMap::new();
        let grey = RGBColor(150, 150, 150);
        let key_bar = |row: usize, token: &str, from: f64, to: f64, owners: &BTreeMap<&str, &str>| Bar {
            row,
            from_ms: from,
            to_ms: to,
            colour: owners.get(token).map_or(grey, |client| colour_of(client)),
            solid: true,
        };
        for event in &history.events {
            let at = ms(event.true_us);
            let row = row_of(&event.node);
            match &event.kind {
                EventKind::Acquired {
                    token, validity_ms, ..
                } => {
                    owners.insert(token, &event.node);
                    if let (Some(row), true) = (row, *validity_ms != u64::MAX) {
                        deadlines.push((row, at + *validity_ms as f64));
                    }
                }
                EventKind::Renewed { validity_ms } => {
                    if let (Some(row), true) = (row, *validity_ms != u64::MAX) {
                        deadlines.push((row, at + *validity_ms as f64));
                    }
                }
                EventKind::ResourceWrite { .. } => writes.extend(row.map(|row| (row, at, true))),
                EventKind::ResourceRejected { .. } => writes.extend(row.map(|row| (row, at, false))),
                EventKind::KeySet { token, .. } => match keys.get(event.node.as_str()).copied() {
                    // A renewal of the same key: one bar on.
                    Some((old, _)) if old == token.as_str() => {}
                    previous => {
                        if let (Some((old, since)), Some(row)) = (previous, row) {
                            bars.push(key_bar(row, old, since, at, &owners));
                        }
                        keys.insert(&event.node, (token, at));
                    }
                },
                EventKind::KeyGone { .. } => {
                    if let (Some((token, since)), Some(row)) = (keys.remove(event.node.as_str()), row) {
                        bars.push(key_bar(row, token, since, at, &owners));
                    }
                }
                EventKind::Crashed => {
                    if let (Some((token, since)), Some(row)) = (keys.remove(event.node.as_str()), row) {
                        bars.push(key_bar(row, token, since, at, &owners));
                    }
                    down.insert(&event.node, at);
                }
                EventKind::Restarted => {
                    if let (Some(since), Some(row)) = (down.remove(event.node.as_str()), row) {
                        bars.push(Bar {
                            row,
                            from_ms: since,
                            to_ms: at,
                            colour: RGBColor(90, 90, 90),
                            solid: false,
                        });
                    }
                }
                EventKind::FaultStarted { fault } => open_faults.push((fault.clone(), at)),
                EventKind::FaultEnded { fault } => {
                    if let Some(i) = open_faults.iter().position(|(f, _)| f == fault) {
                        let (fault, since) = open_faults.remove(i);
                        faults.push((since, at, fault));
                    }
                }
                EventKind::Failover { promoted, .. } => marks.push((at, format!("failover to {promoted}"))),
                _ => {}
            }
        }
        // Keys still stored, nodes still down and faults still on at the end of the run.
        for (node, (token, since)) in keys {
            if let Some(row) = row_of(node) {
                bars.push(key_bar(row, token, since, end_ms, &owners));
            }
        }
        for (node, since) in down {
            if let Some(row) = row_of(node) {
                bars.push(Bar {
                    row,
                    from_ms: since,
                    to_ms: end_ms,
                    colour: RGBColor(90, 90, 90),
                    solid: false,
                });
            }
        }
        for (fault, since) in open_faults {
            // A fault without an end is an instant (a jump, a reset) or lasts the run.
            let lasting = fault.contains("partition") || fault.contains("stall") || fault.contains("drift");
            if lasting {
                faults.push((since, end_ms, fault));
            } else {
                marks.push((since, fault));
            }
        }
        let held = holdings(history);
        for h in &held {
            if let Some(row) = row_of(&h.client) {
                bars.push(Bar {
                    row,
                    from_ms: ms(h.from_us),
                    to_ms: ms(h.to_us),
                    colour: colour_of(&h.client),
                    solid: true,
                });
            }
        }
        let mut overlaps = Vec::new();
        for (i, a) in held.iter().enumerate() {
            for b in &held[i + 1..] {
                if a.client != b.client && b.from_us < a.to_us && a.from_us < b.to_us {
                    overlaps.push((ms(a.from_us.max(b.from_us)), ms(a.to_us.min(b.to_us))));
                }
            }
        }
        let first_pair = overlap(history);
        let holders: Vec<(usize, f64, f64)> = first_pair
            .iter()
            .flat_map(|(earlier, later)| [earlier, later])
            .filter_map(|h| Some((row_of(&h.client)?, ms(h.from_us), ms(h.to_us))))
            .collect();
        let lost_write = lost_update(history)
            .and_then(|lost| lost.lost)
            .and_then(|(client, at_us)| Some((row_of(&client)?, ms(at_us))));
        let first_fault = faults
            .iter()
            .map(|f| f.0)
            .chain(marks.iter().map(|m| m.0))
            .fold(f64::INFINITY, f64::min);
        let from_ms = if first_fault.is_finite() {
            (first_fault - MARGIN_MS).max(0.0)
        } else {
            0.0
        };
        let to_ms = until_ms
            .map_or(end_ms, |until| (until + MARGIN_MS).min(end_ms))
            .max(from_ms + 1.0);
        // A fault that names a node (its target) is also drawn on that node's row.
        for (since, until, fault) in &faults {
            for row in rows
                .iter()
                .enumerate()
                .filter(|(_, node)| names_node(fault, node))
                .map(|(row, _)| row)
            {
                bars.push(Bar {
                    row,
                    from_ms: *since,
                    to_ms: *until,
                    colour: TARGETED,
                    solid: false,
                });
            }
        }
        // Each row says how far its node's clock is off true time where the chart ends, and
        // which of the first two believed holders its client is.
        let rows = rows
            .iter()
            .enumerate()
            .map(|(row, node)| {
                let offset_us = history
                    .events
                    .iter()
                    .rfind(|e| e.node == *node && ms(e.true_us) <= to_ms)
                    .map_or(0, |e| e.local_us - e.true_us as i64);
                let name = match holders.iter().position(|h| h.0 == row) {
                    Some(i) => format!("{node}: holder {}", i + 1),
                    None => node.clone(),
                };
                match offset_us / 1000 {
                    0 => name,
                    offset_ms => format!("{name} (clock {offset_ms:+} ms)"),
                }
            })
            .collect();
        Timeline {
            title: title.to_string(),
            from_ms,
            to_ms,
            rows,
            bars,
            deadlines,
            writes,
            faults,
            marks,
            overlaps,
            holders,
            lost_write,
        }
    }

    /// What the chart shows, in words: the text alternative a page gives the figure.
    pub fn describe(&self) -> String {
        let clients = self.rows.iter().filter(|r| r.starts_with("client-")).count();
        let mut text = format!(
            "Lease timeline of {}, true time {:.0} to {:.0} ms: {clients} client rows (the spans each believed it \
             held the lock) and {} Redis node rows (each client's key on the node).",
            self.title,
            self.from_ms,
            self.to_ms,
            self.rows.len() - clients
        );
        match self.overlaps.first() {
            Some((from, to)) => {
                let names: Vec<&str> = self
                    .holders
                    .iter()
                    .filter_map(|(row, _, _)| self.rows.get(*row))
                    .map(|name| name.split(':').next().unwrap_or(name))
                    .collect();
                text.push_str(&format!(
                    " Two clients ({}) believed they held the lock at once from {from:.0} to {to:.0} ms{}.",
                    names.join(" and "),
                    match self.overlaps.len() {
                        1 => String::new(),
                        n => format!(", {} overlaps in all", n),
                    }
                ));
            }
            None => text.push_str(" No two clients believed they held the lock at once."),
        }
        if let Some((row, at)) = self.lost_write {
            let name = self
                .rows
                .get(row)
                .map_or("a client", |r| r.split(':').next().unwrap_or(r));
            text.push_str(&format!(
                " {name}'s write at {at:.0} ms was lost (a stale write erased it)."
            ));
        }
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(from, to, label)| format!("{label} ({from:.0}-{to:.0} ms)"))
            .chain(
                self.marks
                    .iter()
                    .map(|(at, label)| format!("{label} (at {at:.0} ms)")),
            )
            .collect();
        if !faults.is_empty() {
            text.push_str(&format!(" Faults: {}.", faults.join("; ")));
        }
        text
    }

    /// The picture's size: rows of 34 px, room for the title, the axis and the legend.
    pub fn size(&self) -> (u32, u32) {
        (1400, 150 + 34 * self.rows.len() as u32)
    }
}

/// Draws the timeline onto `root`.
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, t: &Timeline) {
    let _ = root.fill(&WHITE);
    let rows = t.rows.len().max(1) as f64;
    let Ok(mut chart) = ChartBuilder::on(root)
        .caption(&t.title, ("sans-serif", 20))
        .margin(12)
        .margin_bottom(40)
        .x_label_area_size(40)
        .y_label_area_size(210)
        .build_cartesian_2d(t.from_ms..t.to_ms, rows..0.0)
    else {
        return;
    };
    let _ = chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("true time (ms)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 14))
        .draw();
    let clip = |x: f64| x.clamp(t.from_ms, t.to_ms);
    // Faults behind everything, then the overlap, then the bars.
    let _ = chart.draw_series(t.faults.iter().map(|(from, to, _)| {
        Rectangle::new(
            [(clip(*from), 0.0), (clip(*to), rows)],
            RGBColor(240, 228, 66).mix(0.25).filled(),
        )
    }));
    let _ = chart.draw_series(t.overlaps.iter().map(|(from, to)| {
        Rectangle::new(
            [(clip(*from), 0.0), (clip(*to), rows)],
            OVERLAP.mix(0.35).filled(),
        )
    }));
    let _ = chart.draw_series(
        t.bars
            .iter()
            .filter(|b| b.to_ms > t.from_ms && b.from_ms < t.to_ms)
            .map(|b| {
                let top = b.row as f64 + if b.solid { 0.2 } else { 0.35 };
                let style = if b.solid {
                    b.colour.filled()
                } else {
                    b.colour.mix(0.35).filled()
                };
                Rectangle::new(
                    [(clip(b.from_ms), top), (clip(b.to_ms), b.row as f64 + 0.8)],
                    style,
                )
            }),
    );
    let _ = chart.draw_series(
        t.deadlines
            .iter()
            .filter(|(_, at)| (t.from_ms..=t.to_ms).contains(at))
            .map(|(row, at)| {
                PathElement::new(
                    vec![(*at, *row as f64 + 0.1), (*at, *row as f64 + 0.9)],
                    BLACK.stroke_width(2),
                )
            }),
    );
    let _ = chart.draw_series(
        t.writes
            .iter()
            .filter(|(_, at, _)| (t.from_ms..=t.to_ms).contains(at))
            .map(|(row, at, accepted)| {
                let centre = (*at, *row as f64 + 0.5);
                if *accepted {
                    Circle::new(centre, 6, BLACK.filled()).into_dyn()
                } else {
                    Cross::new(centre, 7, OVERLAP.stroke_width(3)).into_dyn()
                }
            }),
    );
    // The first two believed holders outlined, the lost write ringed.
    let _ = chart.draw_series(t.holders.iter().map(|(row, from, to)| {
        Rectangle::new(
            [(clip(*from), *row as f64 + 0.12), (clip(*to), *row as f64 + 0.88)],
            BLACK.stroke_width(3),
        )
    }));
    let _ = chart.draw_series(
        t.lost_write
            .iter()
            .filter(|(_, at)| (t.from_ms..=t.to_ms).contains(at))
            .map(|(row, at)| Circle::new((*at, *row as f64 + 0.5), 12, OVERLAP.stroke_width(4))),
    );
    for (i, (at, label)) in t
        .marks
        .iter()
        .filter(|(at, _)| (t.from_ms..=t.to_ms).contains(at))
        .enumerate()
    {
        let _ = chart.draw_series(std::iter::once(PathElement::new(
            vec![(*at, 0.0), (*at, rows)],
            RGBColor(60, 60, 60).stroke_width(2),
        )));
        let y = 0.02 * rows + (i % 3) as f64 * 0.35;
        let _ = chart.draw_series(std::iter::once(Text::new(
            short(label),
            (*at, y),
            ("sans-serif", 13).into_font().color(&RGBColor(60, 60, 60)),
        )));
    }
    for (i, (from, _, label)) in t.faults.iter().enumerate() {
        let y = rows - 0.35 - (i % 3) as f64 * 0.3;
        let _ = chart.draw_series(std::iter::once(Text::new(
            short(label),
            (clip(*from), y),
            ("sans-serif", 13).into_font().color(&RGBColor(120, 100, 0)),
        )));
    }
    // Row names in the label area, level with their rows.
    for (i, name) in t.rows.iter().enumerate() {
        let (_, y) = chart.backend_coord(&(t.from_ms, i as f64 + 0.5));
        let _ = root.draw(&Text::new(
            name.clone(),
            (14, y - 8),
            ("sans-serif", 15).into_font(),
        ));
    }
    legend(root);
}

/// The key to the marks, under the chart.
fn legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>) {
    let (_, height) = root.dim_in_pixel();
    let y = height as i32 - 30;
    let font = ("sans-serif", 14).into_font();
    let mut x = 160;
    let mut item = |shape: &dyn Fn(i32), text: &str| {
        shape(x);
        let _ = root.draw(&Text::new(text.to_string(), (x + 24, y - 2), font.clone()));
        x += 24 + 7 * text.len() as i32 + 24;
    };
    item(
        &|x| {
            let _ = root.draw(&Rectangle::new(
                [(x, y - 6), (x + 18, y + 8)],
                CLIENT_COLOURS[0].filled(),
            ));
        },
        "believed held / key stored (colour = client)",
    );
    item(
        &|x| {
            let _ = root.draw(&Rectangle::new(
                [(x, y - 6), (x + 18, y + 8)],
                OVERLAP.mix(0.35).filled(),
            ));
        },
        "two holders",
    );
    item(
        &|x| {
            let _ = root.draw(&Rectangle::new(
                [(x, y - 6), (x + 18, y + 8)],
                RGBColor(240, 228, 66).mix(0.25).filled(),
            ));
        },
        "fault",
    );
    item(
        &|x| {
            let _ = root.draw(&PathElement::new(
                vec![(x + 9, y - 7), (x + 9, y + 9)],
                BLACK.stroke_width(2),
            ));
        },
        "validity deadline",
    );
    item(
        &|x| {
            let _ = root.draw(&Circle::new((x + 9, y + 1), 6, BLACK.filled()));
        },
        "write",
    );
    item(
        &|x| {
            let _ = root.draw(&Cross::new((x + 9, y + 1), 7, OVERLAP.stroke_width(3)));
        },
        "write refused",
    );
    item(
        &|x| {
            let _ = root.draw(&Circle::new((x + 9, y + 1), 9, OVERLAP.stroke_width(4)));
        },
        "lost write",
    );
}

/// A label short enough to sit on the chart.
fn short(label: &str) -> String {
    const MAX: usize = 48;
    if label.chars().count() <= MAX {
        label.to_string()
    } else {
        label.chars().take(MAX - 1).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::super::{png, svg};
    use super::*;
    use crate::history::Event;

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

    /// Okabe–Ito vermilion, as SVG writes the overlap's fill.
    const OVERLAP_FILL: &str = "#D55E00";

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
        let first = svg(timeline.size(), |root| draw(root, &timeline));
        assert_eq!(first, svg(timeline.size(), |root| draw(root, &timeline)));
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
    fn keys_are_coloured_by_their_client_and_the_fault_is_a_band() {
        let timeline = Timeline::from_history(&run(3100), "keys", None);
        let redis_row = timeline.rows.iter().position(|r| r == "redis-1").unwrap();
        let key = timeline.bars.iter().find(|b| b.row == redis_row).unwrap();
        assert_eq!((key.from_ms, key.to_ms), (1000.0, 3000.0));
        assert_eq!(key.colour, CLIENT_COLOURS[0], "client-1's colour");
        assert_eq!(timeline.faults.len(), 1);
        assert_eq!(timeline.writes, vec![(0, 4600.0, true)]);
    }
}
