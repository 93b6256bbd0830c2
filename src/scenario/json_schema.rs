//! The JSON Schema of scenario files, generated from the serde types that read them, so
//! the two cannot drift apart: `locksim schema` writes it, editors validate and complete a
//! file that names it in `"$schema"`, and the field docs become the hover text.
//!
//! Two schemas: one for scenario files, and one for the templates of `locksim check`, in
//! which any value may also be `{"any": [low, high]}` or `{"one_of": [a, b, …]}`
//! (search/template.rs). The template schema is the scenario schema with every value's
//! place widened to those two forms, so it says nothing a scenario would not.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::schema::Scenario;

/// Which schema to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    /// A scenario file (`locksim run`).
    Scenario,
    /// A scenario template (`locksim check`).
    Template,
}

impl SchemaKind {
    /// The file name the project ships the schema under, in scenarios/ (`locksim init`
    /// writes the scenario schema under the same name beside the files it makes). Files
    /// ending in `.schema.json` are skipped where a directory of scenarios is read.
    pub fn file_name(self) -> &'static str {
        match self {
            SchemaKind::Scenario => "scenario.schema.json",
            SchemaKind::Template => "template.schema.json",
        }
    }
}

/// The schema of `kind`, as JSON (draft 2020-12).
pub fn json_schema(kind: SchemaKind) -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Scenario>()
        .to_value();
    let title = match kind {
        SchemaKind::Scenario => "locksim scenario",
        SchemaKind::Template => "locksim scenario template",
    };
    schema["title"] = json!(title);
    if kind == SchemaKind::Template {
        widen_to_ranges(&mut schema);
        schema["description"] = json!(
            "A template for `locksim check`: a scenario file in which any value may be {\"any\": [low, high]} (a number drawn uniformly) or {\"one_of\": [a, b, ...]} (one of the values)."
        );
    }
    schema
}

/// The schema of `kind` as the file the project ships: pretty JSON and a final newline.
pub fn json_schema_text(kind: SchemaKind) -> String {
    let mut text = serde_json::to_string_pretty(&json_schema(kind)).expect("a schema is JSON");
    text.push('\n');
    text
}

/// The name under which the template schema keeps `{"any": [low, high]}`.
const ANY_RANGE: &str = "AnyRange";

/// Lets every value of the schema (each property, array item and map value, in the root
/// and in every definition) also be a template range.
fn widen_to_ranges(schema: &mut Value) {
    widen_places(schema);
    if let Some(Value::Object(definitions)) = schema.get_mut("$defs") {
        definitions.values_mut().for_each(widen_places);
        definitions.insert(
            ANY_RANGE.into(),
            json!({
                "description": "A number drawn uniformly from [low, high] for each case (an integer when both bounds are).",
                "type": "object",
                "properties": {
                    "any": { "type": "array", "prefixItems": [{ "type": "number" }, { "type": "number" }], "minItems": 2, "maxItems": 2 }
                },
                "required": ["any"],
                "additionalProperties": false
            }),
        );
    }
}

/// Widens the places for values inside `schema` (not `schema` itself: its own place is
/// widened by whoever holds it).
fn widen_places(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(widen);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(place @ Value::Object(_)) = object.get_mut(key) {
            widen(place);
        }
    }
    for key in ["prefixItems", "anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(alternatives)) = object.get_mut(key) {
            let whole_places = key == "prefixItems";
            for alternative in alternatives {
                if whole_places {
                    widen(alternative);
                } else {
                    widen_places(alternative);
                }
            }
        }
    }
}

/// The place `schema` describes may hold what it did, `{"any": …}` or `{"one_of": […]}`
/// of what it did.
fn widen(schema: &mut Value) {
    widen_places(schema);
    let value = schema.take();
    let mut description = Map::new();
    if let Some(text) = value.get("description") {
        description.insert("description".into(), text.clone());
    }
    let one_of = json!({
        "type": "object",
        "properties": { "one_of": { "type": "array", "minItems": 1, "items": value } },
        "required": ["one_of"],
        "additionalProperties": false
    });
    let mut widened = description;
    widened.insert(
        "anyOf".into(),
        json!([value, { "$ref": format!("#/$defs/{ANY_RANGE}") }, one_of]),
    );
    *schema = Value::Object(widened);
}

/// Every field path the schema describes, as docs/scenarios.md writes them: `lock.ttl_ms`,
/// `faults[].by_ms` for the fields of a list's objects, `topology.nodes.*.persistence` for
/// those of a map's values.
pub fn field_paths(schema: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    collect_paths(schema, schema, "", &mut paths);
    paths.sort();
    paths.dedup();
    paths
}

fn collect_paths(root: &Value, schema: &Value, path: &str, paths: &mut Vec<String>) {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.trim_start_matches("#/$defs/");
            &root["$defs"][name]
        }
        None => schema,
    };
    let join = |name: &str| match path {
        "" => name.to_string(),
        _ => format!("{path}.{name}"),
    };
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, field) in properties {
            let field_path = join(name);
            paths.push(field_path.clone());
            collect_paths(root, field, &field_path, paths);
        }
    }
    if let Some(items @ Value::Object(_)) = schema.get("items") {
        collect_paths(root, items, &format!("{path}[]"), paths);
    }
    if let Some(values @ Value::Object(_)) = schema.get("additionalProperties") {
        collect_paths(root, values, &join("*"), paths);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for alternative in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            collect_paths(root, alternative, path, paths);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_in_the_schema_with_its_doc_comment() {
        let schema = json_schema(SchemaKind::Scenario);
        let paths = field_paths(&schema);
        for path in [
            "$schema",
            "lock.ttl_ms",
            "clients.command",
            "faults[].by_ms",
            "topology.nodes.*.persistence",
            "clients.per_client.*.work_ms",
            "lock.watchdog.interval_ms",
        ] {
            assert!(paths.contains(&path.to_string()), "{path} missing from {paths:?}");
        }
        let ttl = &schema["$defs"]["LockSpec"]["properties"]["ttl_ms"];
        assert!(
            ttl["description"].as_str().unwrap().starts_with("Time to live"),
            "{ttl}"
        );
    }

    #[test]
    fn the_template_schema_widens_every_value_and_only_values() {
        let template = json_schema(SchemaKind::Template);
        let ttl = &template["$defs"]["LockSpec"]["properties"]["ttl_ms"];
        let forms = ttl["anyOf"].as_array().unwrap();
        assert_eq!(forms.len(), 3, "{ttl}");
        assert_eq!(forms[1]["$ref"], json!("#/$defs/AnyRange"));
        assert!(ttl["description"].is_string(), "the hover text stays: {ttl}");
        let scenario_fields = |paths: Vec<String>| -> Vec<String> {
            let range_form = |path: &String| path.contains("one_of") || path.ends_with(".any");
            paths.into_iter().filter(|path| !range_form(path)).collect()
        };
        assert_eq!(
            scenario_fields(field_paths(&template)),
            field_paths(&json_schema(SchemaKind::Scenario)),
            "the same fields, each only widened"
        );
    }
}
