//! Heatmaps of violation rates: the safety matrix (setups × fault classes) and each safety
//! envelope (two swept parameters, one panel per setup, the analytic bound drawn as a
//! black line around the points it calls safe). One colour scale for all of them.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{SCALE, Svg, svg, text_width, titled};

/// What fills a cell (or its top band).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    /// A violation fraction, coloured on the scale.
    Rate(f64),
    /// The fault does not apply to the setup: hatched light grey.
    DoesNotApply,
    /// Nobody got the lock after the faults, so nothing was shown: solid grey.
    NotExercised,
}

/// A second level under a cell's first (the matrix: data damage under the overlap).
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub fraction: f64,
    pub text: String,
}

/// One cell: its fill and text, optionally a band under it and a note at its foot (the
/// matrix: the liveness lost).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub fill: Fill,
    pub text: String,
    pub lower: Option<Band>,
    pub note: Option<String>,
}

impl Cell {
    /// A cell of one fill and its text, nothing under it.
    pub fn plain(fill: Fill, text: &str) -> Cell {
        Cell {
            fill,
            text: text.to_string(),
            lower: None,
            note: None,
        }
    }
}

/// The grey of "not exercised".
pub const NOT_EXERCISED: RGBColor = RGBColor(189, 189, 189);
/// The ground of "does not apply", under its hatching.
pub const DOES_NOT_APPLY: RGBColor = RGBColor(245, 245, 245);

/// One grid of cells with its labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    /// Column labels, left to right.
    pub columns: Vec<String>,
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// `cells[row][column]`.
    pub cells: Vec<Vec<Cell>>,
    /// The cells the analytic bound calls safe, if there is a bound: `inside[row][column]`.
    pub inside_bound: Option<Vec<Vec<bool>>>,
}

/// A figure of panels side by side, with axis descriptions shared by all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub panels: Vec<Panel>,
    /// Width of the row-label column, in pixels.
    pub row_label_width: u32,
    /// Width of a cell, in pixels: [`WIDE_CELL`] for the matrix's two-line texts and
    /// wrapped column labels, [`NARROW_CELL`] for an envelope's "3/20", so that two
    /// panels side by side fit a page's width at full size.
    pub cell_width: u32,
    /// One line under the figure (what the bound line means, what grey means).
    pub note: String,
}

/// Height of a cell of one level; a cell with a band under it or a note is taller.
const CELL_H: u32 = 34;
/// A cell wide enough for "damage 50/50" and a column label wrapped to three lines.
pub const WIDE_CELL: u32 = 124;
/// A cell wide enough for "20/20" and a number as its column label.
pub const NARROW_CELL: u32 = 76;
/// Height of each line of a cell's note (it has room for two: one per ", " part).
const NOTE_LINE: u32 = 16;
/// The size of a cell's text and of its note: the smallest a figure's text is
/// ([`super::MIN_TEXT_PX`]).
const CELL_TEXT_SIZE: u32 = 13;
/// Height of each line of a column label.
const HEADER_LINE: u32 = 16;
/// The most lines a column label wraps to.
const HEADER_LINES: u32 = 3;
/// Room under the grid: the axis description, the legend and the note.
const BOTTOM: u32 = 150;
const GAP: u32 = 40;
/// Where the title's centre line sits, and each panel's title.
const TITLE_Y: i32 = 22;
const PANEL_TITLE_Y: i32 = 56;

impl Heatmap {
    /// Whether any cell has a band under it or a note (then every cell is taller).
    fn layered(&self) -> bool {
        self.panels
            .iter()
            .flat_map(|p| p.cells.iter().flatten())
            .any(|c| c.lower.is_some() || c.note.is_some())
    }

    /// The height of a cell.
    fn cell_h(&self) -> u32 {
        if self.layered() {
            2 * CELL_H + 2 * NOTE_LINE
        } else {
            CELL_H
        }
    }

    /// The grid's top: under the titles and the column labels.
    fn top(&self) -> u32 {
        PANEL_TITLE_Y as u32 + 16 + HEADER_LINES * HEADER_LINE + 8
    }

    /// The figure's size in pixels: wide enough for its grid, its title and its legend.
    pub fn size(&self) -> (u32, u32) {
        let columns: u32 = self.panels.iter().map(|p| p.columns.len() as u32).sum();
        let rows = self.panels.iter().map(|p| p.rows.len()).max().unwrap_or(1) as u32;
        let panels = self.panels.len() as u32;
        let grid = panels * (self.row_label_width + GAP) + columns * self.cell_width + 20;
        let title = text_width(&self.title, 20) + 40;
        let note = text_width(&self.note, 13).min(NOTE_WIDTH) + 20;
        let width = grid.max(title).max(LEGEND_WIDTH).max(note);
        (
            width,
            self.top() + rows * self.cell_h() + BOTTOM + 18 * self.note_lines(width),
        )
    }

    /// What the figure shows, in words: the text alternative a page gives it.
    pub fn describe(&self) -> String {
        let panels: Vec<String> = self
            .panels
            .iter()
            .map(|p| {
                let span = |labels: &[String]| match labels {
                    [] => String::new(),
                    [one] => one.clone(),
                    [first, .., last] => format!("{first} to {last}"),
                };
                let title = if p.title.is_empty() {
                    String::new()
                } else {
                    format!("{}: ", p.title)
                };
                format!(
                    "{title}{} rows ({}) by {} columns ({})",
                    p.rows.len(),
                    span(&p.rows),
                    p.columns.len(),
                    span(&p.columns)
                )
            })
            .collect();
        format!(
            "Heatmap: {}. {} against {}; {}. Each cell is coloured by the fraction of seeds that broke, darker \
             is worse; every cell's numbers are in the table beside it. {}",
            self.title,
            self.y_label,
            self.x_label,
            panels.join("; "),
            self.note
        )
    }

    /// What the figure shows, in one line: a title for the picture or a caption under it
    /// ([`Heatmap::describe`] is the whole text alternative).
    pub fn caption(&self) -> String {
        format!(
            "Heatmap: {}, {} against {}, darker where more seeds broke.",
            self.title, self.y_label, self.x_label
        )
    }

    /// The picture as SVG, titled by [`Heatmap::caption`].
    pub fn svg(&self) -> Svg {
        titled(svg(self.size(), |root| draw(root, self)), &self.caption())
    }

    /// The note wrapped to the figure's width.
    fn note_lines(&self, width: u32) -> u32 {
        wrap_to(&self.note, 13, width.saturating_sub(20), u32::MAX).len() as u32
    }
}

/// The legend's width: its caption and eight swatches.
const LEGEND_WIDTH: u32 = 130 + 8 * 66 + 20;
/// The widest a note runs before it wraps.
const NOTE_WIDTH: u32 = 1200;

/// The colour of a violation fraction: white for none, then [`SCALE`] from light to dark.
pub fn colour_of(fraction: f64) -> (RGBColor, bool) {
    if fraction <= 0.0 {
        return (WHITE, false);
    }
    let index = (1 + (fraction * (SCALE.len() - 1) as f64).floor() as usize).min(SCALE.len() - 1);
    (SCALE[index], index >= 3)
}

/// The steps of the colour scale as a legend shows them, each as the lowest fraction it
/// colours (`0.01` standing for "any") and its label: "none" (white), "> 0%", "≥ 20%" …
/// "≥ 80%". The PNG's legend and the page's are both drawn from it.
pub fn scale_steps() -> Vec<(f64, String)> {
    std::iter::once((0.0, "none".to_string()))
        .chain((1..SCALE.len()).map(|i| {
            let text = if i == 1 {
                "> 0%".to_string()
            } else {
                format!("≥ {}%", (i - 1) * 20)
            };
            (((i - 1) as f64 * 0.2).max(0.01), text)
        }))
        .collect()
}

/// Draws `map` onto `root`.
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, map: &Heatmap) {
    let _ = root.fill(&WHITE);
    let centred = |size: u32| {
        ("sans-serif", size)
            .into_font()
            .into_text_style(root)
            .pos(Pos::new(HPos::Center, VPos::Center))
    };
    let (width, _) = map.size();
    // At the left, where a phone's screen shows it before the figure is scrolled.
    let _ = root.draw(&Text::new(
        map.title.clone(),
        (10, TITLE_Y),
        ("sans-serif", 20)
            .into_font()
            .into_text_style(root)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    ));
    let mut left = 10;
    for panel in &map.panels {
        left = draw_panel(root, map, panel, left) + GAP as i32;
    }
    let rows = map.panels.iter().map(|p| p.rows.len()).max().unwrap_or(1) as i32;
    let grid_bottom = map.top() as i32 + rows * map.cell_h() as i32;
    let _ = root.draw(&Text::new(
        map.x_label.clone(),
        (width as i32 / 2, grid_bottom + 22),
        centred(15),
    ));
    // The scale: white for none, then each step of the fraction; then the two greys.
    let legend_y = grid_bottom + 50;
    let mut x = 10;
    let label = ("sans-serif", 13).into_font().into_text_style(root);
    let _ = root.draw(&Text::new(
        "seeds:",
        (x, legend_y + 11),
        label.clone().pos(Pos::new(HPos::Left, VPos::Center)),
    ));
    x += 120;
    let steps = scale_steps()
        .into_iter()
        .map(|(fraction, text)| (Fill::Rate(fraction), text))
        .chain([
            (Fill::DoesNotApply, "n/a".to_string()),
            (Fill::NotExercised, "not exer.".to_string()),
        ]);
    for (fill, text) in steps {
        paint(
            root,
            fill,
            [(x, legend_y), (x + 62, legend_y + 22)],
            &text,
            CELL_TEXT_SIZE,
        );
        x += 66;
    }
    let note_width = width.saturating_sub(20);
    for (i, line) in wrap_to(&map.note, 13, note_width, u32::MAX)
        .into_iter()
        .enumerate()
    {
        let _ = root.draw(&Text::new(
            line,
            (10, legend_y + 48 + 18 * i as i32),
            label.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ));
    }
}

/// Fills `corners` as `fill` says, framed, with `text` (at font size `size`) in its middle
/// in the colour that reads on the fill (white on the dark steps).
fn paint<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fill: Fill,
    corners: [(i32, i32); 2],
    text: &str,
    size: u32,
) {
    let (colour, dark) = match fill {
        Fill::Rate(fraction) => colour_of(fraction),
        Fill::DoesNotApply => (DOES_NOT_APPLY, false),
        Fill::NotExercised => (NOT_EXERCISED, false),
    };
    let _ = root.draw(&Rectangle::new(corners, colour.filled()));
    let [(x0, y0), (x1, y1)] = corners;
    let centre = ((x0 + x1) / 2, (y0 + y1) / 2);
    if fill == Fill::DoesNotApply {
        // Hatching: the lines x + y = c every 8 px, clipped to the cell; then a plate of the
        // ground behind the text, so that no line runs through it.
        let hatch = RGBColor(200, 200, 200);
        for c in (x0 + y0..x1 + y1).step_by(8) {
            let (from, to) = ((c - y1).max(x0), (c - y0).min(x1));
            if from < to {
                let _ = root.draw(&PathElement::new(vec![(from, c - from), (to, c - to)], hatch));
            }
        }
        if !text.is_empty() {
            let (half_w, half_h) = (text_width(text, size) as i32 / 2 + 3, size as i32 / 2 + 2);
            let plate = [
                ((centre.0 - half_w).max(x0 + 1), (centre.1 - half_h).max(y0 + 1)),
                ((centre.0 + half_w).min(x1 - 1), (centre.1 + half_h).min(y1 - 1)),
            ];
            let _ = root.draw(&Rectangle::new(plate, DOES_NOT_APPLY.filled()));
        }
    }
    let _ = root.draw(&Rectangle::new(corners, RGBColor(170, 170, 170)));
    let style = ("sans-serif", size)
        .into_font()
        .into_text_style(root)
        .pos(Pos::new(HPos::Center, VPos::Center))
        .color(if dark { &WHITE } else { &BLACK });
    let _ = root.draw(&Text::new(text, centre, style));
}

/// Draws one panel with its left edge at `left`; returns its right edge.
fn draw_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    map: &Heatmap,
    panel: &Panel,
    left: i32,
) -> i32 {
    let text = |size: u32, h: HPos| {
        ("sans-serif", size)
            .into_font()
            .into_text_style(root)
            .pos(Pos::new(h, VPos::Center))
    };
    let grid_left = left + map.row_label_width as i32;
    let grid_top = map.top() as i32;
    let (w, h) = (map.cell_width as i32, map.cell_h() as i32);
    let right = grid_left + w * panel.columns.len() as i32;
    let _ = root.draw(&Text::new(
        panel.title.clone(),
        ((grid_left + right) / 2, PANEL_TITLE_Y),
        text(16, HPos::Center),
    ));
    // Above the column labels, clear of them and of the panel's title.
    let _ = root.draw(&Text::new(
        map.y_label.clone(),
        (left, PANEL_TITLE_Y + 16),
        text(13, HPos::Left),
    ));
    for (c, column) in panel.columns.iter().enumerate() {
        let x = grid_left + w * c as i32 + w / 2;
        let lines = wrap_to(column, 13, map.cell_width - 8, HEADER_LINES);
        let first = grid_top - 12 - HEADER_LINE as i32 * (lines.len() as i32 - 1);
        for (i, line) in lines.into_iter().enumerate() {
            let y = first + HEADER_LINE as i32 * i as i32;
            let _ = root.draw(&Text::new(line, (x, y), text(13, HPos::Center)));
        }
    }
    for (r, row) in panel.rows.iter().enumerate() {
        let y = grid_top + h * r as i32;
        let _ = root.draw(&Text::new(
            row.clone(),
            (grid_left - 8, y + h / 2),
            text(13, HPos::Right),
        ));
        for (c, cell) in panel.cells[r].iter().enumerate() {
            let x = grid_left + w * c as i32;
            let layered = map.layered();
            let top_h = if layered { CELL_H as i32 } else { h };
            paint(
                root,
                cell.fill,
                [(x, y), (x + w, y + top_h)],
                &cell.text,
                CELL_TEXT_SIZE,
            );
            if !layered {
                continue;
            }
            let band_corners = [(x, y + top_h), (x + w, y + 2 * top_h)];
            match &cell.lower {
                Some(band) => paint(
                    root,
                    Fill::Rate(band.fraction),
                    band_corners,
                    &band.text,
                    CELL_TEXT_SIZE,
                ),
                None => paint(root, cell.fill, band_corners, "", CELL_TEXT_SIZE),
            }
            let foot = [(x, y + 2 * top_h), (x + w, y + h)];
            let _ = root.draw(&Rectangle::new(foot, WHITE.filled()));
            let _ = root.draw(&Rectangle::new(foot, RGBColor(170, 170, 170)));
            if let Some(note) = &cell.note {
                for (i, line) in note.split(", ").take(2).enumerate() {
                    let _ = root.draw(&Text::new(
                        line.to_string(),
                        (
                            x + w / 2,
                            y + 2 * top_h + NOTE_LINE as i32 * i as i32 + NOTE_LINE as i32 / 2,
                        ),
                        text(CELL_TEXT_SIZE, HPos::Center).color(&RGBColor(150, 30, 0)),
                    ));
                }
            }
        }
    }
    if let Some(inside) = &panel.inside_bound {
        draw_bound(root, inside, (grid_left, grid_top), map.cell_width);
    }
    right
}

/// `label` in lines no wider than `width` pixels at font size `size`, broken at spaces (a
/// longer word keeps a line of its own); at most `max_lines`, the last one ending in "…"
/// if cut.
fn wrap_to(label: &str, size: u32, width: u32, max_lines: u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in label.split_whitespace() {
        match lines.last_mut() {
            Some(line) if text_width(&format!("{line} {word}"), size) <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    let max = max_lines as usize;
    if lines.len() > max {
        lines.truncate(max);
        lines[max - 1].push('…');
    }
    lines
}

/// The bound as a thick line along every edge between a cell it calls safe and one it
/// does not.
fn draw_bound<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    inside: &[Vec<bool>],
    (left, top): (i32, i32),
    cell_width: u32,
) {
    let (w, h) = (cell_width as i32, CELL_H as i32);
    let safe = |r: usize, c: usize| inside.get(r).and_then(|row| row.get(c)).copied();
    let line = BLACK.stroke_width(4);
    for (r, row) in inside.iter().enumerate() {
        for (c, &is_safe) in row.iter().enumerate() {
            if !is_safe {
                continue;
            }
            let (x, y) = (left + w * c as i32, top + h * r as i32);
            if safe(r, c + 1) == Some(false) {
                let _ = root.draw(&PathElement::new(vec![(x + w, y), (x + w, y + h)], line));
            }
            if c > 0 && safe(r, c - 1) == Some(false) {
                let _ = root.draw(&PathElement::new(vec![(x, y), (x, y + h)], line));
            }
            if safe(r + 1, c) == Some(false) {
                let _ = root.draw(&PathElement::new(vec![(x, y + h), (x + w, y + h)], line));
            }
            if r > 0 && safe(r - 1, c) == Some(false) {
                let _ = root.draw(&PathElement::new(vec![(x, y), (x + w, y)], line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worse_rates_are_darker_and_none_is_white() {
        assert_eq!(colour_of(0.0), (WHITE, false));
        assert_eq!(colour_of(0.01).0, SCALE[1]);
        assert_eq!(colour_of(1.0), (SCALE[SCALE.len() - 1], true));
    }

    #[test]
    fn column_labels_wrap_at_spaces_to_fit_the_cell() {
        let lines = wrap_to("failover before replication", 13, WIDE_CELL - 8, HEADER_LINES);
        assert_eq!(lines, ["failover before", "replication"]);
        assert!(
            lines.iter().all(|l| text_width(l, 13) <= WIDE_CELL - 8),
            "{lines:?}"
        );
        assert_eq!(wrap_to("none", 13, 100, 3), ["none"]);
        assert_eq!(wrap_to("a b c d e f g h", 13, 1, 3), ["a", "b", "c…"]);
    }

    #[test]
    fn the_same_map_draws_the_same_bytes() {
        let cell = |fill| Cell::plain(fill, "1/2");
        let map = Heatmap {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            panels: vec![Panel {
                title: "p".into(),
                columns: vec!["a".into(), "b".into()],
                rows: vec!["r".into()],
                cells: vec![vec![cell(Fill::Rate(0.5)), cell(Fill::DoesNotApply)]],
                inside_bound: Some(vec![vec![true, false]]),
            }],
            row_label_width: 80,
            cell_width: NARROW_CELL,
            note: "n".into(),
        };
        let svg = map.svg();
        assert_eq!(svg, map.svg());
        assert!(svg.contains("<title>Heatmap: t, y against x, darker where more seeds broke.</title>"));
        assert!(svg.contains("<rect"), "cells are drawn");
        assert!(
            svg.contains("<polyline") || svg.contains("<path"),
            "the bound is drawn"
        );
    }
}
