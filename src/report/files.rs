//! The report on disk: `index.html` (the page, figures inlined), `summary.json` (every
//! number), `summary.jsonl` (the catalogue, a line a scenario) and every figure as
//! `figures/<id>.svg` and `.png` for slides and tickets.

use std::path::Path;

use super::figures::{self, heatmap, timeline::Timeline};
use super::page::{self, Figure, Figures};
use super::summary::Summary;

/// Draws every figure and writes the report's files into `out` (which exists): the
/// timelines by counterexample id, the matrix and each envelope.
pub fn write(out: &Path, summary: &Summary, timelines: &[(String, Timeline)]) -> std::io::Result<()> {
    let figures = draw_figures(out, timelines, summary)?;
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

/// Every figure as `out/figures/<id>.svg` and `.png`: each counterexample's timeline (by
/// its id), the matrix (`matrix`) and each envelope (`envelope-<name>`). Returns the SVGs,
/// by id, for the page to inline.
fn draw_figures(out: &Path, timelines: &[(String, Timeline)], summary: &Summary) -> std::io::Result<Figures> {
    let dir = out.join("figures");
    std::fs::create_dir_all(&dir)?;
    let mut figures = Figures::new();
    let mut write = |id: &str, figure: Figure, draw_png: &dyn Fn(&Path) -> std::io::Result<()>| {
        std::fs::write(dir.join(format!("{id}.svg")), &figure.svg)?;
        draw_png(&dir.join(format!("{id}.png")))?;
        figures.insert(id.to_string(), figure);
        std::io::Result::Ok(())
    };
    for (id, t) in timelines {
        let figure = Figure {
            svg: t.svg(),
            alt: t.describe(),
            caption: t.caption(),
        };
        write(id, figure, &|png| t.png(png))?;
    }
    let heatmaps = summary
        .matrix
        .iter()
        .map(|matrix| ("matrix".to_string(), matrix.heatmap()))
        .chain(
            summary
                .envelopes
                .iter()
                .map(|envelope| (format!("envelope-{}", envelope.name), envelope.heatmap())),
        );
    for (id, map) in heatmaps {
        let figure = Figure {
            svg: map.svg(),
            alt: map.describe(),
            caption: map.caption(),
        };
        write(&id, figure, &|png| {
            figures::png(png, map.size(), |root| heatmap::draw(root, &map))
        })?;
    }
    Ok(figures)
}
