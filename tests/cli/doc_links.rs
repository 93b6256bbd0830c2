//! The docs point only at what the repository has: every relative Markdown link and every
//! file path written in README.md, docs/*.md, scenarios/README.md and
//! examples/workers/README.md resolves inside the repository. A reader of an installed
//! copy or of the GitHub page has nothing else (the project's research notes live
//! elsewhere), so a path to a file that is not here is a dead end for them. And the one
//! place that documents the live worker contract, docs/live.md, names every variable live
//! mode gives a worker.

use std::path::{Path, PathBuf};

/// The endings of the paths the docs write that must name a file here; other endings
/// (`.html`, `.log`, `.jsonl`) are what locksim writes, not files it ships.
const CHECKED_ENDINGS: [&str; 12] = [
    "rs", "md", "json", "py", "js", "c", "lua", "diff", "toml", "sh", "png", "svg",
];

/// Paths the docs write that name a file in another project's repository, not this one:
/// (doc, path, whose).
const OTHER_PROJECTS_PATHS: [(&str, &str, &str); 4] = [
    (
        "README.md",
        "my-lock/pause-holder.json",
        "the user's, written by `locksim init my-lock`",
    ),
    (
        "README.md",
        "my-lock/timeline.svg",
        "the user's, drawn by `locksim replay --plot`",
    ),
    ("scenarios/README.md", "redis/lock.py", "redis-py's Lock"),
    (
        "docs/ci.md",
        "locksim/gc-pause.json",
        "a team's own scenario, in its repository",
    ),
];

/// The docs whose links and paths are checked.
fn docs() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["README.md", "scenarios/README.md", "examples/workers/README.md"]
        .into_iter()
        .map(PathBuf::from)
        .collect();
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir("docs")
        .expect("docs/ is there")
        .map(|entry| entry.expect("docs/ is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    docs
}

/// The targets of the Markdown links `[text](target)` in `text` that point into the
/// repository: no scheme (`https:`, `mailto:`) and not an anchor of the same page; the
/// `#section` part dropped.
fn link_targets(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find([')', ' '])?];
            let file = target.split('#').next().unwrap_or("");
            let has_scheme = file
                .split_once(':')
                .is_some_and(|(scheme, _)| scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'));
            (!file.is_empty() && !has_scheme).then(|| file.to_string())
        })
        .collect()
}

/// The file paths written in `text`: words (split at spaces, quotes, brackets and
/// punctuation) with a checked ending that contain a `/`, and bare `NAME.md` (a doc named
/// as a source). Not paths here: URLs, absolute paths, paths with a placeholder
/// (`$TMPDIR/…`, `<scenario>.json`, `DIR/summary.json`).
fn written_paths(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || "`'\"(),;:[]|*".contains(c))
        .map(|word| {
            word.split('#')
                .next()
                .unwrap_or("")
                .trim_end_matches(['.', '!', '?'])
        })
        .filter(|word| !word.is_empty() && !word.starts_with(['/', '~']))
        .filter(|word| !word.contains("://") && !word.contains(['$', '<', '>', '{', '}', '=']))
        .filter(|word| {
            let (dirs, name) = word.rsplit_once('/').unwrap_or(("", word));
            let Some((stem, ending)) = name.rsplit_once('.') else {
                return false;
            };
            let placeholder = dirs
                .split('/')
                .any(|dir| !dir.is_empty() && dir.chars().all(|c| c.is_ascii_uppercase()));
            CHECKED_ENDINGS.contains(&ending)
                && !stem.is_empty()
                && !placeholder
                && (!dirs.is_empty() || ending == "md")
        })
        .map(str::to_string)
        .collect()
}

/// Whether `path`, written in `doc`, names something in the repository: from the doc's
/// own directory, from the repository's root, or (for a module as the code names it,
/// `world/clock.rs`) from src/.
fn resolves(doc: &Path, path: &str) -> bool {
    let from_doc = doc.parent().unwrap_or(Path::new("")).join(path);
    [from_doc, PathBuf::from(path), Path::new("src").join(path)]
        .iter()
        .any(|candidate| candidate.exists())
}

#[test]
fn every_relative_link_and_path_in_the_docs_resolves_inside_the_repository() {
    let mut dead = Vec::new();
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        for target in link_targets(&text) {
            let from_doc = doc.parent().unwrap_or(Path::new("")).join(&target);
            if !from_doc.exists() {
                dead.push(format!("{}: link ({target})", doc.display()));
            }
        }
        for path in written_paths(&text) {
            let elsewhere = OTHER_PROJECTS_PATHS
                .iter()
                .any(|(listed_doc, listed, _)| doc == Path::new(listed_doc) && path == *listed);
            if !elsewhere && !resolves(&doc, &path) {
                dead.push(format!("{}: {path}", doc.display()));
            }
        }
    }
    dead.sort();
    dead.dedup();
    assert!(
        dead.is_empty(),
        "paths that name no file in the repository:\n{}",
        dead.join("\n")
    );
}

#[test]
fn links_and_paths_are_found_where_the_docs_write_them() {
    let text = "See [the CLI](docs/cli.md#run), [GitHub](https://github.com), [up](#top), \
                `src/real/lock.rs`, scenarios/live/ (README there), lock-algorithms.md, \
                `$TMPDIR/x/a.json`, `DIR/summary.json`, `scenarios/bench/<name>.json`, \
                /etc/redis.conf and tests/real/real_lock_cli.rs.";
    assert_eq!(link_targets(text), ["docs/cli.md"]);
    assert_eq!(
        written_paths(text),
        [
            "docs/cli.md",
            "src/real/lock.rs",
            "lock-algorithms.md",
            "tests/real/real_lock_cli.rs"
        ]
    );
    assert!(resolves(Path::new("docs/cli.md"), "world/clock.rs"));
    assert!(resolves(Path::new("docs/cli.md"), "lock.md"));
    assert!(!resolves(Path::new("docs/cli.md"), "lock-algorithms.md"));
}

#[test]
fn the_paths_of_other_projects_are_still_written_where_listed() {
    for (doc, path, whose) in OTHER_PROJECTS_PATHS {
        let text = std::fs::read_to_string(doc).unwrap();
        assert!(
            written_paths(&text).iter().any(|written| written == path),
            "{doc} no longer names {path} ({whose}): drop it from OTHER_PROJECTS_PATHS"
        );
    }
}

#[test]
fn the_worker_contract_documents_every_variable_live_mode_sets() {
    let contract = std::fs::read_to_string("docs/live.md").unwrap();
    let set = locksim::live::worker::ENV_NAMES
        .into_iter()
        .chain([locksim::live::worker::FENCE_COUNTER_VAR, "LOCKSIM_SCENARIO"]);
    for name in set {
        assert!(
            contract.contains(&format!("| `{name}` |")),
            "docs/live.md has no row for {name}"
        );
    }
}
