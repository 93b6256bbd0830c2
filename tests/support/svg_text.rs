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

/// `#RRGGBB` as three channels (0-255).
fn rgb(hex: &str) -> Option<[f64; 3]> {
    let hex = hex.strip_prefix('#')?;
    let channel = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok().map(f64::from);
    Some([channel(0)?, channel(2)?, channel(4)?])
}

/// Every `<text>` of `svg` with its colour and the colour behind the middle of its box:
/// the filled rectangles drawn before it that cover that point, each laid over the ones
/// before at its opacity, over white. (A text's own colour is taken as drawn, opaque.)
pub fn text_colours(svg: &str) -> Vec<(String, [f64; 3], [f64; 3])> {
    let boxes = text_boxes(svg);
    let mut out = Vec::new();
    let mut rects: Vec<([f64; 4], [f64; 3], f64)> = Vec::new();
    let mut texts = boxes.into_iter();
    for piece in svg.split('<').skip(1) {
        let tag = &piece[..piece.find('>').unwrap_or(piece.len())];
        if tag.starts_with("rect ") {
            if let Some(fill) = attribute(tag, "fill").and_then(rgb) {
                let (x, y) = (number(tag, "x"), number(tag, "y"));
                let area = [x, y, x + number(tag, "width"), y + number(tag, "height")];
                let opacity = attribute(tag, "opacity")
                    .and_then(|o| o.parse().ok())
                    .unwrap_or(1.0);
                rects.push((area, fill, opacity));
            }
        } else if tag.starts_with("text") {
            let after = piece.get(tag.len() + 1..).unwrap_or("");
            if after.trim().is_empty() {
                continue;
            }
            let Some(text) = texts.next() else { break };
            let colour = attribute(tag, "fill").and_then(rgb).unwrap_or([0.0; 3]);
            let (cx, cy) = ((text.left + text.right) / 2.0, (text.top + text.bottom) / 2.0);
            let behind = rects
                .iter()
                .filter(|([l, t, r, b], _, _)| *l <= cx && cx <= *r && *t <= cy && cy <= *b)
                .fold([255.0; 3], |under, (_, fill, alpha)| {
                    [0, 1, 2].map(|i| alpha * fill[i] + (1.0 - alpha) * under[i])
                });
            out.push((text.text, colour, behind));
        }
    }
    out
}
