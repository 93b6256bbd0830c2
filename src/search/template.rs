//! Scenario templates: a scenario file in which a value may stand for "any value here", so
//! `locksim check` can search it as a property test does, without Rust.
//!
//! Anywhere in the file, an object with the single key
//! - `any`: `[low, high]` is a number drawn uniformly from that inclusive range (an integer
//!   when both bounds are integers);
//! - `one_of`: `[a, b, …]` is one of those values, each of which may hold ranges itself.
//!
//! Everything else is taken as written. A case is the template with every range drawn
//! from the case's seeded generator: the same template and case seed give the same
//! scenario, always.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

/// Where a template's range is malformed, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct TemplateError {
    /// The field, as a JSON path (`faults[0].duration_ms`).
    pub path: String,
    pub reason: String,
}

/// Whether `template` holds any range: a file without one is a plain scenario.
pub fn has_ranges(template: &Value) -> bool {
    match template {
        Value::Object(map) if range_of(map).is_some() => true,
        Value::Object(map) => map.values().any(has_ranges),
        Value::Array(items) => items.iter().any(has_ranges),
        _ => false,
    }
}

/// Checks every range in `template` without drawing: the errors a user should see before
/// any case runs.
pub fn validate(template: &Value) -> Result<(), TemplateError> {
    let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
    // Drawing visits every range on the path it takes; `one_of` alternatives not taken are
    // checked by visiting all of them.
    visit_all(template, "", &mut rng)
}

fn visit_all(value: &Value, path: &str, rng: &mut ChaCha8Rng) -> Result<(), TemplateError> {
    match value {
        Value::Object(map) => match range_of(map) {
            Some(("one_of", Value::Array(options))) if !options.is_empty() => options
                .iter()
                .enumerate()
                .try_for_each(|(i, option)| visit_all(option, &format!("{path}.one_of[{i}]"), rng)),
            Some(_) => draw_range(map, path, rng).map(|_| ()),
            None => map
                .iter()
                .try_for_each(|(key, v)| visit_all(v, &join(path, key), rng)),
        },
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| visit_all(v, &format!("{path}[{i}]"), rng)),
        _ => Ok(()),
    }
}

/// The template with every range drawn from `rng`.
pub fn instantiate(template: &Value, rng: &mut ChaCha8Rng) -> Result<Value, TemplateError> {
    instantiate_at(template, "", rng)
}

fn instantiate_at(value: &Value, path: &str, rng: &mut ChaCha8Rng) -> Result<Value, TemplateError> {
    match value {
        Value::Object(map) if range_of(map).is_some() => draw_range(map, path, rng),
        Value::Object(map) => {
            let mut drawn = Map::new();
            for (key, v) in map {
                drawn.insert(key.clone(), instantiate_at(v, &join(path, key), rng)?);
            }
            Ok(Value::Object(drawn))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| instantiate_at(v, &format!("{path}[{i}]"), rng))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// The range an object stands for: its only key, when that is `any` or `one_of`.
fn range_of(map: &Map<String, Value>) -> Option<(&str, &Value)> {
    let (key, value) = map.iter().next()?;
    (map.len() == 1 && (key == "any" || key == "one_of")).then_some((key.as_str(), value))
}

fn draw_range(map: &Map<String, Value>, path: &str, rng: &mut ChaCha8Rng) -> Result<Value, TemplateError> {
    let error = |reason: &str| TemplateError {
        path: path.trim_start_matches('.').to_string(),
        reason: reason.to_string(),
    };
    match range_of(map) {
        Some(("one_of", Value::Array(options))) if !options.is_empty() => {
            let pick = rng.random_range(0..options.len());
            instantiate_at(&options[pick], &format!("{path}.one_of[{pick}]"), rng)
        }
        Some(("one_of", _)) => Err(error("`one_of` needs a non-empty list of values")),
        Some(("any", Value::Array(bounds))) if bounds.len() == 2 => {
            match (bounds[0].as_i64(), bounds[1].as_i64()) {
                (Some(low), Some(high)) if low <= high => Ok(json!(rng.random_range(low..=high))),
                (Some(_), Some(_)) => Err(error("`any` needs [low, high] with low <= high")),
                _ => match (bounds[0].as_f64(), bounds[1].as_f64()) {
                    (Some(low), Some(high)) if low <= high => Ok(json!(rng.random_range(low..=high))),
                    _ => Err(error("`any` needs two numbers [low, high] with low <= high")),
                },
            }
        }
        _ => Err(error("`any` needs two numbers [low, high] with low <= high")),
    }
}

fn join(path: &str, key: &str) -> String {
    format!("{path}.{key}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    #[test]
    fn ranges_are_drawn_within_their_bounds_and_the_rest_is_kept() {
        let template = json!({
            "name": "t",
            "lock": {"ttl_ms": {"any": [1000, 3000]}, "algorithm": {"one_of": ["lua-release", "redlock"]}},
            "faults": [{"kind": "pause", "duration_ms": {"any": [0.5, 1.5]}}]
        });
        assert!(has_ranges(&template));
        for seed in 0..50 {
            let case = instantiate(&template, &mut rng(seed)).unwrap();
            let ttl = case["lock"]["ttl_ms"].as_i64().unwrap();
            assert!((1000..=3000).contains(&ttl), "{ttl}");
            assert!(["lua-release", "redlock"].contains(&case["lock"]["algorithm"].as_str().unwrap()));
            let duration = case["faults"][0]["duration_ms"].as_f64().unwrap();
            assert!((0.5..=1.5).contains(&duration));
            assert_eq!(case["name"], "t");
            assert!(!has_ranges(&case));
        }
    }

    #[test]
    fn the_same_case_seed_draws_the_same_scenario() {
        let template = json!({"a": {"any": [0, 1_000_000]}, "b": [{"one_of": [1, 2, 3]}]});
        assert_eq!(
            instantiate(&template, &mut rng(7)).unwrap(),
            instantiate(&template, &mut rng(7)).unwrap()
        );
        let draws: std::collections::BTreeSet<String> = (0..20)
            .map(|seed| instantiate(&template, &mut rng(seed)).unwrap().to_string())
            .collect();
        assert!(draws.len() > 1, "different case seeds should draw differently");
    }

    #[test]
    fn a_malformed_range_names_its_field() {
        let template = json!({"lock": {"ttl_ms": {"any": [3000, 1000]}}});
        let error = validate(&template).unwrap_err();
        assert_eq!(error.path, "lock.ttl_ms");
        assert!(error.reason.contains("low <= high"));
        let template = json!({"faults": [{"kind": {"one_of": []}}]});
        assert_eq!(validate(&template).unwrap_err().path, "faults[0].kind");
        let template = json!({"x": {"one_of": [1, {"any": ["a", 2]}]}});
        assert_eq!(validate(&template).unwrap_err().path, "x.one_of[1]");
        assert!(!has_ranges(
            &json!({"any_other": [1, 2], "nemesis": {"any": 1, "other": 2}})
        ));
    }
}
