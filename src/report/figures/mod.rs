//! Figures: each a pure function from a summary value or one history to pictures, drawn
//! once to SVG (inlined into the page) and once to PNG (for a README or a chat). Text uses
//! DejaVu Sans embedded in the binary (no system fonts, byte-identical output run to run)
//! and colours come from the Okabe–Ito palette, which colour-blind readers can tell apart.
//!
//! A page scales an SVG down to its column; on a phone that made a 1400 px timeline's
//! text 3 px tall. So each SVG says how narrow it may be drawn ([`MIN_TEXT_PX`]): on a
//! narrow screen it keeps that width and the page scrolls it sideways, its text legible.

pub mod bitmap;
pub mod heatmap;
pub mod timeline;

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

/// One colour per client, in order (Okabe–Ito, without black and without red-ish vermilion,
/// which is kept for overlaps).
pub const CLIENT_COLOURS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(240, 228, 66),  // yellow
];

/// A sequential, colour-blind-safe scale from "rarely" to "always" (light yellow to dark
/// purple, matplotlib's magma reversed) for the fraction of seeds that violated; the first
/// step is the lightest colour a violation gets.
pub const SCALE: [RGBColor; 6] = [
    RGBColor(252, 253, 191),
    RGBColor(254, 176, 120),
    RGBColor(241, 96, 93),
    RGBColor(183, 55, 121),
    RGBColor(114, 31, 129),
    RGBColor(44, 17, 95),
];

/// A colour as CSS writes it (`#2c115f`).
pub fn hex(RGBColor(r, g, b): RGBColor) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// What marks a violation: two believed holders at once.
pub const OVERLAP: RGBColor = RGBColor(213, 94, 0);

/// Registers the embedded font under "sans-serif" (plotters draws no text without it).
pub fn register_font() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_err() {
            unreachable!("the embedded DejaVu Sans is a valid font");
        }
    });
}

/// The width in pixels of `text` in the embedded font at plotters font size `size`, as
/// plotters lays it out (the measure it centres and anchors text by).
pub fn text_width(text: &str, size: impl Into<f64>) -> u32 {
    register_font();
    let size = size.into();
    ("sans-serif", size)
        .into_font()
        .box_size(text)
        .map_or(text.chars().count() as u32 * (size * 0.6) as u32, |(width, _)| {
            width
        })
}

/// A drawing, as SVG text.
pub type Svg = String;

/// The smallest a figure's text may be drawn, in CSS pixels: what still reads on a phone
/// (its body text is 16 px, a caption 11 or 12). Every figure's text is at least plotters
/// size 13 (10.5 px in the SVG), so no figure may shrink below 95% of its size.
pub const MIN_TEXT_PX: f64 = 10.0;

/// Draws with `draw` onto an SVG of `size` and returns its text, its root styled with the
/// narrowest width at which its smallest text is still [`MIN_TEXT_PX`] (a page that fits
/// figures to its column would shrink it further; the page scrolls it sideways instead).
pub fn svg(size: (u32, u32), draw: impl Fn(&DrawingArea<SVGBackend, plotters::coord::Shift>)) -> Svg {
    register_font();
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        draw(&root);
        let _ = root.present();
    }
    let smallest = text
        .split(" font-size=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse::<f64>().ok())
        .fold(f64::INFINITY, f64::min);
    let min_width = (f64::from(size.0) * MIN_TEXT_PX / smallest)
        .ceil()
        .min(f64::from(size.0));
    match text.split_once("<svg ") {
        Some((before, after)) => format!("{before}<svg style=\"min-width:{min_width}px\" {after}"),
        None => text,
    }
}

/// `svg` with `title` as its `<title>`: what a browser shows over it and names it by when
/// it is opened on its own.
pub fn titled(svg: Svg, title: &str) -> Svg {
    let title = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let Some(open) = svg.find("<svg ") else {
        return svg;
    };
    match svg[open..].find('>') {
        Some(end) => {
            let at = open + end + 1;
            format!("{}\n<title>{title}</title>{}", &svg[..at], &svg[at..])
        }
        None => svg,
    }
}

/// Draws with `draw` onto a PNG of `size` written to `path` (text glyph by glyph:
/// [`bitmap::GlyphExact`]).
pub fn png(
    path: &Path,
    size: (u32, u32),
    draw: impl Fn(&DrawingArea<bitmap::GlyphExact, plotters::coord::Shift>),
) -> std::io::Result<()> {
    register_font();
    let root = bitmap::GlyphExact(BitMapBackend::new(path, size)).into_drawing_area();
    draw(&root);
    root.present()
        .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_svg_keeps_the_width_at_which_its_smallest_text_reads() {
        let drawn = svg((1000, 100), |root| {
            let _ = root.draw(&Text::new("small", (10, 10), ("sans-serif", 13)));
            let _ = root.draw(&Text::new("title", (10, 50), ("sans-serif", 20)));
        });
        // Size 13 is drawn at 13 / 1.24 px: 10.48 px at full size, 10 px at 954 px wide.
        assert!(
            drawn.contains("<svg style=\"min-width:954px\" width=\"1000\""),
            "{drawn}"
        );
    }

    #[test]
    fn a_title_is_the_svgs_first_child_and_escaped() {
        let titled = titled(svg((10, 10), |_| {}), "a < b & c");
        let open = titled.find("<svg ").unwrap();
        let first_child = &titled[open + titled[open..].find('>').unwrap() + 1..];
        assert!(
            first_child
                .trim_start()
                .starts_with("<title>a &lt; b &amp; c</title>"),
            "{titled}"
        );
    }
}
