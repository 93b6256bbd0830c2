//! python-redis-lock 4.0.1 (`redis_lock.Lock`) as it speaks to Redis
//! (`src/redis_lock/__init__.py` at v4.0.1).
//!
//! The lock `<name>` is the string `lock:<name>` holding the lock's id (18 random bytes in
//! base64), set with `SET NX EX expire` (whole seconds). `acquire()` first `GET`s the key
//! (it refuses to acquire twice with one id), then loops: `SET NX EX`; when busy, wait on
//! `BLPOP lock-signal:<name> expire` for a release's signal, and try again. The release
//! script checks the id, then deletes the signal list, `LPUSH`es one element (waking one
//! waiter), gives the list a 1000 ms `PEXPIRE` (`signal_expire`) and deletes the lock. A
//! lock that expires pushes no signal: waiters sleep out their `BLPOP`. Renewal
//! (`auto_renewal`, every `expire × 2/3` on a daemon thread) runs the extend script, which
//! replaces the TTL with `EXPIRE`; the first extend that fails (`NotAcquired`, or a
//! connection error) raises inside the thread and ends it, telling nobody. Scripts go
//! through redis-py's `Script`: `EVALSHA`, and on `NOSCRIPT` `SCRIPT LOAD` then `EVALSHA`.

use rand::{Rng, RngExt};

use crate::client::conn::Conn;
use crate::client::error::LockError;
use crate::client::options::{LockOptions, Protocol};
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::cmd::{Condition, Evalsha, Get, Set, SetExpiry};
use crate::redis::request::build as request;

/// `UNLOCK_SCRIPT`: KEYS = [lock, signal], ARGV = [id, signal_expire]; 1 when not ours.
pub const UNLOCK: &str = r#"
    if redis.call("get", KEYS[1]) ~= ARGV[1] then
        return 1
    else
        redis.call("del", KEYS[2])
        redis.call("lpush", KEYS[2], 1)
        redis.call("pexpire", KEYS[2], ARGV[2])
        redis.call("del", KEYS[1])
        return 0
    end
"#;

/// `EXTEND_SCRIPT`: KEYS = [lock, signal], ARGV = [id, expire s]; 1 when not ours, 2 when
/// the key has no TTL, 0 when renewed.
pub const EXTEND: &str = r#"
    if redis.call("get", KEYS[1]) ~= ARGV[1] then
        return 1
    elseif redis.call("ttl", KEYS[1]) < 0 then
        return 2
    else
        redis.call("expire", KEYS[1], ARGV[2])
        return 0
    end
"#;

/// `Lock(signal_expire=1000)`: how long a release's signal waits for a waiter.
pub const SIGNAL_EXPIRE_MS: u64 = 1000;

/// Random bytes in an id (`b64encode(urandom(18))`).
const ID_BYTES: usize = 18;

/// The key holding the lock `name` (`lock:` and the name).
pub fn lock_key(name: &[u8]) -> Vec<u8> {
    Protocol::PythonRedisLock.redis_key(name)
}

/// The list a release signals waiters on.
pub fn signal_key(name: &[u8]) -> Vec<u8> {
    [b"lock-signal:", name].concat()
}

/// A new lock id, as `Lock.__init__` draws one.
pub fn new_id(rng: &mut impl Rng) -> String {
    let mut bytes = [0u8; ID_BYTES];
    rng.fill(&mut bytes);
    base64(&bytes)
}

/// `expire` in whole seconds, as the library takes it (the scenario loader refuses a TTL
/// that is not a whole number of seconds).
pub fn expire_s(options: &LockOptions) -> u64 {
    options.ttl_ms.div_ceil(1000)
}

/// `acquire()`'s opening `GET` (the `_held` check): refuses an id that already holds it.
pub(crate) async fn check_not_held<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    name: &[u8],
    id: &str,
) -> Result<(), LockError> {
    let get = Get { key: lock_key(name) };
    match conn.request(&get.into_frame()).await? {
        Frame::BulkString(value) if value == id.as_bytes() => Err(LockError::LockLost {
            reason: "AlreadyAcquired: this id already holds the lock".into(),
        }),
        Frame::BulkString(_) | Frame::Null => Ok(()),
        other => Err(LockError::UnexpectedReply(other)),
    }
}

/// One `SET lock:<name> id NX EX expire`.
pub(crate) async fn acquire_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    id: &str,
) -> Result<bool, LockError> {
    let key = lock_key(name);
    let set = Set {
        key: key.as_slice(),
        value: id.as_bytes(),
        condition: Some(Condition::Nx),
        expiry: Some(SetExpiry::Ex(expire_s(options) as i64)),
    };
    match conn.request(&set.encode()).await? {
        Frame::SimpleString(s) if s == b"OK" => Ok(true),
        Frame::Null => Ok(false),
        other => Err(LockError::UnexpectedReply(other)),
    }
}

/// A busy acquire's wait: `BLPOP lock-signal:<name> expire`, until a release signals or
/// the timeout passes. Either way the caller tries again; so it does when the wait failed
/// (the next `SET` meets the same trouble and says so).
pub(crate) async fn wait_for_signal<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
) {
    let timeout_s = expire_s(options);
    let blpop = request([
        b"BLPOP".to_vec(),
        signal_key(name),
        timeout_s.to_string().into_bytes(),
    ]);
    // BLPOP blocks on the server for up to its timeout: give the reply that long more.
    let within_ms = timeout_s * 1000 + options.request_timeout_ms;
    let _ = conn.request_within(&blpop, within_ms).await;
}

/// The release script: `Ok(false)` when the key no longer held our id (`NotAcquired`).
pub(crate) async fn release_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    name: &[u8],
    id: &str,
) -> Result<bool, LockError> {
    let signal_expire = SIGNAL_EXPIRE_MS.to_string();
    match run_script(conn, UNLOCK, name, &[id.as_bytes(), signal_expire.as_bytes()]).await? {
        Frame::Integer(0) => Ok(true),
        Frame::Integer(1) => Ok(false),
        other => Err(LockError::UnexpectedReply(other)),
    }
}

/// The extend script with the lock's own `expire`: `Ok(false)` when the key no longer held
/// our id; a key without TTL (`NotExpirable`) is an error, as the library raises one.
pub(crate) async fn extend_on<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    options: &LockOptions,
    name: &[u8],
    id: &str,
) -> Result<bool, LockError> {
    let expire = expire_s(options).to_string();
    match run_script(conn, EXTEND, name, &[id.as_bytes(), expire.as_bytes()]).await? {
        Frame::Integer(0) => Ok(true),
        Frame::Integer(1) => Ok(false),
        other => Err(LockError::UnexpectedReply(other)),
    }
}

/// redis-py's `Script.__call__` with KEYS = [lock, signal]: `EVALSHA`; on `NOSCRIPT`,
/// `SCRIPT LOAD` and `EVALSHA` again.
async fn run_script<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    script: &str,
    name: &[u8],
    args: &[&[u8]],
) -> Result<Frame, LockError> {
    let sha = sha1_smol::Sha1::from(script).digest().to_string();
    let (lock, signal) = (lock_key(name), signal_key(name));
    let evalsha = Evalsha::encode(&sha, &[&lock, &signal], args);
    match conn.request(&evalsha).await? {
        Frame::Error(message) if message.starts_with("NOSCRIPT") => {
            let load = request([b"SCRIPT".to_vec(), b"LOAD".to_vec(), script.as_bytes().to_vec()]);
            match conn.request(&load).await? {
                Frame::BulkString(_) => Ok(conn.request(&evalsha).await?),
                other => Err(LockError::UnexpectedReply(other)),
            }
        }
        reply => Ok(reply),
    }
}

/// Standard base64 with padding (Python's `b64encode`).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_padded_base64_as_python_writes_them() {
        // base64.b64encode(b"\x00\xff\x10ab") == b"AP8QYWI="
        assert_eq!(base64(b"\x00\xff\x10ab"), "AP8QYWI=");
        assert_eq!(base64(&[0u8; ID_BYTES]).len(), 24);
    }

    #[test]
    fn keys_carry_the_library_prefixes() {
        assert_eq!(lock_key(b"jobs"), b"lock:jobs");
        assert_eq!(signal_key(b"jobs"), b"lock-signal:jobs");
    }
}
