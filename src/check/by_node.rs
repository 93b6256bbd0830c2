//! A map from a node's name to a value, for the handful of nodes a run names.
//!
//! The checkers keep per-client and per-node state keyed by the event's node name. A
//! history names a few clients and Redis nodes, so a vector searched in order finds a name
//! in fewer instructions than a `BTreeMap` walks its tree, and allocates once instead of on
//! every insert (issue 33). It has no order of its own: whoever reads it out in order asks
//! for [`ByNode::into_sorted`].
//!
//! A recorded history's names are shared ([`crate::history::NodeName`]): every event of a
//! node, and every answer naming a Redis node, points at the same text. So a name is first
//! looked for by where its text is, comparing no bytes, and only if that finds nothing
//! (a history made elsewhere, or a name not in the map) by its text.

use crate::history::same_text_at;

/// Values by node name, at most one a name.
#[derive(Debug)]
pub struct ByNode<'a, V>(Vec<(&'a str, V)>);

impl<V> Default for ByNode<'_, V> {
    fn default() -> Self {
        ByNode(Vec::new())
    }
}

impl<'a, V> ByNode<'a, V> {
    fn position(&self, node: &str) -> Option<usize> {
        let entries = &self.0;
        entries
            .iter()
            .position(|(name, _)| same_text_at(name, node))
            .or_else(|| entries.iter().position(|(name, _)| *name == node))
    }

    pub fn get(&self, node: &str) -> Option<&V> {
        self.position(node).map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, node: &str) -> Option<&mut V> {
        self.position(node).map(|i| &mut self.0[i].1)
    }

    /// Sets `node`'s value, giving back the one it replaced.
    pub fn insert(&mut self, node: &'a str, value: V) -> Option<V> {
        match self.position(node) {
            Some(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            None => {
                self.0.push((node, value));
                None
            }
        }
    }

    pub fn remove(&mut self, node: &str) -> Option<V> {
        self.position(node).map(|i| self.0.swap_remove(i).1)
    }

    /// `node`'s value, made by `make` if it has none.
    pub fn or_insert_with(&mut self, node: &'a str, make: impl FnOnce() -> V) -> &mut V {
        let i = self.position(node).unwrap_or_else(|| {
            self.0.push((node, make()));
            self.0.len() - 1
        });
        &mut self.0[i].1
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|(_, value)| value)
    }

    /// Every entry, by name (the order a `BTreeMap` keyed by name iterates in).
    pub fn into_sorted(mut self) -> Vec<(&'a str, V)> {
        self.0.sort_unstable_by_key(|&(name, _)| name);
        self.0
    }
}

/// Lists by node (the nodes each client's attempt heard from), emptied and filled again
/// attempt after attempt: an emptied list keeps its room, so filling it allocates nothing.
impl<T: Clone> ByNode<'_, Vec<T>> {
    /// Empties `node`'s list.
    pub fn clear(&mut self, node: &str) {
        if let Some(list) = self.get_mut(node) {
            list.clear();
        }
    }

    /// A copy of `node`'s list (empty if it has none), which is emptied.
    pub fn take_copy(&mut self, node: &str) -> Vec<T> {
        self.get_mut(node).map_or_else(Vec::new, |list| {
            let copy = list.clone();
            list.clear();
            copy
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_keeps_one_value_a_name_and_reads_out_by_name() {
        let mut map = ByNode::default();
        assert_eq!(map.insert("client-2", 2), None);
        assert_eq!(map.insert("client-1", 1), None);
        assert_eq!(map.insert("client-2", 20), Some(2));
        *map.or_insert_with("client-3", || 0) += 3;
        *map.or_insert_with("client-1", || 0) += 10;
        assert_eq!(map.get("client-1"), Some(&11));
        assert_eq!(map.get("client-12"), None);
        assert_eq!(map.remove("client-2"), Some(20));
        assert_eq!(map.remove("client-2"), None);
        map.values_mut().for_each(|v| *v += 100);
        *map.get_mut("client-3").unwrap() += 1000;
        assert_eq!(map.into_sorted(), vec![("client-1", 111), ("client-3", 1103)]);
    }

    #[test]
    fn a_list_taken_or_cleared_is_empty_after() {
        let mut lists: ByNode<Vec<&str>> = ByNode::default();
        assert_eq!(lists.take_copy("client-1"), Vec::<&str>::new());
        lists
            .or_insert_with("client-1", Vec::new)
            .extend(["redis-1", "redis-2"]);
        lists.or_insert_with("client-2", Vec::new).push("redis-3");
        assert_eq!(lists.take_copy("client-1"), ["redis-1", "redis-2"]);
        assert_eq!(lists.take_copy("client-1"), Vec::<&str>::new());
        lists.clear("client-2");
        lists.clear("client-3");
        assert_eq!(lists.get("client-2"), Some(&Vec::new()));
    }
}
