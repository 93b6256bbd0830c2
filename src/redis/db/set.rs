//! A set's members, in the order Redis 7.0 lists them where that order is fixed.
//!
//! Redis keeps a small set of integers as an intset (sorted by value, up to
//! `set-max-intset-entries`, 512) and anything else in a hash table, whose order depends
//! on hashing and is unspecified. Here a set of integers within that size lists its
//! members by value, as an intset does, and any other set in byte order: a deterministic
//! order (no hash-map iteration reaches a reply), which is one Redis could answer.

use std::collections::BTreeSet;

use crate::redis::request::string_to_i64;

/// Redis's default `set-max-intset-entries`: the largest set an intset holds.
const MAX_INTSET_ENTRIES: usize = 512;

/// A set of byte strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<Vec<u8>>,
    /// How many members are not integers an intset could hold.
    non_integers: usize,
}

impl Set {
    /// Adds `member`; says whether it is new.
    pub fn insert(&mut self, member: Vec<u8>) -> bool {
        let integer = string_to_i64(&member).is_some();
        let added = self.members.insert(member);
        if added && !integer {
            self.non_integers += 1;
        }
        added
    }

    /// Removes `member`; says whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let removed = self.members.remove(member);
        if removed && string_to_i64(member).is_none() {
            self.non_integers -= 1;
        }
        removed
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.members.contains(member)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members in the order SMEMBERS lists them (see the module's note).
    pub fn members(&self) -> Vec<&[u8]> {
        let mut members: Vec<&[u8]> = self.members.iter().map(Vec::as_slice).collect();
        if self.non_integers == 0 && members.len() <= MAX_INTSET_ENTRIES {
            members.sort_by_key(|member| string_to_i64(member));
        }
        members
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(members: &[&str]) -> Set {
        let mut set = Set::default();
        for member in members {
            set.insert(member.as_bytes().to_vec());
        }
        set
    }

    #[test]
    fn a_set_of_integers_lists_them_by_value_as_an_intset_does() {
        let set = set_of(&["10", "2", "-3", "1"]);
        assert_eq!(set.members(), [&b"-3"[..], b"1", b"2", b"10"]);
    }

    #[test]
    fn a_set_with_a_non_integer_lists_in_byte_order_until_it_is_gone() {
        let mut set = set_of(&["10", "2", "a"]);
        assert_eq!(set.members(), [&b"10"[..], b"2", b"a"]);
        assert!(set.remove(b"a"));
        assert_eq!(set.members(), [&b"2"[..], b"10"]);
        assert!(!set.remove(b"a"), "already gone");
        assert!(!set.insert(b"2".to_vec()), "already there");
        assert_eq!(set.len(), 2);
    }
}
