//! The Lua scripts the lock client sends, and their SHA1 digests (what EVALSHA names).

use std::sync::LazyLock;

/// Compare-and-delete: removes the key only if it still holds our token (tier 5).
pub const RELEASE: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

/// Compare-and-pexpire: renews the key's TTL (`ARGV[2]` ms) only if it still holds our
/// token (`ARGV[1]`); the watchdog and `extend` send it. A TTL of 0 (a lock that never
/// expires) is only checked: `PEXPIRE key 0` would delete the key.
pub const EXTEND: &str = r#"if redis.call("get",KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == "0" then return 1 end
return redis.call("pexpire",KEYS[1],ARGV[2])"#;

/// redis-py's `reacquire()` (`LUA_REACQUIRE_SCRIPT`): compare, then `PEXPIRE` whatever the
/// TTL. With `timeout=0` that deletes the key and still answers 1 (redis-py#4279).
pub const REACQUIRE: &str = r#"if redis.call("get",KEYS[1]) ~= ARGV[1] then return 0 end
redis.call("pexpire",KEYS[1],ARGV[2])
return 1"#;

/// "Extend or lock" (go-redsync's `WithSetNXOnExtend`): renews our key, and sets it again
/// when it has gone, so a lock lost in between is silently re-acquired.
pub const EXTEND_OR_SET: &str = r#"local value = redis.call("get",KEYS[1])
if value == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) end
if value then return 0 end
redis.call("set",KEYS[1],ARGV[1],"px",ARGV[2])
return 1"#;

/// Set-if-absent-or-ours: stores `ARGV[1]` for `ARGV[2]` ms unless another value holds the
/// key, so a retry is not refused by its own earlier attempt (node-redlock PR #369).
pub const ACQUIRE_OR_REFRESH: &str = r#"local value = redis.call("get",KEYS[1])
if value and value ~= ARGV[1] then return 0 end
redis.call("set",KEYS[1],ARGV[1],"px",ARGV[2])
return 1"#;

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
