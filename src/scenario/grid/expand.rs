//! The grid's shorthands expanded in a cell's JSON: TTL-relative values (`"2*ttl"`) and
//! node lists (`"@masters"`), and the JSON merge of defaults, fault class and setup.

use serde_json::{Map, Value};

/// Merges `over` into `base`: objects field by field, anything else replaced.
pub(super) fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

/// The node names a cell's `@` shorthands stand for.
#[derive(Debug, Default)]
pub(super) struct Nodes {
    pub(super) redis: Vec<String>,
    pub(super) masters: Vec<String>,
}

impl Nodes {
    /// The names a list element stands for, if it is a shorthand.
    fn shorthand(&self, element: &Value) -> Option<&[String]> {
        match element.as_str()? {
            "@redis" => Some(&self.redis),
            "@masters" => Some(&self.masters),
            "@one-master" => self.masters.get(..1),
            _ => None,
        }
    }
}

/// Expands the shorthands of a cell: TTL-relative values and node lists. The error names
/// the field (a dotted path) and why.
pub(super) fn expand(value: Value, ttl_ms: u64, nodes: &Nodes) -> Result<Value, (String, String)> {
    fn walk(value: Value, path: &str, ttl_ms: u64, nodes: &Nodes) -> Result<Value, (String, String)> {
        let child = |name: &str| match path {
            "" => name.to_string(),
            _ => format!("{path}.{name}"),
        };
        match value {
            Value::Object(fields) => fields
                .into_iter()
                .map(|(key, value)| match key.as_str() {
                    // Free text is never a value.
                    "name" | "description" => Ok((key, value)),
                    _ => Ok((key.clone(), walk(value, &child(&key), ttl_ms, nodes)?)),
                })
                .collect::<Result<Map<String, Value>, _>>()
                .map(Value::Object),
            Value::Array(elements) => {
                let mut expanded = Vec::with_capacity(elements.len());
                for (i, element) in elements.into_iter().enumerate() {
                    match nodes.shorthand(&element) {
                        Some(names) if !names.is_empty() => {
                            expanded.extend(names.iter().cloned().map(Value::String));
                        }
                        _ => expanded.push(walk(element, &format!("{path}[{i}]"), ttl_ms, nodes)?),
                    }
                }
                Ok(Value::Array(expanded))
            }
            // A shorthand where one value goes (a fault's `target`): one name, or the list.
            Value::String(_) if nodes.shorthand(&value).is_some_and(|names| !names.is_empty()) => {
                match nodes.shorthand(&value).unwrap_or_default() {
                    [one] => Ok(Value::String(one.clone())),
                    names => Ok(Value::from(names.to_vec())),
                }
            }
            Value::String(text) if text.contains("ttl") => {
                ttl_multiple(&text, ttl_ms).map(Value::from).ok_or_else(|| {
                    (
                        path.to_string(),
                        format!(
                            "`{text}` is not a TTL-relative duration: write \"ttl\" or \"K*ttl\" (\"2*ttl\")"
                        ),
                    )
                })
            }
            other => Ok(other),
        }
    }
    walk(value, "", ttl_ms, nodes)
}

/// `"ttl"` or `"K*ttl"` (K a decimal, possibly negative) as whole ms; `None` for anything
/// else.
pub(super) fn ttl_multiple(text: &str, ttl_ms: u64) -> Option<i64> {
    let factor = match text.trim() {
        "ttl" => 1.0,
        other => {
            let (factor, unit) = other.split_once('*')?;
            if unit.trim() != "ttl" {
                return None;
            }
            factor.trim().parse::<f64>().ok().filter(|f| f.is_finite())?
        }
    };
    Some((factor * ttl_ms as f64).round() as i64)
}
