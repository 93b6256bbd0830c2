//! The JSON Schema of the values scenario files write in a form of their own: durations
//! as a number or with a unit (`"1.5s"`), `[min, max]` pairs of them, a fault's target,
//! a crash point's step. serde reads these through custom deserializers (`limits`,
//! `target`), which schemars cannot see into; the field types point here instead
//! (`#[schemars(with = "Duration")]`), so the schema allows exactly what the loader reads.
//!
//! Kept apart from `json_schema` (which generates the whole schema from [`Scenario`]) so
//! that the scenario types can name these forms without importing the generator.
//!
//! [`Scenario`]: super::Scenario

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use super::limits::OneOrRange;
use super::target::Target;
use crate::client::Step;

/// A duration that is never negative: milliseconds, or a number with a unit.
pub struct Duration;

/// A duration that may be negative (a clock offset, a clock jump).
pub struct SignedDuration;

/// What `limits::parse_duration` reads: a number, an optional fraction, an optional unit.
const DURATION_PATTERN: &str = r"^\s*(\d+\.?\d*|\.\d+)\s*(ms|s|m|min|h)?\s*$";

/// The same, with an optional minus sign.
const SIGNED_DURATION_PATTERN: &str = r"^\s*-?(\d+\.?\d*|\.\d+)\s*(ms|s|m|min|h)?\s*$";

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A duration: milliseconds (250) or a number with a unit (\"250ms\", \"8s\", \"1.5s\", \"2m\", \"1h\").",
            "anyOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "pattern": DURATION_PATTERN }
            ]
        })
    }
}

impl JsonSchema for SignedDuration {
    fn schema_name() -> Cow<'static, str> {
        "SignedDuration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A duration that may be negative: milliseconds (-3000) or a number with a unit (\"-3s\", \"250ms\").",
            "anyOf": [
                { "type": "integer" },
                { "type": "string", "pattern": SIGNED_DURATION_PATTERN }
            ]
        })
    }
}

impl JsonSchema for OneOrRange {
    fn schema_name() -> Cow<'static, str> {
        "DurationOrRange".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let one = generator.subschema_for::<Duration>();
        let range = generator.subschema_for::<[Duration; 2]>();
        json_schema!({
            "description": "A duration, or a [min, max] pair of them (`random` only).",
            "anyOf": [one, range]
        })
    }
}

impl JsonSchema for Target {
    fn schema_name() -> Cow<'static, str> {
        "Target".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let words = Target::WORDS;
        json_schema!({
            "description": "Whom the fault hits: a node's name (`redis-2`, `client-1`), a list of them, or a word resolved when the fault strikes (`holder`, `master`, `any-client`, `any-redis`, `majority`, `minority`), also among names in a list.",
            "anyOf": [
                { "type": "string", "examples": words },
                { "type": "array", "items": { "type": "string" }, "minItems": 1 }
            ]
        })
    }
}

/// The step of the lock algorithm a crash point waits for (`faults[].step`).
pub struct StepName;

impl JsonSchema for StepName {
    fn schema_name() -> Cow<'static, str> {
        "Step".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let steps: Vec<&str> = Step::ALL.iter().map(|step| step.name()).collect();
        json_schema!({
            "description": "A step of the lock algorithm (with `on: crash_point`).",
            "type": "string",
            "enum": steps
        })
    }
}
