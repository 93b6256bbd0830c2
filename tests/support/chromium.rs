//! Headless Chromium for tests that look at what a browser draws: the runner, and the
//! check that no line of a figure crosses its text, measured by the browser's own layout
//! (its text metrics, its geometry of every stroke).

use std::path::Path;
use std::process::{Command, Output};

/// Headless Chromium as the environment notes start it: no sandbox as root, no
/// background networking (this machine's network is closed), a fresh profile.
pub fn chromium(dir: &Path, args: &[&str]) -> Output {
    let profile = dir.join("chromium-profile");
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("chromium must be installed (make test installs it: apt-get install chromium)")
}

/// The script that finds, in every `div.figure` of the page (its `data-name` naming it),
/// each text crossed by a line: a `<line>`, a `<polyline>`/`<polygon>`/`<path>` stroke, or
/// an edge of a `<rect>` (stroked, or filled: a fill's edge through a label cuts it as
/// surely). A text's box is its advance as Chromium lays it out, from 0.73 em above its
/// baseline (DejaVu's capitals) to 0.24 em under it (its descenders); a stroke counts where
/// it reaches more than half a pixel into that box, unless an opaque rectangle painted after
/// it covers it there (the fault lane's ground hides the gridlines under it). One line per
/// crossing: `name`, `text` and what crosses it, tab-separated.
const LINES_THROUGH_TEXT: &str = r#"
(() => {
  const TOLERANCE = 0.5;
  const found = [];
  for (const holder of document.querySelectorAll('div.figure')) {
    const svg = holder.querySelector('svg');
    const all = [...svg.querySelectorAll('*')];
    const style = e => getComputedStyle(e);
    const toCanvas = (e, p) => {
      const m = e.getCTM();
      return { x: m.a * p.x + m.c * p.y + m.e, y: m.b * p.x + m.d * p.y + m.f };
    };
    const shows = (paint, opacity) => paint !== 'none' && !paint.startsWith('rgba(0, 0, 0, 0)') && opacity > 0;
    const occluders = [];
    const strokes = [];
    all.forEach((e, order) => {
      const s = style(e);
      const opacity = Number(s.opacity);
      const stroked = shows(s.stroke, opacity * Number(s.strokeOpacity)) && parseFloat(s.strokeWidth) > 0;
      const width = stroked ? parseFloat(s.strokeWidth) : 0;
      const add = (points, closed, what) => {
        const canvas = points.map(p => toCanvas(e, p));
        const last = closed ? canvas.length : canvas.length - 1;
        for (let i = 0; i < last; i++) {
          strokes.push({ from: canvas[i], to: canvas[(i + 1) % canvas.length], width, order, what });
        }
      };
      const tag = e.tagName;
      if (tag === 'rect') {
        const filled = shows(s.fill, opacity * Number(s.fillOpacity));
        const b = e.getBBox();
        const corners = [{ x: b.x, y: b.y }, { x: b.x + b.width, y: b.y },
                         { x: b.x + b.width, y: b.y + b.height }, { x: b.x, y: b.y + b.height }];
        if (filled && opacity === 1 && Number(s.fillOpacity) === 1) {
          const c = corners.map(p => toCanvas(e, p));
          occluders.push({ order, left: Math.min(...c.map(p => p.x)), right: Math.max(...c.map(p => p.x)),
                           top: Math.min(...c.map(p => p.y)), bottom: Math.max(...c.map(p => p.y)) });
        }
        if (stroked || filled) add(corners, true, `rect ${b.x},${b.y} ${b.width}x${b.height}`);
      } else if (!stroked) {
        return;
      } else if (tag === 'line') {
        const p = [{ x: e.x1.baseVal.value, y: e.y1.baseVal.value }, { x: e.x2.baseVal.value, y: e.y2.baseVal.value }];
        add(p, false, `line ${p[0].x},${p[0].y} to ${p[1].x},${p[1].y}`);
      } else if (tag === 'polyline' || tag === 'polygon') {
        const p = [...e.points].map(q => ({ x: q.x, y: q.y }));
        add(p, tag === 'polygon', `${tag} ${p.map(q => q.x + ',' + q.y).join(' ')}`.slice(0, 120));
      } else if (tag === 'path') {
        const length = e.getTotalLength();
        const steps = Math.max(2, Math.ceil(length / 2));
        const p = [...Array(steps + 1).keys()].map(i => e.getPointAtLength(length * i / steps));
        add(p.map(q => ({ x: q.x, y: q.y })), false, `path ${e.getAttribute('d')}`.slice(0, 120));
      }
    });
    const covered = (stroke, a, b) => occluders.some(o => o.order > stroke.order &&
      [a, b].every(p => o.left <= p.x && p.x <= o.right && o.top <= p.y && p.y <= o.bottom));
    for (const text of svg.querySelectorAll('text')) {
      const words = text.textContent.trim();
      if (!words) continue;
      const em = parseFloat(style(text).fontSize);
      const box = text.getBBox();
      const baseline = text.getStartPositionOfChar(0).y;
      const m = text.getCTM();
      const inverse = m.inverse();
      const local = p => ({ x: inverse.a * p.x + inverse.c * p.y + inverse.e, y: inverse.b * p.x + inverse.d * p.y + inverse.f });
      const global = p => ({ x: m.a * p.x + m.c * p.y + m.e, y: m.b * p.x + m.d * p.y + m.f });
      for (const stroke of strokes) {
        // Liang-Barsky: the part of the stroke inside the box, grown by half the stroke's
        // width and shrunk by the tolerance.
        const grow = stroke.width / 2 - TOLERANCE;
        const [left, right] = [box.x - grow, box.x + box.width + grow];
        const [top, bottom] = [baseline - 0.73 * em - grow, baseline + 0.24 * em + grow];
        if (right <= left || bottom <= top) continue;
        const p = local(stroke.from);
        const q = local(stroke.to);
        const [dx, dy] = [q.x - p.x, q.y - p.y];
        let [t0, t1] = [0, 1];
        let inside = true;
        for (const [edge, distance] of [[-dx, p.x - left], [dx, right - p.x], [-dy, p.y - top], [dy, bottom - p.y]]) {
          if (edge === 0) {
            if (distance < 0) { inside = false; break; }
          } else {
            const t = distance / edge;
            if (edge < 0) t0 = Math.max(t0, t); else t1 = Math.min(t1, t);
          }
        }
        if (!inside || t0 > t1) continue;
        const a = global({ x: p.x + t0 * dx, y: p.y + t0 * dy });
        const b = global({ x: p.x + t1 * dx, y: p.y + t1 * dy });
        if (covered(stroke, a, b)) continue;
        found.push(`${holder.dataset.name}\t${words}\t${stroke.what}`);
      }
    }
  }
  return found.join('\n');
})()
"#;

/// Every crossing of a line and a text in `figures` (name, SVG text), as Chromium lays
/// them out at their own size, in words (`name: "text" is crossed by line …`); empty when
/// every label stands clear. Works in `dir`.
pub fn lines_through_text(dir: &Path, figures: &[(String, String)]) -> Vec<String> {
    let mut page = String::from("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>\n");
    for (name, svg) in figures {
        let svg = svg.find("<svg").map_or(svg.as_str(), |at| &svg[at..]);
        page.push_str(&format!(
            "<div class=\"figure\" data-name=\"{}\">{svg}</div>\n",
            name.replace('&', "&amp;").replace('"', "&quot;")
        ));
    }
    page.push_str(&format!(
        "<script>document.body.textContent = 'MEASURED ' + {LINES_THROUGH_TEXT} + ' END';</script></body></html>"
    ));
    let file = dir.join("lines-through-text.html");
    std::fs::write(&file, page).unwrap();
    let url = format!("file://{}", file.display());
    let dom = chromium(dir, &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    let measured = dom
        .split_once("MEASURED ")
        .and_then(|(_, rest)| rest.split_once(" END"))
        .unwrap_or_else(|| panic!("the measuring page reports: {}", &dom[..dom.len().min(2000)]))
        .0
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    measured
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\t');
            Some(format!(
                "{}: {:?} is crossed by {}",
                parts.next()?,
                parts.next()?,
                parts.next()?
            ))
        })
        .collect()
}
