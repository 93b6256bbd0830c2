//! The text of an SVG figure as plotters writes it, measured with the embedded font: each
//! `<text>`'s box (its advance width as plotters lays text out, and the ink's height from
//! the baseline the `dy` shift puts it on), so a test can say that no text leaves the
//! canvas and no two texts sit over each other.

use locksim::report::figures::text_width;

/// One text's box on the canvas, in pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct TextBox {
    pub text: String,
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

/// What an attribute of a tag says, when the tag has it.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[start..start + tag[start..].find('"')?])
}

fn number(tag: &str, name: &str) -> f64 {
    attribute(tag, name).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// The SVG's width and height.
pub fn canvas(svg: &str) -> (f64, f64) {
    let open = &svg[svg.find("<svg").unwrap()..];
    let open = &open[..open.find('>').unwrap()];
    (number(open, "width"), number(open, "height"))
}

/// Every `<text>` of `svg` with its box. DejaVu Sans: capitals 0.73 em over the baseline,
/// descenders 0.24 em under it, the x-height 0.55 em (what `ex` is).
pub fn text_boxes(svg: &str) -> Vec<TextBox> {
    let mut boxes = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let Some(end) = piece.find('>') else { continue };
        let tag = &piece[..end];
        let text = piece[end + 1..]
            .split("</text>")
            .next()
            .unwrap_or("")
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&");
        if text.is_empty() {
            continue;
        }
        let (x, y, em) = (number(tag, "x"), number(tag, "y"), number(tag, "font-size"));
        // plotters writes its size divided by 1.24 and lays text out at its size.
        let width = f64::from(text_width(&text, em * 1.24));
        let baseline = match attribute(tag, "dy") {
            Some("0.76em") => 0.76 * em,
            Some("0.5ex") => 0.5 * 0.55 * em,
            Some("-0.5ex") => -0.5 * 0.55 * em,
            _ => 0.0,
        };
        let left = match attribute(tag, "text-anchor") {
            Some("middle") => -width / 2.0,
            Some("end") => -width,
            _ => 0.0,
        };
        let corners = [(left, baseline - 0.73 * em), (left + width, baseline + 0.24 * em)];
        // rotate(A, x, y) turns the box about the anchor.
        let angle = attribute(tag, "transform")
            .and_then(|t| {
                t.strip_prefix("rotate(")?
                    .split(',')
                    .next()?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or(0.0)
            .to_radians();
        let turned: Vec<(f64, f64)> = [
            (corners[0].0, corners[0].1),
            (corners[1].0, corners[0].1),
            (corners[0].0, corners[1].1),
            (corners[1].0, corners[1].1),
        ]
        .iter()
        .map(|(dx, dy)| {
            (
                x + dx * angle.cos() - dy * angle.sin(),
                y + dx * angle.sin() + dy * angle.cos(),
            )
        })
        .collect();
        boxes.push(TextBox {
            text,
            left: turned.iter().map(|p| p.0).fold(f64::INFINITY, f64::min),
            right: turned.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
            top: turned.iter().map(|p| p.1).fold(f64::INFINITY, f64::min),
            bottom: turned.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max),
        });
    }
    boxes
}

/// Every text of `svg` that leaves the canvas, and every pair of texts over each other
/// (by more than half a pixel each way), in words; empty when the figure reads.
pub fn text_problems(svg: &str) -> Vec<String> {
    let (width, height) = canvas(svg);
    let boxes = text_boxes(svg);
    let mut problems: Vec<String> = boxes
        .iter()
        .filter(|b| b.left < 0.0 || b.top < 0.0 || b.right > width || b.bottom > height)
        .map(|b| format!("{:?} leaves the {width}x{height} canvas: {b:?}", b.text))
        .collect();
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let across = a.right.min(b.right) - a.left.max(b.left);
            let down = a.bottom.min(b.bottom) - a.top.max(b.top);
            if across > 0.5 && down > 0.5 {
                problems.push(format!("{:?} overlaps {:?}: {a:?} {b:?}", a.text, b.text));
            }
        }
    }
    problems
}
