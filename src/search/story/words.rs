//! How a story words what it tells: a client's key on some nodes, lists of node names,
//! validities, and the reasons the client library gives.

use crate::history::fmt_ms;

/// A client's key stored on, or gone from, some nodes: consecutive ones become one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeyNote {
    pub client: String,
    /// Each node, with the key's expiry on its own clock (µs) when stored (`None`: no TTL).
    pub nodes: Vec<(String, Option<i64>)>,
    pub stored: bool,
}

impl KeyNote {
    /// This note with `other`'s nodes too: a node noted again keeps its latest expiry (a
    /// `SETNX` then an `EXPIRE` on one node is one key, with the TTL the second gave it).
    pub fn merge(&mut self, other: &KeyNote) {
        for (node, expiry) in &other.nodes {
            match self.nodes.iter_mut().find(|(n, _)| n == node) {
                Some(known) => known.1 = *expiry,
                None => self.nodes.push((node.clone(), *expiry)),
            }
        }
    }
}

impl std::fmt::Display for KeyNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.nodes.iter().map(|(node, _)| node.clone()).collect();
        let (client, nodes) = (&self.client, list(&names));
        if !self.stored {
            return write!(f, "{client}'s key leaves {nodes}");
        }
        let (verb, whose) = match self.nodes.len() {
            1 => ("stores", "its clock reads"),
            _ => ("store", "their clocks read"),
        };
        let expiries: Vec<i64> = self.nodes.iter().filter_map(|(_, at)| *at).collect();
        match (expiries.iter().min(), expiries.iter().max()) {
            (Some(first), Some(last)) if first == last => write!(
                f,
                "{nodes} {verb} {client}'s key, to expire when {whose} {} ms",
                fmt_ms(*first)
            ),
            (Some(first), Some(last)) => write!(
                f,
                "{nodes} {verb} {client}'s key, to expire when {whose} {}–{} ms",
                fmt_ms(*first),
                fmt_ms(*last)
            ),
            _ => write!(f, "{nodes} {verb} {client}'s key, never to expire"),
        }
    }
}

/// Node names in order, as a person writes them: `redis-1`, `redis-1 and redis-3`,
/// `redis-1, redis-2 and redis-4`, a run of three or more as `redis-1..5`.
pub fn list(names: &[String]) -> String {
    let mut sorted = names.to_vec();
    sorted.sort_by_key(|name| {
        let (prefix, number) = numbered(name).unwrap_or((name, 0));
        (prefix.to_string(), number, name.clone())
    });
    sorted.dedup();
    let numbers: Option<Vec<(&str, u32)>> = sorted.iter().map(|name| numbered(name)).collect();
    if let Some(numbers) = numbers
        && numbers.len() >= 3
        && numbers.iter().all(|(prefix, _)| *prefix == numbers[0].0)
        && numbers.windows(2).all(|pair| pair[1].1 == pair[0].1 + 1)
    {
        let (prefix, first) = numbers[0];
        return format!("{prefix}-{first}..{}", numbers[numbers.len() - 1].1);
    }
    match sorted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The clients' names as owners: `client-1's`, `client-1's and client-2's`.
pub fn owners(clients: &[String]) -> String {
    let mut sorted = clients.to_vec();
    sorted.sort_by_key(|name| numbered(name).map_or(0, |(_, n)| n));
    sorted.dedup();
    let owned: Vec<String> = sorted.iter().map(|c| format!("{c}'s")).collect();
    match owned.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `redis-12` as (`redis`, 12).
fn numbered(name: &str) -> Option<(&str, u32)> {
    let (prefix, number) = name.rsplit_once('-')?;
    Some((prefix, number.parse().ok()?))
}

/// A validity as a story says it.
pub fn validity(ms: u64) -> String {
    match ms {
        u64::MAX => "ever (no TTL)".to_string(),
        ms => format!("{ms} ms"),
    }
}

/// A client library's reason, short: a Redis error reply as its code and words
/// (`READONLY You can't write against a read only replica`), a request that failed as
/// what failed (`no reply within 50 ms`, `connection refused`).
pub fn reason(text: &str) -> String {
    if let Some((_, error)) = text.split_once("Error(\"") {
        let error = error.split('"').next().unwrap_or(error);
        // A script's error carries the script's hash and line: not what the reader needs.
        let error = error
            .split(" script: ")
            .next()
            .unwrap_or(error)
            .trim_end_matches('.');
        return match error.split_once(' ') {
            Some((code, words)) if code.chars().all(|c| c.is_ascii_uppercase()) => {
                format!("{code} ({words})")
            }
            _ => error.to_string(),
        };
    }
    let mut short = text;
    for prefix in ["request failed: ", "connection error: "] {
        short = short.strip_prefix(prefix).unwrap_or(short);
    }
    short.to_string()
}

/// `n` with its noun, in the plural unless one: `1 try`, `12 tries`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// A node that runs failovers, named as a story says it (who promoted a replica, won an
/// election, crashed): the words are the trace's own ([`crate::world::failover::actor`]).
pub use crate::world::failover::actor;
