//! docs/ci.md's jobs, run (issue 32, point 5): every `locksim` command in the page's code
//! blocks runs here, in the page's order, in a scratch checkout whose `locksim/` holds two
//! shipped scenarios (their seeds cut to 30) and whose `locksim/live/` holds a 3 s live
//! baseline, standing in for a team's. Each must exit 0, and what the jobs upload must be
//! there: JUnit that parses, the report's page, the merged JSON.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::cli::scratch;

/// The `locksim` command lines of the page's code blocks (a YAML `run:` or list item, or a
/// shell line), with the CI services' shard variables expanded for shards 1 and 2, each
/// once, in the page's order. Sweeps of 2000 seeds run 40 here (the commands are the
/// same; a debug build is not a CI runner).
fn commands_of(page: &str) -> Vec<String> {
    let mut commands: Vec<String> = Vec::new();
    let mut in_code = false;
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let command = line
            .trim_start()
            .trim_start_matches("- ")
            .trim_start_matches("run: ");
        if !in_code || !command.starts_with("locksim ") {
            continue;
        }
        let shards: Vec<String> = match command.contains("matrix.shard") || command.contains("$CI_NODE_INDEX")
        {
            true => (1..=2)
                .map(|shard| {
                    command
                        .replace("${{ matrix.shard }}", &shard.to_string())
                        .replace("$CI_NODE_INDEX", &shard.to_string())
                        .replace("$CI_NODE_TOTAL", "2")
                })
                .collect(),
            false => vec![command.to_string()],
        };
        for command in shards {
            let command = command.replace("--seeds 2000", "--seeds 40");
            if !commands.contains(&command) {
                commands.push(command);
            }
        }
    }
    commands
}

/// A team's checkout: two scenarios of the catalogue and a short live baseline.
fn checkout(dir: &Path) {
    let ours = dir.join("locksim");
    std::fs::create_dir_all(ours.join("live")).unwrap();
    for name in ["single-node-gc-pause", "single-node-baseline"] {
        let text = std::fs::read_to_string(format!("scenarios/{name}.json")).unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        value["seeds"] = 30.into();
        std::fs::write(ours.join(format!("{name}.json")), value.to_string()).unwrap();
    }
    let live = serde_json::json!({
        "name": "live-baseline",
        "description": "Two clients, no faults, 3 s: the lock must hold.",
        "duration_ms": 3000,
        "seeds": 2,
        "topology": { "kind": "single" },
        "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
        "clients": { "count": 2, "work_ms": [50, 100] },
        "expect": { "mutual_exclusion": "holds" }
    });
    std::fs::write(ours.join("live").join("baseline.json"), live.to_string()).unwrap();
}

#[test]
fn every_command_of_the_ci_page_runs_and_leaves_what_the_jobs_upload() {
    let page = std::fs::read_to_string("docs/ci.md").unwrap();
    let commands = commands_of(&page);
    for expected in [
        "locksim run locksim/ --junit",
        "locksim report locksim/",
        "--live --redis-server",
        "--shard 2/2",
        "locksim merge",
    ] {
        assert!(
            commands.iter().any(|command| command.contains(expected)),
            "docs/ci.md has no `{expected}` command: {commands:#?}"
        );
    }
    let dir = scratch("ci-docs");
    checkout(&dir);
    for command in &commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        let output = Command::new(env!("CARGO_BIN_EXE_locksim"))
            .args(&words[1..])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "`{command}`:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    for junit in ["locksim-junit.xml", "locksim-live-junit.xml"] {
        let xml = std::fs::read_to_string(dir.join(junit)).unwrap();
        let document = roxmltree::Document::parse(&xml).unwrap();
        assert_eq!(document.root_element().attribute("failures"), Some("0"), "{xml}");
    }
    assert!(dir.join("locksim-report/index.html").exists());
    let merged = std::fs::read_to_string(dir.join("merged.jsonl")).unwrap();
    assert_eq!(merged.lines().count(), 2, "one line per scenario: {merged}");
    std::fs::remove_dir_all(&dir).unwrap();
}
