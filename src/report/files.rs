//! The report on disk: `index.html` (the page, figures inlined), `summary.json` (every
//! number), `summary.jsonl` (the catalogue, a line a scenario) and every figure as
//! `figures/<id>.svg` and `.png` for slides and tickets. A provisional page
//! ([`write_provisional_page`]) is `index.html` alone, replaced by the final one.

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
    let dir = out.join("figures");
    std::fs::create_dir_all(&dir)?;
    let figures = draw_figures(Some(&dir), timelines, summary, jobs)?;
    write_page(out, &page::render(summary, &figures))?;
    let json = serde_json::to_string_pretty(&summary.to_json()).map_err(std::io::Error::other)?;
    std::fs::write(out.join("summary.json"), json + "\n")?;
    let lines: String = summary
        .catalogue
        .iter()
        .map(|report| report.to_json().to_string() + "\n")
        .collect();
    std::fs::write(out.join("summary.jsonl"), lines)
}

/// A page written while the report's last sweeps run (`summary.provisional` set), with
/// its figures inline: `out/index.html` only, until the final [`write`](fn@write) replaces it.
/// `timelines` (those the page written before did not show) are drawn into `drawn`, which
/// keeps that page's figures for the same page written again.
pub fn write_provisional_page(
    out: &Path,
    summary: &Summary,
    timelines: &[(String, Timeline)],
    jobs: usize,
    drawn: &mut Figures,
) -> std::io::Result<()> {
    drawn.extend(draw_figures(None, timelines, summary, jobs)?);
    write_page(out, &page::render(summary, drawn))
}

/// Writes `out/index.html` whole or not at all (a temporary file renamed over it), so a
/// reader reloading while the report runs never sees half a page.
pub fn write_page(out: &Path, html: &str) -> std::io::Result<()> {
    let temporary = out.join(".index.html.partial");
    std::fs::write(&temporary, html)?;
    std::fs::rename(&temporary, out.join("index.html"))
}

/// Every figure, drawn `jobs` at a time: each counterexample's timeline (by its id), the
/// matrix (`matrix`) and each envelope (`envelope-<name>`), also saved as `<id>.svg` and
/// `.png` in `dir` when given. Returns the SVGs, by id, for the page to inline.
fn draw_figures(
    dir: Option<&Path>,
    timelines: &[(String, Timeline)],
    summary: &Summary,
    jobs: usize,
) -> std::io::Result<Figures> {
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
        if let Some(dir) = dir {
            std::fs::write(dir.join(format!("{id}.svg")), &figure.svg)?;
            draw_png(&dir.join(format!("{id}.png")))?;
        }
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
