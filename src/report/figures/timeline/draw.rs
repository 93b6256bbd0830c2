//! The timeline drawn: the chart, the fault lane's key and the legend, onto any plotters
//! backend (SVG for the page, PNG for files).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::*;
use crate::report::figures::{self, Svg, svg, titled};

impl Timeline {
    /// The picture as SVG, titled by [`Timeline::caption`].
    pub fn svg(&self) -> Svg {
        titled(svg(self.size(), |root| draw(root, self)), &self.caption())
    }

    /// The chart as a PNG file.
    pub fn png(&self, path: &std::path::Path) -> std::io::Result<()> {
        figures::png(path, self.size(), |root| draw(root, self))
    }
}

/// Where the title's top is, and the room it takes above the chart, in pixels.
const TITLE_TOP_PX: i32 = 14;
const TITLE_PX: i32 = 24;

/// Draws the timeline onto `root`.
pub(super) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, t: &Timeline) {
    let _ = root.fill(&WHITE);
    let lanes = t.fault_lanes as f64;
    let bottom = lanes + t.rows.len().max(1) as f64;
    let legend_lines = legend_items().last().map_or(1, |item| item.line + 1) as u32;
    // The title at the left, over the row names, where a phone's screen shows it before
    // the figure is scrolled (plotters' caption is centred on the whole picture).
    let _ = root.draw(&Text::new(
        t.title.clone(),
        (MARGIN_PX + 2, TITLE_TOP_PX),
        ("sans-serif", 20).into_font(),
    ));
    let Ok(mut chart) = ChartBuilder::on(root)
        .margin(MARGIN_PX as u32)
        .margin_top((TITLE_TOP_PX + TITLE_PX) as u32)
        .margin_right(RIGHT_MARGIN_PX as u32)
        .margin_bottom(24 + LEGEND_LINE_PX as u32 * legend_lines + t.key_height() as u32)
        .x_label_area_size(40)
        .y_label_area_size(ROW_NAMES_PX as u32)
        .build_cartesian_2d(t.from_ms..t.to_ms, bottom..0.0)
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
    // Row `row` of the clients and nodes, below the fault lane.
    let y = |row: usize| lanes + row as f64;
    // The fault lane's background, then the overlap across the rows, then the bars.
    if t.fault_lanes > 0 {
        let _ = chart.draw_series(std::iter::once(Rectangle::new(
            [(t.from_ms, 0.0), (t.to_ms, lanes)],
            RGBColor(248, 248, 244).filled(),
        )));
    }
    let _ = chart.draw_series(t.overlaps.iter().map(|(from, to)| {
        Rectangle::new([(clip(*from), lanes), (clip(*to), bottom)], OVERLAP_BAND.filled())
    }));
    let _ = chart.draw_series(t.overlaps.iter().flat_map(|(from, to)| {
        [*from, *to].map(|at| {
            PathElement::new(
                vec![(clip(at), lanes), (clip(at), bottom)],
                OVERLAP.stroke_width(1),
            )
        })
    }));
    // A row's light bands (paused, cut off, down) behind its solid bars and taller than
    // them, so a holding drawn over a pause keeps its client's colour and the band shows
    // above and below it.
    let visible = |b: &&Bar| b.to_ms > t.from_ms && b.from_ms < t.to_ms;
    let _ = chart.draw_series(t.bars.iter().filter(visible).filter(|b| !b.solid).map(|b| {
        Rectangle::new(
            [
                (clip(b.from_ms), y(b.row) + 0.06),
                (clip(b.to_ms), y(b.row) + 0.94),
            ],
            b.colour.mix(0.35).filled(),
        )
    }));
    let _ = chart.draw_series(t.bars.iter().filter(visible).filter(|b| b.solid).map(|b| {
        Rectangle::new(
            [(clip(b.from_ms), y(b.row) + 0.2), (clip(b.to_ms), y(b.row) + 0.8)],
            b.colour.filled(),
        )
    }));
    let _ = chart.draw_series(
        t.deadlines
            .iter()
            .filter(|(_, at)| (t.from_ms..=t.to_ms).contains(at))
            .map(|(row, at)| {
                PathElement::new(
                    vec![(*at, y(*row) + 0.1), (*at, y(*row) + 0.9)],
                    BLACK.stroke_width(2),
                )
            }),
    );
    let _ = chart.draw_series(
        t.writes
            .iter()
            .filter(|(_, at, _)| (t.from_ms..=t.to_ms).contains(at))
            .map(|(row, at, accepted)| {
                let centre = (*at, y(*row) + 0.5);
                if *accepted {
                    Circle::new(centre, 6, BLACK.filled()).into_dyn()
                } else {
                    Cross::new(centre, 7, OVERLAP.stroke_width(3)).into_dyn()
                }
            }),
    );
    let _ = chart.draw_series(
        t.crashes
            .iter()
            .filter(|(_, at)| (t.from_ms..=t.to_ms).contains(at))
            .map(|(row, at)| Cross::new((*at, y(*row) + 0.5), 8, BLACK.stroke_width(3))),
    );
    // The first two believed holders outlined, the lost write ringed.
    let _ = chart.draw_series(t.holders.iter().map(|(row, from, to)| {
        Rectangle::new(
            [(clip(*from), y(*row) + 0.12), (clip(*to), y(*row) + 0.88)],
            BLACK.stroke_width(3),
        )
    }));
    let _ = chart.draw_series(
        t.lost_write
            .iter()
            .filter(|(_, at)| (t.from_ms..=t.to_ms).contains(at))
            .map(|(row, at)| Circle::new((*at, y(*row) + 0.5), 12, OVERLAP.stroke_width(4))),
    );
    // The fault lane: a bar per fault (for an instant, a marker pointing down to its line
    // across the rows, which stops at the lane so as to cross no label in it), its mark
    // under it where `assign_lanes` found room.
    for fault in &t.faults {
        let lane = fault.lane as f64;
        if fault.instant() {
            let _ = chart.draw_series(std::iter::once(PathElement::new(
                vec![(fault.from_ms, lanes), (fault.from_ms, bottom)],
                INSTANT.stroke_width(2),
            )));
            let (x, top) = chart.backend_coord(&(fault.from_ms, lane + 0.1));
            let (_, tip) = chart.backend_coord(&(fault.from_ms, lane + 0.4));
            let _ = root.draw(&Polygon::new(
                vec![(x - MARKER_HALF_PX, top), (x + MARKER_HALF_PX, top), (x, tip)],
                INSTANT.filled(),
            ));
        } else {
            let _ = chart.draw_series(std::iter::once(Rectangle::new(
                [(clip(fault.from_ms), lane + 0.1), (clip(fault.to_ms), lane + 0.4)],
                FAULT.filled(),
            )));
        }
        let (label_x, _) = label_span(fault, t.from_ms, t.to_ms);
        let (_, label_y) = chart.backend_coord(&(t.from_ms, lane + 0.45));
        let _ = root.draw(&Text::new(
            fault.mark.clone(),
            (label_x, label_y),
            ("sans-serif", FAULT_LABEL_SIZE).into_font().color(&FAULT),
        ));
    }
    // Row names in the label area, level with their rows; a clock offset on a second line.
    let name_font = ("sans-serif", 15).into_font();
    if t.fault_lanes > 0 {
        let (_, top) = chart.backend_coord(&(t.from_ms, 0.5));
        let _ = root.draw(&Text::new("faults", (14, top - 8), name_font.clone()));
    }
    for (i, name) in t.rows.iter().enumerate() {
        let (_, centre) = chart.backend_coord(&(t.from_ms, y(i) + 0.5));
        match name.split_once(" (clock ") {
            Some((name, clock)) => {
                let _ = root.draw(&Text::new(name.to_string(), (14, centre - 15), name_font.clone()));
                let _ = root.draw(&Text::new(
                    format!("(clock {clock}"),
                    (14, centre + 2),
                    ("sans-serif", 13).into_font(),
                ));
            }
            None => {
                let _ = root.draw(&Text::new(name.clone(), (14, centre - 8), name_font.clone()));
            }
        }
    }
    if t.fault_key {
        fault_key(root, t);
    }
    legend(root);
}

/// The faults by number, in columns read downwards, between the axis and the legend.
fn fault_key<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, t: &Timeline) {
    let (_, height) = root.dim_in_pixel();
    let legend_lines = legend_items().last().map_or(1, |item| item.line + 1) as i32;
    let top = height as i32 - LEGEND_LINE_PX * legend_lines - t.key_height() + 4;
    let rows = t.faults.len().div_ceil(KEY_COLUMNS);
    let column_px = (WIDTH_PX - 2 * MARGIN_PX) / KEY_COLUMNS as i32;
    let font = ("sans-serif", FAULT_LABEL_SIZE).into_font().color(&FAULT);
    let number_px = text_width(&t.faults.len().to_string(), FAULT_LABEL_SIZE) as i32 + 8;
    for (i, fault) in t.faults.iter().enumerate() {
        let x = MARGIN_PX + 2 + column_px * (i / rows) as i32;
        let y = top + KEY_LINE_PX * (i % rows) as i32;
        let _ = root.draw(&Text::new(fault.mark.clone(), (x, y), font.clone()));
        let label = fit(&fault.label, column_px - number_px - KEY_GAP_PX);
        let _ = root.draw(&Text::new(label, (x + number_px, y), font.clone()));
    }
}

/// The key to the marks, under the chart.
fn legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>) {
    let (_, height) = root.dim_in_pixel();
    let items = legend_items();
    let lines = items.last().map_or(1, |item| item.line + 1) as i32;
    let font = ("sans-serif", LEGEND_SIZE).into_font();
    for item in items {
        let (x, y) = (
            item.x,
            height as i32 + 2 - LEGEND_LINE_PX * (lines - item.line as i32),
        );
        let _ = match item.swatch {
            Swatch::Fill(colour) => {
                root.draw(&Rectangle::new([(x, y - 6), (x + 18, y + 8)], colour.filled()))
            }
            Swatch::Light(colour) => root.draw(&Rectangle::new(
                [(x, y - 6), (x + 18, y + 8)],
                colour.mix(0.35).filled(),
            )),
            Swatch::Line(colour) => root.draw(&PathElement::new(
                vec![(x + 9, y - 7), (x + 9, y + 9)],
                colour.stroke_width(2),
            )),
            Swatch::Dot => root.draw(&Circle::new((x + 9, y + 1), 6, BLACK.filled())),
            Swatch::Refused => root.draw(&Cross::new((x + 9, y + 1), 7, OVERLAP.stroke_width(3))),
            Swatch::Crash => root.draw(&Cross::new((x + 9, y + 1), 7, BLACK.stroke_width(3))),
            Swatch::LostWrite => root.draw(&Circle::new((x + 9, y + 1), 8, OVERLAP.stroke_width(3))),
        };
        let _ = root.draw(&Text::new(item.text, (x + 24, y - 6), font.clone()));
    }
}

/// `label` cut to `width_px` at the fault labels' size, ending in "…" if cut.
fn fit(label: &str, width_px: i32) -> String {
    let mut chars: Vec<char> = label.chars().collect();
    if text_width(label, FAULT_LABEL_SIZE) as i32 <= width_px {
        return label.to_string();
    }
    loop {
        chars.pop();
        let cut = chars.iter().collect::<String>() + "…";
        if chars.is_empty() || text_width(&cut, FAULT_LABEL_SIZE) as i32 <= width_px {
            return cut;
        }
    }
}
