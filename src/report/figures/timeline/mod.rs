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
mod read;
mod rgb;

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::{CLIENT_COLOURS, OVERLAP, text_width};

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
#[cfg(test)]
mod tests;
