//! The fake node against redis-server 7.0, frame for frame, in RESP2 and RESP3.
//!
//! proptest generates short command sequences: every command the fake implements (strings,
//! keys, hashes, sorted sets, lists, BLPOP/BRPOP with short timeouts and served by another
//! connection's push, pub/sub, MULTI/EXEC/DISCARD/WATCH with queued errors, EVAL/EVALSHA of
//! scripts calling them, SCRIPT, SELECT/SWAPDB/FLUSHDB/FLUSHALL, RESET, TIME, ROLE, CONFIG
//! GET/RESETSTAT, CLIENT SETNAME/GETNAME/ID/INFO/LIST/KILL of the case's own connections,
//! INFO of each modelled section (the error statistics exactly: each case starts with
//! CONFIG RESETSTAT), COMMAND COUNT/INFO/DOCS, `requirepass` with AUTH and HELLO AUTH,
//! and connections that reconnect), with expiries in the past, at least 5 s away, or short
//! enough to run out mid-case ([`Step::ExpireSoon`]: both servers run in real time, and
//! no key is read while its time runs out), wrong arities and bad arguments, inline
//! requests, HELLO 3, and a closing QUIT or malformed request. Each step runs on one of
//! [`CONNECTIONS`] connections (a subscriber and a publisher, a WATCH on one and a write on
//! another). Each sequence goes to a fake node served on real TCP by the code `locksim
//! serve` runs and to a real redis-server, and every frame must be equal (TTL within a
//! second, PTTL within a tolerance, TIME's clock aside; client ids as places among the
//! case's connections; what CLIENT LIST and INFO show of each process, masked field by
//! field: see [`Connections::normalised`]). After each step every connection not inside
//! MULTI is sent `PING <marker>` and read up to its answer, so each step's replies and
//! each connection's pushes (RESP2 message arrays, RESP3 `>` frames) are compared in order
//! without waiting on the clock; inside MULTI (where that PING would be queued) the reply
//! is the one frame read. A read that times out fails the case. One server pair serves all
//! cases, emptied (and its password cleared) between them. A mismatch shrinks to a minimal
//! sequence and prints it with every connection's frames at every step.
//!
//! `LOCKSIM_DIFF_CASES` sets the number of sequences (default [`DEFAULT_CASES`], sized for
//! CI; a bigger run: `LOCKSIM_DIFF_CASES=5000 cargo test --locked --test
//! redis_differential`); `LOCKSIM_DIFF_SEED` the generator's seed.

use crate::support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestRunner};
use support::differential::{in_one_order, same_transcripts_on_real_and_fake};
use support::resp::{RespClient, Value, encode};
use support::{FakeServer, RedisServer};

const DEFAULT_CASES: u32 = 256;
const DEFAULT_SEED: u64 = 7;

/// Two PTTL readings of the same key on the two servers may differ by this much: the
/// servers set and read it a few moments apart, on a loaded machine.
const PTTL_TOLERANCE_MS: i64 = 1000;

/// How far (in seconds) a TIME reply may be from the test's clock.
const CLOCK_TOLERANCE_S: i64 = 2;

/// One word of a request; absolute times are computed when the request is sent.
#[derive(Debug, Clone)]
enum Word {
    Text(String),
    /// Unix time in milliseconds, this far from now.
    UnixMsFromNow(i64),
    /// Unix time in seconds, this far (in ms) from now.
    UnixSecondsFromNow(i64),
    /// The CLIENT ID of the case's connection in this slot, on the server it is sent to.
    ClientId(usize),
}

/// How two replies must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Exact,
    /// A TTL reply: within one second.
    Seconds,
    /// A PTTL reply: within [`PTTL_TOLERANCE_MS`].
    Millis,
    /// The same elements in any order (KEYS, and the keys of SCAN): arrays of bulk strings
    /// are compared sorted.
    Unordered,
    /// DBSIZE counts keys whose time has passed until expiry deletes them, which a real
    /// server does at moments of its own: first touch every key (EXISTS deletes the
    /// expired ones), then compare exactly.
    KeyCount,
}

/// Every key the sequences use (hash, list and sorted-set commands favour `h`, `l`, `z`).
const KEYS: [&str; 7] = ["k1", "k2", "lock", "n", "h", "l", "z"];

/// Connections per case, on each server.
const CONNECTIONS: usize = 3;

/// Pub/sub channels and patterns the sequences use.
const CHANNELS: [&str; 3] = ["c1", "c2", "lock-signal"];
const PATTERNS: [&str; 3] = ["c*", "c?", "x*"];

/// The argument of the `PING` that closes each connection's frames of a step: its answer
/// (`$` it, or RESP2 subscribed mode's `["pong", it]`) is no other request's reply.
const SYNC_MARKER: &str = "locksim-differential-sync";

#[derive(Debug, Clone)]
enum Step {
    /// A request on connection `conn`, sent as multibulk or, when `inline` and the words
    /// allow it, as an inline line.
    Request {
        conn: usize,
        words: Vec<Word>,
        inline: bool,
        check: Check,
    },
    /// A blocking pop on `waiter` that another connection's push may serve: the pop is
    /// sent, the test waits until the server has it blocked (or answered), then `pusher`
    /// sends `push`, and the waiter's reply is read.
    BlockedPop {
        waiter: usize,
        pop: Vec<Word>,
        pusher: usize,
        push: Vec<Word>,
    },
    /// Requests that set expiries short enough to run out ([`SHORT_TTL_MS`]), each on its
    /// connection, then a pause of `sleep_ms` (both servers run in real time) after which
    /// every such key has expired on both: no step reads a key while its time is running
    /// out. A request on a connection inside MULTI (where it would run at EXEC, later) is
    /// left out, on both servers.
    ExpireSoon {
        requests: Vec<(usize, Vec<Word>)>,
        sleep_ms: u64,
    },
    /// Connection `conn` closes and a new one takes its place (a client reconnecting: in
    /// RESP2, database 0, and not authenticated when the server has a `requirepass`).
    Reconnect { conn: usize },
    /// Raw bytes after which both servers close the connection (QUIT, a protocol error).
    Last(Vec<u8>),
}

/// The longest TTL an [`Step::ExpireSoon`] sets, in ms, and the shortest pause after it:
/// the margin (at least 80 ms) covers a loaded machine's delay between the two servers'
/// requests and the pause. Every other expiry is at least 5 s away.
const SHORT_TTL_MS: i64 = 20;
const EXPIRY_PAUSE_MS: std::ops::RangeInclusive<u64> = 100..=200;

/// How long a generated [`Step::BlockedPop`] blocks when no push serves it, in seconds.
const BLOCKED_POP_TIMEOUT: &str = "0.1";

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

impl Word {
    /// The word as sent to a server whose connections in each slot have the CLIENT IDs
    /// `slot_ids`.
    fn bytes(&self, slot_ids: &[u64]) -> Vec<u8> {
        match self {
            Word::Text(text) => text.clone().into_bytes(),
            Word::ClientId(slot) => slot_ids[*slot].to_string().into_bytes(),
            Word::UnixMsFromNow(offset) => (now_ms() + offset).to_string().into_bytes(),
            Word::UnixSecondsFromNow(offset) => ((now_ms() + offset) / 1000).to_string().into_bytes(),
        }
    }
}

/// Words as a mismatch report shows them.
fn shown(words: &[Word]) -> String {
    let shown: Vec<String> = words
        .iter()
        .map(|w| match w {
            Word::Text(text) => format!("{text:?}"),
            Word::UnixMsFromNow(o) => format!("<now{o:+}ms>"),
            Word::UnixSecondsFromNow(o) => format!("<now{o:+}ms in s>"),
            Word::ClientId(slot) => format!("<id of c{slot}>"),
        })
        .collect();
    shown.join(" ")
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Request {
                conn, words, inline, ..
            } => write!(
                f,
                "c{conn}: {}{}",
                if *inline { "inline " } else { "" },
                shown(words)
            ),
            Step::BlockedPop {
                waiter,
                pop,
                pusher,
                push,
            } => write!(
                f,
                "c{waiter} blocks: {}, then c{pusher}: {}",
                shown(pop),
                shown(push)
            ),
            Step::ExpireSoon { requests, sleep_ms } => {
                for (conn, words) in requests {
                    write!(f, "c{conn}: {}; ", shown(words))?;
                }
                write!(f, "then {sleep_ms} ms pass")
            }
            Step::Reconnect { conn } => write!(f, "c{conn} reconnects"),
            Step::Last(bytes) => write!(f, "raw {:?}", String::from_utf8_lossy(bytes)),
        }
    }
}

/// Scripts the sequences run: the lock client's and others covering conversions, errors,
/// pcall, globals, randomness. (A script raising an empty table crashes redis-server
/// 7.0.15, so none does.)
const SCRIPTS: &[&str] = &[
    locksim::client::scripts::RELEASE,
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#,
    "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
    "return redis.call('get', KEYS[1])",
    "return redis.call('incr', KEYS[1])",
    "return redis.pcall('incr', KEYS[1])",
    "return redis.call('exists', KEYS[1], KEYS[2])",
    "return redis.call('del', KEYS[1])",
    "return redis.call('type', KEYS[1])",
    "return redis.call('set', KEYS[1], 3.7)",
    "return {1,2,nil,3}",
    "return {1,{2,'x',{ok='s'}},true,false}",
    "return {1.9, -1.9, 1e20}",
    "return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
    "return tostring(1/3)",
    "return",
    "return {ok='a', err='b'}",
    "error('boom')",
    "error({err='MY boom'})",
    "return redis.error_reply('MY boom')",
    "return redis.error_reply('boom')",
    "return redis.status_reply('fine')",
    "return redis.status_reply(1)",
    "return x",
    "x = 1",
    "return os",
    "return redis.call('nosuch', 'a')",
    "return redis.call('get')",
    "return redis.call('get', nil)",
    "return redis.call()",
    "return redis.call('eval', 'return 1', 0)",
    "\nreturn redis.call('set', KEYS[1], 'v', 'PX', '0')",
    "local ok, e = pcall(redis.call, 'get', 'a', 'b') return e",
    "local ok, e = pcall(error, {err='X y'}) return e",
    "return redis.pcall('set', 'k1', 'v', 'bogus')",
    "return math.random(100)",
    "return tostring(math.random())",
    "return redis.sha1hex(ARGV[1] or '')",
    "syntax error here",
    "return {redis.replicate_commands(), redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, redis.REPL_ALL}",
    "return {type(unpack), type(loadstring), type(setmetatable), type(_G)}",
    "return type(print)",
    "return type(getfenv)",
    "return redis.log(redis.LOG_WARNING, 'x')",
    "return nil + 1",
    "local t = nil\nreturn t.x",
    "return {string.format('%d|%5.2f|%s', 3, 1/3, 'x'), table.concat({1, 2}, ','), tonumber('0x10')}",
    "return {math.floor(3.7), math.max(1, 5), string.len(ARGV[1] or ''), ('x'):rep(3)}",
    "return redis.call('ping')",
    "return redis.call('echo', KEYS[1])",
    "return redis.call('ttl', 'nokey')",
    "return redis.call('select', 0)",
    "return pcall(error)",
    "return select('#', redis.call('get', 'nokey'))",
    "return redis.call('zadd', KEYS[1], 1.5, 'a', 2, 'b')",
    "return redis.call('zadd', KEYS[1], 'INCR', 0.1, 'a')",
    "return redis.call('zrange', KEYS[1], 0, -1, 'WITHSCORES')",
    "return redis.call('zscore', KEYS[1], 'a')",
    "return redis.call('zremrangebyscore', KEYS[1], '-inf', 1)",
    "return redis.call('hset', KEYS[1], 'f', 1, 'g', 2)",
    "return redis.call('hincrby', KEYS[1], 'f', 5)",
    "return redis.call('hgetall', KEYS[1])",
    "return redis.call('hexists', KEYS[1], 'f')",
    "return redis.call('rpush', KEYS[1], 'x', 'y')",
    "return redis.call('blpop', KEYS[1], 0)",
    "return redis.pcall('brpop', KEYS[1], 1)",
    "return redis.call('lpop', KEYS[1], 5)",
    "return redis.call('lrange', KEYS[1], 0, -1)",
    "redis.call('select', 1) redis.call('set', KEYS[1], 'in1') return redis.call('get', KEYS[1])",
    "return redis.call('getdel', KEYS[1])",
    "return redis.call('mget', KEYS[1], 'k2')",
    "return redis.call('type', KEYS[1])",
    // KEYS answers in the order of Redis's dict, random per process: sorted here.
    "local keys = redis.call('keys', '*') table.sort(keys) return keys",
    "return redis.call('publish', 'c1', ARGV[1] or 'm')",
    "return redis.call('time')",
    "return redis.call('dbsize')",
    "return redis.call('flushdb')",
    "return redis.call('swapdb', 0, 1)",
    "return redis.call('setex', KEYS[1], 100, 'v')",
    "return redis.call('getex', KEYS[1], 'PERSIST')",
    "return redis.call('incrby', KEYS[1], 2) + redis.call('decrby', KEYS[1], 1)",
    "return redis.call('append', KEYS[1], 'x')",
    "return {redis.call('hlen', KEYS[1]), redis.call('hkeys', KEYS[1])}",
    "return redis.call('hdel', KEYS[1], 'f', 'g')",
    "return {redis.call('zrank', KEYS[1], 'a'), redis.call('zcount', KEYS[1], '-inf', '+inf')}",
    "return redis.call('zrevrange', KEYS[1], 0, -1, 'WITHSCORES')",
    "return redis.call('zincrby', KEYS[1], 2.5, 'a')",
    "return redis.call('zrangebyscore', KEYS[1], '(1', '+inf', 'LIMIT', 0, 1)",
    "return {redis.call('lindex', KEYS[1], -1), redis.call('llen', KEYS[1]), redis.call('lrem', KEYS[1], 0, 'x')}",
    "return redis.call('ltrim', KEYS[1], 0, 0)",
    "return redis.call('rename', KEYS[1], KEYS[2])",
    "return redis.call('multi')",
    "return redis.call('subscribe', 'c1')",
    "return redis.pcall('expire', KEYS[1], 100, 'GT')",
    "return redis.call('pubsub', 'numsub', 'c1')",
    // Errors counted once where they arise (INFO errorstats), or when they reach the client.
    "redis.pcall('incr', KEYS[1]) return 1",
    "return {1, redis.pcall('incr', KEYS[1]), redis.error_reply('IN array')}",
    "local e = redis.pcall('incr', KEYS[1]) if type(e) == 'table' then e.ignore_error_stats_update = false end return e",
    "redis.pcall() return redis.pcall('get', {})",
    "return redis.error_reply('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b')",
    // python-redis-lock's release script
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 1 else redis.call('del', KEYS[2]) redis.call('lpush', KEYS[2], 1) redis.call('pexpire', KEYS[2], 1000) redis.call('del', KEYS[1]) return 0 end",
    // redis-semaphore's Semaphore acquire script (the client's clock as ARGV[4])
    "local key, limit, identifier, lockTimeout, now = KEYS[1], tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]) redis.call('zremrangebyscore', key, '-inf', now - lockTimeout) if redis.call('zcard', key) < limit then redis.call('zadd', key, now, identifier) redis.call('pexpire', key, lockTimeout) return 1 else return 0 end",
];

fn text(s: &str) -> Word {
    Word::Text(s.to_string())
}

fn key() -> impl Strategy<Value = Word> {
    select(KEYS.to_vec()).prop_map(text)
}

fn value() -> impl Strategy<Value = Word> {
    select(vec![
        "v",
        "1",
        "-5",
        "0",
        "9223372036854775807",
        "01",
        "token-1",
        "x y",
    ])
    .prop_map(text)
}

/// Relative times: long enough that no key expires within a case, or already past, or
/// out of range, or not a number.
fn relative_time() -> impl Strategy<Value = Word> {
    prop_oneof![
        4 => (5_000i64..100_000).prop_map(|n| Word::Text(n.to_string())),
        1 => select(vec!["0", "-1", "-5000", "x", "9223372036854775807", "9223372036854775", "92233720368547758"])
            .prop_map(text),
    ]
}

/// Absolute times in ms or s: in the future, in the past, or huge.
fn absolute_time(seconds: bool) -> impl Strategy<Value = Word> {
    prop_oneof![
        3 => (5_000i64..100_000).prop_map(move |o| if seconds { Word::UnixSecondsFromNow(o) } else { Word::UnixMsFromNow(o) }),
        1 => (-100_000i64..-2_000).prop_map(move |o| if seconds { Word::UnixSecondsFromNow(o) } else { Word::UnixMsFromNow(o) }),
        1 => select(vec!["1", "0", "-1", "9223372036854775807", "x"]).prop_map(text),
    ]
}

fn words(parts: Vec<Vec<Word>>) -> Vec<Word> {
    parts.into_iter().flatten().collect()
}

fn set_options() -> impl Strategy<Value = Vec<Word>> {
    let option = prop_oneof![
        select(vec!["NX", "XX", "nx", "KEEPTTL", "GET", "bogus"]).prop_map(|o| vec![text(o)]),
        (select(vec!["EX", "PX", "px"]), relative_time()).prop_map(|(o, t)| vec![text(o), t]),
        absolute_time(false).prop_map(|t| vec![text("PXAT"), t]),
        absolute_time(true).prop_map(|t| vec![text("EXAT"), t]),
        Just(vec![text("EX")]),
    ];
    prop::collection::vec(option, 0..3).prop_map(words)
}

fn expire_flags() -> impl Strategy<Value = Vec<Word>> {
    prop::collection::vec(
        select(vec!["NX", "XX", "GT", "LT", "gt", "bogus"]).prop_map(text),
        0..3,
    )
}

/// EVAL or EVALSHA of a known script (or an unknown SHA), with 0–2 keys and 0–2 arguments,
/// or a bad key count.
fn script_call() -> impl Strategy<Value = Vec<Word>> {
    let numkeys = prop_oneof![
        8 => (0usize..=2).prop_map(|n| n.to_string()),
        1 => select(vec!["-1", "3", "x"]).prop_map(str::to_string),
    ];
    (
        any::<bool>(),
        select(SCRIPTS.to_vec()),
        numkeys,
        prop::collection::vec(key(), 2),
        // No small positive numbers: a script could use one as a TTL that runs out between
        // the two servers' replies.
        prop::collection::vec(
            prop_oneof![
                select(vec!["token-1", "v", "x y", "-5"]).prop_map(text),
                relative_time()
            ],
            0..=2,
        ),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(by_sha, script, numkeys, keys, args, unknown)| {
            let (command, first) = match (by_sha, unknown) {
                (false, _) => ("EVAL", script.to_string()),
                (true, false) => ("EVALSHA", sha1_smol::Sha1::from(script).digest().to_string()),
                (true, true) => ("EVALSHA", "0000000000000000000000000000000000000000".to_string()),
            };
            let key_count = numkeys.parse::<usize>().map_or(0, |n| n.min(2));
            let mut request = vec![text(command), Word::Text(first), Word::Text(numkeys)];
            request.extend(keys.into_iter().take(key_count));
            request.extend(args);
            request
        })
}

/// Hash, list and sorted-set requests, on their own keys and on the others (WRONGTYPE).
fn typed_request() -> impl Strategy<Value = Vec<Word>> {
    let member = || select(vec!["a", "b", "c", "x y"]).prop_map(text);
    let score = || {
        select(vec![
            "1", "1.5", "-2", "0.1", "0", "3", "inf", "-inf", "+inf", "1e3", "x", "nan", "2.5e-5",
        ])
        .prop_map(text)
    };
    let bound = || {
        select(vec![
            "-inf", "+inf", "0", "1", "(1", "1.5", "(3", "-2", "x", "(", "inf",
        ])
        .prop_map(text)
    };
    let index = || select(vec!["0", "1", "-1", "2", "-3", "10", "-10", "x"]).prop_map(text);
    let field = || select(vec!["f", "g", "h"]).prop_map(text);
    let zadd_flags = prop::collection::vec(
        select(vec!["NX", "XX", "GT", "LT", "CH", "INCR", "ch"]).prop_map(text),
        0..3,
    );
    let zrange_options = prop::collection::vec(
        prop_oneof![
            select(vec!["WITHSCORES", "REV", "BYSCORE", "withscores", "bogus"]).prop_map(|o| vec![text(o)]),
            (
                select(vec!["0", "1", "-1", "x"]),
                select(vec!["1", "2", "-1", "0"])
            )
                .prop_map(|(o, c)| vec![text("LIMIT"), text(o), text(c)]),
        ],
        0..3,
    )
    .prop_map(words);
    prop_oneof![
        3 => (key(), prop::collection::vec((field(), value()), 1..3))
            .prop_map(|(k, p)| words(vec![vec![text("HSET"), k], p.into_iter().flat_map(|(f, v)| [f, v]).collect()])),
        1 => key().prop_map(|k| vec![text("HSET"), k, text("f")]),
        2 => (key(), field()).prop_map(|(k, f)| vec![text("HGET"), k, f]),
        1 => (key(), prop::collection::vec(field(), 1..3)).prop_map(|(k, f)| words(vec![vec![text("HDEL"), k], f])),
        1 => (key(), field()).prop_map(|(k, f)| vec![text("HEXISTS"), k, f]),
        2 => (key(), field(), value()).prop_map(|(k, f, n)| vec![text("HINCRBY"), k, f, n]),
        1 => (select(vec!["HLEN", "HKEYS", "HGETALL"]), key()).prop_map(|(c, k)| vec![text(c), k]),
        3 => (key(), zadd_flags, prop::collection::vec((score(), member()), 1..3))
            .prop_map(|(k, f, p)| words(vec![vec![text("ZADD"), k], f, p.into_iter().flat_map(|(s, m)| [s, m]).collect()])),
        1 => (key(), score(), member()).prop_map(|(k, s, m)| vec![text("ZINCRBY"), k, s, m]),
        2 => (select(vec!["ZSCORE", "ZRANK"]), key(), member()).prop_map(|(c, k, m)| vec![text(c), k, m]),
        1 => (key(), prop::collection::vec(member(), 1..3)).prop_map(|(k, m)| words(vec![vec![text("ZREM"), k], m])),
        1 => key().prop_map(|k| vec![text("ZCARD"), k]),
        2 => (select(vec!["ZCOUNT", "ZREMRANGEBYSCORE"]), key(), bound(), bound())
            .prop_map(|(c, k, a, b)| vec![text(c), k, a, b]),
        3 => (key(), prop_oneof![index(), bound()], prop_oneof![index(), bound()], zrange_options.clone())
            .prop_map(|(k, a, b, o)| words(vec![vec![text("ZRANGE"), k, a, b], o])),
        1 => (key(), index(), index(), prop::option::of(Just(text("WITHSCORES"))))
            .prop_map(|(k, a, b, w)| words(vec![vec![text("ZREVRANGE"), k, a, b], w.into_iter().collect()])),
        2 => (key(), bound(), bound(), zrange_options)
            .prop_map(|(k, a, b, o)| words(vec![vec![text("ZRANGEBYSCORE"), k, a, b], o])),
        3 => (select(vec!["LPUSH", "RPUSH"]), key(), prop::collection::vec(member(), 1..4))
            .prop_map(|(c, k, m)| words(vec![vec![text(c), k], m])),
        2 => (select(vec!["LPOP", "RPOP"]), key(), prop::option::of(select(vec!["0", "1", "2", "5", "-1", "x"])))
            .prop_map(|(c, k, n)| words(vec![vec![text(c), k], n.into_iter().map(text).collect()])),
        1 => (key(), index()).prop_map(|(k, i)| vec![text("LINDEX"), k, i]),
        2 => (select(vec!["LRANGE", "LTRIM"]), key(), index(), index()).prop_map(|(c, k, a, b)| vec![text(c), k, a, b]),
        1 => (key(), select(vec!["0", "1", "-1", "2", "x"]), member()).prop_map(|(k, n, m)| vec![text("LREM"), k, text(n), m]),
        1 => key().prop_map(|k| vec![text("LLEN"), k]),
        1 => (select(vec!["BLPOP", "BRPOP"]), prop::collection::vec(key(), 1..3), select(vec!["0.01", "0.05", "0.0001", "x", "-1"]))
            .prop_map(|(c, k, t)| words(vec![vec![text(c)], k, vec![text(t)]])),
    ]
}

/// A GETRANGE offset: from the start, from the end, past either end, or not a number.
fn offset() -> impl Strategy<Value = Word> {
    select(vec![
        "0",
        "1",
        "2",
        "-1",
        "-2",
        "-3",
        "5",
        "100",
        "-100",
        "9223372036854775807",
        "-9223372036854775808",
        "x",
        "1.5",
    ])
    .prop_map(text)
}

/// String, key and database requests beyond the lock's.
fn more_request() -> impl Strategy<Value = (Vec<Word>, Check)> {
    let exact = |s: BoxedStrategy<Vec<Word>>| s.prop_map(|w| (w, Check::Exact));
    let database = || select(vec!["0", "1", "15", "16", "-1", "x"]).prop_map(text);
    prop_oneof![
        2 => exact((select(vec!["SETEX", "PSETEX"]), key(), relative_time(), value())
            .prop_map(|(c, k, t, v)| vec![text(c), k, t, v]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("GETDEL"), k]).boxed()),
        2 => exact((key(), prop::collection::vec(prop_oneof![
                select(vec!["PERSIST", "bogus"]).prop_map(|o| vec![text(o)]),
                (select(vec!["EX", "PX"]), relative_time()).prop_map(|(o, t)| vec![text(o), t]),
                absolute_time(false).prop_map(|t| vec![text("PXAT"), t]),
                absolute_time(true).prop_map(|t| vec![text("EXAT"), t]),
            ], 0..3))
            .prop_map(|(k, o)| words(vec![vec![text("GETEX"), k], o.into_iter().flatten().collect()])).boxed()),
        1 => exact(key().prop_map(|k| vec![text("DECR"), k]).boxed()),
        1 => exact((key(), value()).prop_map(|(k, n)| vec![text("DECRBY"), k, n]).boxed()),
        1 => exact(prop::collection::vec(key(), 1..4).prop_map(|k| words(vec![vec![text("MGET")], k])).boxed()),
        2 => exact((select(vec!["MSET", "MSETNX"]), prop::collection::vec((key(), value()), 1..3), any::<bool>())
            .prop_map(|(c, p, odd)| {
                let mut w = vec![text(c)];
                w.extend(p.into_iter().flat_map(|(k, v)| [k, v]));
                if odd { w.pop(); }
                w
            }).boxed()),
        1 => exact((key(), value()).prop_map(|(k, v)| vec![text("APPEND"), k, v]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("STRLEN"), k]).boxed()),
        2 => exact((key(), offset(), offset()).prop_map(|(k, a, b)| vec![text("GETRANGE"), k, a, b]).boxed()),
        1 => exact(prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("UNLINK")], k])).boxed()),
        1 => select(vec!["*", "k*", "?", "[hl]", "*o*", "[^k]*", "\\*"]).prop_map(|p| (vec![text("KEYS"), text(p)], Check::Unordered)),
        2 => prop::collection::vec(prop_oneof![
                select(vec!["*", "k*", "[hlz]"]).prop_map(|p| vec![text("MATCH"), text(p)]),
                select(vec!["string", "hash", "list", "zset", "none"]).prop_map(|t| vec![text("TYPE"), text(t)]),
                select(vec!["100", "0", "x"]).prop_map(|c| vec![text("COUNT"), text(c)]),
            ], 0..3)
            .prop_map(|o| (words(vec![vec![text("SCAN"), text("0")], o.into_iter().flatten().collect()]), Check::Unordered)),
        1 => exact(select(vec!["x", " 1", "1x"]).prop_map(|c| vec![text("SCAN"), text(c)]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("TYPE"), k]).boxed()),
        2 => exact((key(), key()).prop_map(|(a, b)| vec![text("RENAME"), a, b]).boxed()),
        3 => exact(database().prop_map(|d| vec![text("SELECT"), d]).boxed()),
        1 => exact((database(), database()).prop_map(|(a, b)| vec![text("SWAPDB"), a, b]).boxed()),
        1 => exact(select(vec![vec!["FLUSHDB"], vec!["FLUSHDB", "ASYNC"], vec!["FLUSHDB", "x"]])
            .prop_map(|w| w.into_iter().map(text).collect()).boxed()),
        6 => exact(typed_request().boxed()),
    ]
}

/// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB, on a few channels.
fn pubsub_request() -> impl Strategy<Value = Vec<Word>> {
    let channels = |min| prop::collection::vec(select(CHANNELS.to_vec()).prop_map(text), min..3);
    let patterns = |min| prop::collection::vec(select(PATTERNS.to_vec()).prop_map(text), min..3);
    prop_oneof![
        3 => channels(1).prop_map(|c| words(vec![vec![text("SUBSCRIBE")], c])),
        2 => channels(0).prop_map(|c| words(vec![vec![text("UNSUBSCRIBE")], c])),
        2 => patterns(1).prop_map(|p| words(vec![vec![text("PSUBSCRIBE")], p])),
        1 => patterns(0).prop_map(|p| words(vec![vec![text("PUNSUBSCRIBE")], p])),
        5 => (select(CHANNELS.to_vec()), value()).prop_map(|(c, v)| vec![text("PUBLISH"), text(c), v]),
        1 => select(vec![
            vec!["PUBLISH", "c1"], vec!["SUBSCRIBE"], vec!["PSUBSCRIBE"], vec!["PUBSUB", "NUMPAT"],
            vec!["PUBSUB", "NUMSUB", "c1", "c2"],
        ])
        .prop_map(|w| w.into_iter().map(text).collect()),
    ]
}

/// MULTI, EXEC, DISCARD, WATCH and UNWATCH (queued errors come from the other requests:
/// unknown commands and wrong arities inside MULTI).
fn transaction_request() -> impl Strategy<Value = Vec<Word>> {
    prop_oneof![
        4 => Just(vec![text("MULTI")]),
        3 => Just(vec![text("EXEC")]),
        1 => Just(vec![text("DISCARD")]),
        3 => prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("WATCH")], k])),
        1 => Just(vec![text("UNWATCH")]),
        1 => select(vec![vec!["MULTI", "x"], vec!["EXEC", "x"], vec!["WATCH"]])
            .prop_map(|w| w.into_iter().map(text).collect()),
    ]
}

/// CLIENT on the case's own connections: names, ids, INFO and LIST (compared through
/// [`Connections::normalised`]), KILL by the ID of one of them, and bad arguments.
fn client_request() -> impl Strategy<Value = Vec<Word>> {
    let slot = || (0..CONNECTIONS).prop_map(Word::ClientId);
    prop_oneof![
        4 => select(vec![
            vec!["CLIENT", "ID"], vec!["CLIENT", "INFO"], vec!["CLIENT", "LIST"], vec!["CLIENT", "GETNAME"],
            vec!["CLIENT", "LIST", "TYPE", "normal"], vec!["CLIENT", "LIST", "TYPE", "pubsub"],
            vec!["CLIENT", "LIST", "TYPE", "bogus"], vec!["CLIENT", "SETNAME", "me"], vec!["CLIENT", "SETNAME", ""],
            vec!["CLIENT", "SETNAME", "a b"], vec!["CLIENT", "ID", "x"], vec!["CLIENT", "INFO", "x"],
            vec!["CLIENT", "KILL", "1.2.3.4:5"], vec!["CLIENT", "KILL", "ADDR", "1.2.3.4:5"],
            vec!["CLIENT", "KILL", "ID", "0"], vec!["CLIENT", "KILL", "ID", "x"], vec!["CLIENT", "KILL", "TYPE", "bogus"],
            vec!["CLIENT", "KILL", "ID", "99999999"], vec!["CLIENT", "KILL", "ID"],
        ])
        .prop_map(|w| w.into_iter().map(text).collect()),
        1 => prop::collection::vec(slot(), 1..3)
            .prop_map(|ids| words(vec![vec![text("CLIENT"), text("LIST"), text("ID")], ids])),
        1 => (slot(), select(vec![vec![], vec!["SKIPME", "no"], vec!["SKIPME", "yes"]]))
            .prop_map(|(id, o)| words(vec![vec![text("CLIENT"), text("KILL"), text("ID"), id], o.into_iter().map(text).collect()])),
    ]
}

/// INFO of the sections the fake node models, of several, of none, and of an unknown one.
fn info_request() -> impl Strategy<Value = Vec<Word>> {
    select(vec![
        vec!["INFO"],
        vec!["INFO", "default"],
        vec!["INFO", "server"],
        vec!["INFO", "clients"],
        vec!["INFO", "memory"],
        vec!["INFO", "persistence"],
        vec!["INFO", "stats"],
        vec!["INFO", "replication"],
        vec!["INFO", "cpu"],
        vec!["INFO", "modules"],
        vec!["INFO", "errorstats"],
        vec!["INFO", "commandstats"],
        vec!["INFO", "latencystats"],
        vec!["INFO", "all"],
        vec!["INFO", "everything"],
        vec!["INFO", "cluster"],
        vec!["INFO", "keyspace"],
        vec!["INFO", "KEYSPACE"],
        vec!["INFO", "keyspace", "replication"],
        vec!["INFO", "bogus"],
    ])
    .prop_map(|w| w.into_iter().map(text).collect())
}

/// COMMAND COUNT, and COMMAND INFO and DOCS of names in the fake node's table (and one
/// that is in no table); not of every command (without names), which only the fake
/// node's table lists.
fn command_request() -> impl Strategy<Value = Vec<Word>> {
    let name = select(vec![
        "get",
        "set",
        "eval",
        "client",
        "config",
        "hset",
        "zadd",
        "blpop",
        "GET",
        "info",
        "subscribe",
        "nosuch",
    ])
    .prop_map(text);
    prop_oneof![
        1 => select(vec![vec!["COMMAND", "COUNT"], vec!["COMMAND", "INFO", "nosuch"], vec!["COMMAND", "DOCS", "nosuch"]])
            .prop_map(|w| w.into_iter().map(text).collect()),
        3 => (select(vec!["INFO", "DOCS"]), prop::collection::vec(name, 1..3))
            .prop_map(|(sub, names)| words(vec![vec![text("COMMAND"), text(sub)], names])),
    ]
}

/// The password the sequences set as `requirepass`.
const PASSWORD: &str = "pw";

/// `requirepass` set and cleared, AUTH and HELLO AUTH with the right and wrong passwords
/// and users.
fn auth_request() -> impl Strategy<Value = Vec<Word>> {
    select(vec![
        vec!["CONFIG", "SET", "requirepass", PASSWORD],
        vec!["CONFIG", "SET", "requirepass", ""],
        vec!["CONFIG", "GET", "requirepass"],
        vec!["AUTH", PASSWORD],
        vec!["AUTH", "wrong"],
        vec!["AUTH", "default", PASSWORD],
        vec!["AUTH", "default", "wrong"],
        vec!["AUTH", "bob", PASSWORD],
        vec!["AUTH", "a", "b", "c"],
        vec!["HELLO", "3", "AUTH", "default", PASSWORD],
        vec!["HELLO", "2", "AUTH", "default", PASSWORD],
        vec!["HELLO", "3", "AUTH", "default", "wrong"],
        vec!["HELLO", "2", "AUTH", "bob", PASSWORD],
        vec!["HELLO", "3", "AUTH", "default"],
    ])
    .prop_map(|w| w.into_iter().map(text).collect())
}

/// Requests that set the expiry of `key` [`SHORT_TTL_MS`] or less away (see
/// [`Step::ExpireSoon`]).
fn short_expiry_request(key: &'static str) -> impl Strategy<Value = Vec<Word>> {
    let ttl = || (1..=SHORT_TTL_MS).prop_map(|n| Word::Text(n.to_string()));
    let k = move || text(key);
    prop_oneof![
        3 => (value(), ttl(), select(vec![vec![], vec!["NX"], vec!["XX"], vec!["GET"]]))
            .prop_map(move |(v, t, o)| words(vec![vec![text("SET"), k(), v, text("PX"), t], o.into_iter().map(text).collect()])),
        1 => (value(), 1..=SHORT_TTL_MS)
            .prop_map(move |(v, t)| vec![text("SET"), k(), v, text("PXAT"), Word::UnixMsFromNow(t)]),
        1 => (ttl(), value()).prop_map(move |(t, v)| vec![text("PSETEX"), k(), t, v]),
        3 => (ttl(), expire_flags()).prop_map(move |(t, f)| words(vec![vec![text("PEXPIRE"), k(), t], f])),
        1 => (1..=SHORT_TTL_MS).prop_map(move |t| vec![text("PEXPIREAT"), k(), Word::UnixMsFromNow(t)]),
        2 => ttl().prop_map(move |t| vec![text("GETEX"), k(), text("PX"), t]),
        1 => (value(), ttl()).prop_map(move |(v, t)| {
            let script = "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])";
            vec![text("EVAL"), text(script), text("1"), k(), v, t]
        }),
    ]
}

/// One or two requests giving different keys short expiries (no request touches a key
/// another gave a time that may not have run out yet), then the pause.
fn expire_soon() -> impl Strategy<Value = Step> {
    (
        prop::sample::subsequence(KEYS.to_vec(), 1..=2).prop_flat_map(|keys| {
            keys.into_iter()
                .map(|key| (0..CONNECTIONS, short_expiry_request(key)))
                .collect::<Vec<_>>()
        }),
        EXPIRY_PAUSE_MS,
    )
        .prop_map(|(requests, sleep_ms)| Step::ExpireSoon { requests, sleep_ms })
}

fn request() -> impl Strategy<Value = (Vec<Word>, Check)> {
    let exact = |s: BoxedStrategy<Vec<Word>>| s.prop_map(|w| (w, Check::Exact));
    prop_oneof![
        4 => exact(pubsub_request().boxed()),
        // Redis lists channels in its dict's order.
        1 => select(vec![vec!["PUBSUB", "CHANNELS"], vec!["PUBSUB", "CHANNELS", "c?"]])
            .prop_map(|w| (w.into_iter().map(text).collect(), Check::Unordered)),
        4 => exact(transaction_request().boxed()),
        6 => exact((key(), value(), set_options()).prop_map(|(k, v, o)| words(vec![vec![text("SET"), k, v], o])).boxed()),
        3 => exact(key().prop_map(|k| vec![text("GET"), k]).boxed()),
        1 => exact((key(), value()).prop_map(|(k, v)| vec![text("SETNX"), k, v]).boxed()),
        2 => exact(prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("DEL")], k])).boxed()),
        2 => exact(prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("EXISTS")], k])).boxed()),
        2 => exact(key().prop_map(|k| vec![text("INCR"), k]).boxed()),
        1 => exact((key(), value()).prop_map(|(k, n)| vec![text("INCRBY"), k, n]).boxed()),
        2 => exact((select(vec!["EXPIRE", "PEXPIRE", "pexpire"]), key(), relative_time(), expire_flags())
            .prop_map(|(c, k, t, f)| words(vec![vec![text(c), k, t], f])).boxed()),
        1 => exact((key(), absolute_time(false), expire_flags())
            .prop_map(|(k, t, f)| words(vec![vec![text("PEXPIREAT"), k, t], f])).boxed()),
        1 => exact((key(), absolute_time(true), expire_flags())
            .prop_map(|(k, t, f)| words(vec![vec![text("EXPIREAT"), k, t], f])).boxed()),
        2 => key().prop_map(|k| (vec![text("PTTL"), k], Check::Millis)),
        1 => key().prop_map(|k| (vec![text("TTL"), k], Check::Seconds)),
        1 => exact(key().prop_map(|k| vec![text("PERSIST"), k]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("TYPE"), k]).boxed()),
        1 => Just((vec![text("DBSIZE")], Check::KeyCount)),
        5 => exact(script_call().boxed()),
        1 => exact(select(SCRIPTS.to_vec()).prop_map(|s| vec![text("SCRIPT"), text("LOAD"), text(s)]).boxed()),
        1 => exact(select(SCRIPTS.to_vec())
            .prop_map(|s| vec![text("SCRIPT"), text("EXISTS"), Word::Text(sha1_smol::Sha1::from(s).digest().to_string())])
            .boxed()),
        10 => more_request(),
        3 => exact(client_request().boxed()),
        2 => exact(info_request().boxed()),
        1 => exact(command_request().boxed()),
        2 => exact(auth_request().boxed()),
        1 => Just((vec![text("TIME")], Check::Exact)),
        2 => exact(select(vec![
            vec!["RESET"], vec!["RESET", "x"], vec!["FLUSHALL"], vec!["FLUSHALL", "ASYNC"], vec!["FLUSHALL", "sync"],
            vec!["FLUSHDB", "SYNC"], vec!["SCRIPT", "FLUSH"], vec!["SCRIPT", "FLUSH", "ASYNC"], vec!["SCRIPT", "FLUSH", "SYNC"],
            vec!["ROLE"], vec!["ROLE", "x"], vec!["TIME", "x"], vec!["CONFIG", "GET", "maxmemory"],
            vec!["CONFIG", "GET", "databases"], vec!["CONFIG", "GET", "appendonly"], vec!["CONFIG", "GET", "nosuch"],
            vec!["CONFIG", "GET", "min-replicas-to-write"], vec!["CONFIG", "GET", "maxmemory-policy"],
            vec!["CONFIG", "SET", "nosuch", "1"], vec!["CONFIG", "SET", "hz", "x"], vec!["CONFIG", "bogus"],
            vec!["CONFIG", "RESETSTAT"], vec!["CONFIG", "RESETSTAT", "x"],
            vec!["CONFIG"], vec!["CLIENT", "GETNAME", "x"], vec!["ECHO", "a", "b"],
        ])
        .prop_map(|w| w.into_iter().map(text).collect())
        .boxed()),
        1 => exact(select(vec![
            vec!["PING"], vec!["ping", "hi"], vec!["PING", "a", "b"], vec!["ECHO", "e"], vec!["ECHO"],
            vec!["SELECT", "0"], vec!["SELECT", "16"], vec!["SELECT", "x"],
            vec!["CLIENT", "bogus"], vec!["HELLO", "3"], vec!["HELLO", "2"], vec!["HELLO", "3", "SETNAME", "h"],
            vec!["HELLO", "4"], vec!["HELLO", "2", "bogus"], vec!["HELLO", "2", "AUTH", "a", "b"],
            vec!["WAIT", "0", "0"], vec!["WAIT", "0", "-1"], vec!["FLUSHALL", "x"], vec!["DBSIZE", "x"],
            vec!["SCRIPT", "FLUSH", "bogus"], vec!["SCRIPT", "bogus"], vec!["SCRIPT", "EXISTS"],
            vec!["GET"], vec!["GET", "a", "b"], vec!["SET", "k"], vec!["INCR"], vec!["FOO", "a", "b"],
            vec!["EVAL", "return 1"], vec!["EXPIRE", "k1"],
        ])
        .prop_map(|w| w.into_iter().map(text).collect())
        .boxed()),
    ]
}

fn last_step() -> impl Strategy<Value = Step> {
    select(vec![
        &b"*1\r\n$4\r\nQUIT\r\n"[..],
        b"QUIT\r\n",
        b"*1\r\n:1\r\n",
        b"*x\r\n",
        b"*1\r\n$-1\r\n",
        b"*1\r\n$600000000\r\n",
        b"*1\r\n*1\r\n",
        b"echo \"a\r\n",
        b"echo 'a'b\r\n",
    ])
    .prop_map(|bytes| Step::Last(bytes.to_vec()))
}

fn sequence() -> impl Strategy<Value = Vec<Step>> {
    // Most steps on the first connection; the others subscribe, watch, publish and write.
    let conn = prop_oneof![5 => Just(0usize), 3 => Just(1), 2 => Just(2)];
    let request = (conn, request(), prop::bool::weighted(0.15)).prop_map(|(conn, (words, check), inline)| {
        Step::Request {
            conn,
            words,
            inline,
            check,
        }
    });
    let reconnect = (0..CONNECTIONS).prop_map(|conn| Step::Reconnect { conn });
    let step = prop_oneof![24 => request, 2 => blocked_pop(), 1 => expire_soon(), 1 => reconnect];
    (
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::collection::vec(step, 1..10),
        prop::option::weighted(0.1, last_step()),
    )
        .prop_map(|(resp3, password, steps, last)| {
            let first = |words: &[&str]| Step::Request {
                conn: 0,
                words: words.iter().copied().map(text).collect(),
                inline: false,
                check: Check::Exact,
            };
            // RESP3 from the start on every connection: every reply in its RESP3 shape.
            let hello = (0..CONNECTIONS).filter(|_| resp3).map(|conn| Step::Request {
                conn,
                words: vec![text("HELLO"), text("3")],
                inline: false,
                check: Check::Exact,
            });
            // A password from the start: the connections already open stay authenticated,
            // those that reconnect must AUTH.
            let password = password.then(|| first(&["CONFIG", "SET", "requirepass", PASSWORD]));
            hello.chain(password).chain(steps).chain(last).collect()
        })
}

/// A BLPOP or BRPOP on one connection and an LPUSH or RPUSH on another, mostly of the
/// list the pop waits on.
fn blocked_pop() -> impl Strategy<Value = Step> {
    let list_key = prop_oneof![3 => Just(text("l")), 1 => key()];
    (
        0..CONNECTIONS,
        1..CONNECTIONS,
        select(vec!["BLPOP", "BRPOP"]),
        prop::collection::vec(list_key.clone(), 1..3),
        select(vec!["LPUSH", "RPUSH"]),
        list_key,
        prop::collection::vec(select(vec!["a", "b", "c"]).prop_map(text), 1..3),
    )
        .prop_map(
            |(waiter, offset, pop, keys, push, key, elements)| Step::BlockedPop {
                waiter,
                pop: words(vec![vec![text(pop)], keys, vec![text(BLOCKED_POP_TIMEOUT)]]),
                pusher: (waiter + offset) % CONNECTIONS,
                push: words(vec![vec![text(push), key], elements]),
            },
        )
}

/// The bytes of a step: inline only when every word survives Redis's inline splitting.
fn request_bytes(words: &[Vec<u8>], inline: bool) -> Vec<u8> {
    let plain = |w: &Vec<u8>| !w.is_empty() && !w.iter().any(|b| b" \t\r\n\"'\\".contains(b) || *b == 0);
    if inline && words.iter().all(plain) {
        let mut line = words.join(&b' ');
        line.extend(b"\r\n");
        line
    } else {
        encode(words)
    }
}

/// TIME's reply, `[seconds, microseconds]`, differs between two servers asked moments
/// apart: wherever it appears (EXEC's replies too), one within [`CLOCK_TOLERANCE_S`] of
/// the test's own clock becomes `<time>`; another stays as it is, and shows.
fn without_clock(value: Value) -> Value {
    let now_s = now_ms() / 1000;
    match value {
        Value::Array(items) => match &items[..] {
            [Value::Bulk(seconds), Value::Bulk(micros)]
                if micros.parse::<u32>().is_ok_and(|us| us < 1_000_000)
                    && seconds
                        .parse::<i64>()
                        .is_ok_and(|s| (s - now_s).abs() <= CLOCK_TOLERANCE_S) =>
            {
                Value::Simple("<time>".into())
            }
            _ => Value::Array(items.into_iter().map(without_clock).collect()),
        },
        other => other,
    }
}

/// The parts of a pub/sub exchange redis-server 7.0 orders by its dicts' iteration (random
/// per process: the hash seed is), sorted: in a run of one message's `pmessage`s (one per
/// matching pattern), the patterns; in a run of `unsubscribe` or `punsubscribe`
/// confirmations (UNSUBSCRIBE without arguments), the names, each count staying where it
/// is (they count down the same way in any order).
fn in_dict_order_sorted(frames: &[Value]) -> Vec<Value> {
    /// A frame's kind and what a run shares, and the place of the name that varies.
    fn run_key(frame: &Value) -> Option<(Vec<Value>, usize)> {
        let (Value::Array(items) | Value::Push(items)) = frame else {
            return None;
        };
        match items.first() {
            Some(Value::Bulk(kind)) if kind == "pmessage" && items.len() == 4 => {
                Some((vec![items[0].clone(), items[2].clone(), items[3].clone()], 1))
            }
            Some(Value::Bulk(kind))
                if (kind == "unsubscribe" || kind == "punsubscribe") && items.len() == 3 =>
            {
                Some((vec![items[0].clone()], 1))
            }
            _ => None,
        }
    }
    let mut frames = frames.to_vec();
    let mut start = 0;
    while start < frames.len() {
        let Some((key, at)) = run_key(&frames[start]) else {
            start += 1;
            continue;
        };
        let end = (start..frames.len())
            .find(|&i| run_key(&frames[i]).is_none_or(|(k, _)| k != key))
            .unwrap_or(frames.len());
        let name = |frame: &mut Value| match frame {
            Value::Array(items) | Value::Push(items) => std::mem::replace(&mut items[at], Value::Null),
            _ => unreachable!("a run holds arrays and pushes only"),
        };
        let mut names: Vec<Value> = frames[start..end].iter_mut().map(name).collect();
        names.sort_by_key(|n| format!("{n:?}"));
        for (frame, sorted) in frames[start..end].iter_mut().zip(names) {
            if let Value::Array(items) | Value::Push(items) = frame {
                items[at] = sorted;
            }
        }
        start = end;
    }
    frames
}

/// `value` with every array of bulk strings in it sorted.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Array(items) if items.iter().all(|i| matches!(i, Value::Bulk(_))) => {
            let mut items = items.clone();
            items.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            Value::Array(items)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn agree(real: &Value, fake: &Value, check: Check) -> bool {
    match (check, real, fake) {
        (Check::Unordered, _, _) => sorted(real) == sorted(fake),
        (Check::Seconds, Value::Int(a), Value::Int(b)) if *a >= 0 && *b >= 0 => (a - b).abs() <= 1,
        (Check::Millis, Value::Int(a), Value::Int(b)) if *a >= 0 && *b >= 0 => {
            (a - b).abs() <= PTTL_TOLERANCE_MS
        }
        _ => real == fake,
    }
}

/// One server's connections of a case, which of them are inside MULTI (and what they
/// queued), and one more that only watches the server (how many connections it has
/// blocked, every database's keys touched, the password cleared after the case).
struct Connections {
    addr: std::net::SocketAddr,
    clients: Vec<RespClient>,
    in_multi: Vec<bool>,
    /// The requests each connection had queued (`+QUEUED`) since its MULTI.
    queued: Vec<Vec<Vec<Vec<u8>>>>,
    /// The CLIENT ID of the connection in each slot now.
    slot_ids: Vec<u64>,
    /// Whether the connection in each slot was seen closed by the server.
    closed: Vec<bool>,
    /// The CLIENT ID of every connection the case opened, in the order it opened them: a
    /// reply's ids are compared as places in this list (each server counts its own).
    opened: Vec<u64>,
    observer: RespClient,
    /// How many `INFO clients` the observer sent to see a pop block: as many as the
    /// server's speed allowed, topped up to the other server's count after each step (see
    /// [`Connections::poll_blocked_clients_to`]), so INFO commandstats agrees.
    blocked_polls: u64,
}

/// Whether `frame` answers the closing `PING` ([`SYNC_MARKER`]), or refuses it as sent by
/// a connection that has not authenticated.
fn is_sync_answer(frame: &Value) -> bool {
    let marker = Value::Bulk(SYNC_MARKER.into());
    *frame == marker
        || *frame == Value::Array(vec![Value::Bulk("pong".into()), marker])
        || matches!(frame, Value::Error(e) if e.starts_with("NOAUTH"))
}

/// The words of a request, upper-cased for matching.
fn upper(words: &[Vec<u8>]) -> Vec<String> {
    words
        .iter()
        .map(|w| String::from_utf8_lossy(w).to_ascii_uppercase())
        .collect()
}

impl Connections {
    fn open(addr: std::net::SocketAddr) -> Connections {
        let mut connections = Connections {
            addr,
            clients: Vec::new(),
            in_multi: vec![false; CONNECTIONS],
            queued: vec![Vec::new(); CONNECTIONS],
            slot_ids: Vec::new(),
            closed: vec![false; CONNECTIONS],
            opened: Vec::new(),
            observer: RespClient::connect(addr),
            blocked_polls: 0,
        };
        let observer_id = connections.id_of_observer();
        for _ in 0..CONNECTIONS {
            let (client, id) = connections.connect();
            connections.clients.push(client);
            connections.slot_ids.push(id);
        }
        connections.opened.push(observer_id);
        connections
    }

    fn id_of_observer(&mut self) -> u64 {
        match self.observer.request(&[b"CLIENT".to_vec(), b"ID".to_vec()]) {
            Value::Int(id) => id as u64,
            other => panic!("CLIENT ID answered {other:?}"),
        }
    }

    /// A new connection and its CLIENT ID (read by the observer when the connection
    /// itself may not ask: the server has a password it has not sent).
    fn connect(&mut self) -> (RespClient, u64) {
        let mut client = RespClient::connect(self.addr);
        let id = match client.request(&[b"CLIENT".to_vec(), b"ID".to_vec()]) {
            Value::Int(id) => id as u64,
            Value::Error(e) if e.starts_with("NOAUTH") => {
                let list = self.observer.request(&[b"CLIENT".to_vec(), b"LIST".to_vec()]);
                client_lines(&list)
                    .iter()
                    .filter_map(|fields| fields.first()?.1.parse().ok())
                    .max()
                    .unwrap_or_else(|| panic!("CLIENT LIST answered {list:?}"))
            }
            other => panic!("CLIENT ID answered {other:?}"),
        };
        self.opened.push(id);
        (client, id)
    }

    /// Closes the connection in `slot` and opens a new one in its place.
    fn reconnect(&mut self, slot: usize) {
        let (client, id) = self.connect();
        self.clients[slot] = client;
        self.slot_ids[slot] = id;
        self.in_multi[slot] = false;
        self.closed[slot] = false;
        self.queued[slot].clear();
    }

    /// The place of the connection `id` among those the case opened (-1: another's).
    fn place(&self, id: i64) -> i64 {
        self.opened
            .iter()
            .position(|opened| *opened as i64 == id)
            .map_or(-1, |place| place as i64)
    }

    /// Sends `bytes` (a request) on connection `conn` and reads what it answered. Inside
    /// MULTI, and for a MULTI (after which a `PING` would be queued, not answered), the
    /// reply is the first frame that is not a RESP3 push; outside, everything up to the
    /// answer of a closing `PING` ([`Connections::sync`]), which also collects what follows
    /// the reply (SUBSCRIBE's further confirmations, messages published to itself, what
    /// EXEC's commands sent).
    fn request(&mut self, conn: usize, words: &[Vec<u8>], bytes: &[u8]) -> Vec<Value> {
        if matches!(upper(words).first().map(String::as_str), Some("INFO" | "EXEC")) {
            self.touch_every_database();
        }
        self.clients[conn].send(bytes);
        self.answer(conn, words)
    }

    /// Reads what connection `conn` answered to the request `words` it sent (see
    /// [`Connections::request`]); its reply (the first frame that is not a push) goes
    /// through [`Connections::normalised`].
    fn answer(&mut self, conn: usize, words: &[Vec<u8>]) -> Vec<Value> {
        let command = words.first().map(|w| w.to_ascii_uppercase());
        let opens_multi = command.as_deref() == Some(b"MULTI");
        let was_in_multi = self.in_multi[conn];
        let mut frames = if self.in_multi[conn] || opens_multi {
            self.read_until(conn, |frame| !matches!(frame, Value::Push(_)))
        } else {
            Vec::new()
        };
        let ends_multi =
            matches!(command.as_deref(), Some(b"EXEC" | b"DISCARD" | b"RESET")) && words.len() == 1;
        match command.as_deref() {
            Some(b"MULTI") if frames.last() == Some(&Value::Simple("OK".into())) => {
                self.in_multi[conn] = true
            }
            // `EXEC x` is a wrong arity, queued as an error: the transaction goes on.
            _ if ends_multi => self.in_multi[conn] = false,
            _ => {}
        }
        if !self.in_multi[conn] {
            let (more, answer) = self.synced(conn);
            frames.extend(more);
            let replied = frames.iter().any(|frame| !matches!(frame, Value::Push(_)));
            if let Some(noauth @ Value::Error(_)) = answer
                && !replied
            {
                // A connection that has not authenticated answers the closing PING with
                // NOAUTH: this first one was the request's reply, the PING's follows.
                frames.push(noauth);
                frames.extend(self.read_to_sync_answer(conn).0);
            }
        }
        let queued = if ends_multi {
            std::mem::take(&mut self.queued[conn])
        } else {
            Vec::new()
        };
        if let Some(reply) = frames.iter_mut().find(|f| !matches!(f, Value::Push(_))) {
            if was_in_multi && !ends_multi {
                if *reply == Value::Simple("QUEUED".into()) {
                    self.queued[conn].push(words.to_vec());
                }
            } else if was_in_multi && command.as_deref() == Some(b"EXEC") {
                if let Value::Array(replies) = reply {
                    for (queued, reply) in queued.iter().zip(replies.iter_mut()) {
                        *reply = self.normalised(queued, std::mem::replace(reply, Value::Null));
                    }
                }
            } else {
                *reply = self.normalised(words, std::mem::replace(reply, Value::Null));
            }
        }
        frames
    }

    /// The reply to `words` with what cannot agree between two servers masked (see
    /// [`normalised_client_lines`] and [`normalised_info`]): ids become places among the
    /// case's connections, COMMAND COUNT only an integer (the fake node serves a subset of
    /// Redis's commands: tests/node/redis_command.rs holds COUNT to its own table), COMMAND
    /// INFO and DOCS in one order (Redis lists subcommands in its dicts' order).
    fn normalised(&self, words: &[Vec<u8>], reply: Value) -> Value {
        let words = upper(words);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        match (&words[..], reply) {
            (["HELLO", ..], Value::Map(pairs)) => Value::Map(
                pairs
                    .into_iter()
                    .map(|(k, v)| match (&k, v) {
                        (Value::Bulk(name), Value::Int(id)) if name == "id" => {
                            (k, Value::Int(self.place(id)))
                        }
                        (_, v) => (k, v),
                    })
                    .collect(),
            ),
            (["HELLO", ..], Value::Array(mut items)) => {
                if let Some(at) = items.iter().position(|i| *i == Value::Bulk("id".into()))
                    && let Some(Value::Int(id)) = items.get(at + 1)
                {
                    items[at + 1] = Value::Int(self.place(*id));
                }
                Value::Array(items)
            }
            (["CLIENT", "ID"], Value::Int(id)) => Value::Int(self.place(id)),
            (["CLIENT", "INFO" | "LIST", ..], reply) => self.normalised_client_lines(reply),
            (["INFO", ..], reply) => normalised_info(reply),
            (["COMMAND", "COUNT"], Value::Int(_)) => Value::Simple("<count>".into()),
            (["COMMAND", "INFO", ..], reply) => in_one_order(reply),
            (["COMMAND", "DOCS", ..], reply) => docs_in_one_order(reply),
            (_, reply) => reply,
        }
    }

    /// CLIENT INFO's or LIST's lines of the case's connections (another case's, which the
    /// server may not yet have seen close, are left out), each field kept or masked:
    /// - `id` becomes the connection's place among the case's;
    /// - `addr` and `laddr`: ephemeral ports, and each server's own;
    /// - `fd`: each process hands out its own descriptors; only that it is one (a number
    ///   of at least 0) must agree;
    /// - `age` and `idle`: seconds that may tick over between the two servers' replies;
    /// - `qbuf`, `qbuf-free`, `argv-mem`, `multi-mem`, `rbs`, `rbp`, `obl`, `oll`, `omem`,
    ///   `tot-mem`: sizes of each implementation's own buffers;
    /// - every other field (`name`, `flags`, `db`, `sub`, `psub`, `ssub`, `multi`,
    ///   `events`, `cmd`, `user`, `redir`, `resp`) as it is.
    fn normalised_client_lines(&self, reply: Value) -> Value {
        const MASKED: &[&str] = &[
            "addr",
            "laddr",
            "age",
            "idle",
            "qbuf",
            "qbuf-free",
            "argv-mem",
            "multi-mem",
            "rbs",
            "rbp",
            "obl",
            "oll",
            "omem",
            "tot-mem",
        ];
        let lines: Vec<String> = client_lines(&reply)
            .into_iter()
            .filter_map(|fields| {
                let place = self.place(fields.first()?.1.parse().ok()?);
                (place >= 0).then(|| {
                    let shown: Vec<String> = fields
                        .iter()
                        .map(|(name, value)| match name.as_str() {
                            "id" => format!("id=#{place}"),
                            "fd" if value.parse::<u32>().is_ok() => "fd=<fd>".into(),
                            masked if MASKED.contains(&masked) => format!("{name}=<{name}>"),
                            _ => format!("{name}={value}"),
                        })
                        .collect();
                    shown.join(" ")
                })
            })
            .collect();
        with_text(reply, lines.join("\n"))
    }

    /// Deletes the keys whose time has passed in every database, as a touch does: INFO's
    /// keyspace counts keys a real server has not yet expired on its own, at moments of
    /// its own. The observer sends the touches, pipelined.
    fn touch_every_database(&mut self) {
        let mut bytes = Vec::new();
        for db in 0..16 {
            bytes.extend(encode(&[b"SELECT".to_vec(), db.to_string().into_bytes()]));
            let exists = std::iter::once("EXISTS")
                .chain(KEYS)
                .map(|w| w.as_bytes().to_vec());
            bytes.extend(encode(&exists.collect::<Vec<_>>()));
        }
        self.observer.send(&bytes);
        for _ in 0..32 {
            let reply = self.observer.read();
            assert!(
                matches!(reply, Value::Int(_) | Value::Simple(_)),
                "the observer's touch answered {reply:?}"
            );
        }
    }

    /// Clears the server's `requirepass` (the observer opened before any case set one).
    fn clear_password(&mut self) {
        let reply = self.observer.request(&[
            b"CONFIG".to_vec(),
            b"SET".to_vec(),
            b"requirepass".to_vec(),
            Vec::new(),
        ]);
        assert_eq!(reply, Value::Simple("OK".into()), "clearing requirepass");
    }

    /// Sends the blocking `pop` on `waiter`, waits until the server has blocked it (or
    /// answered it at once), sends `push` on `pusher`; returns the pusher's frames, then
    /// the waiter's.
    fn blocked_pop(&mut self, waiter: usize, pop: &[Vec<u8>], pusher: usize, push: &[Vec<u8>]) -> Vec<Value> {
        self.clients[waiter].send(&encode(pop));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.clients[waiter].has_pending_reply()
            && self.blocked_clients() == 0
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut frames = self.request(pusher, push, &encode(push));
        frames.extend(self.answer(waiter, pop));
        frames
    }

    /// Sends the observer's `INFO clients` until it sent `polls` in all.
    fn poll_blocked_clients_to(&mut self, polls: u64) {
        while self.blocked_polls < polls {
            self.blocked_clients();
        }
    }

    /// INFO's `blocked_clients`: how many connections wait in a blocking command.
    fn blocked_clients(&mut self) -> u64 {
        self.blocked_polls += 1;
        let info = self.observer.request(&[b"INFO".to_vec(), b"clients".to_vec()]);
        let Value::Bulk(info) = info else {
            panic!("INFO clients answered {info:?}")
        };
        info.lines()
            .find_map(|line| line.strip_prefix("blocked_clients:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO clients has no blocked_clients: {info}"))
    }

    /// Sends `PING <marker>` on `conn` and returns the frames read before its answer (all
    /// of them, and the last, when the connection closed or went silent instead).
    fn sync(&mut self, conn: usize) -> Vec<Value> {
        self.synced(conn).0
    }

    /// [`Connections::sync`], and the closing `PING`'s answer (none if the connection
    /// closed or went quiet).
    fn synced(&mut self, conn: usize) -> (Vec<Value>, Option<Value>) {
        self.clients[conn].send(&encode(&[b"PING".to_vec(), SYNC_MARKER.into()]));
        self.read_to_sync_answer(conn)
    }

    /// The frames `conn` received up to an answer to the closing `PING`, and that answer.
    fn read_to_sync_answer(&mut self, conn: usize) -> (Vec<Value>, Option<Value>) {
        let mut frames = self.read_until(conn, is_sync_answer);
        let answer = if frames.last().is_some_and(is_sync_answer) {
            frames.pop()
        } else {
            None
        };
        (frames, answer)
    }

    /// What connection `conn` received since its last step (pub/sub messages), up to the
    /// closing `PING`'s answer; nothing for a connection inside MULTI.
    fn pending(&mut self, conn: usize) -> Vec<Value> {
        if self.in_multi[conn] {
            return Vec::new();
        }
        self.sync(conn)
    }

    /// Frames read on `conn` until one that `ends` (included), the connection closes or no
    /// reply comes.
    fn read_until(&mut self, conn: usize, ends: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = without_clock(self.clients[conn].read());
            self.closed[conn] |= frame == Value::Closed;
            let last = ends(&frame) || matches!(frame, Value::Closed | Value::NoReply);
            frames.push(frame);
            if last {
                return frames;
            }
        }
    }
}

/// COMMAND DOCS's reply with each command's subcommands in one order: Redis lists them in
/// its dict's order, seeded anew by each process (a RESP3 map, which [`in_one_order`] puts
/// in order; in RESP2 a flat array of name and description pairs).
fn docs_in_one_order(reply: Value) -> Value {
    match reply {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(docs_in_one_order).collect();
            if let Some(at) = items.iter().position(|i| *i == Value::Bulk("subcommands".into()))
                && at % 2 == 0
                && let Some(Value::Array(subcommands)) = items.get_mut(at + 1)
            {
                let mut pairs: Vec<Vec<Value>> = subcommands.chunks(2).map(<[Value]>::to_vec).collect();
                pairs.sort_by_key(|pair| format!("{:?}", pair[0]));
                *subcommands = pairs.concat();
            }
            Value::Array(items)
        }
        other => in_one_order(other),
    }
}

/// The text of a bulk or verbatim reply.
fn text_of(reply: &Value) -> Option<&str> {
    match reply {
        Value::Bulk(text) | Value::Verbatim(_, text) => Some(text),
        _ => None,
    }
}

/// `reply` (bulk or verbatim) with `text` in place of its own.
fn with_text(reply: Value, text: String) -> Value {
    match reply {
        Value::Bulk(_) => Value::Bulk(text),
        Value::Verbatim(format, _) => Value::Verbatim(format, text),
        other => other,
    }
}

/// CLIENT INFO's or LIST's lines, each its `name=value` fields in order.
fn client_lines(reply: &Value) -> Vec<Vec<(String, String)>> {
    text_of(reply)
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            line.split(' ')
                .map(|field| {
                    let (name, value) = field.split_once('=').unwrap_or((field, ""));
                    (name.to_string(), value.to_string())
                })
                .collect()
        })
        .collect()
}

/// INFO's text with what cannot agree masked, section by section; every header and every
/// field's name is compared:
/// - `# Keyspace` exactly (it follows the generated keys; the keys whose time has passed
///   were touched away first), but for `avg_ttl`: Redis's running estimate, updated from
///   the keys its active expiry cycle samples, at moments of its own;
/// - `# Replication`: `role` and `connected_slaves` exactly; the rest by name (the
///   replication ids are random per process; tests/node/redis_replication.rs holds the offsets
///   on masters with replicas);
/// - `# Errorstats` exactly, and `total_error_replies` of `# Stats`: the errors each
///   server replied since the case began (see `run_case`);
/// - `# Commandstats` with each command's calls, refusals and failures exactly, but its
///   time (`usec`, `usec_per_call`); `# Latencystats` by the commands it lists (its
///   percentiles are times). Both in one order: Redis lists commands in its dict's order;
/// - every other section by name: its values are counters of the whole run, sizes of
///   each implementation's memory, times, and the process's own numbers (pid, port,
///   run id).
fn normalised_info(reply: Value) -> Value {
    let Some(text) = text_of(&reply) else {
        return reply;
    };
    let mut section = String::new();
    let mut lines = Vec::new();
    // The lines of the section being read that Redis writes in its dict's order.
    let mut in_dict_order: Vec<String> = Vec::new();
    let sorted = |mut section_lines: Vec<String>| {
        section_lines.sort();
        section_lines
    };
    for line in text.split("\r\n") {
        if let Some(header) = line.strip_prefix("# ") {
            section = header.to_ascii_lowercase();
            lines.extend(sorted(std::mem::take(&mut in_dict_order)));
            lines.push(line.to_string());
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            lines.extend(sorted(std::mem::take(&mut in_dict_order)));
            lines.push(line.to_string());
            continue;
        };
        match section.as_str() {
            "keyspace" => {
                let fields: Vec<String> = value
                    .split(',')
                    .map(|field| match field.split_once('=') {
                        Some(("avg_ttl", _)) => "avg_ttl=<estimate>".to_string(),
                        _ => field.to_string(),
                    })
                    .collect();
                lines.push(format!("{name}:{}", fields.join(",")));
            }
            "replication" if name == "role" || name == "connected_slaves" => lines.push(line.to_string()),
            "errorstats" => lines.push(line.to_string()),
            "commandstats" => {
                let fields: Vec<String> = value
                    .split(',')
                    .map(|field| match field.split_once('=') {
                        Some((time @ ("usec" | "usec_per_call"), _)) => format!("{time}=<time>"),
                        _ => field.to_string(),
                    })
                    .collect();
                in_dict_order.push(format!("{name}:{}", fields.join(",")));
            }
            "latencystats" => in_dict_order.push(format!("{name}:<time>")),
            "stats" if name == "total_error_replies" => lines.push(line.to_string()),
            _ => lines.push(format!("{name}:<value>")),
        }
    }
    lines.extend(sorted(in_dict_order));
    with_text(reply, lines.join("\r\n"))
}

/// Whether two servers' frames of one step agree: the first (the reply) as `check` says,
/// the rest (further confirmations, messages) exactly. A read that timed out is never
/// agreement, even on both: every step is answered at once or the sync is wrong.
fn frames_agree(real: &[Value], fake: &[Value], check: Check) -> bool {
    if real.contains(&Value::NoReply) || fake.contains(&Value::NoReply) {
        return false;
    }
    let (real, fake) = (in_dict_order_sorted(real), in_dict_order_sorted(fake));
    match (real.split_first(), fake.split_first()) {
        (Some((real_reply, real_rest)), Some((fake_reply, fake_rest))) => {
            agree(real_reply, fake_reply, check) && real_rest == fake_rest
        }
        _ => real == fake,
    }
}

/// Runs one sequence on both servers; `Err` shows every step with every connection's frames
/// on both.
fn run_case(steps: &[Step], real: &RedisServer, fake: &FakeServer) -> Result<(), String> {
    let mut real = Connections::open(real.addr);
    let mut fake = Connections::open(fake.addr);
    // Each case starts from empty servers (the Lua random state stays in step: both saw the
    // same scripts).
    for client in [&mut real.clients[0], &mut fake.clients[0]] {
        client.request(&[b"FLUSHALL".to_vec()]);
        client.request(&[b"SCRIPT".to_vec(), b"FLUSH".to_vec()]);
        client.request(&[b"CONFIG".to_vec(), b"RESETSTAT".to_vec()]);
    }
    let mut transcript = Vec::new();
    let mut failed = false;
    // One request on both servers, its words as each server's connections make them.
    let run_request = |real: &mut Connections,
                       fake: &mut Connections,
                       conn: usize,
                       words: &[Word],
                       inline: bool,
                       check: Check| {
        let real_words: Vec<Vec<u8>> = words.iter().map(|w| w.bytes(&real.slot_ids)).collect();
        let fake_words: Vec<Vec<u8>> = words.iter().map(|w| w.bytes(&fake.slot_ids)).collect();
        let real_frames = real.request(conn, &real_words, &request_bytes(&real_words, inline));
        let fake_frames = fake.request(conn, &fake_words, &request_bytes(&fake_words, inline));
        let ok = frames_agree(&real_frames, &fake_frames, check);
        (real_frames, fake_frames, ok)
    };
    let touch_every_key = |conn| Step::Request {
        conn,
        words: std::iter::once("EXISTS").chain(KEYS).map(text).collect(),
        inline: false,
        check: Check::Exact,
    };
    let steps = steps.iter().flat_map(|step| match step {
        Step::Request {
            conn,
            check: Check::KeyCount,
            ..
        } => vec![touch_every_key(*conn), step.clone()],
        _ => vec![step.clone()],
    });
    for step in steps {
        let (real_frames, fake_frames, mut ok) = match &step {
            Step::Request {
                conn,
                words,
                inline,
                check,
            } => run_request(&mut real, &mut fake, *conn, words, *inline, *check),
            Step::BlockedPop {
                waiter,
                pop,
                pusher,
                push,
            } => {
                let on = |connections: &mut Connections| {
                    let pop: Vec<Vec<u8>> = pop.iter().map(|w| w.bytes(&connections.slot_ids)).collect();
                    let push: Vec<Vec<u8>> = push.iter().map(|w| w.bytes(&connections.slot_ids)).collect();
                    connections.blocked_pop(*waiter, &pop, *pusher, &push)
                };
                let (real_frames, fake_frames) = (on(&mut real), on(&mut fake));
                let polls = real.blocked_polls.max(fake.blocked_polls);
                real.poll_blocked_clients_to(polls);
                fake.poll_blocked_clients_to(polls);
                let ok = frames_agree(&real_frames, &fake_frames, Check::Exact);
                (real_frames, fake_frames, ok)
            }
            Step::ExpireSoon { requests, sleep_ms } => {
                let (mut real_frames, mut fake_frames, mut ok) = (Vec::new(), Vec::new(), true);
                for (conn, words) in requests {
                    if real.in_multi[*conn] || fake.in_multi[*conn] {
                        continue;
                    }
                    let (real_more, fake_more, same) =
                        run_request(&mut real, &mut fake, *conn, words, false, Check::Exact);
                    real_frames.extend(real_more);
                    fake_frames.extend(fake_more);
                    ok &= same;
                }
                std::thread::sleep(Duration::from_millis(*sleep_ms));
                (real_frames, fake_frames, ok)
            }
            Step::Reconnect { conn } => {
                real.reconnect(*conn);
                fake.reconnect(*conn);
                (Vec::new(), Vec::new(), true)
            }
            Step::Last(bytes) => {
                real.clients[0].send(bytes);
                fake.clients[0].send(bytes);
                let (real_reply, fake_reply) = (real.clients[0].read(), fake.clients[0].read());
                let ok =
                    real_reply == fake_reply && real.clients[0].is_closed() && fake.clients[0].is_closed();
                (vec![real_reply], vec![fake_reply], ok)
            }
        };
        transcript.push(format!(
            "{} {step}\n      redis-server: {real_frames:?}\n      fake node:    {fake_frames:?}",
            if ok { "  " } else { "!!" }
        ));
        if ok && !matches!(step, Step::Last(_)) {
            for conn in 0..CONNECTIONS {
                let (real_pushes, fake_pushes) = (real.pending(conn), fake.pending(conn));
                if real_pushes.is_empty() && fake_pushes.is_empty() {
                    continue;
                }
                let same = frames_agree(&real_pushes, &fake_pushes, Check::Exact);
                transcript.push(format!(
                    "{}   c{conn} received\n      redis-server: {real_pushes:?}\n      fake node:    {fake_pushes:?}",
                    if same { "  " } else { "!!" }
                ));
                ok &= same;
            }
            // A connection CLIENT KILL closed comes back, as a client reconnects.
            for conn in 0..CONNECTIONS {
                if real.closed[conn] && fake.closed[conn] {
                    real.reconnect(conn);
                    fake.reconnect(conn);
                }
            }
        }
        if !ok {
            failed = true;
            break;
        }
    }
    // The next case opens its connections without a password.
    real.clear_password();
    fake.clear_password();
    if failed {
        return Err(format!("replies differ:\n{}", transcript.join("\n")));
    }
    Ok(())
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn the_fake_node_answers_as_redis_server_7_0_does() {
    let cases = env_or("LOCKSIM_DIFF_CASES", DEFAULT_CASES);
    let seed = env_or("LOCKSIM_DIFF_SEED", DEFAULT_SEED);
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 200,
        ..Config::default()
    });
    let started = Instant::now();
    let (runs, steps) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let result = runner.run(&sequence(), |case| {
        runs.set(runs.get() + 1);
        steps.set(steps.get() + case.len());
        run_case(&case, &real, &fake).map_err(TestCaseError::fail)
    });
    eprintln!(
        "differential: {runs} sequences of {cases} ({steps} steps, shrinking included), seed {seed}, in {:.1} s",
        started.elapsed().as_secs_f64(),
        runs = runs.get(),
        steps = steps.get()
    );
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// Minimal sequences the generator shrank a mismatch to, each fixed in the fake node since:
/// requests on one connection, words split at spaces (`$c0` stands for the CLIENT ID of
/// the connection in slot 0).
const FOUND: &[&[&str]] = &[
    // A master no replica ever attached to has no backlog: writes leave ROLE's offset 0.
    &["SET k1 v", "ROLE"],
    // LINDEX looks the key up before it reads the index: nil for a missing key.
    &["LINDEX k1 x", "RPUSH l a", "LINDEX l x", "LINDEX l -1"],
    // A timeout under a millisecond rounds up and times out, instead of blocking forever.
    &["BLPOP l 0.0001", "BRPOP l k1 0.0001"],
    // A command's own count check past its arity runs at EXEC: queued, as Redis queues it.
    &[
        "MULTI",
        "PING a b",
        "LPOP l 1 2",
        "HSET h f v g",
        "MSET k1 v k2",
        "EXEC",
    ],
    // CLIENT LIST ID lists a connection once for each time its id is given.
    &["CLIENT LIST ID $c0 $c0 $c1"],
    // A blocking pop that timed out is a call without a latency (one served by a push has
    // one).
    &["BLPOP l 0.05", "INFO latencystats", "INFO commandstats"],
    // A connection whose watched key changed shows flag `d` (dirty CAS) until EXEC,
    // DISCARD or UNWATCH.
    &[
        "WATCH h",
        "CLIENT INFO",
        "PEXPIREAT h 9999999999999",
        "SET h v",
        "CLIENT INFO",
        "UNWATCH",
        "CLIENT INFO",
    ],
    // Redis looks a subcommand up before it asks for the password (RESET logs the
    // connection out once there is one).
    &[
        "CONFIG SET requirepass pw",
        "RESET",
        "SCRIPT bogus",
        "CLIENT bogus",
        "CONFIG GET",
        "GET k1",
        "AUTH pw",
    ],
];

/// Runs one fixed sequence (as [`FOUND`] writes them) on both servers, in RESP2 and in
/// RESP3.
fn run_dialogue(requests: &[&str], real: &RedisServer, fake: &FakeServer) {
    for resp3 in [false, true] {
        let hello = resp3.then_some("HELLO 3");
        let steps: Vec<Step> = hello
            .iter()
            .chain(requests.iter())
            .map(|request| Step::Request {
                conn: 0,
                words: request
                    .split(' ')
                    .map(|word| match word.strip_prefix("$c") {
                        Some(slot) => Word::ClientId(slot.parse().unwrap()),
                        None => text(word),
                    })
                    .collect(),
                inline: false,
                check: Check::Exact,
            })
            .collect();
        if let Err(error) = run_case(&steps, real, fake) {
            panic!("{error}");
        }
    }
}

#[test]
fn the_mismatches_the_generator_found_stay_fixed() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    for requests in FOUND {
        run_dialogue(requests, &real, &fake);
    }
}

/// Errors of every kind the node counts, then its counts (`INFO errorstats`, and
/// `total_error_replies` in `INFO stats`), and each command's calls, refusals and failures
/// (`INFO commandstats`, `latencystats`): a command's own, a queued command's and
/// EXECABORT, those inside EXEC's reply, NOSCRIPT, and a script's by Redis's rules (a
/// called command's error once, swallowed or returned or raised; the Lua library's
/// refusals of arguments and the script's own errors when they reach the client). Scripts
/// without spaces, as the words split at spaces.
const ERROR_COUNTS: &[&str] = &[
    "RPUSH l a",
    "INCR l",
    "nosuch",
    "MULTI",
    "SET x",
    "EXEC",
    "MULTI",
    "INCR l",
    "SET k1 v",
    "LPUSH k1 a",
    "EXEC",
    "EVALSHA 0000000000000000000000000000000000000000 0",
    "EVAL return(redis.call('incr','l')) 0",
    "EVAL return(redis.pcall('incr','l')) 0",
    "EVAL redis.pcall('incr','l')return(1) 0",
    "EVAL return({1,redis.pcall('incr','l'),redis.error_reply('IN')}) 0",
    "EVAL return(redis.error_reply('-MINE')) 0",
    "EVAL redis.pcall()return(1) 0",
    "EVAL return(redis.pcall()) 0",
    "EVAL redis.pcall('set','k',{})return(1) 0",
    "EVAL redis.call('set','k',{}) 0",
    "EVAL error('boom') 0",
    "EVAL return(redis.call('nosuch')) 0",
    "EVAL return({err='lower'}) 0",
    "EVAL x( 0",
    "EVAL return(redis.pcall('eval','return(1)',0)) 0",
    "EVAL redis.pcall('set','k')return(1) 0",
    "EVAL_RO return(redis.pcall('set','a','b')) 0",
    "EVALSHA_RO 0000000000000000000000000000000000000000 0",
    "CLIENT",
    "CLIENT BOGUS",
    "CONFIG GET",
    "SET a b c",
    "EXEC",
    "DISCARD",
    "MULTI",
    "MULTI",
    "WATCH x",
    "EXEC",
    "INFO errorstats",
    "INFO stats",
    "INFO commandstats",
    "INFO latencystats",
    "CONFIG RESETSTAT",
    "INFO errorstats",
    "INFO commandstats",
];

#[test]
fn errors_are_counted_as_redis_counts_them() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    run_dialogue(ERROR_COUNTS, &real, &fake);
}

#[test]
fn getrange_answers_as_redis_server_7_0_does() {
    let offsets = [
        "0",
        "1",
        "-1",
        "-2",
        "3",
        "-5",
        "4",
        "100",
        "-100",
        "9223372036854775807",
        "-9223372036854775808",
    ];
    let mut dialogue: Vec<Vec<&str>> = vec![
        vec!["SET", "s", "hello"],
        vec!["SET", "n", "12345"],
        vec!["SET", "e", ""],
        vec!["HSET", "h", "f", "v"],
        vec!["GETRANGE", "h", "0", "1"],
        vec!["GETRANGE", "missing", "0", "1"],
        vec!["GETRANGE", "missing", "x", "1"],
        vec!["GETRANGE", "s", "0", "x"],
        vec!["GETRANGE", "s", "1.5", "2"],
        vec!["GETRANGE", "s", "0"],
        vec!["GETRANGE", "s", "0", "1", "2"],
    ];
    for key in ["s", "n", "e"] {
        for start in offsets {
            for end in offsets {
                dialogue.push(vec!["GETRANGE", key, start, end]);
            }
        }
    }
    let transcript = |addr: std::net::SocketAddr, resp3: bool| {
        let mut client = RespClient::connect(addr);
        client.request(&[b"FLUSHALL".to_vec()]);
        if resp3 {
            client.request(&[b"HELLO".to_vec(), b"3".to_vec()]);
        }
        dialogue
            .iter()
            .map(|words| {
                let request: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
                (words.join(" "), client.request(&request))
            })
            .collect()
    };
    same_transcripts_on_real_and_fake(transcript);
}
