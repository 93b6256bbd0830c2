//! The node's configuration as CONFIG GET and CONFIG SET see it: the parameters clients and
//! Sentinel ask for (redis-benchmark, redis-py, ioredis, Redisson, Sentinel), each with the
//! value this node has and the check Redis 7.0 makes on a new value.
//!
//! The node starts as a redis-server started with no config file and `--save ''
//! --appendonly no --repl-diskless-sync-delay 0` (what it models: no RDB snapshots, no
//! AOF unless the scenario gives it one, replication streamed at once). `min-replicas-*`
//! live on the node itself ([`Node::min_replicas`](super::node::Node::min_replicas)),
//! `appendonly` / `appendfsync` / `save` follow its persistence and CONFIG SET of
//! `appendfsync` and `save` changes it; `maxmemory` makes the node refuse what may grow
//! the dataset once its estimated memory is over it (`memory.rs`), under the one
//! `maxmemory-policy` it models, `noeviction`; the others are remembered as set.

use std::collections::BTreeMap;

use super::cmd::error::ReplyError;
use super::glob::glob_match;
use super::persistence::parse_save_parameter;

/// How CONFIG SET checks a parameter's new value (Redis 7.0's `standardConfig` types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// `yes` or `no`.
    YesNo,
    /// A decimal integer within the bounds.
    Integer { min: i64, max: i64 },
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// Any text.
    Text,
    /// Fixed at start: CONFIG SET refuses it.
    Immutable,
    /// `save`'s pairs of seconds and changes.
    SavePoints,
    /// A byte count, with an optional unit (`100mb`, `1gb`, `5k`), set as bytes (util.c
    /// `memtoull`).
    Memory,
    /// `maxmemory-policy`: one of Redis's policies, and only `noeviction` is modelled (the
    /// node never evicts, see `memory.rs`), so CONFIG SET refuses the others rather than
    /// act as if it evicted.
    EvictionPolicy,
}

/// Redis 7.0's `maxmemory-policy` values, in its order.
const EVICTION_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// The one eviction policy the node models.
const MODELLED_POLICY: &str = "noeviction";

/// One parameter: Redis's name and the value a node has before any CONFIG SET.
struct Parameter {
    name: &'static str,
    initial: &'static str,
    check: Check,
}

const SECONDS: Check = Check::Integer {
    min: 0,
    max: i32::MAX as i64,
};

/// The parameters a node answers for, in name order.
const PARAMETERS: &[Parameter] = &[
    Parameter {
        name: "appendfsync",
        initial: "everysec",
        check: Check::OneOf(&["everysec", "always", "no"]),
    },
    Parameter {
        name: "appendonly",
        initial: "no",
        check: Check::YesNo,
    },
    Parameter {
        name: "busy-reply-threshold",
        initial: "5000",
        check: Check::Integer {
            min: 0,
            max: i64::MAX,
        },
    },
    Parameter {
        name: "databases",
        initial: "16",
        check: Check::Immutable,
    },
    Parameter {
        name: "hz",
        initial: "10",
        check: Check::Integer {
            min: 0,
            max: i32::MAX as i64,
        },
    },
    Parameter {
        name: "maxclients",
        initial: "10000",
        check: Check::Integer {
            min: 1,
            max: u32::MAX as i64,
        },
    },
    Parameter {
        name: "maxmemory",
        initial: "0",
        check: Check::Memory,
    },
    Parameter {
        name: "maxmemory-policy",
        initial: MODELLED_POLICY,
        check: Check::EvictionPolicy,
    },
    Parameter {
        name: "min-replicas-max-lag",
        initial: "10",
        check: SECONDS,
    },
    Parameter {
        name: "min-replicas-to-write",
        initial: "0",
        check: SECONDS,
    },
    Parameter {
        name: "notify-keyspace-events",
        initial: "",
        check: Check::Text,
    },
    Parameter {
        name: "repl-backlog-size",
        initial: "1048576",
        check: Check::Integer {
            min: 1,
            max: i64::MAX,
        },
    },
    Parameter {
        name: "repl-diskless-sync",
        initial: "yes",
        check: Check::YesNo,
    },
    Parameter {
        name: "repl-diskless-sync-delay",
        initial: "0",
        check: SECONDS,
    },
    Parameter {
        name: "repl-ping-replica-period",
        initial: "10",
        check: Check::Integer {
            min: 1,
            max: i32::MAX as i64,
        },
    },
    Parameter {
        name: "repl-timeout",
        initial: "60",
        check: Check::Integer {
            min: 1,
            max: i32::MAX as i64,
        },
    },
    Parameter {
        name: "requirepass",
        initial: "",
        check: Check::Text,
    },
    Parameter {
        name: "save",
        initial: "",
        check: Check::SavePoints,
    },
    Parameter {
        name: "timeout",
        initial: "0",
        check: SECONDS,
    },
];

/// Other names Redis 7.0 takes for a parameter (its `ALIAS` configs): CONFIG GET lists them
/// too, CONFIG SET of either sets both.
const ALIASES: &[(&str, &str)] = &[("lua-time-limit", "busy-reply-threshold")];

/// Every name CONFIG GET matches, each with the parameter it names, in name order.
fn names() -> impl Iterator<Item = (&'static str, &'static Parameter)> {
    let mut all: Vec<_> = PARAMETERS.iter().map(|p| (p.name, p)).collect();
    all.extend(
        ALIASES
            .iter()
            .filter_map(|(alias, name)| Some((*alias, parameter(name)?))),
    );
    all.sort_by_key(|(name, _)| *name);
    all.into_iter()
}

/// The values of a node's parameters.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The values CONFIG SET gave; the others have their initial value.
    set: BTreeMap<&'static str, String>,
}

impl Config {
    /// The value of parameter `name` (one of [`PARAMETERS`]).
    pub fn value(&self, name: &str) -> &str {
        match self.set.get(name) {
            Some(value) => value,
            None => parameter(name).map_or("", |p| p.initial),
        }
    }

    /// Sets parameter `name` (one of [`PARAMETERS`]) to what the node has, unchecked.
    pub fn remember(&mut self, name: &'static str, value: String) {
        self.set.insert(name, value);
    }

    /// CONFIG GET: each parameter whose name matches one of `patterns` (ignoring case), with
    /// its value, named as asked when a pattern names it outright (Redis echoes it).
    pub fn get(&self, patterns: &[Vec<u8>]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for pattern in patterns {
            let lower = pattern.to_ascii_lowercase();
            for (listed, parameter) in names() {
                let named = lower == listed.as_bytes();
                if !named && !glob_match(&lower, listed.as_bytes()) {
                    continue;
                }
                let shown = if named {
                    pattern.clone()
                } else {
                    listed.as_bytes().to_vec()
                };
                if found
                    .iter()
                    .all(|(name, _)| !name.eq_ignore_ascii_case(listed.as_bytes()))
                {
                    found.push((shown, self.value(parameter.name).as_bytes().to_vec()));
                }
            }
        }
        found
    }

    /// CONFIG SET: checks every `(name, value)` pair as Redis does, then sets them all, or
    /// none; the names it set.
    pub fn set(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<&'static str>, ReplyError> {
        let mut checked: Vec<(&'static str, String)> = Vec::new();
        for (name, value) in pairs {
            let Some(parameter) = parameter(&String::from_utf8_lossy(name).to_ascii_lowercase()) else {
                return Err(ReplyError(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    String::from_utf8_lossy(name)
                )));
            };
            let failed = |reason: &str| {
                ReplyError(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{}') - {reason}",
                    String::from_utf8_lossy(name)
                ))
            };
            if checked.iter().any(|(seen, _)| *seen == parameter.name) {
                return Err(failed("duplicate parameter"));
            }
            let value = String::from_utf8_lossy(value).into_owned();
            match parameter.check {
                Check::Immutable => return Err(failed("can't set immutable config")),
                Check::YesNo if !["yes", "no"].contains(&value.to_ascii_lowercase().as_str()) => {
                    return Err(failed("argument must be 'yes' or 'no'"));
                }
                Check::OneOf(words) if !words.contains(&value.to_ascii_lowercase().as_str()) => {
                    return Err(failed(&format!(
                        "argument(s) must be one of the following: {}",
                        words.join(", ")
                    )));
                }
                Check::SavePoints if parse_save_parameter(&value).is_none() => {
                    return Err(failed("Invalid save parameters"));
                }
                Check::EvictionPolicy
                    if !EVICTION_POLICIES.contains(&value.to_ascii_lowercase().as_str()) =>
                {
                    return Err(failed(&format!(
                        "argument(s) must be one of the following: {}",
                        EVICTION_POLICIES.join(", ")
                    )));
                }
                Check::EvictionPolicy if !value.eq_ignore_ascii_case(MODELLED_POLICY) => {
                    return Err(failed(
                        "locksim's node models maxmemory-policy noeviction only (it never evicts keys)",
                    ));
                }
                Check::Integer { min, max } => {
                    let number: i64 = value
                        .parse()
                        .map_err(|_| failed("argument couldn't be parsed into an integer"))?;
                    if !(min..=max).contains(&number) {
                        return Err(failed(&format!(
                            "argument must be between {min} and {max} inclusive"
                        )));
                    }
                }
                _ => {}
            }
            let value = match parameter.check {
                Check::YesNo | Check::OneOf(_) | Check::EvictionPolicy => value.to_ascii_lowercase(),
                Check::Memory => memory_bytes(&value)
                    .ok_or_else(|| failed("argument must be a memory value"))?
                    .to_string(),
                _ => value,
            };
            checked.push((parameter.name, value));
        }
        let names = checked.iter().map(|(name, _)| *name).collect();
        self.set.extend(checked);
        Ok(names)
    }
}

/// A memory value as Redis's `memtoull` reads it: digits, then no unit or `b`, `k` (1000),
/// `kb` (1024), `m`, `mb`, `g`, `gb`, in any case; `None` for anything else or an overflow.
fn memory_bytes(value: &str) -> Option<u64> {
    let unit_at = value.find(|c: char| !c.is_ascii_digit()).unwrap_or(value.len());
    let (digits, unit) = value.split_at(unit_at);
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let number: u64 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    number.checked_mul(multiplier)
}

/// The parameter `name` names, itself or by an alias.
fn parameter(name: &str) -> Option<&'static Parameter> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, canonical)| canonical);
    PARAMETERS.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<u8>> {
        text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn pairs(text: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
        words(text)
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect()
    }

    // Replies read from redis-server 7.0.15 for the same requests, but for the order of
    // several matches: Redis lists them in its hash table's order, this node by name.
    #[test]
    fn get_matches_globs_and_echoes_a_name_given_outright() {
        let config = Config::default();
        assert_eq!(config.get(&words("HZ")), vec![(b"HZ".to_vec(), b"10".to_vec())]);
        assert_eq!(
            config.get(&words("min-replicas-*")),
            vec![
                (b"min-replicas-max-lag".to_vec(), b"10".to_vec()),
                (b"min-replicas-to-write".to_vec(), b"0".to_vec()),
            ]
        );
        assert!(config.get(&words("nomatch")).is_empty());
    }

    #[test]
    fn set_checks_every_value_before_it_changes_any() {
        let mut config = Config::default();
        let refused = |config: &mut Config, request: &str| config.set(&pairs(request)).unwrap_err().0;
        assert_eq!(
            refused(&mut config, "foo 1"),
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        assert_eq!(
            refused(&mut config, "hz 11 appendfsync bogus"),
            "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be \
             one of the following: everysec, always, no"
        );
        assert_eq!(config.value("hz"), "10", "nothing was set");
        assert_eq!(
            refused(&mut config, "min-replicas-to-write -1"),
            "ERR CONFIG SET failed (possibly related to argument 'min-replicas-to-write') - argument must \
             be between 0 and 2147483647 inclusive"
        );
        assert_eq!(
            refused(&mut config, "databases 4"),
            "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"
        );
        assert_eq!(
            refused(&mut config, "Hz 10 hz 11"),
            "ERR CONFIG SET failed (possibly related to argument 'hz') - duplicate parameter"
        );
        assert_eq!(
            config.set(&pairs("HZ 20 appendfsync ALWAYS")),
            Ok(vec!["hz", "appendfsync"])
        );
        assert_eq!(
            (config.value("hz"), config.value("appendfsync")),
            ("20", "always")
        );
    }

    // As redis-server 7.0.15 answers.
    #[test]
    fn lua_time_limit_is_another_name_for_busy_reply_threshold() {
        let mut config = Config::default();
        assert_eq!(
            config.get(&words("lua-time-limit")),
            vec![(b"lua-time-limit".to_vec(), b"5000".to_vec())]
        );
        assert_eq!(
            config.set(&pairs("lua-time-limit 10")),
            Ok(vec!["busy-reply-threshold"])
        );
        assert_eq!(config.value("busy-reply-threshold"), "10");
        assert_eq!(
            config.get(&words("busy-*")),
            vec![(b"busy-reply-threshold".to_vec(), b"10".to_vec())]
        );
        assert_eq!(
            config.get(&words("LUA-TIME-LIMIT")),
            vec![(b"LUA-TIME-LIMIT".to_vec(), b"10".to_vec())]
        );
    }

    // As redis-server 7.0.15 answers (but for the refused policy, which it takes).
    #[test]
    fn maxmemory_is_set_in_bytes_and_only_noeviction_is_taken() {
        let mut config = Config::default();
        for (given, bytes) in [
            ("1", "1"),
            ("100mb", "104857600"),
            ("5K", "5000"),
            ("2gb", "2147483648"),
        ] {
            config.set(&pairs(&format!("maxmemory {given}"))).unwrap();
            assert_eq!(config.value("maxmemory"), bytes, "maxmemory {given}");
        }
        let refused = |config: &mut Config, request: &str| config.set(&pairs(request)).unwrap_err().0;
        assert_eq!(
            refused(&mut config, "maxmemory -1"),
            "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
        );
        assert_eq!(
            refused(&mut config, "maxmemory 1tb"),
            "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
        );
        assert!(refused(&mut config, "maxmemory-policy allkeys-lru").contains("noeviction only"));
        assert!(refused(&mut config, "maxmemory-policy lru").contains("must be one of the following"));
        assert_eq!(
            config.set(&pairs("maxmemory-policy NOEVICTION")),
            Ok(vec!["maxmemory-policy"])
        );
    }
}
