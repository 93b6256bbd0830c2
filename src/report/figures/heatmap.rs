//! Heatmaps of violation rates: the safety matrix (setups × fault classes) and each safety
//! envelope (two swept parameters, one panel per setup, the analytic bound drawn as a
//! black line around the points it calls safe). One colour scale for all of them.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::SCALE;

/// One cell: its violation fraction (`None` when there is no rate to colour: the fault
/// does not apply, or the lock was not exercised) and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub fraction: Option<f64>,
    pub text: String,
}

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
    /// One line under the figure (what the bound line means, what grey means).
    pub note: String,
}

const CELL_W: u32 = 96;
const CELL_H: u32 = 34;
const TOP: u32 = 124;
const BOTTOM: u32 = 110;
const GAP: u32 = 40;

impl Heatmap {
    /// The figure's size in pixels.
    pub fn size(&self) -> (u32, u32) {
        let columns: u32 = self.panels.iter().map(|p| p.columns.len() as u32).sum();
        let rows = self.panels.iter().map(|p| p.rows.len()).max().unwrap_or(1) as u32;
        let panels = self.panels.len() as u32;
        let width = panels * (self.row_label_width + GAP) + columns * CELL_W + 20;
        (width.max(700), TOP + rows * CELL_H + BOTTOM)
    }
}

/// The colour of a violation fraction: white for none, then [`SCALE`] from light to dark.
pub fn colour_of(fraction: f64) -> (RGBColor, bool) {
    if fraction <= 0.0 {
        return (WHITE, false);
    }
    let index = (1 + (fraction * (SCALE.len() - 1) as f64).floor() as usize).min(SCALE.len() - 1);
    (SCALE[index], index >= 3)
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
    let (width, height) = map.size();
    let _ = root.draw(&Text::new(map.title.clone(), (width as i32 / 2, 20), centred(20)));
    let mut left = 10;
    for panel in &map.panels {
        left = draw_panel(root, map, panel, left) + GAP as i32;
    }
    let grid_bottom = height as i32 - BOTTOM as i32;
    let _ = root.draw(&Text::new(
        map.x_label.clone(),
        (width as i32 / 2, grid_bottom + 22),
        centred(15),
    ));
    // The scale: white for none, then each step of the fraction.
    let legend_y = grid_bottom + 50;
    let mut x = 10;
    let label = ("sans-serif", 13).into_font().into_text_style(root);
    let _ = root.draw(&Text::new("violating seeds:", (x, legend_y + 4), label.clone()));
    x += 120;
    for (i, colour) in std::iter::once(WHITE)
        .chain(SCALE.iter().copied().skip(1))
        .enumerate()
    {
        let _ = root.draw(&Rectangle::new(
            [(x, legend_y), (x + 46, legend_y + 22)],
            colour.filled(),
        ));
        let _ = root.draw(&Rectangle::new(
            [(x, legend_y), (x + 46, legend_y + 22)],
            BLACK.mix(0.3),
        ));
        let text = match i {
            0 => "none".to_string(),
            1 => "> 0%".to_string(),
            i => format!("≥ {}%", (i - 1) * 20),
        };
        let dark = i >= 3;
        let style = centred(12).color(if dark { &WHITE } else { &BLACK });
        let _ = root.draw(&Text::new(text, (x + 23, legend_y + 11), style));
        x += 50;
    }
    let _ = root.draw(&Text::new(map.note.clone(), (10, legend_y + 40), label));
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
    let grid_top = TOP as i32;
    let (w, h) = (CELL_W as i32, CELL_H as i32);
    let right = grid_left + w * panel.columns.len() as i32;
    let _ = root.draw(&Text::new(
        panel.title.clone(),
        ((grid_left + right) / 2, grid_top - 100),
        text(16, HPos::Center),
    ));
    let _ = root.draw(&Text::new(
        map.y_label.clone(),
        (left, grid_top - 12),
        text(13, HPos::Left),
    ));
    for (c, column) in panel.columns.iter().enumerate() {
        let x = grid_left + w * c as i32 + w / 2;
        let lines = wrap(column, COLUMN_CHARS);
        let first = grid_top - 30 - 14 * (lines.len() as i32 - 1);
        for (i, line) in lines.into_iter().enumerate() {
            let y = first + 14 * i as i32;
            let _ = root.draw(&Text::new(line, (x, y), text(12, HPos::Center)));
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
            let corners = [(x, y), (x + w, y + h)];
            let (fill, dark) = match cell.fraction {
                Some(fraction) => colour_of(fraction),
                None => (RGBColor(224, 224, 224), false),
            };
            let _ = root.draw(&Rectangle::new(corners, fill.filled()));
            let _ = root.draw(&Rectangle::new(corners, RGBColor(190, 190, 190)));
            let colour = if dark { WHITE } else { BLACK };
            let style = text(12, HPos::Center).color(&colour);
            let _ = root.draw(&Text::new(cell.text.clone(), (x + w / 2, y + h / 2), style));
        }
    }
    if let Some(inside) = &panel.inside_bound {
        draw_bound(root, inside, (grid_left, grid_top));
    }
    right
}

/// Characters of a column label that fit on one line of a cell's width.
const COLUMN_CHARS: usize = 15;

/// `label` in lines of at most `width` characters, broken at spaces (a longer word keeps
/// a line of its own); at most three lines, the last one ending in "…" if cut.
fn wrap(label: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in label.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    if lines.len() > 3 {
        lines.truncate(3);
        lines[2].push('…');
    }
    lines
}

/// The bound as a thick line along every edge between a cell it calls safe and one it
/// does not.
fn draw_bound<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    inside: &[Vec<bool>],
    (left, top): (i32, i32),
) {
    let (w, h) = (CELL_W as i32, CELL_H as i32);
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
    fn column_labels_wrap_at_spaces() {
        assert_eq!(
            wrap("failover before replication", 15),
            ["failover before", "replication"]
        );
        assert_eq!(wrap("none", 15), ["none"]);
        assert_eq!(wrap("a b c d e f g h", 1), ["a", "b", "c…"]);
    }

    #[test]
    fn the_same_map_draws_the_same_bytes() {
        let cell = |f: Option<f64>| Cell {
            fraction: f,
            text: "1/2".into(),
        };
        let map = Heatmap {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            panels: vec![Panel {
                title: "p".into(),
                columns: vec!["a".into(), "b".into()],
                rows: vec!["r".into()],
                cells: vec![vec![cell(Some(0.5)), cell(None)]],
                inside_bound: Some(vec![vec![true, false]]),
            }],
            row_label_width: 80,
            note: "n".into(),
        };
        let draw_once = || super::super::svg(map.size(), |root| draw(root, &map));
        let svg = draw_once();
        assert_eq!(svg, draw_once());
        assert!(svg.contains("<rect"), "cells are drawn");
        assert!(
            svg.contains("<polyline") || svg.contains("<path"),
            "the bound is drawn"
        );
    }
}
