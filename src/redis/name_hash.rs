//! The hash of the node's tables keyed by command name (the command table, the per-command
//! statistics): FNV-1a, whose set-up is nothing, where SipHash's costs more than hashing a
//! name of a few bytes. The keys are the node's own command names, so no hash-flooding
//! defence is needed, and the hash is the same in every run (nothing random reaches it).

use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a over the bytes written.
pub struct NameHasher(u64);

/// Builds a [`NameHasher`] for a `HashMap`.
pub type BuildNameHasher = BuildHasherDefault<NameHasher>;

impl Default for NameHasher {
    fn default() -> Self {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
