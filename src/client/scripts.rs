//! The Lua scripts the lock client sends, and their SHA1 digests (what EVALSHA names).

use std::sync::LazyLock;

/// Compare-and-delete: removes the key only if it still holds our token (tier 5).
pub const RELEASE: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

/// Compare-and-pexpire: renews the key's TTL (`ARGV[2]` ms) only if it still holds our
/// token (`ARGV[1]`); the watchdog and `extend` send it.
pub const EXTEND: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;

/// SHA1 of [`RELEASE`], as Redis computes it.
pub static RELEASE_SHA1: LazyLock<String> =
    LazyLock::new(|| sha1_smol::Sha1::from(RELEASE).digest().to_string());

#[cfg(test)]
mod tests {
    #[test]
    fn release_sha_matches_redis() {
        // As printed by `SCRIPT LOAD` on redis-server 7.0 for this exact text.
        assert_eq!(*super::RELEASE_SHA1, "b70c2384248f88e6b75b9f89241a180f856ad852");
    }
}
