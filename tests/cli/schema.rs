//! The JSON Schema of scenario files (`locksim schema`): the shipped copies are what the
//! command writes, every shipped scenario and template meets its schema as a real
//! validator reads it, the schema refuses what the loader refuses for its form (a
//! misspelled field, a wrong type), and docs/scenarios.md names exactly its fields.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use locksim::scenario::{SchemaKind, field_paths, json_schema, json_schema_text};
use serde_json::{Value, json};
use support::cli::locksim;

/// Where the project ships each schema, and the command that writes it there.
fn shipped(kind: SchemaKind) -> (PathBuf, &'static str) {
    let file = Path::new("scenarios").join(kind.file_name());
    let command = match kind {
        SchemaKind::Scenario => "locksim schema --out scenarios/scenario.schema.json",
        SchemaKind::Template => "locksim schema --template --out scenarios/template.schema.json",
    };
    (file, command)
}

#[test]
fn the_shipped_schemas_are_what_locksim_schema_writes() {
    for (kind, flags) in [
        (SchemaKind::Scenario, &[][..]),
        (SchemaKind::Template, &["--template"][..]),
    ] {
        let (file, command) = shipped(kind);
        let on_disk = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            on_disk == json_schema_text(kind),
            "{} is out of date with the scenario types: refresh it with `{command}` \
             (`cargo run --release -- schema …` in a checkout)",
            file.display()
        );
        let out = locksim(&[&["schema"], flags].concat());
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            on_disk,
            "`locksim schema` prints it"
        );
    }
}

#[test]
fn the_schemas_are_valid_draft_2020_12() {
    for kind in [SchemaKind::Scenario, SchemaKind::Template] {
        let schema = json_schema(kind);
        assert_eq!(
            schema["$schema"],
            json!("https://json-schema.org/draft/2020-12/schema")
        );
        if let Err(e) = jsonschema::meta::validate(&schema) {
            panic!("{kind:?}: {e}");
        }
    }
}

/// Every JSON file under `dir`, at any depth.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(json_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "json") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The schema violations of `instance`, one line each.
fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn every_shipped_scenario_and_template_meets_its_schema() {
    let scenario = jsonschema::validator_for(&json_schema(SchemaKind::Scenario)).unwrap();
    let template = jsonschema::validator_for(&json_schema(SchemaKind::Template)).unwrap();
    let mut checked = 0;
    for file in json_files(Path::new("scenarios")) {
        let name = file.file_name().unwrap().to_string_lossy();
        // The schemas themselves; and the matrix's grid, a list of setups and fault
        // classes that `locksim report` expands into scenarios (its own format, checked
        // by its own loader: scenario/grid).
        if name.ends_with(".schema.json") || file.ends_with("matrix/grid.json") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        let (validator, kind) = match file.starts_with("scenarios/templates") {
            true => (&template, "template"),
            false => (&scenario, "scenario"),
        };
        let found = violations(validator, &value);
        assert!(
            found.is_empty(),
            "{} is not a valid {kind}: {found:#?}",
            file.display()
        );
        if kind == "scenario" {
            locksim::scenario::load(&file).expect("and the loader takes it");
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} files checked");
}

/// The gc-pause scenario with one substitution applied, as JSON.
fn gc_pause_with(from: &str, to: &str) -> Value {
    let text = std::fs::read_to_string("scenarios/single-node-gc-pause.json").unwrap();
    assert!(text.contains(from), "fixture lacks {from}");
    serde_json::from_str(&text.replacen(from, to, 1)).unwrap()
}

#[test]
fn the_schema_refuses_a_misspelled_field_and_a_wrong_type() {
    let validator = jsonschema::validator_for(&json_schema(SchemaKind::Scenario)).unwrap();
    let good = gc_pause_with("", "");
    assert!(violations(&validator, &good).is_empty());
    let durations = gc_pause_with(r#""ttl_ms": 2000"#, r#""ttl_ms": "1.5s""#);
    assert!(
        violations(&validator, &durations).is_empty(),
        "a duration with a unit is a duration"
    );
    let with_schema = gc_pause_with(r#""name""#, r#""$schema": "scenario.schema.json", "name""#);
    assert!(
        violations(&validator, &with_schema).is_empty(),
        "`$schema` is allowed"
    );
    for (from, to, at) in [
        (r#""ttl_ms": 2000"#, r#""tll_ms": 2000"#, "/lock"),
        (
            r#""duration_ms": 4000"#,
            r#""duration_ms": 4000, "colour": 1"#,
            "/faults/0",
        ),
        (r#""ttl_ms": 2000"#, r#""ttl_ms": true"#, "/lock/ttl_ms"),
        (r#""ttl_ms": 2000"#, r#""ttl_ms": "2 sec""#, "/lock/ttl_ms"),
        (r#""count": 3"#, r#""count": "3""#, "/clients/count"),
        (r#""kind": "pause""#, r#""kind": "pasue""#, "/faults/0/kind"),
    ] {
        let found = violations(&validator, &gc_pause_with(from, to));
        assert!(
            found.iter().any(|line| line.starts_with(&format!("{at}:"))),
            "{to}: expected a violation at {at}, got {found:#?}"
        );
    }
}

/// docs/scenarios.md's field tables (those headed `| field |`): each field path the first
/// column names (`faults[].by_ms`; `expect.<checker>` as `expect`), with every word in
/// backticks anywhere in its rows; the *Faults* section's words count as `faults`' row.
fn documented_fields() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string("docs/scenarios.md").unwrap();
    let words = |text: &str| -> BTreeSet<String> {
        let spans = text.split('`').skip(1).step_by(2);
        spans
            .flat_map(|span| span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')))
            .filter(|word| !word.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut fields: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut in_field_table = false;
    for line in doc.lines() {
        if !line.starts_with('|') {
            in_field_table = false;
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("").trim();
        if first == "field" {
            in_field_table = true;
            continue;
        }
        if !in_field_table || first.starts_with("---") {
            continue;
        }
        for path in first.split('`').skip(1).step_by(2) {
            let path = path.replace(".<checker>", "").replace("faults[]", "faults");
            let path = if path == "faults" {
                path
            } else {
                path.replace("faults.", "faults[].")
            };
            fields.entry(path).or_default().extend(words(line));
        }
    }
    let faults_section = doc
        .split("#### Faults")
        .nth(1)
        .and_then(|rest| rest.split("#### Checkers").next())
        .expect("docs/scenarios.md has a Faults section");
    fields
        .entry("faults".into())
        .or_default()
        .extend(words(faults_section));
    fields
}

/// `path` without its last part (`lock.retry` of `lock.retry.count`, `faults` of
/// `faults[].kind`), and that last part.
fn split_last(path: &str) -> Option<(String, String)> {
    let at = path.rfind('.')?;
    let parent = path[..at].trim_end_matches("[]").trim_end_matches(".*");
    Some((parent.to_string(), path[at + 1..].to_string()))
}

#[test]
fn docs_scenarios_md_names_every_field_of_the_schema_and_no_other() {
    let documented = documented_fields();
    let schema_fields = field_paths(&json_schema(SchemaKind::Scenario));
    // A field is documented by a row of its own, by rows of its fields (`lock` by
    // `lock.ttl_ms` …), or named in the rows of the nearest documented field that holds
    // it (`count` in `lock.retry`'s row).
    let is_documented = |path: &str| {
        let inner = format!("{path}.");
        if documented.contains_key(path) || documented.keys().any(|field| field.starts_with(&inner)) {
            return true;
        }
        let mut at = path.to_string();
        let leaf = split_last(path).map(|(_, leaf)| leaf);
        while let Some((parent, _)) = split_last(&at) {
            if let Some(words) = documented.get(&parent) {
                return leaf.as_ref().is_some_and(|leaf| words.contains(leaf));
            }
            at = parent;
        }
        false
    };
    let undocumented: Vec<&String> = schema_fields.iter().filter(|path| !is_documented(path)).collect();
    assert!(
        undocumented.is_empty(),
        "fields of the schema docs/scenarios.md does not describe: {undocumented:?}"
    );
    let known: BTreeSet<&str> = schema_fields.iter().map(String::as_str).collect();
    let unknown: Vec<&String> = documented
        .keys()
        .filter(|path| !known.contains(path.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "fields docs/scenarios.md describes that the schema (the scenario types) has not: {unknown:?}"
    );
}
