//! `locksim report`: the numbers it writes are the numbers `locksim run` gives, and the page
//! it writes opens in a real headless Chromium with every section there and nothing
//! fetched from the network. `make test` installs Chromium (Debian's package) when missing.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use support::cli::{locksim, scratch};

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
    assert!(!summary["verdict"].as_array().unwrap().is_empty());
}

/// Each pairwise comparison in `summary.json` quotes the numbers of the matrix's cells it
/// compares, covers every fault class that applies to both setups, and its sentence is on
/// the rendered page, in the answer section above the verdict.
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
    assert_eq!(comparisons.len(), 6, "the shipped grid's six pairs");
    let answer = summary["answer"].as_array().unwrap();
    let answer_at = dom.find("id=\"answer\"").unwrap();
    assert!(
        answer_at < dom.find("id=\"verdict\"").unwrap(),
        "the answer comes first"
    );
    for (comparison, sentence) in comparisons.iter().zip(answer) {
        assert_eq!(&comparison["sentence"], sentence);
        let text = sentence.as_str().unwrap().replace('&', "&amp;");
        assert!(dom[answer_at..].contains(&text), "the page says: {text}");
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
            // The sentence names the class among the differences, or among the ties.
            let label = matrix["faults"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == entry["fault"])
                .unwrap()["label"]
                .as_str()
                .unwrap();
            let sentence = sentence.as_str().unwrap();
            let (differences, ties) =
                sentence
                    .split_once(" They tie in ")
                    .unwrap_or(match entry["differs"] == true {
                        true => (sentence, ""),
                        false => ("", sentence),
                    });
            let part = if entry["differs"] == true {
                differences
            } else {
                ties
            };
            assert!(part.contains(label), "{label} in the right part of: {sentence}");
        }
    }
}

/// One shrunk counterexample per fault class that broke something, and none for a class
/// that broke nothing; each up front (after the contents, before the matrix), with a short
/// story, its timeline inline, and a scenario file beside the page that replays it.
fn minimal_counterexamples_come_first(dir: &Path, summary: &Value, dom: &str) {
    let cells = summary["matrix"]["cells"].as_array().unwrap();
    let minimal = summary["minimal_counterexamples"].as_array().unwrap();
    let mut broken_classes = 0;
    for fault in summary["matrix"]["faults"].as_array().unwrap() {
        let broke = cells
            .iter()
            .filter(|c| c["fault"] == fault["name"] && c["applies"] == true)
            .any(|c| c["violating_seeds"].as_u64().unwrap() > 0);
        let shown = minimal.iter().filter(|m| m["fault"] == fault["name"]).count();
        assert_eq!(
            shown,
            usize::from(broke),
            "{}: one if it broke something",
            fault["name"]
        );
        broken_classes += usize::from(broke);
    }
    assert!(broken_classes > 0, "the shipped grid breaks something");
    let contents = dom.find("id=\"contents\"").unwrap();
    let first = dom
        .find("id=\"minimal\"")
        .expect("the minimal counterexamples are on the page");
    assert!(contents < first && first < dom.find("id=\"matrix\"").unwrap());
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
            file.starts_with(dir.to_str().unwrap()) && Path::new(file).exists(),
            "{file}"
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

/// Headless Chromium as the environment notes start it: no sandbox as root, no
/// background networking (this machine's network is closed), a fresh profile.
fn chromium(dir: &Path, args: &[&str]) -> Output {
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

/// The rendered width and height of every inline SVG and image of `dir/index.html`.
fn figure_sizes(dir: &Path) -> Vec<(u32, u32)> {
    let measure = dir.join("measure.html");
    std::fs::write(
        &measure,
        "<!DOCTYPE html><html><body><iframe id=\"f\" src=\"index.html\" style=\"width:1400px;height:1000px\"></iframe>
<script>
const measure = () => {
  const page = document.getElementById('f').contentDocument;
  if (!page || page.readyState !== 'complete' || !page.getElementById('catalogue')) {
    return setTimeout(measure, 50);
  }
  const sizes = [...page.querySelectorAll('svg, img')].map(e => {
    const r = e.getBoundingClientRect();
    return Math.round(r.width) + 'x' + Math.round(r.height);
  });
  const out = document.createElement('pre');
  out.textContent = 'MEASURED ' + sizes.join(' ');
  document.body.appendChild(out);
};
measure();
</script></body></html>",
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
    let measured = dom
        .split_once("<pre>MEASURED ")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .unwrap_or_else(|| panic!("the measuring page reports sizes: {dom}"))
        .0;
    measured
        .split_whitespace()
        .filter_map(|size| {
            let (w, h) = size.split_once('x')?;
            Some((w.parse().ok()?, h.parse().ok()?))
        })
        .collect()
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
        "id=\"verdict\"",
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
    for section in ["id=\"clients\"", "id=\"matrix-counterexamples\"", "id=\"answer\""] {
        assert!(dom.contains(section), "the rendered page lacks {section}");
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    comparisons_agree_with_the_cells(&summary, &dom);
    minimal_counterexamples_come_first(&dir, &summary, &dom);
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
