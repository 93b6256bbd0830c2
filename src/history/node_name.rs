//! A node's name as the history keeps it: shared, not copied, by every event of that node.
//!
//! A run records thousands of events on a handful of nodes. The recorder hands each node
//! one [`NodeName`] ([`crate::world::recorder::Recorder::name`]) and every event of that
//! node shares it: recording an event clones a pointer instead of allocating and copying
//! the name, dropping the history frees each name once, and two names of one run compare
//! equal by their pointers before any byte is read (issue 33). A name made anywhere else
//! (a test's history, a live run) is still compared by its text: equality, order, hashing
//! and printing are the text's, so the digest, the trace and every report read as they
//! did with a `String`.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// A node's name (`client-2`, `redis-1`, `world`), shared.
#[derive(Clone)]
pub struct NodeName(Arc<str>);

impl NodeName {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `self` and `other` are one shared name: then they are equal, without
    /// comparing their text (names that are not one may still be equal).
    pub fn is_shared_with(&self, other: &str) -> bool {
        same_text_at(&self.0, other)
    }
}

/// Whether `a` and `b` are the same bytes in memory: then they are equal, whatever they
/// hold.
pub fn same_text_at(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b)
}

impl Deref for NodeName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for NodeName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for NodeName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for NodeName {
    fn from(name: &str) -> Self {
        NodeName(name.into())
    }
}

impl From<String> for NodeName {
    fn from(name: String) -> Self {
        NodeName(name.into())
    }
}

impl From<&String> for NodeName {
    fn from(name: &String) -> Self {
        NodeName(name.as_str().into())
    }
}

impl From<NodeName> for String {
    fn from(name: NodeName) -> Self {
        name.0.to_string()
    }
}

impl PartialEq for NodeName {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for NodeName {}

impl PartialEq<str> for NodeName {
    fn eq(&self, other: &str) -> bool {
        same_text_at(&self.0, other) || &*self.0 == other
    }
}

impl PartialEq<&str> for NodeName {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl PartialEq<String> for NodeName {
    fn eq(&self, other: &String) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<NodeName> for str {
    fn eq(&self, other: &NodeName) -> bool {
        other == self
    }
}

impl PartialEq<NodeName> for &str {
    fn eq(&self, other: &NodeName) -> bool {
        other == *self
    }
}

impl PartialEq<NodeName> for String {
    fn eq(&self, other: &NodeName) -> bool {
        other == self.as_str()
    }
}

impl PartialOrd for NodeName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for NodeName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// Hashed as its text, as a `String` is: a history's digest does not depend on how its
/// names are kept.
impl Hash for NodeName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of(value: impl Hash) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn a_name_hashes_prints_and_compares_as_its_text() {
        let shared = NodeName::from("redis-1");
        let copy = NodeName::from(String::from("redis-1"));
        assert_eq!(hash_of(&shared), hash_of(String::from("redis-1")));
        assert_eq!(format!("{shared} {shared:?}"), "redis-1 \"redis-1\"");
        assert_eq!(shared, copy, "equal names kept apart");
        assert_eq!(shared, shared.clone());
        assert!(shared.is_shared_with(&shared.clone()));
        assert!(!shared.is_shared_with(&copy));
        assert_eq!(shared, "redis-1");
        assert_ne!(shared, NodeName::from("redis-2"));
        assert!(
            NodeName::from("client-1")
                .cmp(&NodeName::from("client-2"))
                .is_lt()
        );
        assert_eq!(String::from(shared), "redis-1");
    }
}
