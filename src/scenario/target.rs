//! Whom a fault hits: a node by name, or a word the fault resolves when it strikes
//! (`holder`, `master`, `any-client`, `any-redis`, `majority`, `minority`).
//!
//! The words may also stand among node names: in a list target (`["holder", "redis-2"]`)
//! and in the groups of a partition, latency or loss (`[["holder"], ["redis-1"]]`). Each
//! is resolved when the fault strikes, exactly as the same word as a whole target would
//! be ([`resolve_names`], [`resolve_groups`]), so the holder can be cut off by name.

use std::fmt;

use rand::RngExt;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

/// Whom a fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The client holding the lock then, or if none, the next one to acquire; for a
    /// fault triggered `on` an event, the client of that event.
    Holder,
    /// The current master (`redis-1` on a single node).
    Master,
    /// One client drawn from the seed.
    AnyClient,
    /// One Redis node drawn from the seed.
    AnyRedis,
    /// A majority of the Redis masters, drawn from the seed.
    Majority,
    /// A minority of the Redis masters (at least one), drawn from the seed.
    Minority,
    /// These nodes, by name (a name may be one of the words above: see [`resolve_names`]).
    Nodes(Vec<String>),
}

impl Target {
    /// The words a target may be instead of a node's name.
    pub const WORDS: [&'static str; 6] = [
        "holder",
        "master",
        "any-client",
        "any-redis",
        "majority",
        "minority",
    ];

    /// The target a word names (`holder` …); `None` for anything else (a node's name).
    pub fn word(name: &str) -> Option<Target> {
        Some(match name {
            "holder" => Target::Holder,
            "master" => Target::Master,
            "any-client" => Target::AnyClient,
            "any-redis" => Target::AnyRedis,
            "majority" => Target::Majority,
            "minority" => Target::Minority,
            _ => return None,
        })
    }

    fn from_name(name: String) -> Target {
        Target::word(&name).unwrap_or(Target::Nodes(vec![name]))
    }
}

/// The words among `names` (a list target, or a fault's groups flattened in order): what
/// the fault resolves, each as the same word as a whole target, when it strikes.
/// The nodes a target word can name when its fault strikes.
pub struct Candidates<'a> {
    pub clients: &'a [String],
    /// Every group's first master (`redis-1` … `redis-N`).
    pub masters: &'a [String],
    /// Every Redis node: masters and replicas.
    pub redis: &'a [String],
    /// The first group's master now (a failover may have moved it).
    pub master: &'a str,
}

impl Target {
    /// The nodes this target names now, drawn from `rng` where it draws; `None` for
    /// `holder`, which needs the run's lock holder. The one draw the simulator and live
    /// mode both make, so a seed strikes the same kind of node in both (`any-redis` is any
    /// Redis node, replicas included; `majority` and `minority` are of the masters).
    pub fn draw(&self, nodes: &Candidates, rng: &mut ChaCha8Rng) -> Option<Vec<String>> {
        let pick = |names: &[String], rng: &mut ChaCha8Rng| names[rng.random_range(0..names.len())].clone();
        let sample = |count: usize, rng: &mut ChaCha8Rng| {
            let mut masters = nodes.masters.to_vec();
            masters.shuffle(rng);
            masters.truncate(count);
            masters.sort();
            masters
        };
        Some(match self {
            Target::Holder => return None,
            Target::Master => vec![nodes.master.to_string()],
            Target::AnyClient => vec![pick(nodes.clients, rng)],
            Target::AnyRedis => vec![pick(nodes.redis, rng)],
            Target::Majority => sample(nodes.masters.len() / 2 + 1, rng),
            Target::Minority => sample(nodes.masters.len().saturating_sub(1) / 2, rng),
            Target::Nodes(names) => names.clone(),
        })
    }
}

pub fn words_among<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<Target> {
    names.into_iter().filter_map(|name| Target::word(name)).collect()
}

/// The nodes `names` stand for when a fault strikes, given the nodes each word among them
/// resolved to (in the order of [`words_among`]): each node name as it is, no node twice.
pub fn resolve_names(names: &[String], resolved: Vec<Vec<String>>) -> Vec<String> {
    let mut resolved = resolved.into_iter();
    let mut nodes = Vec::new();
    for name in names {
        let these = match Target::word(name) {
            Some(_) => resolved.next().unwrap_or_default(),
            None => vec![name.clone()],
        };
        for node in these {
            if !nodes.contains(&node) {
                nodes.push(node);
            }
        }
    }
    nodes
}

/// The groups of a partition (or of a latency or loss fault) when it strikes, given the
/// nodes each word in them resolved to (in the order of [`words_among`] over the groups).
/// A node a word resolved to belongs to that word's group even when another group names
/// it (`[["holder"], ["client-1", "client-2"]]` cuts the holder off from the other client,
/// whichever it is); a node two words resolved to stays in the first group. A group left
/// empty cuts nothing.
pub fn resolve_groups(groups: &[Vec<String>], resolved: Vec<Vec<String>>) -> Vec<Vec<String>> {
    let mut resolved = resolved.into_iter();
    let by_word: Vec<Vec<String>> = groups
        .iter()
        .map(|group| {
            group
                .iter()
                .filter(|name| Target::word(name).is_some())
                .flat_map(|_| resolved.next().unwrap_or_default())
                .collect()
        })
        .collect();
    let mut placed: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (i, group) in groups.iter().enumerate() {
        let named = group
            .iter()
            .filter(|name| Target::word(name).is_none())
            .filter(|name| {
                !by_word
                    .iter()
                    .enumerate()
                    .any(|(j, words)| j != i && words.contains(name))
            });
        let mut nodes = Vec::new();
        for node in by_word[i].iter().chain(named) {
            if !placed.contains(node) {
                placed.push(node.clone());
                nodes.push(node.clone());
            }
        }
        out.push(nodes);
    }
    out
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TargetVisitor;
        impl<'de> Visitor<'de> for TargetVisitor {
            type Value = Target;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a node name, one of holder, master, any-client, any-redis, majority, minority, \
                     or a list of node names",
                )
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Target, E> {
                Ok(Target::from_name(name.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Target, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    names.push(name);
                }
                if names.is_empty() {
                    return Err(de::Error::invalid_length(0, &"at least one node name"));
                }
                Ok(Target::Nodes(names))
            }
        }
        deserializer.deserialize_any(TargetVisitor)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Holder => f.write_str("holder"),
            Target::Master => f.write_str("master"),
            Target::AnyClient => f.write_str("any-client"),
            Target::AnyRedis => f.write_str("any-redis"),
            Target::Majority => f.write_str("majority"),
            Target::Minority => f.write_str("minority"),
            Target::Nodes(names) => f.write_str(&names.join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn any_redis_draws_replicas_too_and_majority_only_masters() {
        use rand::SeedableRng;
        let (clients, masters) = (
            names(&["client-1", "client-2"]),
            names(&["redis-1", "redis-2", "redis-3"]),
        );
        let redis = names(&["redis-1", "redis-1-replica-1", "redis-2", "redis-3"]);
        let nodes = Candidates {
            clients: &clients,
            masters: &masters,
            redis: &redis,
            master: "redis-1-replica-1",
        };
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let drawn: Vec<Vec<String>> = (0..40)
            .map(|_| Target::AnyRedis.draw(&nodes, &mut rng).unwrap())
            .collect();
        assert!(
            drawn.iter().any(|d| d == &["redis-1-replica-1"]),
            "a replica is a Redis node"
        );
        assert!(drawn.iter().all(|d| d.len() == 1 && redis.contains(&d[0])));
        for _ in 0..20 {
            let majority = Target::Majority.draw(&nodes, &mut rng).unwrap();
            assert!(
                majority.len() == 2 && majority.iter().all(|n| masters.contains(n)),
                "{majority:?}"
            );
        }
        assert_eq!(
            Target::Master.draw(&nodes, &mut rng),
            Some(names(&["redis-1-replica-1"]))
        );
        assert_eq!(
            Target::Holder.draw(&nodes, &mut rng),
            None,
            "the holder is the run's"
        );
        // The same seed draws the same nodes, whichever mode asks.
        let again = |seed| Target::AnyRedis.draw(&nodes, &mut ChaCha8Rng::seed_from_u64(seed));
        assert_eq!(again(3), again(3));
    }

    /// Resolves `holder` to client-2 and `majority` to two masters, as a strike would.
    fn strike(words: Vec<Target>) -> Vec<Vec<String>> {
        let resolve = |target: Target| match target {
            Target::Holder => names(&["client-2"]),
            Target::Majority => names(&["redis-1", "redis-3"]),
            other => panic!("not in this test: {other}"),
        };
        words.into_iter().map(resolve).collect()
    }

    #[test]
    fn words_among_names_resolve_as_whole_targets_do() {
        let list = names(&["holder", "redis-2", "client-2"]);
        let nodes = resolve_names(&list, strike(words_among(&list)));
        assert_eq!(nodes, names(&["client-2", "redis-2"]), "no node twice");
        let groups = vec![names(&["holder"]), names(&["client-1", "client-2", "redis-1"])];
        let cut = resolve_groups(&groups, strike(words_among(groups.iter().flatten())));
        assert_eq!(
            cut,
            vec![names(&["client-2"]), names(&["client-1", "redis-1"])],
            "the holder is cut off from everyone else, whichever client it is"
        );
        let groups = vec![names(&["majority"]), names(&["redis-1", "redis-2", "redis-3"])];
        let cut = resolve_groups(&groups, strike(words_among(groups.iter().flatten())));
        assert_eq!(cut, vec![names(&["redis-1", "redis-3"]), names(&["redis-2"])]);
    }
}
