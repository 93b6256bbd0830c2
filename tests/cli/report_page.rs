//! `locksim report`: the numbers it writes are the numbers `locksim run` gives, and the page
//! it writes opens in a real headless Chromium with every section there and nothing
//! fetched from the network. `make test` installs Chromium (Debian's package) when missing.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::chromium::chromium;
use support::cli::{locksim, scratch};
use support::svg_text::{text_boxes, text_colours as svg_text_colours, text_problems};

const SCENARIOS: [&str; 3] = [
    "scenarios/single-node-gc-pause.json",
    "scenarios/single-node-baseline.json",
    "scenarios/replicated-crash-before-replication-wait.json",
];

/// Writes a report of [`SCENARIOS`] at 6 seeds into `dir`, the envelopes and the matrix at
/// `envelope_seeds` seeds per point and cell (0: none).
fn write_report(dir: &Path, envelope_seeds: &str) -> Output {
    let out = dir.to_str().unwrap();
    let mut args = vec![
        "report",
        "--out",
        out,
        "--seeds",
        "6",
        "--jobs",
        "2",
        "--envelope-seeds",
        envelope_seeds,
        "--matrix-seeds",
        envelope_seeds,
        // Cells stay at their seeds: going on to 300 where none broke is tested on one
        // cell (tests/sim/matrix.rs), not here.
        "--holds-seeds",
        "0",
    ];
    args.extend(SCENARIOS);
    locksim(&args)
}

#[test]
fn every_number_in_the_summary_is_what_run_gives() {
    let dir = scratch("numbers");
    let report = write_report(&dir, "0");
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let stdout = String::from_utf8_lossy(&report.stdout);
    assert!(stdout.contains("report: "), "says where the report is: {stdout}");
    let jsonl = dir.join("run.jsonl");
    let mut args = vec![
        "run",
        "--seeds",
        "6",
        "--jobs",
        "1",
        "--json",
        jsonl.to_str().unwrap(),
    ];
    args.extend(SCENARIOS);
    assert!(locksim(&args).status.success());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let from_report = summary["catalogue"].as_array().unwrap();
    let from_run: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(from_report.len(), SCENARIOS.len());
    for (mut reported, mut ran) in from_report.iter().cloned().zip(from_run) {
        // Host time is the only thing allowed to differ.
        reported["wall_ms"] = Value::Null;
        ran["wall_ms"] = Value::Null;
        assert_eq!(reported, ran);
    }
    // The gc-pause scenario breaks in every seed: its counterexample is in the summary.
    let examples = summary["counterexamples"].as_array().unwrap();
    assert!(examples.iter().any(|e| e["scenario"] == "single-node-gc-pause"
        && e["replay"] == "locksim replay scenarios/single-node-gc-pause.json --seed 0"));
    assert!(summary["what_to_do"].is_array());
    assert_eq!(summary["provenance"]["locksim"], env!("CARGO_PKG_VERSION"));
}

/// Each pairwise comparison in `summary.json` changes one setting area, quotes the
/// numbers of the matrix's cells it compares, covers every fault class that applies to
/// both setups, calls two cells different exactly where Fisher's exact test (or the loss
/// of the lock) says so, and has its row on the page between "What to do" and the matrix.
fn comparisons_agree_with_the_cells(summary: &Value, dom: &str) {
    let matrix = &summary["matrix"];
    let cells = matrix["cells"].as_array().unwrap();
    let cell = |setup: &Value, fault: &Value| {
        cells
            .iter()
            .find(|c| &c["setup"] == setup && &c["fault"] == fault)
            .unwrap_or_else(|| panic!("no cell {setup} x {fault}"))
    };
    let comparisons = matrix["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 7, "the shipped grid's seven pairs");
    let compared_at = dom.find("id=\"compared\"").unwrap();
    assert!(
        dom.find("id=\"what-to-do\"").unwrap() < compared_at,
        "what to do comes first"
    );
    assert!(
        compared_at < dom.find("id=\"matrix\"").unwrap(),
        "then the comparisons, then the matrix"
    );
    for (index, comparison) in comparisons.iter().enumerate() {
        let change = comparison["changes"].as_str().unwrap();
        let areas: std::collections::BTreeSet<&str> = change
            .split(", ")
            .map(|part| part.split('.').next().unwrap())
            .collect();
        assert_eq!(areas.len(), 1, "one thing changes: {change}");
        let row = &dom[dom.find(&format!("<tr id=\"compare-{}\"", index + 1)).unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(
            row.contains(&change.replace('&', "&amp;")),
            "the row says what changes: {row}"
        );
        let both: Vec<&Value> = cells
            .iter()
            .filter(|c| c["setup"] == comparison["setup"] && c["applies"] == true)
            .filter(|c| cell(&comparison["against"], &c["fault"])["applies"] == true)
            .collect();
        let faults = comparison["faults"].as_array().unwrap();
        assert_eq!(
            faults.len(),
            both.len(),
            "every fault class both ran: {comparison}"
        );
        for entry in faults {
            for side in ["setup", "against"] {
                let ran = cell(&comparison[side], &entry["fault"]);
                let checker = |name: &str| &ran["checkers"][name]["violating"];
                assert_eq!(&entry[side]["overlap"]["violating"], checker("mutual_exclusion"));
                assert_eq!(
                    &entry[side]["overlap"]["seeds"],
                    &ran["checkers"]["mutual_exclusion"]["seeds"]
                );
                let damage = entry[side]["damage"]["violating"].as_u64().unwrap();
                let lost = checker("resource_safety").as_u64().unwrap();
                let stale = checker("stale_write").as_u64().unwrap();
                assert!(lost.max(stale) <= damage && damage <= lost + stale, "{entry}");
                assert_eq!(entry[side]["safety"], ran["safety"]);
            }
            let significant =
                entry["p_overlap"].as_f64().unwrap() < 0.05 || entry["p_damage"].as_f64().unwrap() < 0.05;
            let lost = (entry["setup"]["safety"] == "not exercised")
                != (entry["against"]["safety"] == "not exercised");
            assert_eq!(
                entry["differs"] == true,
                significant || lost,
                "the significance rule: {entry}"
            );
        }
    }
}

/// The table of contents comes first and lists every section of the page, in the page's
/// order, each link landing on its section.
fn contents_lead_to_every_section(dom: &str) {
    let nav_at = dom.find("<nav id=\"contents\"").expect("a table of contents");
    let nav = &dom[nav_at..nav_at + dom[nav_at..].find("</nav>").unwrap()];
    assert!(
        !dom[..nav_at].contains("<section"),
        "the contents come before every section"
    );
    let links: Vec<&str> = nav
        .split("href=\"#")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    let sections: Vec<&str> = dom
        .split("<section id=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert!(sections.len() >= 7, "the page's sections: {sections:?}");
    assert_eq!(links, sections, "one entry a section, in order");
}

/// Under the matrix, each fault class with the grid's description and what it found,
/// computed from its cells: how many setups broke mutual exclusion, each setup that broke
/// in only some seeds with its count, and the same words on the page as in summary.json.
fn fault_classes_say_what_they_found(summary: &Value, dom: &str) {
    let matrix = &summary["matrix"];
    let cells = matrix["cells"].as_array().unwrap();
    let label_of = |setup: &Value| {
        matrix["setups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| &s["name"] == setup)
            .unwrap()["label"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let list = dom
        .find("id=\"fault-classes\"")
        .expect("the fault classes under the matrix");
    for fault in matrix["faults"].as_array().unwrap() {
        let found = fault["found"].as_str().unwrap();
        let description = fault["description"].as_str().unwrap();
        assert!(!description.is_empty(), "{fault}");
        assert!(
            dom[list..].contains(&found.replace('&', "&amp;")),
            "the page says what {} found: {found}",
            fault["name"]
        );
        let ran: Vec<&Value> = cells
            .iter()
            .filter(|c| c["fault"] == fault["name"] && c["applies"] == true)
            .collect();
        let mutex = |c: &Value| {
            (
                c["checkers"]["mutual_exclusion"]["violating"].as_u64().unwrap(),
                c["checkers"]["mutual_exclusion"]["seeds"].as_u64().unwrap(),
            )
        };
        let broke = ran.iter().filter(|c| mutex(c).0 > 0).count();
        match broke {
            0 => assert!(found.starts_with("No setup broke mutual exclusion ("), "{found}"),
            _ => assert!(
                found.starts_with(&format!(
                    "Mutual exclusion broke for {broke} of {} setups",
                    ran.len()
                )),
                "{found}"
            ),
        }
        for c in &ran {
            let (violating, seeds) = mutex(c);
            if violating > 0 && violating < seeds {
                let quoted = format!("{} {violating}/{seeds}", label_of(&c["setup"]));
                assert!(found.contains(&quoted), "{quoted} in: {found}");
            }
        }
    }
}

/// One shrunk counterexample per fault class that broke something, and none for a class
/// that broke nothing; each after the matrix, folded, with a short story, its timeline,
/// and a scenario file beside the page that replays it by a relative path.
fn minimal_counterexamples_come_first(summary: &Value, dom: &str) {
    let cells = summary["matrix"]["cells"].as_array().unwrap();
    let setups = summary["matrix"]["setups"].as_array().unwrap();
    let topology_of = |setup: &Value| &setups.iter().find(|s| s["name"] == *setup).unwrap()["kind"];
    let minimal = summary["minimal_counterexamples"].as_array().unwrap();
    let mut broken_pairs = 0;
    for fault in summary["matrix"]["faults"].as_array().unwrap() {
        for topology in ["single", "replicated", "redlock"] {
            let broke = cells
                .iter()
                .filter(|c| c["fault"] == fault["name"] && c["applies"] == true)
                .filter(|c| topology_of(&c["setup"]) == topology)
                .any(|c| c["violating_seeds"].as_u64().unwrap() > 0);
            let shown = minimal
                .iter()
                .filter(|m| m["fault"] == fault["name"] && m["topology"] == topology)
                .count();
            assert_eq!(
                shown,
                usize::from(broke),
                "{} on {topology}: one if it broke something",
                fault["name"]
            );
            broken_pairs += usize::from(broke);
        }
    }
    assert!(broken_pairs > 0, "the shipped grid breaks something");
    // A broken lock first: every class told by a safety checker before any told by
    // validity or liveness.
    let safety = ["mutual_exclusion", "resource_safety", "stale_write"];
    let told_by_safety: Vec<bool> = minimal
        .iter()
        .map(|m| safety.contains(&m["checker"].as_str().unwrap()))
        .collect();
    assert!(
        told_by_safety[0],
        "the first minimal counterexample shows a broken lock: {}",
        minimal[0]
    );
    assert!(
        told_by_safety.windows(2).all(|pair| pair[0] || !pair[1]),
        "safety before liveness: {told_by_safety:?}"
    );
    let first = dom
        .find("id=\"minimal\"")
        .expect("the minimal counterexamples are on the page");
    assert!(
        dom.find("id=\"matrix\"").unwrap() < first,
        "the evidence, folded, after the matrix"
    );
    for entry in minimal {
        let example = &entry["counterexample"];
        let checker = entry["checker"].as_str().unwrap();
        assert!(
            example["violations"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["checker"] == checker),
            "the shrunk run still breaks {checker}: {entry}"
        );
        let story = example["story"].as_array().unwrap();
        assert!(
            (2..=20).contains(&story.len()),
            "a short story: {} lines in {entry}",
            story.len()
        );
        let id = example["id"].as_str().unwrap();
        assert!(dom[first..].contains(&format!("id=\"{id}\"")), "{id} is shown");
        let file = example["file"].as_str().unwrap();
        assert!(
            Path::new(file).is_relative()
                && Path::new(file).exists()
                && example["replay"].as_str().unwrap().contains(file),
            "a relative path that replays from where the report ran: {file}"
        );
        let seed = example["seed"].to_string();
        let replay = locksim(&["replay", file, "--seed", &seed]);
        let digest = example["digest"].as_str().unwrap();
        assert!(
            String::from_utf8_lossy(&replay.stdout).contains(digest),
            "the shrunk file replays to the same run ({digest})"
        );
    }
}

/// "Clients compared": the grid's clients, each column from the shared workload; each
/// longest wait is one a seed really had (that seed run alone waits exactly as long) and
/// the page says which seed, and under which fault; its table and the matrix's within a
/// 1400 px window.
fn clients_compared_fit(dir: &Path, summary: &Value, dom: &str) {
    let matrix = &summary["matrix"];
    let clients = matrix["clients_compared"].as_array().unwrap();
    assert!(
        clients.iter().any(|c| c == "lua-release"),
        "the plain tier-5 client has a column"
    );
    assert!(clients.len() >= 4, "{clients:?}");
    let mut longest: Option<(u64, &Value)> = None;
    for cell in matrix["cells"].as_array().unwrap() {
        if cell["applies"] == true && clients.contains(&cell["setup"]) {
            let wait = cell["activity"]["longest_wait_ms"].as_u64().unwrap();
            if longest.is_none_or(|(kept, _)| wait > kept) {
                longest = Some((wait, cell));
            }
        }
    }
    let (wait, cell) = longest.expect("the clients' cells ran");
    let seed = cell["activity"]["longest_wait_seed"]
        .as_u64()
        .expect("a wait names its seed");
    let file = dir
        .join("matrix")
        .join(format!("{}.json", cell["name"].as_str().unwrap()));
    let log = dir.join("longest-wait.jsonl");
    let alone = locksim(&[
        "run",
        file.to_str().unwrap(),
        "--seeds",
        "1",
        "--seed-start",
        &seed.to_string(),
        "--seed-log",
        log.to_str().unwrap(),
    ]);
    assert!(alone.status.code().is_some_and(|c| c <= 1), "{alone:?}");
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(
        line["evidence"]["longest_wait_us"].as_u64().unwrap() / 1000,
        wait,
        "{} seed {seed} alone waits as long as the report says",
        cell["name"]
    );
    let clients_section = &dom[dom.find("id=\"clients\"").unwrap()..];
    let any_fault = &clients_section[clients_section
        .find("longest wait until granted (any fault)")
        .unwrap()..];
    let any_fault = &any_fault[..any_fault.find("</tr>").unwrap()];
    assert_eq!(
        any_fault.matches(", seed ").count(),
        clients.len(),
        "every client's longest wait under a fault names its fault class and seed: {any_fault}"
    );
    for table in ["#clients table", "#matrix table"] {
        let overflow = measure(
            dir,
            &format!(
                "(() => {{ const t = page.querySelector('{table}'); \
                 return t.getBoundingClientRect().right + ' ' + page.documentElement.clientWidth; }})()"
            ),
        );
        let (right, window) = overflow.split_once(' ').unwrap();
        let (right, window): (f64, f64) = (right.parse().unwrap(), window.parse().unwrap());
        assert!(right <= window, "{table} fits the window: {right} > {window}");
    }
}

/// A viewport meta; every inline figure an image with a text alternative that says what it
/// shows; every table captioned, with each header cell's scope.
fn accessible_structure(dom: &str) {
    assert!(
        dom.contains("<meta name=\"viewport\" content=\"width=device-width"),
        "a viewport meta"
    );
    let figures: Vec<&str> = dom.split("<figure").skip(1).collect();
    assert!(figures.len() >= 4, "the figures: {}", figures.len());
    for figure in figures {
        let inner = &figure[figure.find('>').unwrap() + 1..];
        let open = &inner[..inner.find('>').unwrap()];
        assert!(open.contains("role=\"img\""), "a figure is an image: {open}");
        assert!(figure.contains("<figcaption>"), "a visible caption");
        let label = open
            .split_once("aria-label=\"")
            .map(|(_, rest)| &rest[..rest.find('"').unwrap()])
            .unwrap_or_else(|| panic!("a figure has a text alternative: {open}"));
        assert!(
            label.len() > 80 && (label.starts_with("Lease timeline of") || label.starts_with("Heatmap:")),
            "the text alternative says what the figure shows: {label}"
        );
    }
    let tables: Vec<&str> = dom.split("<table").skip(1).collect();
    assert!(
        tables.len() >= 4,
        "the matrix, clients, envelopes, catalogue: {}",
        tables.len()
    );
    for table in tables {
        let table = &table[..table.find("</table>").unwrap()];
        assert!(
            table.trim_start_matches(|c| c != '<').starts_with("<caption>"),
            "a caption first: {}",
            &table[..200.min(table.len())]
        );
        let headers = table.matches("<th").count();
        let scoped = table.matches("<th scope=\"col\"").count()
            + table.matches("<th scope=\"row\"").count()
            + table.matches("<th scope=\"colgroup\"").count();
        assert_eq!(
            headers,
            scoped,
            "every header cell has a scope: {}",
            &table[..300.min(table.len())]
        );
    }
}

/// Nothing is said only in a `title` (a touch screen never shows it), and no file the page
/// or summary.json names is absolute: replay commands run from where the report was made,
/// on any machine (the command line that made it is quoted as typed).
fn nothing_only_on_hover_and_no_absolute_path(dir: &Path, html: &str) {
    assert!(!html.contains(" title=\""), "hover-only text");
    let json = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    for text in [html, json.as_str()] {
        assert!(
            !text.contains("locksim replay /"),
            "a replay command with an absolute path"
        );
    }
    assert!(
        !json.contains("\"file\": \"/"),
        "a file named by an absolute path"
    );
}

/// What `expression` (JavaScript over `page`, the report's document laid out at 1400 px
/// in a frame) gives, as text: the report itself runs no script, so a page beside it
/// frames it and measures.
fn measure(dir: &Path, expression: &str) -> String {
    let measure = dir.join("measure.html");
    std::fs::write(
        &measure,
        format!(
            "<!DOCTYPE html><html><body><iframe id=\"f\" src=\"index.html\" style=\"width:1400px;height:1000px\"></iframe>
<script>
const measure = () => {{
  const page = document.getElementById('f').contentDocument;
  if (!page || page.readyState !== 'complete' || !page.getElementById('catalogue')) {{
    return setTimeout(measure, 50);
  }}
  const out = document.createElement('pre');
  out.textContent = 'MEASURED ' + ({expression});
  document.body.appendChild(out);
}};
measure();
</script></body></html>"
        ),
    )
    .unwrap();
    let url = format!("file://{}", measure.display());
    let dom = chromium(
        dir,
        &[
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
            "--dump-dom",
            &url,
        ],
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    dom.split_once("<pre>MEASURED ")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .unwrap_or_else(|| panic!("the measuring page reports: {dom}"))
        .0
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

/// The rendered width and height of every inline SVG and image of `dir/index.html`.
fn figure_sizes(dir: &Path) -> Vec<(u32, u32)> {
    let measured = measure(
        dir,
        "[...page.querySelectorAll('svg, img')].map(e => { const r = e.getBoundingClientRect(); \
         return Math.round(r.width) + 'x' + Math.round(r.height); }).join(' ')",
    );
    measured
        .split_whitespace()
        .filter_map(|size| {
            let (w, h) = size.split_once('x')?;
            Some((w.parse().ok()?, h.parse().ok()?))
        })
        .collect()
}

/// Every piece of text on the page outside the figures, with its colour and the colour
/// behind it as the browser computes them: `text|r,g,b|r,g,b` per line. Behind a text is
/// the first ancestor's background colour that is not transparent; a hatched background
/// (a gradient) counts as its darker stripe, #eee.
fn text_colours(dir: &Path) -> Vec<(String, [f64; 3], [f64; 3])> {
    let measured = measure(
        dir,
        "(() => {
  const rgb = c => (c.match(/[0-9.]+/g) || []).map(Number);
  const lines = [];
  const walker = page.createTreeWalker(page.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode;
    const element = text.parentElement;
    if (!text.textContent.trim() || element.closest('svg, head, style')) continue;
    if (!element.getClientRects().length) continue;
    const colour = rgb(getComputedStyle(element).color);
    let behind = [255, 255, 255];
    for (let e = element; e; e = e.parentElement) {
      const style = getComputedStyle(e);
      if (style.backgroundImage.includes('gradient')) { behind = [238, 238, 238]; break; }
      const bg = rgb(style.backgroundColor);
      if (bg.length === 3 || (bg.length === 4 && bg[3] > 0)) { behind = bg.slice(0, 3); break; }
    }
    lines.push(text.textContent.trim().slice(0, 40).replace(/[|\\n]/g, ' ') + '|' + colour.slice(0, 3) + '|' + behind);
  }
  return lines.join('\\n');
})()",
    );
    measured
        .lines()
        .filter_map(|line| {
            let mut parts = line.split('|');
            let text = parts.next()?.to_string();
            let mut colour = || -> Option<[f64; 3]> {
                let values: Vec<f64> = parts.next()?.split(',').filter_map(|v| v.parse().ok()).collect();
                Some([*values.first()?, *values.get(1)?, *values.get(2)?])
            };
            Some((text, colour()?, colour()?))
        })
        .collect()
}

/// WCAG 2's contrast ratio of two sRGB colours (0-255 a channel): 1 to 21.
fn contrast([a, b]: [[f64; 3]; 2]) -> f64 {
    let luminance = |rgb: [f64; 3]| {
        let channel = |v: f64| {
            let v = v / 255.0;
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2])
    };
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

#[test]
fn contrast_is_computed_as_wcag_does() {
    assert!((contrast([[0.0; 3], [255.0; 3]]) - 21.0).abs() < 1e-9);
    assert!(
        (contrast([[119.0; 3], [255.0; 3]]) - 4.48).abs() < 0.01,
        "#777 on white just fails"
    );
    assert_eq!(contrast([[34.0; 3], [34.0; 3]]), 1.0);
}

/// Every figure the report wrote: no text leaves its canvas, no two texts overlap.
fn figure_text_reads(dir: &Path) {
    let mut checked = 0;
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(dir.join("figures")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "svg") {
            let svg = std::fs::read_to_string(&path).unwrap();
            assert!(text_boxes(&svg).len() > 5, "{} has text", path.display());
            problems.extend(
                text_problems(&svg)
                    .into_iter()
                    .map(|p| format!("{}: {p}", path.display())),
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "the timelines, the matrix and the envelopes: {checked}"
    );
    assert!(
        problems.is_empty(),
        "figure text that does not read: {problems:#?}"
    );
}

/// Every figure the report wrote: each text against what is drawn behind it reads at
/// 4.5:1 or better (white on the dark heatmap steps, black on the light ones, the fault
/// labels on their lane).
fn figure_text_contrast(dir: &Path) {
    let mut measured = 0;
    let mut poor = Vec::new();
    for entry in std::fs::read_dir(dir.join("figures")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "svg") {
            let svg = std::fs::read_to_string(&path).unwrap();
            for (text, colour, behind) in svg_text_colours(&svg) {
                measured += 1;
                let ratio = contrast([colour, behind]);
                if ratio < 4.5 {
                    poor.push(format!(
                        "{}: {text:?} {colour:?} on {behind:?}: {ratio:.2}",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(measured > 100, "the figures' texts are measured: {measured}");
    assert!(poor.is_empty(), "figure text below 4.5:1: {poor:#?}");
}

#[test]
fn the_text_check_sees_text_off_the_canvas_and_text_over_text() {
    let svg =
        |texts: &str| format!("<svg width=\"200\" height=\"100\" viewBox=\"0 0 200 100\">{texts}</svg>");
    let text = |x: u32, y: u32, anchor: &str, words: &str| {
        format!(
            "<text x=\"{x}\" y=\"{y}\" dy=\"0.76em\" text-anchor=\"{anchor}\" font-family=\"sans-serif\" \
             font-size=\"12\" opacity=\"1\" fill=\"#000000\">\n{words}\n</text>"
        )
    };
    let apart = svg(&(text(10, 10, "start", "left") + &text(190, 60, "end", "right")));
    assert_eq!(text_problems(&apart), Vec::<String>::new());
    let boxes = text_boxes(&apart);
    assert!(
        boxes[0].right > 25.0 && boxes[0].right < 45.0,
        "\"left\" is about 4 letters wide: {boxes:?}"
    );
    assert!((boxes[1].right - 190.0).abs() < 1e-9, "an end anchor ends at x");
    let over = svg(&(text(10, 10, "start", "overlap") + &text(30, 14, "start", "here")));
    assert_eq!(text_problems(&over).len(), 1, "{:?}", text_problems(&over));
    let cut = svg(&text(
        100,
        40,
        "middle",
        "a label far too long for this small canvas",
    ));
    assert_eq!(text_problems(&cut).len(), 1, "{:?}", text_problems(&cut));
    let low = svg(&text(10, 95, "start", "low"));
    assert_eq!(text_problems(&low).len(), 1, "below the canvas");
}

#[test]
fn the_figure_contrast_check_sees_what_is_behind_each_text() {
    let text = |x: u32, fill: &str, words: &str| {
        format!(
            "<text x=\"{x}\" y=\"20\" dy=\"0.76em\" text-anchor=\"start\" font-family=\"sans-serif\" \
             font-size=\"12\" opacity=\"1\" fill=\"{fill}\">\n{words}\n</text>"
        )
    };
    let svg = format!(
        "<svg width=\"300\" height=\"100\" viewBox=\"0 0 300 100\">\
         <rect x=\"0\" y=\"0\" width=\"300\" height=\"100\" opacity=\"1\" fill=\"#FFFFFF\" stroke=\"none\"/>\
         <rect x=\"0\" y=\"0\" width=\"100\" height=\"100\" opacity=\"1\" fill=\"#2C115F\" stroke=\"none\"/>\
         <rect x=\"100\" y=\"0\" width=\"100\" height=\"100\" opacity=\"0.5\" fill=\"#000000\" stroke=\"none\"/>\
         <rect x=\"0\" y=\"0\" width=\"300\" height=\"100\" fill=\"none\" stroke=\"#000000\"/>{}{}{}</svg>",
        text(10, "#FFFFFF", "dark"),
        text(110, "#7F7F7F", "half"),
        text(210, "#000000", "white")
    );
    let colours = svg_text_colours(&svg);
    let behind: Vec<(&str, [f64; 3])> = colours.iter().map(|(t, _, b)| (t.as_str(), *b)).collect();
    assert_eq!(
        behind,
        [
            ("dark", [44.0, 17.0, 95.0]),
            ("half", [127.5; 3]),
            ("white", [255.0; 3])
        ],
        "an outline is no fill; a half-opaque fill mixes with white"
    );
    assert!(contrast([colours[0].1, colours[0].2]) > 4.5);
    assert!(contrast([colours[1].1, colours[1].2]) < 4.5, "grey on grey");
}

#[test]
fn the_page_opens_in_chromium_with_every_section() {
    let dir = scratch("browser");
    assert!(write_report(&dir, "1").status.success());
    let page = dir.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // (An SVG's `xmlns="http://www.w3.org/2000/svg"` names a namespace; nothing is fetched.)
    for external in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "<script",
        "<link",
    ] {
        assert!(
            !html.contains(external),
            "the page must be self-contained, found {external}"
        );
    }
    let url = format!("file://{}", page.display());
    let dom = chromium(&dir, &["--dump-dom", &url]);
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8_lossy(&dom.stdout);
    for section in [
        "id=\"what-to-do\"",
        "id=\"provenance\"",
        "id=\"matrix\"",
        "id=\"timelines\"",
        "id=\"envelopes\"",
        "id=\"catalogue\"",
    ] {
        assert!(dom.contains(section), "the rendered page lacks {section}");
    }
    assert!(
        dom.contains("single-node-gc-pause-seed-0"),
        "the counterexample is linked"
    );
    assert!(dom.contains("<svg"), "its timeline is inlined");
    for section in [
        "id=\"clients\"",
        "id=\"matrix-counterexamples\"",
        "id=\"compared\"",
    ] {
        assert!(dom.contains(section), "the rendered page lacks {section}");
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    contents_lead_to_every_section(&dom);
    nothing_only_on_hover_and_no_absolute_path(&dir, &html);
    comparisons_agree_with_the_cells(&summary, &dom);
    fault_classes_say_what_they_found(&summary, &dom);
    minimal_counterexamples_come_first(&summary, &dom);
    figure_text_reads(&dir);
    figure_text_contrast(&dir);
    clients_compared_fit(&dir, &summary, &dom);
    // A reader deciding sees the matrix within two screens (900 px each) at 1400 px wide,
    // after what to do and the setups compared.
    let matrix_top: f64 = measure(
        &dir,
        "Math.round(page.querySelector('table.matrix').getBoundingClientRect().top + page.defaultView.scrollY)",
    )
    .parse()
    .unwrap();
    assert!(
        matrix_top < 1800.0,
        "the matrix starts {matrix_top} px down, below the second screen"
    );
    assert!(
        html.len() < 3_000_000,
        "the page stays under 3 MB: {} bytes",
        html.len()
    );
    for figure in [
        "single-node-gc-pause-seed-0",
        "matrix",
        "envelope-pause-delay",
        "envelope-drift-factor",
        "envelope-lag-failover",
    ] {
        for ext in ["svg", "png"] {
            let file = dir.join("figures").join(format!("{figure}.{ext}"));
            let size = std::fs::metadata(&file).map_or(0, |m| m.len());
            assert!(
                size > 1000,
                "figures/{figure}.{ext} is written and not empty ({size} bytes)"
            );
        }
    }
    // Every inline figure is laid out with a non-zero size (measured by the browser, from
    // a page beside the report that frames it; the report itself runs no script).
    let sizes = figure_sizes(&dir);
    assert!(
        sizes.len() >= 4,
        "the timeline and three envelopes are inlined: {sizes:?}"
    );
    assert!(
        sizes.iter().all(|(w, h)| *w > 100 && *h > 100),
        "every inline figure has a size: {sizes:?}"
    );
    // Text on every coloured cell (and everywhere else) reads at 4.5:1 or better.
    let texts = text_colours(&dir);
    assert!(
        texts.len() > 100,
        "the page's texts are measured: {}",
        texts.len()
    );
    let coloured = texts
        .iter()
        .filter(|(_, _, behind)| *behind != [255.0; 3])
        .count();
    assert!(
        coloured > 50,
        "texts on coloured cells are among them: {coloured}"
    );
    let poor: Vec<String> = texts
        .iter()
        .filter(|(_, colour, behind)| contrast([*colour, *behind]) < 4.5)
        .map(|(text, colour, behind)| {
            format!(
                "{text:?} {colour:?} on {behind:?}: {:.2}",
                contrast([*colour, *behind])
            )
        })
        .collect();
    assert!(poor.is_empty(), "text below 4.5:1 contrast: {poor:#?}");
    accessible_structure(&dom);
    let shot = dir.join("shot.png");
    let screenshot = chromium(
        &dir,
        &[
            "--window-size=1200,1600",
            &format!("--screenshot={}", shot.display()),
            &url,
        ],
    );
    assert!(screenshot.status.success());
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    assert!(
        png.len() > 10_000,
        "the screenshot shows something ({} bytes)",
        png.len()
    );
}
