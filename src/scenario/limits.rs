//! What a scenario file may hold: the stated range of every number, durations written with
//! a unit (`"8s"`, `"250ms"`), and the nearest valid name for a misspelled one.
//!
//! Every number is checked at load against a range written here once, so no run can
//! overflow a clock, exhaust memory or wrap an address, and the error names the field,
//! the value and the range (docs/scenarios.md, *Ranges and units*, lists the same ranges).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

/// The longest simulated time of one run (and of anything inside it: a TTL, a pause, a
/// delay): one hour. Longer runs say nothing a shorter one does not, and cost memory.
pub const MAX_TIME_MS: u64 = 3_600_000;

/// The largest clock offset or clock jump: one day, either way. Clocks count nanoseconds
/// in an `i64`; a day leaves room for a hundred thousand jumps the same way.
pub const MAX_CLOCK_STEP_MS: i64 = 86_400_000;

/// The longest scenario name, in characters: a name heads its row of the verdict table
/// and names the scenario's files in a report; the rest belongs in `description`.
pub const MAX_NAME_CHARS: usize = 100;

/// The most clients: each is a node with its own address (the world has addresses for many
/// more, and checks at compile time that it has these), and a run of more is a benchmark
/// of the simulator rather than of a lock.
pub const MAX_CLIENTS: u32 = 1000;

/// The most Redis masters of a Redlock topology, and the most replicas per master.
pub const MAX_MASTERS: u32 = 99;

/// The most Sentinels of `topology.sentinel` (a real deployment runs 3 or 5).
pub const MAX_SENTINELS: u32 = 99;

/// The most seeds a scenario asks for by default (a sweep keeps about a bit per seed).
pub const MAX_SEEDS: u64 = 10_000_000;

/// The most faults one scenario lists.
pub const MAX_FAULTS: usize = 1_000;

/// The most retries of one acquire.
pub const MAX_RETRIES: u32 = 100_000;

/// The most faults per second the nemesis may draw, on average.
pub const MAX_NEMESIS_RATE_PER_S: f64 = 1_000.0;

/// The largest clock drift either way, in ppm: a drift of a million would stop (or
/// double) a clock, and nothing real does that.
pub const MAX_DRIFT_PPM: i64 = 999_999;

/// The most grants after each fault a seed may be asked for.
pub const MAX_MIN_GRANTS: u64 = 1_000_000;

/// The largest `budget.events_per_s`.
pub const MAX_EVENTS_PER_S: u64 = 1_000_000_000;

/// The largest `budget.wall_s`: a day.
pub const MAX_WALL_S: u64 = 86_400;

/// A field's failure: its path (relative to where it was checked) and the reason.
pub type FieldError = (String, String);

/// `value` must lie in `min..=max` (`unit` names what it counts: "ms", "clients").
pub fn in_range<T: PartialOrd + fmt::Display>(
    field: &str,
    value: T,
    min: T,
    max: T,
    unit: &str,
) -> Result<(), FieldError> {
    if value < min || value > max {
        return Err((
            field.to_string(),
            format!("{value} is out of range: must be {min}..={max} {unit}"),
        ));
    }
    Ok(())
}

/// A `[min, max]` pair: each end in range, and `min <= max`.
pub fn pair_in_range<T: PartialOrd + fmt::Display + Copy>(
    field: &str,
    [low, high]: [T; 2],
    min: T,
    max: T,
    unit: &str,
) -> Result<(), FieldError> {
    in_range(&format!("{field}[0]"), low, min, max, unit)?;
    in_range(&format!("{field}[1]"), high, min, max, unit)?;
    if low > high {
        return Err((
            field.to_string(),
            format!("[{low}, {high}]: min is greater than max"),
        ));
    }
    Ok(())
}

/// The name of `candidates` nearest to `name`, if it is near enough to be a typo.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|candidate| (strsim::jaro_winkler(name, candidate), candidate))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

/// ", did you mean `x`?" when a candidate is near `name`, else nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(name, candidates).map_or_else(String::new, |near| format!(", did you mean `{near}`?"))
}

/// A span of time in milliseconds, written as a number (`250`) or with a unit (`"250ms"`,
/// `"8s"`, `"2m"`, `"1h"`; `"-3s"` where a field may be negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Millis(pub i64);

/// What a duration field expects, for messages.
const DURATION_WORDS: &str =
    "a duration: milliseconds (250) or a number with a unit (\"250ms\", \"8s\", \"2m\", \"1h\")";

/// Reads a duration written as a number and an optional unit (`250`, `"250ms"`, `"1.5s"`,
/// `".5s"`, `"2m"`, `"1h"`, `"-3s"`), exactly: decimals are counted in whole milliseconds,
/// never through floating point. Returns the milliseconds and whether a unit was written.
/// The one duration parser of scenario files and of `locksim lock`'s options.
pub fn parse_duration(text: &str) -> Result<(i64, bool), String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.trim() {
        "ms" | "" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}`{}; expected {DURATION_WORDS}",
                did_you_mean(other, ["ms", "s", "m", "h"])
            ));
        }
    };
    let not_a_duration = || format!("`{text}` is not {DURATION_WORDS}");
    let number = number.trim();
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty()
        || !all_digits(whole)
        || !all_digits(fraction)
        || fraction.len() > 9
    {
        return Err(not_a_duration());
    }
    let too_long = || format!("`{text}` is out of range: must be at most {MAX_TIME_MS} ms");
    let value = |part: &str| match part {
        "" => Ok(0),
        _ => part.parse::<u64>().map_err(|_| too_long()),
    };
    let denominator = 10u64.pow(fraction.len() as u32);
    let fraction_ms = value(fraction)? * scale;
    if !fraction_ms.is_multiple_of(denominator) {
        return Err(format!("`{text}` is not a whole number of milliseconds"));
    }
    let ms = value(whole)?
        .checked_mul(scale)
        .and_then(|ms| ms.checked_add(fraction_ms / denominator))
        .filter(|&ms| ms <= i64::MAX as u64 / 2)
        .ok_or_else(too_long)? as i64;
    Ok((if negative { -ms } else { ms }, !unit.trim().is_empty()))
}

impl Millis {
    /// Reads `"8s"` and the like.
    fn parse(text: &str) -> Result<Millis, String> {
        parse_duration(text).map(|(ms, _)| Millis(ms))
    }

    fn from_f64(ms: f64) -> Result<Millis, String> {
        if !ms.is_finite() || ms.fract() != 0.0 {
            return Err("is not a whole number of milliseconds".into());
        }
        if ms.abs() > i64::MAX as f64 / 2.0 {
            return Err(format!("is out of range: must be at most {MAX_TIME_MS} ms"));
        }
        Ok(Millis(ms as i64))
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MillisVisitor)
    }
}

struct MillisVisitor;

impl Visitor<'_> for MillisVisitor {
    type Value = Millis;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(DURATION_WORDS)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Millis, E> {
        i64::try_from(v)
            .map(Millis)
            .map_err(|_| E::custom(format!("{v} is out of range: must be at most {MAX_TIME_MS} ms")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Millis, E> {
        Ok(Millis(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Millis, E> {
        Millis::from_f64(v).map_err(|why| E::custom(format!("{v} {why}")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Millis, E> {
        Millis::parse(v).map_err(E::custom)
    }
}

/// A duration that may not be negative.
fn unsigned<E: de::Error>(Millis(ms): Millis) -> Result<u64, E> {
    u64::try_from(ms)
        .map_err(|_| E::custom(format!("{ms} is negative: expected {DURATION_WORDS}, at least 0")))
}

/// `deserialize_with` for a `u64` of milliseconds.
pub fn ms<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    unsigned(Millis::deserialize(d)?)
}

/// `deserialize_with` for an optional `u64` of milliseconds (with `#[serde(default)]`).
pub fn opt_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<Millis>::deserialize(d)?.map(unsigned).transpose()
}

/// `deserialize_with` for a `[min, max]` pair of milliseconds.
pub fn ms_pair<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; 2], D::Error> {
    let [low, high] = <[Millis; 2]>::deserialize(d)?;
    Ok([unsigned(low)?, unsigned(high)?])
}

/// `deserialize_with` for an optional `[min, max]` pair of milliseconds.
pub fn opt_ms_pair<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[u64; 2]>, D::Error> {
    match Option::<[Millis; 2]>::deserialize(d)? {
        Some([low, high]) => Ok(Some([unsigned(low)?, unsigned(high)?])),
        None => Ok(None),
    }
}

/// `deserialize_with` for a signed `[min, max]` pair of milliseconds (clock offsets).
pub fn signed_ms_pair<'de, D: Deserializer<'de>>(d: D) -> Result<[i64; 2], D::Error> {
    let [low, high] = <[Millis; 2]>::deserialize(d)?;
    Ok([low.0, high.0])
}

/// `deserialize_with` for an optional signed duration (a clock jump).
pub fn opt_signed_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<Millis>::deserialize(d)?.map(|m| m.0))
}

/// A duration or a `[min, max]` pair of them (a fault's `duration_ms`: one number for
/// most kinds, a range for `random`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneOrRange {
    One(u64),
    Range([u64; 2]),
}

impl<'de> Deserialize<'de> for OneOrRange {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OneOrRangeVisitor;
        impl<'de> Visitor<'de> for OneOrRangeVisitor {
            type Value = OneOrRange;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{DURATION_WORDS}, or a [min, max] pair of them")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<OneOrRange, E> {
                unsigned(MillisVisitor.visit_u64(v)?).map(OneOrRange::One)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<OneOrRange, E> {
                unsigned(MillisVisitor.visit_i64(v)?).map(OneOrRange::One)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<OneOrRange, E> {
                unsigned(MillisVisitor.visit_f64(v)?).map(OneOrRange::One)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OneOrRange, E> {
                unsigned(MillisVisitor.visit_str(v)?).map(OneOrRange::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrRange, A::Error> {
                let mut next = || -> Result<u64, A::Error> {
                    let value: Millis = seq
                        .next_element()?
                        .ok_or_else(|| de::Error::invalid_length(0, &"a [min, max] pair"))?;
                    unsigned(value)
                };
                let pair = [next()?, next()?];
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &"a [min, max] pair"));
                }
                Ok(OneOrRange::Range(pair))
            }
        }
        deserializer.deserialize_any(OneOrRangeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Millis, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn durations_read_as_numbers_or_with_a_unit() {
        assert_eq!(read("250").unwrap(), Millis(250));
        assert_eq!(read(r#""250ms""#).unwrap(), Millis(250));
        assert_eq!(read(r#""8s""#).unwrap(), Millis(8_000));
        assert_eq!(read(r#""1.5s""#).unwrap(), Millis(1_500));
        assert_eq!(read(r#""2m""#).unwrap(), Millis(120_000));
        assert_eq!(read(r#""-3s""#).unwrap(), Millis(-3_000));
        assert!(read(r#""8 sec""#).unwrap_err().contains("unknown unit `sec`"));
        assert!(read(r#""8hr""#).unwrap_err().contains("did you mean `h`"));
        assert!(read(r#""0.5ms""#).unwrap_err().contains("whole number"));
        assert!(read(r#""soon""#).unwrap_err().contains("expected a duration"));
        assert!(read(r#""1.2.3s""#).unwrap_err().contains("is not a duration"));
        assert!(read("1e300").unwrap_err().contains("out of range"));
    }

    #[test]
    fn a_negative_duration_is_refused_where_only_positive_ones_make_sense() {
        let error = serde_json::from_value::<OneOrRange>(serde_json::json!(-1)).unwrap_err();
        assert!(error.to_string().contains("-1 is negative"), "{error}");
        let pair: OneOrRange = serde_json::from_str(r#"["1s", 2000]"#).unwrap();
        assert_eq!(pair, OneOrRange::Range([1000, 2000]));
    }

    #[test]
    fn ranges_name_the_field_the_value_and_the_range() {
        let (field, reason) = in_range("clients.count", 1001, 1, MAX_CLIENTS, "clients").unwrap_err();
        assert_eq!(field, "clients.count");
        assert_eq!(reason, "1001 is out of range: must be 1..=1000 clients");
        assert!(in_range("x", 1000, 1, MAX_CLIENTS, "clients").is_ok());
        let (field, _) = pair_in_range("network.latency_ms", [5, 1], 1, 10, "ms").unwrap_err();
        assert_eq!(field, "network.latency_ms");
    }

    #[test]
    fn a_near_miss_gets_the_nearest_name_and_a_far_one_none() {
        assert_eq!(nearest("tll_ms", ["ttl_ms", "profile"]), Some("ttl_ms"));
        assert_eq!(did_you_mean("zzz", ["ttl_ms", "profile"]), "");
    }
}
