//! What the loader's unit tests share: a good scenario, and the error a changed copy of it
//! gets.

pub(super) use super::load::parse;
pub(super) use super::validate::validate;

/// The scenario of the first issue: a holder paused longer than the TTL.
pub(super) const GOOD: &str = r#"{
      "name": "single-node-gc-pause",
      "description": "The holder pauses longer than the TTL.",
      "duration_ms": 30000,
      "seeds": 100,
      "topology": { "kind": "single" },
      "lock": { "algorithm": "lua-release", "ttl_ms": 2000 },
      "clients": { "count": 3, "work_ms": [100, 500] },
      "network": { "latency_ms": [1, 5] },
      "faults": [ { "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": 4000 } ],
      "expect": { "mutual_exclusion": "violated" }
    }"#;

/// The field and reason `text` is refused with (by the parser or the checks).
pub(super) fn error_of(text: &str) -> (String, String) {
    match parse(text) {
        Err(e) => e,
        Ok(s) => validate(&s).expect_err("scenario should be rejected"),
    }
}

/// [`GOOD`] with `from` replaced by `to` (which must be in it).
pub(super) fn replace(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "test fixture lacks {from}");
    GOOD.replace(from, to)
}
