//! Which databases of a keyspace were reached for a write, so that what a node does after
//! every command (take the changes and the expired keys, find the earliest expiry, sum the
//! write counts) looks at those alone and not at all [`DATABASES`] (issue 33: most nodes
//! only ever use database 0).

use super::DATABASES;

// One bit for each database.
const _: () = assert!(DATABASES <= u16::BITS as usize);

/// Databases by number, one bit each.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Reached {
    /// Reached since their changes and expired keys were last taken: only these can hold any.
    since_taken: u16,
    /// Ever reached: the others hold nothing and took no write.
    ever: u16,
}

impl Reached {
    /// Database `index` is reached for a write.
    pub(super) fn reach(&mut self, index: usize) {
        self.since_taken |= 1 << index;
        self.ever |= 1 << index;
    }

    /// Every database is reached for a write.
    pub(super) fn reach_all(&mut self) {
        self.since_taken = u16::MAX;
        self.ever = u16::MAX;
    }

    /// Database `index` holds no changes and no expired keys any more.
    pub(super) fn taken(&mut self, index: usize) {
        self.since_taken &= !(1 << index);
    }

    /// The databases reached since they were last taken, in order.
    pub(super) fn since_taken(self) -> impl Iterator<Item = usize> {
        numbers(self.since_taken)
    }

    /// The databases ever reached, in order.
    pub(super) fn ever(self) -> impl Iterator<Item = usize> {
        numbers(self.ever)
    }
}

/// The numbers of the bits set in `bits`, in order.
fn numbers(mut bits: u16) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let index = (bits != 0).then(|| bits.trailing_zeros() as usize)?;
        bits &= bits - 1;
        Some(index)
    })
}
