//! The lease timeline of one run (a Gantt chart, true time on x): per client, the span it
//! *believed* it held the lock, its validity deadlines and its writes (accepted or refused
//! by fencing); per Redis node, the life of each client's key (colour = client, grey = an
//! abandoned attempt's) and the spans it was down; faults in a lane of their own above
//! the rows (each label where it has room, on as many sub-lanes as that takes, or, when
//! that would take more than [`MAX_NAMED_LANES`], a number there and the label in a key
//! under the chart) and shaded on the row of the node they target; failovers and clock
//! jumps as a marker in the fault lane and a line across the rows; the overlap of two
//! believed holders as an opaque vermilion band, so it reads the same over a fault as over
//! nothing. No line crosses a label: a line across the chart stops at the fault lane,
//! whose sub-lanes hold the labels.

mod draw;
mod rgb;

use std::collections::BTreeMap;

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::{CLIENT_COLOURS, OVERLAP, text_width};
use crate::check::Verdict;
use crate::check::mutual_exclusion::{holdings, overlap};
use crate::check::resource_safety::lost_update;
use crate::history::{EventKind, History, names_node};
use crate::search::story::last_time_named;

/// A span on one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub row: usize,
    pub from_ms: f64,
    pub to_ms: f64,
    #[serde(with = "rgb")]
    pub colour: RGBColor,
    /// A key or a holding drawn solid; a down span drawn light.
    pub solid: bool,
}

/// Everything the chart shows, in chart units (ms of true time, rows from the top). (Serde:
/// a report keeps it in its cache of runs.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Faults with a duration, and instants (a clock jump, a reset, a failover), each
    /// with its sub-lane of the fault lane.
    pub faults: Vec<FaultMark>,
    /// Sub-lanes the fault lane needs so that no two labels overlap.
    pub fault_lanes: usize,
    /// Whether the faults are numbered on the chart and named in a key under it (too many
    /// to name in place in [`MAX_NAMED_LANES`] sub-lanes).
    pub fault_key: bool,
    /// Crashes: (row, ms).
    pub crashes: Vec<(usize, f64)>,
    /// Spans where two clients believed they held the lock.
    pub overlaps: Vec<(f64, f64)>,
    /// The first two clients that believed they held the lock at once: (row, from, to)
    /// of each holding, outlined on the chart.
    pub holders: Vec<(usize, f64, f64)>,
    /// The first update lost: (row, ms) of the write a stale write erased.
    pub lost_write: Option<(usize, f64)>,
}

/// A fault in the fault lane: a span, or an instant when `to_ms == from_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultMark {
    pub from_ms: f64,
    pub to_ms: f64,
    pub label: String,
    /// What the chart writes beside it: its label cut to fit, or its number in the key.
    pub mark: String,
    /// Its sub-lane, from the top.
    pub lane: usize,
}

impl FaultMark {
    fn instant(&self) -> bool {
        self.to_ms <= self.from_ms
    }
}

/// The band on the row of a node a fault targets (paused, partitioned, slowed).
const TARGETED: RGBColor = RGBColor(204, 160, 0);

/// The band across the rows where two clients believed they held the lock: vermilion
/// lightened, opaque (a translucent band turns tan over a fault's shading).
const OVERLAP_BAND: RGBColor = RGBColor(246, 196, 166);

/// Down spans (a crashed node, until it restarts).
const DOWN: RGBColor = RGBColor(90, 90, 90);

/// Lines across the chart for instants (a failover, a clock jump, a reset).
const INSTANT: RGBColor = RGBColor(60, 60, 60);

/// A fault's bar in the fault lane and its label: dark olive, apart from every client's
/// colour and dark enough on white to read (8:1).
const FAULT: RGBColor = RGBColor(100, 78, 0);

/// The picture's width, the area for row names on the left, and the margins; the right
/// margin leaves room for half of the last tick label.
const WIDTH_PX: i32 = 1400;
const ROW_NAMES_PX: i32 = 236;
const MARGIN_PX: i32 = 12;
const RIGHT_MARGIN_PX: i32 = 36;

/// One row (or sub-lane) in pixels, and the text sizes (plotters' sizes).
const ROW_PX: u32 = 34;
const FAULT_LABEL_SIZE: f64 = 13.0;
const LEGEND_SIZE: f64 = 14.0;
const LEGEND_LINE_PX: i32 = 24;

/// Context kept around the interesting part of a run, in ms.
const MARGIN_MS: f64 = 1500.0;

/// The most sub-lanes the fault lane takes for labels in place; a run with more faults
/// than fit (a nemesis run has twenty and more) numbers them and names them in a key,
/// which keeps the chart short enough to see whole.
pub const MAX_NAMED_LANES: usize = 3;

/// The key's columns across the picture, the height of one of its lines, and the room
/// kept between its columns.
const KEY_COLUMNS: usize = 3;
const KEY_LINE_PX: i32 = 20;
const KEY_GAP_PX: i32 = 16;

impl Timeline {
    /// The chart of a run judged by `verdicts`, cropped to the end of the violation of
    /// `checker` (of every violation when `None`) as the violation's text names it.
    pub fn of_violation(
        history: &History,
        title: &str,
        verdicts: &[Verdict],
        checker: Option<&str>,
    ) -> Timeline {
        let until = verdicts
            .iter()
            .filter(|v| checker.is_none_or(|name| v.checker == name))
            .filter_map(|v| v.violation.as_deref())
            .filter_map(last_time_named)
            .max();
        Timeline::from_history(history, title, until.map(|us| us as f64 / 1000.0))
    }

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
            .map(|e| e.node.to_string())
            .collect();
        clients.sort_by_key(|c| (c.len(), c.clone()));
        clients.dedup();
        let mut redis: Vec<String> = history
            .events
            .iter()
            .filter(|e| e.node.starts_with("redis-"))
            .map(|e| e.node.to_string())
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
        let mut marks: Vec<(f64, String)> = Vec::new();
        let mut faults: Vec<(f64, f64, String)> = Vec::new();
        let mut crashes = Vec::new();
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
                    crashes.extend(row.map(|row| (row, at)));
                    down.insert(&event.node, at);
                }
                EventKind::Restarted => {
                    if let (Some(since), Some(row)) = (down.remove(event.node.as_str()), row) {
                        bars.push(Bar {
                            row,
                            from_ms: since,
                            to_ms: at,
                            colour: DOWN,
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
                    colour: DOWN,
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
            if let Some(row) = row_of(h.client) {
                bars.push(Bar {
                    row,
                    from_ms: ms(h.from_us),
                    to_ms: ms(h.to_us),
                    colour: colour_of(h.client),
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
            .filter_map(|h| Some((row_of(h.client)?, ms(h.from_us), ms(h.to_us))))
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
        // A fault that names a node (its target) is also drawn on that node's row, unless
        // it takes the node down: its row already shows the node down from its crash to
        // its restart, and a second band over it would say the same thing twice.
        for (since, until, fault) in faults.iter().filter(|(_, _, fault)| !takes_node_down(fault)) {
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
        let mut faults: Vec<FaultMark> = faults
            .into_iter()
            .chain(marks.into_iter().map(|(at, label)| (at, at, label)))
            .map(|(from_ms, to_ms, label)| FaultMark {
                from_ms,
                to_ms,
                mark: short(&label),
                label,
                lane: 0,
            })
            .collect();
        faults.retain(|f| f.from_ms <= to_ms && f.to_ms >= from_ms);
        faults.sort_by(|a, b| a.from_ms.total_cmp(&b.from_ms));
        let mut fault_lanes = assign_lanes(&mut faults, from_ms, to_ms);
        let fault_key = fault_lanes > MAX_NAMED_LANES;
        if fault_key {
            for (i, fault) in faults.iter_mut().enumerate() {
                fault.mark = (i + 1).to_string();
            }
            fault_lanes = assign_lanes(&mut faults, from_ms, to_ms);
        }
        Timeline {
            title: title.to_string(),
            from_ms,
            to_ms,
            rows,
            bars,
            deadlines,
            writes,
            faults,
            fault_lanes,
            fault_key,
            crashes,
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
        // Numbered as the chart numbers them, when it does.
        let faults: Vec<String> = self
            .faults
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let number = if self.fault_key {
                    format!("{} ", i + 1)
                } else {
                    String::new()
                };
                match f.instant() {
                    true => format!("{number}{} (at {:.0} ms)", f.label, f.from_ms),
                    false => format!("{number}{} ({:.0}-{:.0} ms)", f.label, f.from_ms, f.to_ms),
                }
            })
            .collect();
        if !faults.is_empty() {
            text.push_str(&format!(" Faults: {}.", faults.join("; ")));
        }
        text
    }

    /// What the chart shows, in one line: a title for the picture or a caption under it
    /// ([`Timeline::describe`] is the whole text alternative).
    pub fn caption(&self) -> String {
        let overlap = match self.overlaps.first() {
            Some((from, to)) => {
                format!("two clients believed they held the lock from {from:.0} to {to:.0} ms")
            }
            None => "no two clients believed they held the lock at once".to_string(),
        };
        let faults = match self.faults.len() {
            0 => String::new(),
            1 => ", under 1 fault".to_string(),
            n => format!(", under {n} faults"),
        };
        format!("Lease timeline of {}: {overlap}{faults}.", self.title)
    }

    /// The picture's size: the fault lane and the rows 34 px each, room for the title, the
    /// axis, the fault key's lines and the legend's lines.
    pub fn size(&self) -> (u32, u32) {
        let rows = (self.fault_lanes + self.rows.len()) as u32;
        let legend = legend_items().last().map_or(1, |item| item.line + 1) as u32;
        (
            WIDTH_PX as u32,
            120 + ROW_PX * rows + LEGEND_LINE_PX as u32 * legend + self.key_height() as u32,
        )
    }

    /// The height of the fault key under the chart: its lines and a gap above them; none
    /// without a key.
    fn key_height(&self) -> i32 {
        if self.fault_key {
            KEY_LINE_PX * self.faults.len().div_ceil(KEY_COLUMNS) as i32 + 8
        } else {
            0
        }
    }
}

/// Half the width of an instant's marker in the fault lane, in pixels.
const MARKER_HALF_PX: i32 = 5;

/// What one legend entry shows.
#[derive(Debug, Clone, Copy)]
pub(super) enum Swatch {
    Fill(RGBColor),
    Light(RGBColor),
    Line(RGBColor),
    Dot,
    Refused,
    Crash,
    LostWrite,
}

/// One legend entry, where it sits: its line (from the top of the legend) and left edge.
#[derive(Debug, Clone, Copy)]
pub(super) struct LegendItem {
    pub(super) swatch: Swatch,
    pub(super) text: &'static str,
    pub(super) line: usize,
    pub(super) x: i32,
}

/// The key to every mark the chart draws, laid out in lines that fit the picture.
pub(super) fn legend_items() -> Vec<LegendItem> {
    let entries = [
        (
            Swatch::Fill(CLIENT_COLOURS[0]),
            "believed held / key stored (colour = client)",
        ),
        (Swatch::Fill(OVERLAP_BAND), "two holders"),
        (Swatch::Fill(FAULT), "fault (own lane)"),
        (Swatch::Light(TARGETED), "paused / cut off (its row)"),
        (Swatch::Light(DOWN), "node down"),
        (Swatch::Crash, "crash"),
        (Swatch::Line(INSTANT), "failover / clock jump / reset"),
        (Swatch::Line(BLACK), "validity deadline"),
        (Swatch::Dot, "write"),
        (Swatch::Refused, "write refused"),
        (Swatch::LostWrite, "lost write"),
    ];
    const SWATCH_PX: i32 = 24;
    const GAP_PX: i32 = 22;
    let mut items = Vec::new();
    let (mut line, mut x) = (0, MARGIN_PX + 2);
    for (swatch, text) in entries {
        let width = SWATCH_PX + text_width(text, LEGEND_SIZE) as i32;
        if x + width > WIDTH_PX - MARGIN_PX {
            line += 1;
            x = MARGIN_PX + 2;
        }
        items.push(LegendItem {
            swatch,
            text,
            line,
            x,
        });
        x += width + GAP_PX;
    }
    items
}

/// Where `ms` lands on a chart of `from_ms..to_ms`, in pixels from the picture's left edge.
fn x_px(ms: f64, from_ms: f64, to_ms: f64) -> i32 {
    let (left, right) = (MARGIN_PX + ROW_NAMES_PX, WIDTH_PX - RIGHT_MARGIN_PX);
    let share = (ms.clamp(from_ms, to_ms) - from_ms) / (to_ms - from_ms).max(1.0);
    left + (share * f64::from(right - left)).round() as i32
}

/// Where a fault's mark starts, in pixels: just right of its start, pulled left when it
/// would run past the chart's right edge; with its width.
fn label_span(fault: &FaultMark, from_ms: f64, to_ms: f64) -> (i32, i32) {
    let width = text_width(&fault.mark, FAULT_LABEL_SIZE) as i32;
    let x = (x_px(fault.from_ms, from_ms, to_ms) + 4).min(WIDTH_PX - RIGHT_MARGIN_PX - width);
    (x, width)
}

/// Gives each fault the first sub-lane where its bar (or instant's marker) and its mark
/// have room after the ones already there (faults in order of start); returns how many
/// sub-lanes that took.
fn assign_lanes(faults: &mut [FaultMark], from_ms: f64, to_ms: f64) -> usize {
    const GAP_PX: i32 = 12;
    let mut lane_ends: Vec<i32> = Vec::new();
    for fault in faults.iter_mut() {
        let (label_x, width) = label_span(fault, from_ms, to_ms);
        let start = label_x.min(x_px(fault.from_ms, from_ms, to_ms) - MARKER_HALF_PX);
        let end = (label_x + width).max(x_px(fault.to_ms, from_ms, to_ms)) + GAP_PX;
        fault.lane = match lane_ends.iter().position(|&lane_end| lane_end <= start) {
            Some(lane) => lane,
            None => {
                lane_ends.push(i32::MIN);
                lane_ends.len() - 1
            }
        };
        lane_ends[fault.lane] = end;
    }
    lane_ends.len()
}

/// Whether a fault's description is a crash or a power loss (as the world records them:
/// "crash redis-1, restart after 100 ms", "power loss of redis-2"), which the node's row
/// shows as down.
fn takes_node_down(fault: &str) -> bool {
    fault.starts_with("crash ") || fault.starts_with("power loss of ")
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
mod tests;
