//! The report on disk: `index.html` (the page, figures inlined), `summary.json` (every
//! number), `summary.jsonl` (the catalogue, a line a scenario) and every figure as
//! `figures/<id>.svg` and `.png` for slides and tickets.

use std::path::Path;

use super::figures::heatmap::{self, Heatmap};
use super::figures::{self, timeline::Timeline};
use super::page::{self, Figure, Figures};
use super::summary::Summary;
use crate::sweep::in_parallel;

/// Draws every figure (`jobs` at a time) and writes the report's files into `out` (which
/// exists): the timelines by counterexample id, the matrix and each envelope.
pub fn write(
    out: &Path,
    summary: &Summary,
    timelines: &[(String, Timeline)],
    jobs: usize,
) -> std::io::Result<()> {
    let figures = draw_figures(out, timelines, summary, jobs)?;
    std::fs::write(out.join("index.html"), page::render(summary, &figures))?;
    let json = serde_json::to_string_pretty(&summary.to_json()).map_err(std::io::Error::other)?;
    std::fs::write(out.join("summary.json"), json + "\n")?;
    let lines: String = summary
        .catalogue
        .iter()
        .map(|report| report.to_json().to_string() + "\n")
        .collect();
    std::fs::write(out.join("summary.jsonl"), lines)
}

/// Every figure as `out/figures/<id>.svg` and `.png`, drawn `jobs` at a time: each
/// counterexample's timeline (by its id), the matrix (`matrix`) and each envelope
/// (`envelope-<name>`). Returns the SVGs, by id, for the page to inline.
fn draw_figures(
    out: &Path,
    timelines: &[(String, Timeline)],
    summary: &Summary,
    jobs: usize,
) -> std::io::Result<Figures> {
    let dir = out.join("figures");
    std::fs::create_dir_all(&dir)?;
    let heatmaps: Vec<(String, Heatmap)> = summary
        .matrix
        .iter()
        .map(|matrix| ("matrix".to_string(), matrix.heatmap()))
        .chain(
            summary
                .envelopes
                .iter()
                .map(|envelope| (format!("envelope-{}", envelope.name), envelope.heatmap())),
        )
        .collect();
    let save = |id: &str, figure: Figure, draw_png: &dyn Fn(&Path) -> std::io::Result<()>| {
        std::fs::write(dir.join(format!("{id}.svg")), &figure.svg)?;
        draw_png(&dir.join(format!("{id}.png")))?;
        std::io::Result::Ok((id.to_string(), figure))
    };
    let count = (timelines.len() + heatmaps.len()) as u64;
    let drawn = in_parallel(0..count, jobs, |index| match timelines.get(index as usize) {
        Some((id, t)) => {
            let figure = Figure {
                svg: t.svg(),
                alt: t.describe(),
                caption: t.caption(),
            };
            save(id, figure, &|png| t.png(png))
        }
        None => {
            let (id, map) = &heatmaps[index as usize - timelines.len()];
            let figure = Figure {
                svg: map.svg(),
                alt: map.describe(),
                caption: map.caption(),
            };
            save(id, figure, &|png| {
                figures::png(png, map.size(), |root| heatmap::draw(root, map))
            })
        }
    });
    drawn.into_iter().collect()
}
