//! Reading scenario files, with errors that name the file, the field and the reason.

use std::fmt;
use std::path::{Path, PathBuf};

use super::limits::nearest;
use super::schema::Scenario;
use super::validate::validate;

/// Why a scenario file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// Dotted path of the offending field (`faults[0].duration_ms`); empty when the file
    /// itself could not be read.
    pub field: String,
    pub reason: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field.as_str() {
            "" => write!(f, "{}: {}", self.file.display(), self.reason),
            field => write!(f, "{}: field `{field}`: {}", self.file.display(), self.reason),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Reads and validates one scenario file.
pub fn load(file: &Path) -> Result<Scenario, ScenarioError> {
    let error = |field: &str, reason: String| ScenarioError {
        file: file.to_path_buf(),
        field: field.to_string(),
        reason,
    };
    let text = std::fs::read_to_string(file).map_err(|e| error("", format!("cannot read: {e}")))?;
    load_str(file, &text)
}

/// Parses and validates scenario text; `file` names it in errors.
pub fn load_str(file: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let error = |(field, reason): (String, String)| ScenarioError {
        file: file.to_path_buf(),
        field,
        reason,
    };
    let scenario = parse(text).map_err(error)?;
    validate(&scenario).map_err(error)?;
    Ok(scenario)
}

/// Expands files and directories (their `*.json`, sorted) into scenario files and loads
/// them all; the first file refused is the error.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, ScenarioError> {
    load_each(paths)?
        .into_iter()
        .map(|(file, loaded)| loaded.map(|scenario| (file, scenario)))
        .collect()
}

/// One scenario file and what reading it gave.
pub type Loaded = (PathBuf, Result<Scenario, ScenarioError>);

/// Expands files and directories (their `*.json` but `*.schema.json`, sorted) into
/// scenario files and loads each, so that a caller can run the good ones and report every bad one. The error is a
/// path that names no file at all (a directory that cannot be listed or holds no
/// scenario).
pub fn load_each(paths: &[PathBuf]) -> Result<Vec<Loaded>, ScenarioError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let listing = std::fs::read_dir(path).map_err(|e| ScenarioError {
                file: path.clone(),
                field: String::new(),
                reason: format!("cannot list the directory: {e}"),
            })?;
            let mut found: Vec<PathBuf> = listing
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|ext| ext == "json") && !is_json_schema(p))
                .collect();
            if found.is_empty() {
                return Err(ScenarioError {
                    file: path.clone(),
                    field: String::new(),
                    reason: "no scenario files (*.json) in this directory".into(),
                });
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files
        .into_iter()
        .map(|file| {
            let loaded = load(&file);
            (file, loaded)
        })
        .collect())
}

/// Whether `file` is a JSON Schema (`scenario.schema.json`, which `locksim schema` and
/// `locksim init` write beside scenarios for editors), not a scenario: a directory's
/// `*.schema.json` files are not run.
fn is_json_schema(file: &Path) -> bool {
    file.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.ends_with(".schema.json"))
}

/// Parses JSON into a scenario, returning the failing field's path and the reason. A
/// UTF-8 byte-order mark (which some Windows editors write) is skipped; anything but
/// whitespace after the object is refused, as a second object or a stray line would
/// otherwise be silently ignored.
pub(super) fn parse(text: &str) -> Result<Scenario, (String, String)> {
    let text = text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text);
    // serde would read a list as the fields of a struct, in order: refuse it plainly.
    match text.trim_start().chars().next() {
        Some('{') => {}
        None => return Err((String::new(), "empty: a scenario file is one JSON object".into())),
        Some(_) => {
            return Err((
                String::new(),
                "not a JSON object: a scenario file is one object, {\"name\": …}".into(),
            ));
        }
    }
    let mut json = serde_json::Deserializer::from_str(text);
    let scenario = deserialize(&mut json)?;
    json.end().map_err(|e| {
        let (line, column) = (e.line(), e.column());
        let reason = format!(
            "more after the scenario's object, at line {line} column {column}: a scenario file is one JSON object and nothing else"
        );
        (String::new(), reason)
    })?;
    Ok(scenario)
}

/// U+FEFF at the start of a file: a byte-order mark, not text.
const BYTE_ORDER_MARK: char = '\u{feff}';

/// Reads the scenario object, naming the failing field.
fn deserialize(
    json: &mut serde_json::Deserializer<serde_json::de::StrRead<'_>>,
) -> Result<Scenario, (String, String)> {
    serde_path_to_error::deserialize(json).map_err(|e| {
        // serde_path_to_error writes the root as "." and an unparsable spot as "?".
        let path = match e.path().to_string() {
            root if root == "." || root == "?" => String::new(),
            path => path,
        };
        let reason = e.into_inner().to_string();
        let child = |name: &str| {
            if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            }
        };
        // serde reports a missing field at its parent; name the field itself.
        if let Some(rest) = reason.strip_prefix("missing field `") {
            let (name, location) = rest.split_once('`').unwrap_or((rest, ""));
            return (child(name), format!("missing{location}"));
        }
        // Checks inside a fault object (see `Fault`) say "field `name`: reason".
        if let Some((name, why)) = reason
            .strip_prefix("field `")
            .and_then(|rest| rest.split_once("`: "))
        {
            return (child(name), why.to_string());
        }
        (path, plainer(&reason))
    })
}

/// serde's wording made plainer: the nearest valid name for an unknown field or value,
/// and what an untagged field takes instead of the Rust type's name.
fn plainer(reason: &str) -> String {
    for (prefix, what) in [("unknown field `", "field"), ("unknown variant `", "value")] {
        let Some(rest) = reason.strip_prefix(prefix) else {
            continue;
        };
        let Some((name, expected)) = rest.split_once('`') else {
            continue;
        };
        // "expected one of `a`, `b`" or "expected `a` or `b`": the names between backticks.
        let valid: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        return match nearest(name, valid.iter().copied()) {
            Some(near) => format!("unknown {what} `{name}`, did you mean `{near}`?"),
            None if valid.is_empty() => format!("unknown {what} `{name}`{expected}"),
            None => format!("unknown {what} `{name}` (expected one of: {})", valid.join(", ")),
        };
    }
    for (untagged, takes) in [
        ("WaitSpec", "a number of replicas or \"connected\""),
        ("WatchdogSpec", "true, false or {\"interval_ms\": n}"),
    ] {
        if reason.starts_with(&format!(
            "data did not match any variant of untagged enum {untagged}"
        )) {
            return format!("expected {takes}");
        }
    }
    // "invalid value: integer `-1`, expected u32" and the like: say what a count is.
    let reason = reason.replace("expected u8", "expected a whole number from 0 to 255");
    let reason = reason.replace("expected u32", "expected a whole number, at least 0");
    reason.replace("expected u64", "expected a whole number, at least 0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::testing::*;

    #[test]
    fn missing_field_is_named() {
        let (field, reason) = error_of(&replace(r#""topology": { "kind": "single" },"#, ""));
        assert_eq!(field, "topology");
        assert!(reason.starts_with("missing at line"), "{reason}");
        let (field, _) = error_of(&replace(r#", "ttl_ms": 2000"#, ""));
        assert_eq!(field, "lock.ttl_ms");
    }

    #[test]
    fn unknown_field_is_named() {
        let (field, reason) = error_of(&replace(r#""seeds": 100,"#, r#""seeds": 100, "sedes": 1,"#));
        assert_eq!(field, "sedes");
        assert!(reason.contains("unknown field"), "{reason}");
        let (field, reason) = error_of(&replace(r#""at_ms": 5000"#, r#""at_ms": 5000, "foo": 1"#));
        assert!(field.starts_with("faults[0]"), "{field}");
        assert!(reason.contains("foo"), "{reason}");
    }

    #[test]
    fn wrong_type_is_named() {
        let (field, reason) = error_of(&replace(r#""ttl_ms": 2000"#, r#""ttl_ms": true"#));
        assert_eq!(field, "lock.ttl_ms");
        assert!(reason.contains("invalid type"), "{reason}");
    }

    #[test]
    fn negative_duration_is_rejected() {
        let (field, reason) = error_of(&replace(r#""duration_ms": 30000"#, r#""duration_ms": -1"#));
        assert_eq!(field, "duration_ms");
        assert!(reason.contains("-1"), "{reason}");
        let (field, _) = error_of(&replace(r#""duration_ms": 4000"#, r#""duration_ms": -4000"#));
        assert_eq!(field, "faults[0].duration_ms");
    }

    #[test]
    fn a_schema_reference_is_accepted_and_a_directory_s_schema_is_not_a_scenario() {
        let with_schema = replace(r#""name""#, r#""$schema": "scenario.schema.json", "name""#);
        let scenario = parse(&with_schema).expect("`$schema` is for editors, and accepted");
        assert_eq!(scenario.schema.as_deref(), Some("scenario.schema.json"));
        let dir = std::env::temp_dir().join(format!("locksim-load-schema-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.json"), &with_schema).unwrap();
        std::fs::write(dir.join("scenario.schema.json"), "{\"type\": \"object\"}").unwrap();
        let loaded = load_each(std::slice::from_ref(&dir)).unwrap();
        let files: Vec<_> = loaded.iter().map(|(file, _)| file.file_name().unwrap()).collect();
        assert_eq!(files, ["a.json"], "the schema beside the scenarios is not run");
        assert!(loaded[0].1.is_ok(), "{:?}", loaded[0].1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn load_names_the_file() {
        let dir = std::env::temp_dir().join(format!("locksim-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.json");
        std::fs::write(&file, r#"{"name": "x", "duration_ms": -1}"#).unwrap();
        let message = load(&file).unwrap_err().to_string();
        assert!(message.starts_with(&file.display().to_string()), "{message}");
        assert!(message.contains("duration_ms"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
