//! How overlapping faults compose: each fault holds its own claim on what it covers (a
//! process, a link, a clock, a NIC setting), and a thing is under a kind of fault while
//! any claim covers it. The first claim applies the fault and the last one to go lifts it,
//! so the end of one fault never undoes another that still covers the same thing. The
//! rules for every pair of kinds are in `docs/faults.md` and on [`super`].

use std::collections::BTreeMap;

/// What each kind of fault covers now. A process is paused while any pause covers it and
/// down while any crash does; a link is cut while any partition or stall covers it; a
/// clock runs at the rate of the latest drift still covering it. (Latency and loss are
/// claimed by the backend, on the simulator's NICs.)
#[derive(Debug, Default)]
pub struct Composition {
    pub paused: Covers<String>,
    pub down: Covers<String>,
    /// Links as (from, to) node names.
    pub cut: Covers<(String, String)>,
    /// Each drift's rate, in ppm.
    pub drifts: Covers<String, i64>,
    /// The rate of each drifting clock before its first drift.
    pub base_rates: BTreeMap<String, i64>,
}

/// One fault's identity, unique in a run, in the order faults struck.
pub type FaultId = u64;

/// The claims on each thing: for each key, the faults covering it with their values.
#[derive(Debug)]
pub struct Covers<K, V = ()> {
    by: BTreeMap<K, BTreeMap<FaultId, V>>,
}

impl<K, V> Default for Covers<K, V> {
    fn default() -> Self {
        Covers { by: BTreeMap::new() }
    }
}

impl<K: Ord + Clone, V> Covers<K, V> {
    /// Adds fault `id`'s claim on `key`; `true` when nothing covered `key` before (the
    /// caller applies the fault now).
    pub fn cover(&mut self, key: K, id: FaultId, value: V) -> bool {
        let claims = self.by.entry(key).or_default();
        claims.insert(id, value);
        claims.len() == 1
    }

    /// Drops fault `id`'s claim on `key`; `true` when that was the last (the caller lifts
    /// the fault now). A claim already dropped (by a heal) changes nothing.
    pub fn uncover(&mut self, key: &K, id: FaultId) -> bool {
        let Some(claims) = self.by.get_mut(key) else {
            return false;
        };
        if claims.remove(&id).is_none() || !claims.is_empty() {
            return false;
        }
        self.by.remove(key);
        true
    }

    /// Whether no fault covers anything.
    pub fn is_empty(&self) -> bool {
        self.by.is_empty()
    }

    /// Whether any fault covers `key`.
    pub fn covered(&self, key: &K) -> bool {
        self.by.contains_key(key)
    }

    /// The values of the faults covering `key`, oldest first.
    pub fn values<'a>(&'a self, key: &K) -> impl Iterator<Item = &'a V> + 'a {
        self.by.get(key).into_iter().flat_map(|claims| claims.values())
    }

    /// Drops every claim; the keys that were covered, in order.
    pub fn clear(&mut self) -> Vec<K> {
        std::mem::take(&mut self.by).into_keys().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_stays_covered_until_its_last_claim_goes() {
        let mut covers: Covers<&str> = Covers::default();
        assert!(covers.cover("client-1", 1, ()), "the first claim applies");
        assert!(!covers.cover("client-1", 2, ()), "the second only nests");
        assert!(!covers.uncover(&"client-1", 1), "the first to end lifts nothing");
        assert!(covers.covered(&"client-1"));
        assert!(covers.uncover(&"client-1", 2), "the last to end lifts it");
        assert!(!covers.covered(&"client-1"));
    }

    #[test]
    fn a_cleared_claim_ends_without_lifting_a_later_one() {
        let mut covers: Covers<(u8, u8), u64> = Covers::default();
        covers.cover((1, 2), 1, 10);
        assert_eq!(covers.clear(), vec![(1, 2)]);
        assert!(covers.cover((1, 2), 2, 20));
        assert!(!covers.uncover(&(1, 2), 1), "the healed fault's end is a no-op");
        assert_eq!(covers.values(&(1, 2)).collect::<Vec<_>>(), vec![&20]);
    }
}
